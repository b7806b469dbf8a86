-- nn.DepthConcat(dim): like nn.Concat, every child sees the same input and their outputs are
-- joined along dim, but outputs may differ in the other dimensions: each is centred in a zero
-- output as large as the largest (Inception's branches with different spatial sizes).
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local DepthConcat = torch.class('nn.DepthConcat', 'nn.Concat')

-- the part of `full` (offset along dim) that output `o` goes to: centred elsewhere, with the odd
-- padding element after it (start = floor((big - small) / 2) + 1)
function DepthConcat:windowNarrow(full, o, offset)
   local dim = self.dimension
   local w = full:narrow(dim, offset, o:size(dim))
   for d = 1, o:dim() do
      local small, big = o:size(d), full:size(d)
      if d ~= dim and small ~= big then
         w = w:narrow(d, math.floor((big - small) / 2) + 1, small)
      end
   end
   return w
end

function DepthConcat:updateOutput(input)
   local dim = self.dimension
   local outs, size = {}, nil
   for i = 1, #self.modules do
      local o = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
      outs[i] = o
      local s = o:size():totable()
      if dim > #s then
         error(('nn.DepthConcat: dimension %d out of range for output %d of size %s'):format(dim, i,
            utils.sizeString(o)), 2)
      end
      if i == 1 then
         size = s
      else
         if #s ~= #size then
            error(('nn.DepthConcat: output %d has size %s, which has not as many dimensions as %s'):format(
               i, utils.sizeString(o), utils.sizeString(outs[1])), 2)
         end
         for d = 1, #size do
            if d == dim then size[d] = size[d] + s[d] else size[d] = math.max(size[d], s[d]) end
         end
      end
   end
   self.outputSize = torch.LongStorage(size)
   if self.output:type() ~= outs[1]:type() then self.output = outs[1].new() end
   self.output:resize(self.outputSize):zero()
   local offset = 1
   for i = 1, #outs do
      self:windowNarrow(self.output, outs[i], offset):copy(outs[i])
      offset = offset + outs[i]:size(dim)
   end
   return self.output
end

-- fn(i, module, the module's window of gradOutput)
local function each(self, gradOutput, fn)
   local offset = 1
   for i, m in ipairs(self.modules) do
      fn(i, m, self:windowNarrow(gradOutput, m.output, offset))
      offset = offset + m.output:size(self.dimension)
   end
end

local function gather(self, input, method, scale)
   return function(i, m, g)
      local gi = self:rethrowErrors(m, i, method, input, g, scale)
      if i == 1 then
         if self.gradInput:type() ~= input:type() then self.gradInput = input.new() end
         self.gradInput:resizeAs(input):copy(gi)
      else
         self.gradInput:add(gi)
      end
   end
end

function DepthConcat:updateGradInput(input, gradOutput)
   each(self, gradOutput, gather(self, input, 'updateGradInput'))
   return self.gradInput
end

function DepthConcat:accGradParameters(input, gradOutput, scale)
   each(self, gradOutput, function(i, m, g) self:rethrowErrors(m, i, 'accGradParameters', input, g, scale or 1) end)
end

function DepthConcat:backward(input, gradOutput, scale)
   each(self, gradOutput, gather(self, input, 'backward', scale or 1))
   return self.gradInput
end
