-- nn.DistKLDivCriterion([sizeAverage = true]): Kullback-Leibler divergence of a target
-- distribution from log-probabilities input: sum of target * (log(target) - input) over the
-- elements where target > 0 (0 log 0 = 0); mean over all elements or sum.
local torch = require 'moontorch'
require 'moontorch.nn'

local KLD, parent = torch.class('nn.DistKLDivCriterion', 'nn.Criterion')

function KLD:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.DistKLDivCriterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   return target:view(input:size()), target:view(input:size()):gt(0):typeAs(input)
end

function KLD:updateOutput(input, target)
   local t, pos = args(input, target)
   -- log(target) only where target > 0 (elsewhere log 1 = 0, and the mask zeroes the term)
   local logt = t:clone():cmax(0):add(pos:clone():mul(-1):add(1)):log()
   self.output = logt:csub(input):cmul(t):cmul(pos):sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function KLD:updateGradInput(input, target)
   local t, pos = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   self.gradInput = t:clone():cmul(pos):mul(-norm)
   return self.gradInput
end
