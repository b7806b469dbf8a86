-- nn.AbsCriterion([sizeAverage = true]): mean (or sum) of |input - target| over all elements.
-- The gradient at input == target is +1 (Torch7's choice of subgradient).
local torch = require 'moontorch'
require 'moontorch.nn'

local Abs, parent = torch.class('nn.AbsCriterion', 'nn.Criterion')

function Abs:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.AbsCriterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   return target:view(input:size())
end

function Abs:updateOutput(input, target)
   target = args(input, target)
   self.output = (input - target):abs():sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function Abs:updateGradInput(input, target)
   target = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   -- +norm where input >= target, -norm elsewhere
   self.gradInput = (input - target):ge(0):typeAs(input):mul(2 * norm):add(-norm)
   return self.gradInput
end
