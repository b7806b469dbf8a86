-- nn.SpatialSoftMax: SoftMax over the feature planes at each spatial location of a C x H x W or
-- N x C x H x W input (over the last dimension of a vector or N x C batch). nn.SoftMax already
-- normalises over exactly these dimensions, as Torch7's THNN SoftMax does, so it runs that code.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local SpatialSoftMax = torch.class('nn.SpatialSoftMax', 'nn.Module')

function SpatialSoftMax:updateOutput(input) return nn.SoftMax.softmax_forward(self, input, 0) end

function SpatialSoftMax:updateGradInput(input, gradOutput)
   return nn.SoftMax.softmax_backward(self, input, gradOutput, 0)
end
