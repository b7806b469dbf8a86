-- nn.MultiMarginCriterion([p = 1] [, weights] [, margin = 1]): multi-class hinge loss of scores
-- x (C or N x C) at class targets y in 1..C: per sample sum over i ~= y of
-- w[y] max(0, margin - x[y] + x[i])^p, divided by C; then by N when sizeAverage.
local torch = require 'moontorch'
require 'moontorch.nn'

local MM, parent = torch.class('nn.MultiMarginCriterion', 'nn.Criterion')

function MM:__init(p, weights, margin)
   if p ~= nil and p ~= 1 and p ~= 2 then error('nn.MultiMarginCriterion: only p = 1 and p = 2 are supported', 2) end
   parent.__init(self)
   self.p = p or 1
   self.margin = margin or 1
   self.sizeAverage = true
   if weights ~= nil then
      if not torch.isTensor(weights) or weights:dim() ~= 1 then
         error('nn.MultiMarginCriterion: weights must be a 1-d tensor', 2)
      end
      self.weights = weights
   end
end

function MM:__len() return self.weights and self.weights:nElement() or 0 end

-- input as N x C, targets as an N x 1 LongTensor on the input's device
local function args(self, input, target)
   if not torch.isTensor(input) or (input:dim() ~= 1 and input:dim() ~= 2) then
      error('nn.MultiMarginCriterion: expected a 1-d or 2-d tensor as input, got ' ..
         (torch.isTensor(input) and input:dim() .. '-d' or torch.type(input)), 3)
   end
   local x = input:dim() == 1 and input:view(1, input:nElement()) or input
   local N, C = x:size(1), x:size(2)
   local y
   if type(target) == 'number' then
      y = x.new(1):fill(target):long() -- on the input's device
   elseif torch.isTensor(target) then
      y = target:long()
   else
      error('nn.MultiMarginCriterion: expected a number or a tensor of class indices as target, got ' ..
         torch.type(target), 3)
   end
   if y:nElement() ~= N then
      error(('nn.MultiMarginCriterion: %d targets for %d samples'):format(y:nElement(), N), 3)
   end
   if y:min() < 1 or y:max() > C then
      error(('nn.MultiMarginCriterion: target out of range 1..%d (got %d..%d)'):format(C, y:min(), y:max()), 3)
   end
   y = y:view(N, 1)
   return x, y, N, C
end

-- z = margin - x[y] + x, and the 0/1 mask of its positive terms off the target
local function margins(self, x, y)
   local z = torch.add(x, -1, x:gather(2, y):expandAs(x)):add(self.margin)
   local mask = z:gt(0):typeAs(x):scatter(2, y, 0)
   return z, mask
end

-- per-sample weights w[y] as N x C, or nil
local function row_weights(self, x, y)
   if self.weights == nil then return nil end
   local w = self.weights:typeAs(x)
   if w:nElement() ~= x:size(2) then
      error(('nn.MultiMarginCriterion: %d weights for %d classes'):format(w:nElement(), x:size(2)), 3)
   end
   return w:index(1, y:view(y:nElement())):view(x:size(1), 1):expandAs(x)
end

function MM:updateOutput(input, target)
   local x, y, N, C = args(self, input, target)
   local z, mask = margins(self, x, y)
   local h = z:cmul(mask)
   if self.p == 2 then h:cmul(h) end
   local w = row_weights(self, x, y)
   if w then h:cmul(w) end
   self.output = h:sum() / C
   if self.sizeAverage then self.output = self.output / N end
   return self.output
end

function MM:updateGradInput(input, target)
   local x, y, N, C = args(self, input, target)
   local z, mask = margins(self, x, y)
   local g = self.p == 2 and z:cmul(mask):mul(2) or mask
   local w = row_weights(self, x, y)
   if w then g:cmul(w) end
   g:div(self.sizeAverage and C * N or C)
   -- the target's score moves against all the others
   g:scatter(2, y, g:sum(2):mul(-1))
   self.gradInput = g:viewAs(input)
   return self.gradInput
end
