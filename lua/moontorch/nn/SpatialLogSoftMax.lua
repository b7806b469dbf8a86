-- nn.SpatialLogSoftMax: LogSoftMax over the feature planes at each spatial location of a
-- C x H x W or N x C x H x W input (over the last dimension of a vector or N x C batch), as
-- Torch7's, which runs THNN's LogSoftMax: nn.LogSoftMax's C code normalises over the same dims.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local SpatialLogSoftMax = torch.class('nn.SpatialLogSoftMax', 'nn.Module')

function SpatialLogSoftMax:updateOutput(input) return nn.SoftMax.softmax_forward(self, input, 1) end

function SpatialLogSoftMax:updateGradInput(input, gradOutput)
   return nn.SoftMax.softmax_backward(self, input, gradOutput, 1)
end
