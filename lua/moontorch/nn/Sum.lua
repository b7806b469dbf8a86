-- nn.Sum([dimension = 1, nInputDims, sizeAverage = false, squeeze = true]): the sum over a
-- dimension, divided by its size when sizeAverage (nn.Mean). The dimension is removed unless
-- squeeze is false (or the output is a vector, which keeps its one element). A negative
-- dimension counts from the last one; with nInputDims, an input of nInputDims + 1 dimensions
-- is a batch and dimension + 1 is summed.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Sum, parent = torch.class('nn.Sum', 'nn.Module')
local result = nn.utils.result

function Sum:__init(dimension, nInputDims, sizeAverage, squeeze)
   parent.__init(self)
   self.dimension = dimension or 1
   if not T.is_int(self.dimension) then
      error(('%s: dimension must be an integer, got %s'):format(torch.type(self), tostring(dimension)), 2)
   end
   self.nInputDims = nInputDims -- no default: Torch7 models saved without it must load alike
   self.sizeAverage = sizeAverage or false
   if squeeze ~= nil and type(squeeze) ~= 'boolean' then
      error(('%s: squeeze must be true or false, got %s'):format(torch.type(self), tostring(squeeze)), 2)
   end
   self.squeeze = squeeze ~= false
end

function Sum:_getPositiveDimension(input)
   local dimension = self.dimension
   if dimension < 0 then
      dimension = input:dim() + dimension + 1
   elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
      dimension = dimension + 1
   end
   if dimension < 1 or dimension > input:dim() then
      error(('%s: dimension %d is out of range for an input of size %s'):format(torch.type(self), self.dimension,
         table.concat(T.sizes(input), 'x')), 3)
   end
   return dimension
end

function Sum:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input', 2)
   local dimension = self:_getPositiveDimension(input)
   local out = result(self, 'output', input)
   torch.sum(out, input, dimension)
   if self.sizeAverage then out:div(input:size(dimension)) end
   if (self.squeeze == nil or self.squeeze) and out:dim() > 1 then
      out:set(out:select(dimension, 1))
   end
   return self.output
end

function Sum:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 2)
   local dimension = self:_getPositiveDimension(input)
   local size = T.sizes(input)
   size[dimension] = 1
   if gradOutput:nElement() ~= input:nElement() / input:size(dimension) then
      error(('%s: gradOutput has size %s, expected %d elements for an input of size %s'):format(torch.type(self),
         table.concat(T.sizes(gradOutput), 'x'), input:nElement() / input:size(dimension),
         table.concat(T.sizes(input), 'x')), 2)
   end
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   local gi = result(self, 'gradInput', input):resizeAs(input)
   gi:copy(g:view(size):expandAs(input))
   if self.sizeAverage then gi:div(input:size(dimension)) end
   return self.gradInput
end
