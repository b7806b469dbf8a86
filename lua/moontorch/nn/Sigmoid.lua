-- nn.Sigmoid: 1 / (1 + exp(-x)) elementwise; backward uses the output.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local C = require('moontorch.internal').clib

local Sigmoid = torch.class('nn.Sigmoid', 'nn.Module')

nn.ReLU.defineOutputActivation(Sigmoid, C.MT_ACT_SIGMOID)
