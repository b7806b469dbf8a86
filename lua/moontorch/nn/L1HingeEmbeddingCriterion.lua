-- nn.L1HingeEmbeddingCriterion([margin = 1]): for a pair {x1, x2} and a label y = +-1: the L1
-- distance d = ||x1 - x2||_1 when y = 1, max(0, margin - d) when y = -1.
local torch = require 'moontorch'
require 'moontorch.nn'

local L1HE, parent = torch.class('nn.L1HingeEmbeddingCriterion', 'nn.Criterion')

function L1HE:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.gradInput = { torch.Tensor(), torch.Tensor() }
end

local function args(input, y)
   if type(input) ~= 'table' or not torch.isTensor(input[1]) or not torch.isTensor(input[2])
      or input[1]:nElement() ~= input[2]:nElement() then
      error('nn.L1HingeEmbeddingCriterion: expected a table of two tensors with as many elements as input', 3)
   end
   if torch.isTensor(y) and y:nElement() == 1 then y = y:view(1)[1] end
   if y ~= 1 and y ~= -1 then
      error('nn.L1HingeEmbeddingCriterion: expected the label 1 or -1 as target, got ' .. tostring(y), 3)
   end
   return input[1], input[2]:view(input[1]:size()), y
end

function L1HE:updateOutput(input, y)
   local x1, x2
   x1, x2, y = args(input, y)
   self.output = x1:dist(x2, 1)
   if y == -1 then self.output = math.max(0, self.margin - self.output) end
   return self.output
end

function L1HE:updateGradInput(input, y)
   local x1, x2
   x1, x2, y = args(input, y)
   -- sign(x1 - x2); at x1 == x2 the subgradient 0 is taken
   local g = torch.add(x1, -1, x2)
   local dist = g:norm(1)
   g:sign()
   if y == -1 then
      if dist > self.margin then g:zero() else g:mul(-1) end
   end
   self.gradInput[1] = g:viewAs(input[1])
   self.gradInput[2] = torch.mul(g, -1):viewAs(input[2])
   return self.gradInput
end
