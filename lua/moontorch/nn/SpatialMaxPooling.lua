-- nn.SpatialMaxPooling(kW, kH, [dW=kW], [dH=kH], [padW=0], [padH=0]) with :ceil()/:floor(), as in
-- Torch7. Input: C x H x W or N x C x H x W. The positions of the maxima are kept in
-- self.indices (int64) for the backward pass. Math in C (csrc/nn/pool.c).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'
local C, check = T.clib, T.check

local Pool, parent = torch.class('nn.SpatialMaxPooling', 'nn.Module')

function Pool:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   nn.utils.checkWindow(self, kW, kH)
   self.kW, self.kH = kW, kH
   self.dW, self.dH = dW or kW, dH or kH
   self.padW, self.padH = padW or 0, padH or 0
   self.ceil_mode = false
   self.indices = torch.LongTensor()
end

function Pool:ceil() self.ceil_mode = true return self end
function Pool:floor() self.ceil_mode = false return self end

local result = nn.utils.result

function Pool:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   -- Torch7's fields: nn.SpatialMaxUnpooling restores this size
   if input:dim() >= 2 then self.iheight, self.iwidth = input:size(input:dim() - 1), input:size(input:dim()) end
   -- the indices live on the input's device (int64, 0-based within a plane)
   if not torch.isTensor(self.indices) or self.indices:device() ~= input:device() then
      self.indices = T.empty_tensor(torch.LongTensor():dtype(), input:device())
   end
   check(C.mt_maxpool2d_forward(result(self, 'output', input).h, self.indices.h, input.h, self.kW, self.kH, self.dW,
      self.dH, self.padW, self.padH, self.ceil_mode and 1 or 0))
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 3)
   check(C.mt_maxpool2d_backward(result(self, 'gradInput', input).h, gradOutput.h, self.indices.h, input.h, self.kW,
      self.kH, self.dW, self.dH, self.padW, self.padH, self.ceil_mode and 1 or 0))
   return self.gradInput
end

Pool.clearState = P.clearIndices

Pool.__tostring__ = nn.utils.poolToString

return Pool
