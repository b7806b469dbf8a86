-- nn.HardTanh([min_value = -1, max_value = 1] [, inplace]): x clamped to [min_value, max_value];
-- the gradient passes only strictly inside the range (Torch7's rule at the edges).
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local HardTanh, parent = torch.class('nn.HardTanh', 'nn.Module')

function HardTanh:__init(min_value, max_value, inplace)
   parent.__init(self)
   self.min_val = min_value or -1
   self.max_val = max_value or 1
   self.inplace = P.checkInplace('nn.HardTanh', inplace)
   if type(self.min_val) ~= 'number' or type(self.max_val) ~= 'number' or self.max_val <= self.min_val then
      error(('nn.HardTanh: max_value must be a number larger than min_value, got [%s, %s]')
         :format(tostring(self.min_val), tostring(self.max_val)), 2)
   end
end

-- Shared with nn.ReLU6 (the range [0, 6]).
function HardTanh.clampForward(self, input, lo, hi, inplace)
   P.checkInput(self, input)
   return P.output(self, input, inplace):clamp(lo, hi)
end

-- In place the input holds the clamped output; its values at the bounds are exactly the ones
-- whose gradient is zero, so the same test serves.
function HardTanh.clampBackward(self, input, gradOutput, lo, hi, inplace)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local inside = P.mask(input, 'gt', lo):cmul(P.mask(input, 'lt', hi))
   return P.gradInput(self, gradOutput, inplace):cmul(inside)
end

function HardTanh:updateOutput(input)
   return HardTanh.clampForward(self, input, self.min_val, self.max_val, self.inplace)
end

function HardTanh:updateGradInput(input, gradOutput)
   return HardTanh.clampBackward(self, input, gradOutput, self.min_val, self.max_val, self.inplace)
end
