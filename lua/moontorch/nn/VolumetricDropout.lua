-- nn.VolumetricDropout([p = 0.5, stochasticInference = false]): nn.SpatialDropout over
-- volumetric feature maps. Input C x T x H x W or N x C x T x H x W; each T x H x W map is kept
-- (unscaled) or zeroed as a whole in training, and scaled by 1 - p in evaluate().
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local VolumetricDropout = torch.class('nn.VolumetricDropout', 'nn.Module')

nn.SpatialDropout.defineFeatureDropout(VolumetricDropout, 3,
   '4-d (features x time x height x width) or 5-d (batch x features x time x height x width)')
