-- nn.LogSoftMax: x_i - log sum_j exp(x_j) over the last dimension of a vector or N x C batch (and over dim 2 of
-- N x C x H x W inputs, as Torch7's), computed in C.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local LogSoftMax = torch.class('nn.LogSoftMax', 'nn.Module')

-- nn.SoftMax's code with the log flag set
function LogSoftMax:updateOutput(input) return nn.SoftMax.softmax_forward(self, input, 1) end
function LogSoftMax:updateGradInput(input, gradOutput)
   return nn.SoftMax.softmax_backward(self, input, gradOutput, 1)
end
