-- nn.SmoothL1Criterion([sizeAverage = true]): Huber loss with threshold 1 over all elements:
-- 0.5 z^2 where |z| < 1, |z| - 0.5 elsewhere (z = input - target); mean or sum.
local torch = require 'moontorch'
require 'moontorch.nn'

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

function SmoothL1:updateOutput(input, target)
   target = args(input, target)
   local z = (input - target):abs()
   local zc = z:clone():clamp(0, 1)
   -- 0.5 min(z,1)^2 + (z - min(z,1)) is both branches at once
   self.output = zc:clone():pow(2):mul(0.5):add(z):csub(zc):sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function SmoothL1:updateGradInput(input, target)
   target = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   self.gradInput = (input - target):clamp(-1, 1):mul(norm)
   return self.gradInput
end
