-- nn.SpatialDepthWiseConvolution(nInputPlane, nOutputPlane, kW, kH, [dW=1], [dH=1], [padW=0], [padH=padW])
-- as in Torch7: each input plane i is convolved with nOutputPlane kernels of its own, giving
-- nInputPlane*nOutputPlane output planes ordered (i-1)*nOutputPlane + o. Torch7's layout: weight
-- nOutputPlane x (nInputPlane*kH*kW) (read as nOut x nIn x kH x kW; a 4-d weight from a Torch7 file
-- works too), bias nOutputPlane x nInputPlane. The math is the grouped convolution of
-- csrc/nn/conv.c (groups = nInputPlane) on the weight rearranged to plane-major order.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local DW, parent = torch.class('nn.SpatialDepthWiseConvolution', 'nn.Module')

local NAME = 'nn.SpatialDepthWiseConvolution'

function DW:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   dW, dH = dW or 1, dH or 1
   cc.posints(NAME, { { nInputPlane, 'nInputPlane' }, { nOutputPlane, 'nOutputPlane' }, { kW, 'kW' }, { kH, 'kH' },
      { dW, 'dW' }, { dH, 'dH' } })
   self.nInputPlane, self.nOutputPlane = nInputPlane, nOutputPlane
   self.kW, self.kH, self.dW, self.dH = kW, kH, dW, dH
   self.padW = padW or 0
   self.padH = padH or self.padW
   if self.padW < 0 or self.padH < 0 then
      error(('%s: padding must not be negative, got %s,%s'):format(NAME, self.padW, self.padH), 2)
   end
   self.weight = torch.Tensor(nOutputPlane, nInputPlane * kH * kW)
   self.bias = torch.Tensor(nOutputPlane, nInputPlane)
   self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane * kH * kW):zero()
   self.gradBias = torch.Tensor(nOutputPlane, nInputPlane):zero()
   self:reset()
end

DW.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(kW*kH*nInputPlane)
function DW:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH * self.nInputPlane) end

-- the grouped-convolution kernel: (nIn*nOut) x 1 x kH x kW with plane i's kernels together
function DW:_kernel()
   local nIn, nOut = self.nInputPlane, self.nOutputPlane
   return self.weight:view(nOut, nIn, self.kH, self.kW):transpose(1, 2):contiguous()
      :view(nIn * nOut, 1, self.kH, self.kW)
end

function DW:updateOutput(input)
   -- files from older Torch7 versions have one `padding` field
   if self.padding then self.padW, self.padH, self.padding = self.padding, self.padding, nil end
   local x, single = cc.batched4d(self, NAME, input)
   local bias = self.bias and self.bias:t():contiguous():view(-1)
   local out = cc.forward(input.new(), x, self:_kernel(), bias, self.dW, self.dH, self.padW, self.padH,
      self.nInputPlane)
   self.output = single and out:select(1, 1) or out
   return self.output
end

local function grad4d(self, x, gradOutput, single)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   local g = gradOutput
   if single and g:dim() == 3 then g = g:view(1, g:size(1), g:size(2), g:size(3)) end
   if g:dim() ~= 4 or g:size(1) ~= x:size(1) or g:size(2) ~= self.nInputPlane * self.nOutputPlane then
      error(('%s: gradOutput has size %s, expected the output size %s'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.output), 'x')), 3)
   end
   return g
end

function DW:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = cc.batched4d(self, NAME, input)
   local g = grad4d(self, x, gradOutput, single)
   local gi = cc.backward_input(input.new(), x, g, self:_kernel(), self.dW, self.dH, self.padW, self.padH,
      self.nInputPlane)
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function DW:accGradParameters(input, gradOutput, scale)
   local x, single = cc.batched4d(self, NAME, input)
   local g = grad4d(self, x, gradOutput, single)
   local nIn, nOut = self.nInputPlane, self.nOutputPlane
   local gw = input.new(nIn * nOut, 1, self.kH, self.kW):zero()
   local gb = self.gradBias and input.new(nIn * nOut):zero()
   cc.backward_params(gw, gb, x, g, scale or 1, self.dW, self.dH, self.padW, self.padH, nIn)
   -- back from plane-major to Torch7's nOut x nIn order
   self.gradWeight:view(nOut, nIn, self.kH, self.kW):add(gw:view(nIn, nOut, self.kH, self.kW):transpose(1, 2))
   if gb then self.gradBias:add(gb:view(nIn, nOut):t()) end
end

function DW:__tostring__()
   local s = ('%s(%d -> %d, %dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. (', %d,%d'):format(self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   return s .. (self.bias and ')' or ') without bias')
end

return DW
