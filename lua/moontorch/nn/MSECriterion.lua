-- nn.MSECriterion([sizeAverage = true]): mean (or sum) of squared differences between input and
-- target (same number of elements).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ffi = require 'ffi'

local MSE, parent = torch.class('nn.MSECriterion', 'nn.Criterion')

function MSE:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local loss_buf = ffi.new('double[1]')

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) then
      error(('nn.MSECriterion: expected tensors as input and target, got %s and %s'):format(torch.type(input),
         torch.type(target)), 3)
   end
end

function MSE:updateOutput(input, target)
   args(input, target)
   check(C.mt_nn_mse_forward(loss_buf, input.h, target.h, self.sizeAverage and 1 or 0))
   self.output = loss_buf[0]
   return self.output
end

function MSE:updateGradInput(input, target)
   args(input, target)
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_mse_backward(self.gradInput.h, input.h, target.h, self.sizeAverage and 1 or 0, 1))
   return self.gradInput
end
