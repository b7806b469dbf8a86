-- nn.CosineEmbeddingCriterion([margin = 0]): for pairs {x1, x2} (D or N x D) and labels y = +-1
-- (a number or N): 1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1;
-- cos = x1.x2 / sqrt((|x1|^2 + eps)(|x2|^2 + eps)), eps = 1e-12; mean over N or sum.
local torch = require 'moontorch'
require 'moontorch.nn'

local CE, parent = torch.class('nn.CosineEmbeddingCriterion', 'nn.Criterion')
local eps = 1e-12

function CE:__init(margin)
   parent.__init(self)
   self.margin = margin or 0
   self.gradInput = { torch.Tensor(), torch.Tensor() }
   self.sizeAverage = true
end

-- x1, x2 as N x D, y as N x 1 in the input's type
local function args(input, y)
   if type(input) ~= 'table' or not torch.isTensor(input[1]) or not torch.isTensor(input[2])
      or not input[1]:isSameSizeAs(input[2]) or input[1]:dim() < 1 or input[1]:dim() > 2 then
      error('nn.CosineEmbeddingCriterion: expected a table of two 1-d or 2-d tensors of the same size as input', 3)
   end
   local x1, x2 = input[1], input[2]
   if x1:dim() == 1 then x1, x2 = x1:view(1, -1), x2:view(1, -1) end
   local N = x1:size(1)
   if type(y) == 'number' then y = x1.new(1):fill(y) end
   if not torch.isTensor(y) or y:nElement() ~= N then
      error(('nn.CosineEmbeddingCriterion: expected %d labels as target, got %s'):format(N,
         torch.isTensor(y) and y:nElement() or torch.type(y)), 3)
   end
   return x1, x2, y:typeAs(x1):view(N, 1), N
end

-- per pair: x1.x2, 1/(|x1|^2+eps), 1/(|x2|^2+eps), the cosine, and the per-pair loss (N x 1)
local function cosines(self, x1, x2, y)
   local w1 = torch.cmul(x1, x2):sum(2)
   local w22 = torch.cmul(x1, x1):sum(2):add(eps):cinv()
   local w32 = torch.cmul(x2, x2):sum(2):add(eps):cinv()
   local w = torch.cmul(w22, w32):sqrt()
   local cos = torch.cmul(w1, w)
   local pos, neg = y:eq(1):typeAs(x1), y:eq(-1):typeAs(x1)
   local loss = torch.mul(cos, -1):add(1):cmul(pos):add(torch.add(cos, -self.margin):cmax(0):cmul(neg))
   return w1, w22, w32, w, loss, pos, neg
end

function CE:updateOutput(input, y)
   local x1, x2, N
   x1, x2, y, N = args(input, y)
   local _, _, _, _, loss = cosines(self, x1, x2, y)
   self.output = loss:sum()
   if self.sizeAverage then self.output = self.output / N end
   return self.output
end

function CE:updateGradInput(input, y)
   local x1, x2, N
   x1, x2, y, N = args(input, y)
   local w1, w22, w32, w, loss, pos, neg = cosines(self, x1, x2, y)
   -- d cos / d x1 = w (x2 - x1.x2 / |x1|^2 x1), and symmetrically for x2
   local g1 = torch.add(x2, -1, torch.cmul(torch.cmul(w1, w22):expandAs(x1), x1)):cmul(w:expandAs(x1))
   local g2 = torch.add(x1, -1, torch.cmul(torch.cmul(w1, w32):expandAs(x2), x2)):cmul(w:expandAs(x2))
   -- +d cos for active y = -1 pairs, -d cos for y = 1 pairs, 0 where the loss is 0
   local s = loss:gt(0):typeAs(x1):cmul(torch.add(neg, -1, pos))
   if self.sizeAverage then s:div(N) end
   g1:cmul(s:expandAs(g1))
   g2:cmul(s:expandAs(g2))
   self.gradInput[1] = g1:viewAs(input[1])
   self.gradInput[2] = g2:viewAs(input[2])
   return self.gradInput
end
