-- nn.HardShrink([lambda = 0.5]): x where |x| > lambda, else 0; the gradient passes where x does.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local HardShrink, parent = torch.class('nn.HardShrink', 'nn.Module')

function HardShrink:__init(lam)
   parent.__init(self)
   if lam ~= nil and type(lam) ~= 'number' then
      error('nn.HardShrink: lambda must be a number, got ' .. type(lam), 2)
   end
   self.lambda = lam or 0.5
end

-- Shared with nn.SoftShrink, whose gradient is zero on the same band.
function HardShrink.band(input, lambda) return torch.abs(input):le(lambda) end

function HardShrink:updateOutput(input)
   P.checkInput(self, input)
   return P.output(self, input, false):maskedFill(HardShrink.band(input, self.lambda), 0)
end

function HardShrink:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   return P.gradInput(self, gradOutput, false):maskedFill(HardShrink.band(input, self.lambda), 0)
end
