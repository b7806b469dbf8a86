-- nn.Narrow(dimension, offset[, length = 1]): input:narrow(dimension, offset, length), copied.
-- As in Torch7, a negative dimension counts from the last one, a negative length ends that many
-- elements before the end (-1: at the end) and a negative offset starts at 1 and leaves out the
-- last `length` elements, so the module fits inputs whose size is not known in advance.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Narrow, parent = torch.class('nn.Narrow', 'nn.Module')
local result = nn.utils.result

function Narrow:__init(dimension, offset, length)
   parent.__init(self)
   if not T.is_int(dimension) or not T.is_int(offset) or (length ~= nil and not T.is_int(length)) then
      error(('nn.Narrow(dimension, offset[, length]): expected integers, got %s, %s, %s'):format(
         tostring(dimension), tostring(offset), tostring(length)), 2)
   end
   self.dimension = dimension
   self.index = offset
   self.length = length or 1
end

-- the dimension, first index and length this input is narrowed to
function Narrow:_range(input)
   T.expect_tensor(input, 'nn.Narrow', 'input', 3)
   local nd = input:dim()
   local dim = self.dimension < 0 and nd + self.dimension + 1 or self.dimension
   if dim < 1 or dim > nd then
      error(('nn.Narrow: dimension %d is out of range for an input of size %s'):format(self.dimension,
         table.concat(T.sizes(input), 'x')), 3)
   end
   local size, index, length = input:size(dim), self.index, self.length
   if length < 0 then length = size - index + length + 2 end
   if index < 0 then
      index = 1
      length = size - length
   end
   if index < 1 or length < 1 or index + length - 1 > size then
      error(('nn.Narrow: offset %d, length %d select [%d, %d], outside dimension %d of an input of size %s'):format(
         self.index, self.length, index, index + length - 1, dim, table.concat(T.sizes(input), 'x')), 3)
   end
   return dim, index, length
end

function Narrow:updateOutput(input)
   local dim, index, length = self:_range(input)
   local part = input:narrow(dim, index, length)
   result(self, 'output', input):resizeAs(part):copy(part)
   return self.output
end

function Narrow:updateGradInput(input, gradOutput)
   local dim, index, length = self:_range(input)
   T.expect_tensor(gradOutput, 'nn.Narrow', 'gradOutput', 2)
   result(self, 'gradInput', input):resizeAs(input):zero()
   local part = self.gradInput:narrow(dim, index, length)
   if part:nElement() ~= gradOutput:nElement() then
      error(('nn.Narrow: gradOutput has size %s, the output size %s'):format(table.concat(T.sizes(gradOutput), 'x'),
         table.concat(T.sizes(part), 'x')), 2)
   end
   part:copy(gradOutput)
   return self.gradInput
end
