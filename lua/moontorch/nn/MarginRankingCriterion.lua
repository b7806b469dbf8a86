-- nn.MarginRankingCriterion([margin = 1]): for a pair {x1, x2} of 1-element tensors and a number
-- y = +-1, or of N-tensors and an N-tensor y: max(0, -y (x1 - x2) + margin); mean over N or sum.
local torch = require 'moontorch'
require 'moontorch.nn'

local MR, parent = torch.class('nn.MarginRankingCriterion', 'nn.Criterion')

function MR:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.gradInput = { torch.Tensor(1), torch.Tensor(1) }
   self.sizeAverage = true
end

local function args(input, y)
   if type(input) ~= 'table' or not torch.isTensor(input[1]) or not torch.isTensor(input[2])
      or input[1]:nElement() ~= input[2]:nElement() then
      error('nn.MarginRankingCriterion: expected a table of two tensors with as many elements as input', 3)
   end
   local x1, x2 = input[1], input[2]:view(input[1]:size())
   if type(y) == 'number' then
      if x1:nElement() ~= 1 then
         error(('nn.MarginRankingCriterion: a number target needs 1-element inputs, got %d elements'):format(
            x1:nElement()), 3)
      end
      return x1, x2, x1.new(x1:size()):fill(y)
   end
   if not torch.isTensor(y) or y:nElement() ~= x1:nElement() then
      error(('nn.MarginRankingCriterion: expected %d labels as target, got %s'):format(x1:nElement(),
         torch.isTensor(y) and y:nElement() or torch.type(y)), 3)
   end
   return x1, x2, y:typeAs(x1):view(x1:size())
end

function MR:updateOutput(input, y)
   local x1, x2, yt = args(input, y)
   self.output = torch.add(x1, -1, x2):cmul(yt):mul(-1):add(self.margin):cmax(0):sum()
   if self.sizeAverage and torch.isTensor(y) then self.output = self.output / yt:nElement() end
   return self.output
end

function MR:updateGradInput(input, y)
   local x1, x2, yt = args(input, y)
   -- active where -y (x1 - x2) + margin >= 0 (Torch7 includes the boundary)
   local g = torch.add(x1, -1, x2):cmul(yt):mul(-1):add(self.margin):ge(0):typeAs(x1):cmul(yt):mul(-1)
   if self.sizeAverage and torch.isTensor(y) then g:div(yt:nElement()) end
   self.gradInput[1] = g:viewAs(input[1])
   self.gradInput[2] = torch.mul(g, -1):viewAs(input[2])
   return self.gradInput
end
