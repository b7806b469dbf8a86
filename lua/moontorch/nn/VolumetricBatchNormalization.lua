-- nn.VolumetricBatchNormalization(nFeature [, eps] [, momentum] [, affine]) as in Torch7: batch
-- normalization of N x C x T x H x W inputs over N, T, H and W per channel (the C pass of
-- nn.BatchNormalization normalizes every dimension after the second).
local torch = require 'moontorch'
require 'moontorch.nn'

local VBN = torch.class('nn.VolumetricBatchNormalization', 'nn.BatchNormalization')
VBN.nDim = 5

return VBN
