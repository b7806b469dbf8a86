-- nn.SplitTable(dimension [, nInputDims]): a tensor -> the table of its slices along dimension
-- (views, no copy). A negative dimension counts from the end; with nInputDims, an input with one
-- more dimension is a batch and the dimension shifts by one.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local SplitTable, parent = torch.class('nn.SplitTable', 'nn.Module')

function SplitTable:__init(dimension, nInputDims)
   parent.__init(self)
   if type(dimension) ~= 'number' then error('nn.SplitTable: expected a dimension, got ' .. tostring(dimension), 2) end
   self.dimension = dimension
   self.nInputDims = nInputDims
   self.output = {}
end

function SplitTable:_getPositiveDimension(input)
   if not torch.isTensor(input) then error('nn.SplitTable: expected a tensor, got ' .. torch.type(input), 3) end
   local d = self.dimension
   if d < 0 then
      d = input:dim() + d + 1
   elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
      d = d + 1
   end
   if d < 1 or d > input:dim() then
      error(('nn.SplitTable: dimension %d out of range for an input of size %s'):format(self.dimension,
         utils.sizeString(input)), 3)
   end
   return d
end

function SplitTable:updateOutput(input)
   local d = self:_getPositiveDimension(input)
   local out = {}
   for i = 1, input:size(d) do out[i] = input:select(d, i) end
   self.output = out
   return self.output
end

-- a missing gradOutput[i] (the slice was not used) contributes zeros
function SplitTable:updateGradInput(input, gradOutput)
   local d = self:_getPositiveDimension(input)
   if self.gradInput:type() ~= input:type() then self.gradInput = input.new() end
   self.gradInput:resizeAs(input):zero()
   for i = 1, input:size(d) do
      if gradOutput[i] ~= nil then self.gradInput:select(d, i):copy(gradOutput[i]) end
   end
   return self.gradInput
end
