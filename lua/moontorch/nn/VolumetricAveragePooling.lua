-- nn.VolumetricAveragePooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH]) as in Torch7 (no padding, floor
-- sizes). Input: C x T x H x W or N x C x T x H x W. A box mean is separable: the C 2-d average
-- pooling (csrc/nn/pool.c) runs over T first, a kT x 1 window on frames x (H*W) planes (whole
-- rows added against rows), then over H x W on the oT frames folded into the planes, so the
-- per-window loop sees 1/kT of the frames; the backward pass runs the two in reverse.
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
   local tm, y = utils.result(self, '_t', x), utils.result(self, '_y', x)
   local x4 = x:view(N * P, 1, Ti, H * W)
   check(C.mt_avgpool2d_forward(tm.h, x4.h, 1, self.kT, 1, self.dT, 0, 0, 0, 1))
   local t4 = tm:view(N, P * oT, H, W)
   check(C.mt_avgpool2d_forward(y.h, t4.h, self.kW, self.kH, self.dW, self.dH, 0, 0, 0, 1))
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
   local dy = gradOutput:contiguous():view(N, P * oT, oH, oW)
   local gt = utils.result(self, '_gt', x)
   -- the C backward reads its input argument for the size only: the forward's frame-pass output
   -- and the input
   local shape = (self._t and self._t:nElement() == N * P * oT * H * W) and self._t:view(N, P * oT, H, W)
      or x.new():resize(N, P * oT, H, W)
   check(C.mt_avgpool2d_backward(gt.h, dy.h, shape.h, self.kW, self.kH, self.dW, self.dH, 0, 0, 0, 1))
   local gi = utils.result(self, '_gi', x)
   -- views bound to locals: an unnamed one may be collected while the next is made
   local g4, x4 = gt:view(N * P, 1, oT, H * W), x:view(N * P, 1, Ti, H * W)
   check(C.mt_avgpool2d_backward(gi.h, g4.h, x4.h, 1, self.kT, 1, self.dT, 0, 0, 0, 1))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Pool:clearState()
   self._t, self._y, self._gt, self._gi = nil, nil, nil, nil
   return parent.clearState(self)
end

function Pool:__tostring__()
   return ('%s(%dx%dx%d, %d,%d,%d)'):format(torch.type(self), self.kT, self.kW, self.kH, self.dT, self.dW, self.dH)
end

return Pool
