-- nn.Tanh: tanh(x) elementwise; backward uses the output.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local C = require('moontorch.internal').clib

local Tanh = torch.class('nn.Tanh', 'nn.Module')

nn.ReLU.defineOutputActivation(Tanh, C.MT_ACT_TANH)
