-- nn.SmoothL1Criterion([sizeAverage = true]): Huber loss with threshold 1 over all elements:
-- 0.5 z^2 where |z| < 1, |z| - 0.5 elsewhere (z = input - target, as many elements); mean or
-- sum. One C op each way (mt_nn_smoothl1_*).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ffi = require 'ffi'

local SmoothL1, parent = torch.class('nn.SmoothL1Criterion', 'nn.Criterion')

function SmoothL1:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local loss_buf = ffi.new('double[1]')

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.SmoothL1Criterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
end

function SmoothL1:updateOutput(input, target)
   args(input, target)
   check(C.mt_nn_smoothl1_forward(loss_buf, input.h, target.h, self.sizeAverage and 1 or 0))
   self.output = loss_buf[0]
   return self.output
end

function SmoothL1:updateGradInput(input, target)
   args(input, target)
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_smoothl1_backward(self.gradInput.h, input.h, target.h, self.sizeAverage and 1 or 0, 1))
   return self.gradInput
end
