-- nn.Select(dimension, index): input:select(dimension, index), copied. Negative dimension and
-- index count from the end (-1: the last), as in Torch7.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Select, parent = torch.class('nn.Select', 'nn.Module')
local result = nn.utils.result

function Select:__init(dimension, index)
   parent.__init(self)
   if not T.is_int(dimension) or not T.is_int(index) then
      error(('nn.Select(dimension, index): expected integers, got %s, %s'):format(tostring(dimension),
         tostring(index)), 2)
   end
   self.dimension = dimension
   self.index = index
end

-- the positive dimension and index for this input
function Select:_where(input)
   T.expect_tensor(input, 'nn.Select', 'input', 3)
   local nd = input:dim()
   if nd < 2 then -- selecting in a vector gives a number in Torch7, not a tensor
      error(('nn.Select: expected an input of at least 2 dimensions, got size %s'):format(
         table.concat(T.sizes(input), 'x')), 3)
   end
   local dim = self.dimension < 0 and nd + self.dimension + 1 or self.dimension
   if dim < 1 or dim > nd then
      error(('nn.Select: dimension %d is out of range for an input of size %s'):format(self.dimension,
         table.concat(T.sizes(input), 'x')), 3)
   end
   local index = self.index < 0 and input:size(dim) + self.index + 1 or self.index
   if index < 1 or index > input:size(dim) then
      error(('nn.Select: index %d is out of range for dimension %d of an input of size %s'):format(self.index, dim,
         table.concat(T.sizes(input), 'x')), 3)
   end
   return dim, index
end

function Select:updateOutput(input)
   local dim, index = self:_where(input)
   local part = input:select(dim, index)
   result(self, 'output', input):resizeAs(part):copy(part)
   return self.output
end

function Select:updateGradInput(input, gradOutput)
   local dim, index = self:_where(input)
   T.expect_tensor(gradOutput, 'nn.Select', 'gradOutput', 2)
   result(self, 'gradInput', input):resizeAs(input):zero()
   local part = self.gradInput:select(dim, index)
   if part:nElement() ~= gradOutput:nElement() then
      error(('nn.Select: gradOutput has size %s, the output size %s'):format(table.concat(T.sizes(gradOutput), 'x'),
         table.concat(T.sizes(part), 'x')), 2)
   end
   part:copy(gradOutput)
   return self.gradInput
end
