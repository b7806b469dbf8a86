-- nn.Concat(dim): every child sees the same input; their outputs are joined along dim.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Concat, parent = torch.class('nn.Concat', 'nn.Container')

function Concat:__init(dimension)
   parent.__init(self)
   if type(dimension) ~= 'number' then error('nn.Concat: expected a dimension, got ' .. tostring(dimension), 2) end
   self.dimension = dimension
end

function Concat:updateOutput(input)
   local outs, size = {}, nil
   for i = 1, #self.modules do
      local o = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
      outs[i] = o
      if i == 1 then
         size = T.sizes(o)
         if self.dimension > #size then
            error(('nn.Concat: dimension %d out of range for outputs of size %s'):format(self.dimension,
               table.concat(size, 'x')), 2)
         end
      else
         local s = T.sizes(o)
         for d = 1, #size do
            if d ~= self.dimension and s[d] ~= size[d] then
               error(('nn.Concat: output %d has size %s, which does not match %s outside dimension %d'):format(i,
                  table.concat(s, 'x'), table.concat(T.sizes(outs[1]), 'x'), self.dimension), 2)
            end
         end
         size[self.dimension] = size[self.dimension] + o:size(self.dimension)
      end
   end
   if self.output:type() ~= outs[1]:type() then self.output = T.empty_tensor(outs[1]:dtype(), outs[1]:device()) end
   self.output:resize(size)
   local offset = 1
   for i = 1, #outs do
      local n = outs[i]:size(self.dimension)
      self.output:narrow(self.dimension, offset, n):copy(outs[i])
      offset = offset + n
   end
   return self.output
end

local function slices(self, gradOutput, fn)
   local offset = 1
   for i, m in ipairs(self.modules) do
      local n = m.output:size(self.dimension)
      fn(i, m, gradOutput:narrow(self.dimension, offset, n))
      offset = offset + n
   end
end

local function gather_grad(self, input, i, g)
   if i == 1 then
      if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
      self.gradInput:resizeAs(input):copy(g)
   else
      self.gradInput:add(g)
   end
end

function Concat:updateGradInput(input, gradOutput)
   slices(self, gradOutput, function(i, m, g)
      gather_grad(self, input, i, self:rethrowErrors(m, i, 'updateGradInput', input, g))
   end)
   return self.gradInput
end

function Concat:accGradParameters(input, gradOutput, scale)
   slices(self, gradOutput, function(i, m, g) self:rethrowErrors(m, i, 'accGradParameters', input, g, scale) end)
end

function Concat:backward(input, gradOutput, scale)
   slices(self, gradOutput, function(i, m, g)
      gather_grad(self, input, i, self:rethrowErrors(m, i, 'backward', input, g, scale))
   end)
   return self.gradInput
end

function Concat:__tostring__() return self:_branchString('input', '   ... -> output') end
