-- nn.SpatialSubSampling(nInputPlane, kW, kH, [dW=1], [dH=1]) as in Torch7: each plane's kW x kH
-- windows are summed, times that plane's weight, plus its bias (weight and bias: nInputPlane).
-- That is a grouped convolution (groups = nInputPlane, csrc/nn/conv.c) whose kernel for plane c
-- is filled with weight[c]; the weight's gradient is the sum of that kernel's gradient.
local torch = require 'moontorch'
require 'moontorch.nn'
local cc = require 'moontorch.nn.conv_common'

local Sub, parent = torch.class('nn.SpatialSubSampling', 'nn.Module')

local NAME = 'nn.SpatialSubSampling'

function Sub:__init(nInputPlane, kW, kH, dW, dH)
   parent.__init(self)
   dW, dH = dW or 1, dH or 1
   cc.posints(NAME, { { nInputPlane, 'nInputPlane' }, { kW, 'kW' }, { kH, 'kH' }, { dW, 'dW' }, { dH, 'dH' } })
   self.nInputPlane, self.kW, self.kH, self.dW, self.dH = nInputPlane, kW, kH, dW, dH
   self.weight = torch.Tensor(nInputPlane)
   self.bias = torch.Tensor(nInputPlane)
   self.gradWeight = torch.Tensor(nInputPlane):zero()
   self.gradBias = torch.Tensor(nInputPlane):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*kH)
function Sub:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH) end

function Sub:_kernel()
   return cc.filled_kernel(self.weight, self.nInputPlane, self.kH, self.kW)
end

function Sub:updateOutput(input)
   local x, single = cc.batched4d(self, NAME, input, true)
   local out = cc.forward(input.new(), x, self:_kernel(), self.bias, self.dW, self.dH, 0, 0, self.nInputPlane)
   self.output = single and out:select(1, 1) or out
   return self.output
end

function Sub:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = cc.batched4d(self, NAME, input, true)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local gi = cc.backward_input(input.new(), x, g, self:_kernel(), self.dW, self.dH, 0, 0, self.nInputPlane)
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function Sub:accGradParameters(input, gradOutput, scale)
   local x, single = cc.batched4d(self, NAME, input, true)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local gk = input.new(self.nInputPlane, 1, self.kH, self.kW):zero()
   cc.backward_params(gk, self.gradBias, x, g, scale or 1, self.dW, self.dH, 0, 0, self.nInputPlane)
   self.gradWeight:add(cc.kernel_sums(gk, self.nInputPlane))
end

return Sub
