-- nn.L1Cost(): a criterion on the input alone (any target is ignored), the sum of |x| (never
-- averaged); its gradient is sign(x), 0 at 0 (as THNN's L1Cost).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local L1Cost, parent = torch.class('nn.L1Cost', 'nn.Criterion')

function L1Cost:__init() parent.__init(self) end

local function checked(input)
   T.expect_tensor(input, 'nn.L1Cost', 'input', 4)
   if not T.dtypes[input:dtype() + 1].is_float then
      error(('nn.L1Cost: expected a floating point input, got a %s'):format(input:type()), 4)
   end
   return input
end

function L1Cost:updateOutput(input)
   self.output = checked(input):norm(1)
   return self.output
end

function L1Cost:updateGradInput(input)
   self.gradInput = nn.utils.result(self, 'gradInput', checked(input)):resizeAs(input):sign(input)
   return self.gradInput
end

function L1Cost:clearState()
   self.output_tensor = nil -- Torch7's one-element buffer, in files it saved
   return parent.clearState(self)
end
