-- nn.HingeEmbeddingCriterion([margin = 1]): for distances x and labels y = +-1 (a number or a
-- tensor like x): x where y = 1, max(0, margin - x) where y = -1; mean or sum over elements.
local torch = require 'moontorch'
require 'moontorch.nn'

local HE, parent = torch.class('nn.HingeEmbeddingCriterion', 'nn.Criterion')

function HE:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.sizeAverage = true
end

-- y as a 0/1 mask of the +1 labels and of the -1 labels, both shaped as the input
local function args(input, y)
   if not torch.isTensor(input) then
      error('nn.HingeEmbeddingCriterion: expected a tensor as input, got ' .. torch.type(input), 3)
   end
   if type(y) == 'number' then y = input.new(input:size()):fill(y) end
   if not torch.isTensor(y) or y:nElement() ~= input:nElement() then
      error(('nn.HingeEmbeddingCriterion: expected a number or a tensor of %d labels as target, got %s'):format(
         input:nElement(), torch.isTensor(y) and y:nElement() .. ' labels' or torch.type(y)), 3)
   end
   y = y:view(input:size())
   return y:eq(1):typeAs(input), y:eq(-1):typeAs(input)
end

function HE:updateOutput(input, y)
   local pos, neg = args(input, y)
   self.output = torch.cmul(input, pos):sum() + torch.mul(input, -1):add(self.margin):cmax(0):cmul(neg):sum()
   if self.sizeAverage == nil or self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function HE:updateGradInput(input, y)
   local pos, neg = args(input, y)
   -- -1 where y = -1 and the margin is not yet met (Torch7 counts x == margin as active)
   self.gradInput = torch.add(pos, -1, input:le(self.margin):typeAs(input):cmul(neg))
   if self.sizeAverage == nil or self.sizeAverage then self.gradInput:div(input:nElement()) end
   return self.gradInput
end
