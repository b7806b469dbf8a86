-- nn.Power(p): x^p elementwise; the gradient is p x^(p-1) gradOutput.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Power, parent = torch.class('nn.Power', 'nn.Module')

function Power:__init(p)
   parent.__init(self)
   if type(p) ~= 'number' then error('nn.Power: expected the power p as a number, got ' .. torch.type(p), 2) end
   self.pow = p
end

function Power:updateOutput(input)
   return torch.pow(E.output(self, input), input, self.pow)
end

function Power:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.pow(gi, input, self.pow - 1):cmul(gradOutput):mul(self.pow)
end
