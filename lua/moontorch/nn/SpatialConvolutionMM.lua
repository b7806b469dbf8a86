-- nn.SpatialConvolutionMM(nIn, nOut, kW, kH, [dW=1], [dH=1], [padW=0], [padH=padW]) as in Torch7:
-- nn.SpatialConvolution's arithmetic with the weight kept as the 2-d matrix of Torch7's unfold +
-- GEMM, nOut x (nIn*kH*kW) (a 4-d weight, as some saved files hold, is used as it is). The C
-- convolution (csrc/nn/conv.c) runs on a 4-d view of it, so weights shared with getParameters'
-- flat vectors stay shared. Files from before padW/padH (one `padding` field) still load.
local torch = require 'moontorch'
require 'moontorch.nn'
local cc = require 'moontorch.nn.conv_common'

local MM, parent = torch.class('nn.SpatialConvolutionMM', 'nn.Module')

local NAME = 'nn.SpatialConvolutionMM'

function MM:__init(nIn, nOut, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   dW, dH = dW or 1, dH or 1
   cc.posints(NAME, { { nIn, 'nInputPlane' }, { nOut, 'nOutputPlane' }, { kW, 'kW' }, { kH, 'kH' }, { dW, 'dW' },
      { dH, 'dH' } })
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.kW, self.kH, self.dW, self.dH = kW, kH, dW, dH
   self.padW = padW or 0
   self.padH = padH or self.padW
   if self.padW < 0 or self.padH < 0 then
      error(('%s: padding must not be negative, got %s,%s'):format(NAME, self.padW, self.padH), 2)
   end
   self.weight = torch.Tensor(nOut, nIn * kH * kW)
   self.bias = torch.Tensor(nOut)
   self.gradWeight = torch.Tensor(nOut, nIn * kH * kW):zero()
   self.gradBias = torch.Tensor(nOut):zero()
   self:reset()
end

MM.noBias = cc.noBias

function MM:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH * self.nInputPlane) end

-- Torch7 files written before padW/padH hold one `padding`
local function padding(self)
   if self.padding then
      self.padW, self.padH, self.padding = self.padding, self.padding, nil
   end
   return self.padW or 0, self.padH or 0
end

-- t (weight or gradWeight) as nOut x nIn x kH x kW, and whether that is a copy
local function as4d(self, t, what)
   if t:dim() == 4 then return t, false end
   if t:nElement() ~= self.nOutputPlane * self.nInputPlane * self.kH * self.kW then
      error(('%s: %s has %d elements, expected %d x %d (nOutputPlane x nInputPlane*kH*kW)'):format(NAME, what,
         t:nElement(), self.nOutputPlane, self.nInputPlane * self.kH * self.kW), 4)
   end
   local c = t:isContiguous() and t or t:contiguous()
   return c:view(self.nOutputPlane, self.nInputPlane, self.kH, self.kW), c ~= t
end

function MM:updateOutput(input)
   local padW, padH = padding(self)
   local x, single = cc.batched4d(self, NAME, input)
   local out = cc.forward(input.new(), x, as4d(self, self.weight, 'weight'), self.bias, self.dW, self.dH, padW, padH,
      1)
   self.output = single and out:select(1, 1) or out
   return self.output
end

function MM:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local padW, padH = padding(self)
   local x, single = cc.batched4d(self, NAME, input)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local gi = cc.backward_input(input.new(), x, g, as4d(self, self.weight, 'weight'), self.dW, self.dH, padW, padH, 1)
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function MM:accGradParameters(input, gradOutput, scale)
   local padW, padH = padding(self)
   local x, single = cc.batched4d(self, NAME, input)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local gw, copied = as4d(self, self.gradWeight, 'gradWeight')
   cc.backward_params(gw, self.gradBias, x, g, scale or 1, self.dW, self.dH, padW, padH, 1)
   if copied then self.gradWeight:copy(gw:view(self.gradWeight:size())) end
end

function MM:type(typename, tensorCache)
   -- Torch7's unfold buffers (in files it saved) are not used here
   self.finput, self.fgradInput = nil, nil
   return parent.type(self, typename, tensorCache)
end

function MM:clearState()
   self.finput, self.fgradInput = nil, nil
   return parent.clearState(self)
end

function MM:__tostring__()
   local padW, padH = padding(self)
   local s = ('%s(%d -> %d, %dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or padW ~= 0 or padH ~= 0 then s = s .. (', %d,%d'):format(self.dW, self.dH) end
   if padW ~= 0 or padH ~= 0 then s = s .. (', %d,%d'):format(padW, padH) end
   return s .. (self.bias and ')' or ') without bias')
end

return MM
