-- nn.Min(dimension = 1[, nInputDims]): the minimum over a dimension; see nn.Max, which it
-- mirrors.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Min = torch.class('nn.Min', 'nn.Module')

nn.Max.defineExtremum(Min, torch.min)
