-- nn.Tanh: tanh(x) elementwise; backward uses the output.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local C = require('moontorch.internal').C

local Tanh, parent = torch.class('nn.Tanh', 'nn.Module')

function Tanh:updateOutput(input)
   return nn.ReLU.activation_forward(self, input, C.MT_ACT_TANH, 0, false)
end

function Tanh:updateGradInput(input, gradOutput)
   return nn.ReLU.activation_backward(self, self.output, gradOutput, C.MT_ACT_TANH, 0, false)
end
