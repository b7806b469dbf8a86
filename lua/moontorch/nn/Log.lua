-- nn.Log: the natural logarithm elementwise; the gradient is gradOutput / x.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'

local Log = torch.class('nn.Log', 'nn.Module')

function Log:updateOutput(input)
   return torch.log(E.output(self, input), input)
end

function Log:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.cdiv(gi, gradOutput, input)
end
