-- nn.MarginCriterion([margin = 1]): two-class hinge loss for targets y = +-1:
-- sum of max(0, margin - y * x) over all elements, divided by their number when sizeAverage.
local torch = require 'moontorch'
require 'moontorch.nn'

local Margin, parent = torch.class('nn.MarginCriterion', 'nn.Criterion')

function Margin:__init(margin)
   parent.__init(self)
   self.sizeAverage = true
   self.margin = margin or 1
end

local function args(input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.MarginCriterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   return target:view(input:size()):typeAs(input)
end

function Margin:updateOutput(input, target)
   local y = args(input, target)
   self.output = torch.cmul(input, y):mul(-1):add(self.margin):cmax(0):sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function Margin:updateGradInput(input, target)
   local y = args(input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   local active = torch.cmul(input, y):mul(-1):add(self.margin):gt(0):typeAs(input)
   self.gradInput = active:cmul(y):mul(-norm)
   return self.gradInput
end
