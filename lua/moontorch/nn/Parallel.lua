-- nn.Parallel(inputDimension, outputDimension): child i gets input:select(inputDimension, i);
-- the children's outputs are joined along outputDimension.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local Parallel, parent = torch.class('nn.Parallel', 'nn.Container')

function Parallel:__init(inputDimension, outputDimension)
   parent.__init(self)
   if type(inputDimension) ~= 'number' or type(outputDimension) ~= 'number' then
      error('nn.Parallel(inputDimension, outputDimension): expected two dimensions', 2)
   end
   self.inputDimension = inputDimension
   self.outputDimension = outputDimension
end

local function nslices(self, input)
   if not torch.isTensor(input) or input:dim() < self.inputDimension then
      error(('nn.Parallel: expected a tensor with at least %d dimensions, got %s'):format(self.inputDimension,
         torch.isTensor(input) and ('size ' .. utils.sizeString(input)) or torch.type(input)), 3)
   end
   local n = input:size(self.inputDimension)
   if n > #self.modules then
      error(('nn.Parallel: input has %d slices along dimension %d but there are only %d modules'):format(
         n, self.inputDimension, #self.modules), 3)
   end
   return n
end

function Parallel:updateOutput(input)
   local n, od = nslices(self, input), self.outputDimension
   local outs, size = {}, nil
   for i = 1, n do
      local o = self:rethrowErrors(self.modules[i], i, 'updateOutput', input:select(self.inputDimension, i))
      outs[i] = o
      local s = o:size():totable()
      if od > #s then
         error(('nn.Parallel: outputDimension %d out of range for output %d of size %s'):format(od, i,
            utils.sizeString(o)), 2)
      end
      if i == 1 then
         size = s
      else
         for d = 1, #size do
            if d ~= od and s[d] ~= size[d] then
               error(('nn.Parallel: output %d has size %s, which does not match %s outside dimension %d'):format(
                  i, utils.sizeString(o), utils.sizeString(outs[1]), od), 2)
            end
         end
         size[od] = size[od] + s[od]
      end
   end
   if self.output:type() ~= outs[1]:type() then self.output = outs[1].new() end
   self.output:resize(torch.LongStorage(size))
   local offset = 1
   for i = 1, n do
      local k = outs[i]:size(od)
      self.output:narrow(od, offset, k):copy(outs[i])
      offset = offset + k
   end
   return self.output
end

-- fn(i, module, input slice, gradOutput slice) for each child
local function each(self, input, gradOutput, fn)
   local offset = 1
   for i = 1, nslices(self, input) do
      local m = self.modules[i]
      local k = m.output:size(self.outputDimension)
      fn(i, m, input:select(self.inputDimension, i), gradOutput:narrow(self.outputDimension, offset, k))
      offset = offset + k
   end
end

local function gather(self, input, method, scale)
   return function(i, m, x, g)
      local gi = self:rethrowErrors(m, i, method, x, g, scale)
      if i == 1 then
         if self.gradInput:type() ~= input:type() then self.gradInput = input.new() end
         self.gradInput:resizeAs(input):zero()
      end
      self.gradInput:select(self.inputDimension, i):copy(gi)
   end
end

function Parallel:updateGradInput(input, gradOutput)
   each(self, input, gradOutput, gather(self, input, 'updateGradInput'))
   return self.gradInput
end

function Parallel:accGradParameters(input, gradOutput, scale)
   each(self, input, gradOutput,
      function(i, m, x, g) self:rethrowErrors(m, i, 'accGradParameters', x, g, scale or 1) end)
end

function Parallel:backward(input, gradOutput, scale)
   each(self, input, gradOutput, gather(self, input, 'backward', scale or 1))
   return self.gradInput
end

function Parallel:__tostring__() return self:_branchString('input', '   ... -> output') end
