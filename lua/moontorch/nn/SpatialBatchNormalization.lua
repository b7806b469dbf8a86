-- nn.SpatialBatchNormalization(nFeature [, eps] [, momentum] [, affine]): batch normalization
-- of N x C x H x W inputs over N, H and W per channel.
local torch = require 'moontorch'
require 'moontorch.nn'

local SBN = torch.class('nn.SpatialBatchNormalization', 'nn.BatchNormalization')
SBN.nDim = 4
