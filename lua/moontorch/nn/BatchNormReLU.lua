-- nn.BatchNormReLU(nFeature [, eps] [, momentum] [, affine]): SpatialBatchNormalization followed
-- by ReLU in one C pass each way (forward and backward), bit-identical to the two modules: the
-- BN output is rounded to the dtype before the clamp, as the separate modules round it. Same
-- fields as SpatialBatchNormalization (weight, bias, running_mean, running_var, save_*), so
-- weights, getParameters and checkpoints carry; nn.utils.fuseBatchNorm builds it from a
-- [BN, ReLU] pair sharing their tensors (then nDim is the BN's, so 2-d BN fuses too).
-- Backward reads the output for the ReLU's mask, as nn.ReLU(true) does: an in-place module after
-- it that changes that output (CAddTable(true) with it as first input) changes the gradient.
local torch = require 'moontorch'
require 'moontorch.nn'
require 'moontorch.nn.SpatialBatchNormalization'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local BNR = torch.class('nn.BatchNormReLU', 'nn.SpatialBatchNormalization')

local function h(t) return t and t.h or nil end

function BNR:updateOutput(input)
   self:checkInputDim(input)
   return self:forwardSlices(input, nil, function(out, x, _, sm, ss)
      check(C.mt_nn_batchnorm_act_forward(out.h, x.h, nil, h(self.weight), h(self.bias), self.running_mean.h,
         self.running_var.h, sm.h, ss.h, self.train and 1 or 0, self.momentum, self.eps, 1))
   end)
end

local function backward(self, input, gradOutput, scale, gradInput, gradWeight, gradBias)
   self:checkInputDim(input)
   self:backwardSlices(input, gradOutput, gradInput, nil, function(gi, _, x, y, go, sm, ss)
      check(C.mt_nn_batchnorm_act_backward(h(gi), nil, h(gradWeight), h(gradBias), x.h, y.h, go.h, h(self.weight),
         self.running_mean.h, self.running_var.h, sm.h, ss.h, self.train and 1 or 0, scale or 1, self.eps, 1))
   end)
   return self.gradInput
end

function BNR:backward(input, gradOutput, scale)
   return backward(self, input, gradOutput, scale, self.gradInput, self.gradWeight, self.gradBias)
end

function BNR:updateGradInput(input, gradOutput)
   return backward(self, input, gradOutput, 1, self.gradInput, nil, nil)
end

function BNR:accGradParameters(input, gradOutput, scale)
   if self.affine then backward(self, input, gradOutput, scale, nil, self.gradWeight, self.gradBias) end
end

return BNR
