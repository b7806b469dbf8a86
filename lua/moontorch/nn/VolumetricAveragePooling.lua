-- nn.VolumetricAveragePooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH]) as in Torch7 (no padding, floor
-- sizes). Input: C x T x H x W or N x C x T x H x W. A box mean is separable: the C 2-d average
-- pooling (csrc/nn/pool.c) runs over H x W with the frames folded into the planes, then over T
-- with a kT x 1 window on the frames x (oH*oW) planes; the backward pass runs the two in reverse.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'
local C, check = T.C, T.check
require 'moontorch.nn.VolumetricMaxPooling'

local Pool, parent = torch.class('nn.VolumetricAveragePooling', 'nn.Module')

function Pool:__init(kT, kW, kH, dT, dW, dH)
   parent.__init(self)
   self.kT, self.kW, self.kH = kT, kW, kH
   self.dT, self.dW, self.dH = dT or kT, dW or kW, dH or kH
   self.padT, self.padW, self.padH = 0, 0, 0
   nn.VolumetricMaxPooling._checkWindow(self, 3)
end

-- (5-d input, was it 4-d?, output sizes oT, oH, oW)
local function geometry(self, input)
   local x, single = nn.VolumetricMaxPooling._batched(self, input, 'input')
   local oT = math.floor((x:size(3) - self.kT) / self.dT) + 1
   local oH = math.floor((x:size(4) - self.kH) / self.dH) + 1
   local oW = math.floor((x:size(5) - self.kW) / self.dW) + 1
   if oT < 1 or oH < 1 or oW < 1 then
      error(('%s: input %dx%dx%d (TxHxW) is smaller than the kernel %dx%dx%d'):format(torch.type(self), x:size(3),
         x:size(4), x:size(5), self.kT, self.kH, self.kW), 3)
   end
   return x, single, oT, oH, oW
end

function Pool:updateOutput(input)
   local x, single, oT, oH, oW = geometry(self, input)
   local N, P, Ti, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
   -- buffers reused between calls; views bound to locals (an unnamed one may be collected while
   -- the next argument is made)
   local hw, y = utils.result(self, '_hw', x), utils.result(self, '_y', x)
   local x4 = x:view(N, P * Ti, H, W)
   check(C.mt_avgpool2d_forward(hw.h, x4.h, self.kW, self.kH, self.dW, self.dH, 0, 0, 0, 1))
   local hw4 = hw:view(N * P, 1, Ti, oH * oW)
   check(C.mt_avgpool2d_forward(y.h, hw4.h, 1, self.kT, 1, self.dT, 0, 0, 0, 1))
   y = y:view(N, P, oT, oH, oW)
   self.output = single and y:select(1, 1) or y
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   local x, single, oT, oH, oW = geometry(self, input)
   local N, P, Ti, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 4)
   if gradOutput:nElement() ~= N * P * oT * oH * oW then
      error(('%s: gradOutput has size %s, expected %dx%dx%dx%dx%d'):format(torch.type(self),
         table.concat(T.sizes(gradOutput), 'x'), N, P, oT, oH, oW), 2)
   end
   local dy = gradOutput:contiguous():view(N * P, 1, oT, oH * oW)
   local ghw = utils.result(self, '_ghw', x)
   -- the C backward reads its input argument for the size only: the forward's time-pass input
   local shape = (self._hw and self._hw:nElement() == N * P * Ti * oH * oW) and self._hw:view(N * P, 1, Ti, oH * oW)
      or x.new():resize(N * P, 1, Ti, oH * oW)
   check(C.mt_avgpool2d_backward(ghw.h, dy.h, shape.h, 1, self.kT, 1, self.dT, 0, 0, 0, 1))
   local gi = utils.result(self, '_gi', x)
   -- views bound to locals: an unnamed one may be collected while the next is made
   local g4, x4 = ghw:view(N, P * Ti, oH, oW), x:view(N, P * Ti, H, W)
   check(C.mt_avgpool2d_backward(gi.h, g4.h, x4.h, self.kW, self.kH,
      self.dW, self.dH, 0, 0, 0, 1))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Pool:clearState()
   self._hw, self._y, self._ghw, self._gi = nil, nil, nil, nil
   return parent.clearState(self)
end

function Pool:__tostring__()
   return ('%s(%dx%dx%d, %d,%d,%d)'):format(torch.type(self), self.kT, self.kW, self.kH, self.dT, self.dW, self.dH)
end

return Pool
