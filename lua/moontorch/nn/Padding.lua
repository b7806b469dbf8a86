-- nn.Padding(dim, pad[, nInputDim, value = 0, index = 1]): adds |pad| entries of `value` along
-- dim: after the input when pad > 0, before it when pad < 0. index moves the padding inside:
-- it goes before the index-th element counted from the padded side (index 1: at the edge).
-- With nInputDim, an input with another number of dimensions is a batch and dim + 1 is padded.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Padding, parent = torch.class('nn.Padding', 'nn.Module')
local result = nn.utils.result

function Padding:__init(dim, pad, nInputDim, value, index)
   parent.__init(self)
   if not T.is_int(dim) or dim < 1 or not T.is_int(pad) then
      error(('nn.Padding(dim, pad[, nInputDim, value, index]): expected a positive dim and an integer pad, got %s, %s')
         :format(tostring(dim), tostring(pad)), 2)
   end
   if index ~= nil and (not T.is_int(index) or index < 1) then
      error('nn.Padding: index must be a positive integer, got ' .. tostring(index), 2)
   end
   self.value = value or 0
   self.index = index or 1
   self.dim = dim
   self.pad = pad
   self.nInputDim = nInputDim
end

-- the padded dimension, where the padding starts (the number of input elements before it) and
-- its length, for this input
function Padding:_layout(input)
   T.expect_tensor(input, 'nn.Padding', 'input', 3)
   local dim = self.dim
   if self.nInputDim and input:dim() ~= self.nInputDim then dim = dim + 1 end
   if dim > input:dim() then
      error(('nn.Padding: dimension %d is out of range for an input of size %s'):format(dim,
         table.concat(T.sizes(input), 'x')), 3)
   end
   local size, pad = input:size(dim), math.abs(self.pad)
   if self.index > size + 1 then
      error(('nn.Padding: index %d is past dimension %d of an input of size %s'):format(self.index, dim,
         table.concat(T.sizes(input), 'x')), 3)
   end
   -- counted from the left: pad < 0 inserts before element `index`, pad > 0 after element
   -- size - index + 1
   local before = self.pad < 0 and self.index - 1 or size - self.index + 1
   return dim, before, pad
end

function Padding:updateOutput(input)
   local dim, before, pad = self:_layout(input)
   local size = input:size(dim)
   local sizes = T.sizes(input)
   sizes[dim] = sizes[dim] + pad
   local out = result(self, 'output', input):resize(sizes):fill(self.value)
   if before > 0 then out:narrow(dim, 1, before):copy(input:narrow(dim, 1, before)) end
   if before < size then
      out:narrow(dim, before + pad + 1, size - before):copy(input:narrow(dim, before + 1, size - before))
   end
   return self.output
end

function Padding:updateGradInput(input, gradOutput)
   local dim, before, pad = self:_layout(input)
   T.expect_tensor(gradOutput, 'nn.Padding', 'gradOutput', 2)
   local size = input:size(dim)
   local expected = T.sizes(input)
   expected[dim] = expected[dim] + pad
   if table.concat(T.sizes(gradOutput), 'x') ~= table.concat(expected, 'x') then
      error(('nn.Padding: gradOutput has size %s, the output size %s'):format(
         table.concat(T.sizes(gradOutput), 'x'), table.concat(expected, 'x')), 2)
   end
   local gi = result(self, 'gradInput', input):resizeAs(input)
   if before > 0 then gi:narrow(dim, 1, before):copy(gradOutput:narrow(dim, 1, before)) end
   if before < size then
      gi:narrow(dim, before + 1, size - before):copy(gradOutput:narrow(dim, before + pad + 1, size - before))
   end
   return self.gradInput
end
