-- nn.SoftMarginCriterion(): two-class logistic loss for targets y = +-1: sum of
-- log(1 + exp(-y x)) over all elements, divided by their number when sizeAverage.
local torch = require 'moontorch'
require 'moontorch.nn'

local SoftMargin, parent = torch.class('nn.SoftMarginCriterion', 'nn.Criterion')

function SoftMargin:__init()
   parent.__init(self)
   self.sizeAverage = true
end

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.SoftMarginCriterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   return target:view(input:size()):typeAs(input)
end

function SoftMargin:updateOutput(input, target)
   local z = torch.cmul(input, args(input, target)):mul(-1)
   -- softplus(z) = max(z, 0) + log(1 + exp(-|z|)) never overflows
   local sp = z:clone():abs():mul(-1):exp():log1p():add(z:clone():cmax(0))
   self.output = sp:sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function SoftMargin:updateGradInput(input, target)
   local y = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   -- d/dx log(1 + exp(-y x)) = -y sigmoid(-y x)
   self.gradInput = torch.cmul(input, y):mul(-1):sigmoid():cmul(y):mul(-norm)
   return self.gradInput
end
