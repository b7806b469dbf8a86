-- nn.Sigmoid: 1 / (1 + exp(-x)) elementwise; backward uses the output.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local C = require('moontorch.internal').C

local Sigmoid, parent = torch.class('nn.Sigmoid', 'nn.Module')

function Sigmoid:updateOutput(input)
   return nn.ReLU.activation_forward(self, input, C.MT_ACT_SIGMOID, 0, false)
end

function Sigmoid:updateGradInput(input, gradOutput)
   return nn.ReLU.activation_backward(self, self.output, gradOutput, C.MT_ACT_SIGMOID, 0, false)
end
