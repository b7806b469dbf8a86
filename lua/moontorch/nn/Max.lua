-- nn.Max(dimension = 1[, nInputDims]): the maximum over a dimension, which is removed (kept for
-- a vector input, which gives one element). A negative dimension counts from the last one;
-- with nInputDims, an input of nInputDims + 1 dimensions is a batch and dimension + 1 is
-- reduced. The positions of the maxima (self._indices, int64 on the input's device) route the
-- gradient. nn.Min is the same with the minimum (Max.defineExtremum).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Max = torch.class('nn.Max', 'nn.Module')
local result = nn.utils.result

-- Gives `class` (nn.Max or nn.Min) its constructor and passes; `reduce` is torch.max or
-- torch.min (values, indices, input, dim).
function Max.defineExtremum(class, reduce)
   local parent = nn.Module

   function class:__init(dimension, nInputDims)
      parent.__init(self)
      dimension = dimension or 1
      if not T.is_int(dimension) then
         error(('%s: dimension must be an integer, got %s'):format(torch.type(self), tostring(dimension)), 2)
      end
      self.dimension = dimension
      self.nInputDims = nInputDims -- no default: Torch7 models saved without it must load alike
   end

   function class:_getPositiveDimension(input)
      local dimension = self.dimension
      if dimension < 0 then
         dimension = input:dim() + dimension + 1
      elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
         dimension = dimension + 1
      end
      if dimension < 1 or dimension > input:dim() then
         error(('%s: dimension %d is out of range for an input of size %s'):format(torch.type(self),
            self.dimension, table.concat(T.sizes(input), 'x')), 3)
      end
      return dimension
   end

   function class:updateOutput(input)
      T.expect_tensor(input, torch.type(self), 'input', 2)
      local dimension = self:_getPositiveDimension(input)
      if not torch.isTensor(self._indices) or self._indices:device() ~= input:device() then
         self._indices = T.empty_tensor(torch.LongTensor():dtype(), input:device())
      end
      local values = result(self, '_output', input)
      reduce(values, self._indices, input, dimension)
      self.output = input:dim() > 1 and values:select(dimension, 1) or values
      return self.output
   end

   function class:updateGradInput(input, gradOutput)
      T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 2)
      local dimension = self:_getPositiveDimension(input)
      if not self._indices then error(torch.type(self) .. ': backward before forward', 2) end
      if gradOutput:nElement() ~= self._indices:nElement() then
         error(('%s: gradOutput has size %s, the output size %s'):format(torch.type(self),
            table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.output), 'x')), 2)
      end
      local g = input:dim() > 1 and gradOutput:unsqueeze(dimension) or gradOutput
      result(self, 'gradInput', input):resizeAs(input):zero():scatter(dimension, self._indices, g)
      return self.gradInput
   end

   function class:clearState()
      self._indices, self._output = nil, nil
      self.output = torch.Tensor() -- a view of _output
      self.gradInput:set()
      return self
   end
end

Max.defineExtremum(Max, torch.max)
