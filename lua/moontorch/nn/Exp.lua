-- nn.Exp: exp(x) elementwise; the gradient reuses the output (d exp(x) = exp(x) dx).
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Exp = torch.class('nn.Exp', 'nn.Module')

function Exp:updateOutput(input)
   return torch.exp(E.output(self, input), input)
end

function Exp:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.cmul(gi, self.output, gradOutput)
end
