-- nn.Abs: |x| elementwise; the gradient is sign(x) * gradOutput (0 at x = 0, as Torch7).
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Abs = torch.class('nn.Abs', 'nn.Module')

function Abs:updateOutput(input)
   return torch.abs(E.output(self, input), input)
end

function Abs:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.sign(gi, input):cmul(gradOutput)
end
