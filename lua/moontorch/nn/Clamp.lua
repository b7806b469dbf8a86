-- nn.Clamp(min_value, max_value): x clamped into [min_value, max_value]. Torch7's Clamp is a
-- HardTanh with these bounds; this one keeps HardTanh's fields (min_val, max_val, inplace =
-- false) so saved models load, and its gradient: it passes only where min_val < x < max_val.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Clamp, parent = torch.class('nn.Clamp', 'nn.Module')

function Clamp:__init(min_value, max_value)
   parent.__init(self)
   if type(min_value) ~= 'number' or type(max_value) ~= 'number' then
      error(('nn.Clamp: expected numbers min_value and max_value, got %s and %s'):format(torch.type(min_value),
         torch.type(max_value)), 2)
   end
   if not (max_value > min_value) then -- luacheck: ignore 581 (rejects NaN)
      error(('nn.Clamp: max_value must be larger than min_value, got %g and %g'):format(min_value, max_value), 2)
   end
   self.min_val, self.max_val = min_value, max_value
   self.inplace = false
end

function Clamp:updateOutput(input)
   return torch.clamp(E.output(self, input), input, self.min_val, self.max_val)
end

function Clamp:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   local outside = torch.le(input, self.min_val):add(torch.ge(input, self.max_val))
   return gi:copy(gradOutput):maskedFill(outside, 0)
end
