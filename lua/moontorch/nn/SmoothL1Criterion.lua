-- nn.SmoothL1Criterion([sizeAverage = true]): Huber loss with threshold 1 over all elements:
-- 0.5 z^2 where |z| < 1, |z| - 0.5 elsewhere (z = input - target); mean or sum.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local SmoothL1, parent = torch.class('nn.SmoothL1Criterion', 'nn.Criterion')

function SmoothL1:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.SmoothL1Criterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   return target:view(input:size())
end

-- buffers kept on the criterion (no fresh tensors per call; pow(2) is a generic powf, so squares
-- go through dot)
function SmoothL1:updateOutput(input, target)
   target = args(input, target)
   local z = utils.result(self, '_diff', input):resizeAs(input):copy(input):csub(target):abs()
   local zc = utils.result(self, '_clamped', input):resizeAs(z):copy(z):clamp(0, 1)
   -- 0.5 min(z,1)^2 + (z - min(z,1)) is both branches at once
   self.output = 0.5 * zc:dot(zc) + z:sum() - zc:sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function SmoothL1:updateGradInput(input, target)
   target = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   self.gradInput = utils.result(self, 'gradInput', input):resizeAs(input):copy(input):csub(target):clamp(-1, 1)
      :mul(norm)
   return self.gradInput
end

function SmoothL1:clearState()
   self._diff, self._clamped = nil, nil
   return parent.clearState(self)
end
