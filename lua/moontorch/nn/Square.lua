-- nn.Square: x^2 elementwise; the gradient is 2 x gradOutput.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Square = torch.class('nn.Square', 'nn.Module')

function Square:updateOutput(input)
   return torch.cmul(E.output(self, input), input, input)
end

function Square:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.cmul(gi, input, gradOutput):mul(2)
end
