-- nn.MultiLabelMarginCriterion(): multi-class multi-label hinge loss of scores x (C or N x C);
-- the target (same size) lists each sample's classes (1..C) first, then 0 ends the list. Per
-- sample: sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])), divided by C; then by
-- N when sizeAverage. self.isTarget holds the 0/1 membership of each class.
local torch = require 'moontorch'
require 'moontorch.nn'

local MLM, parent = torch.class('nn.MultiLabelMarginCriterion', 'nn.Criterion')

function MLM:__init()
   parent.__init(self)
   self.sizeAverage = true
end

-- x as N x C; y as N x C LongTensor with the list's end and everything after it replaced by
-- C + 1 (a spare column); valid marks the listed entries; K the longest list
local function args(self, input, target)
   if not torch.isTensor(input) or (input:dim() ~= 1 and input:dim() ~= 2) then
      error('nn.MultiLabelMarginCriterion: expected a 1-d or 2-d tensor as input, got ' ..
         (torch.isTensor(input) and input:dim() .. '-d' or torch.type(input)), 3)
   end
   if not torch.isTensor(target) or target:nElement() ~= input:nElement() then
      error(('nn.MultiLabelMarginCriterion: expected a target tensor with as many elements as the input (%d), got %s')
         :format(input:nElement(), torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   local x = input:dim() == 1 and input:view(1, input:nElement()) or input
   local N, C = x:size(1), x:size(2)
   local y = target:long():view(N, C)
   if y:min() < 0 or y:max() > C then
      error(('nn.MultiLabelMarginCriterion: target out of range 0..%d (got %d..%d)'):format(C, y:min(), y:max()), 3)
   end
   -- an entry is listed while no 0 came before it in its row
   local valid = y:eq(0):long():cumsum(2):eq(0)
   local vl = valid:long()
   local idx = torch.cmul(y, vl):add(torch.mul(vl, -1):add(1):mul(C + 1))
   local K = N > 0 and vl:sum(2):max() or 0
   -- membership: scatter 1 at each listed class; unlisted entries land in the spare column
   self.isTarget = torch.zeros(N, C + 1):typeAs(x):scatter(2, idx, 1):narrow(2, 1, C)
   return x, idx, valid:typeAs(x), K, N, C
end

-- for the j-th listed class of every row: the N x C mask of positive hinge terms and their values
local function terms(self, x, idx, valid, j)
   local col = idx:narrow(2, j, 1)
   local xc = torch.cat(x, x:narrow(2, 1, 1), 2):gather(2, col) -- spare column reads any score
   local z = torch.add(x, -1, xc:expandAs(x)):add(1)
   local mask = z:gt(0):typeAs(x):cmul(torch.mul(self.isTarget, -1):add(1))
   mask:cmul(valid:narrow(2, j, 1):expandAs(x))
   return z:cmul(mask), mask, col
end

function MLM:updateOutput(input, target)
   local x, idx, valid, K, N, C = args(self, input, target)
   local sum = 0
   for j = 1, K do sum = sum + (terms(self, x, idx, valid, j)):sum() end
   self.output = sum / C
   if self.sizeAverage then self.output = self.output / N end
   return self.output
end

function MLM:updateGradInput(input, target)
   local x, idx, valid, K, N, C = args(self, input, target)
   local g = torch.zeros(N, C + 1):typeAs(x)
   for j = 1, K do
      local _, mask, col = terms(self, x, idx, valid, j)
      g:narrow(2, 1, C):add(mask)
      -- the listed class moves against every unlisted one it does not beat by 1
      local hot = torch.zeros(N, C + 1):typeAs(x):scatter(2, col, 1)
      g:add(-1, hot:cmul(mask:sum(2):expandAs(hot)))
   end
   self.gradInput = g:narrow(2, 1, C):contiguous():div(self.sizeAverage and C * N or C):viewAs(input)
   return self.gradInput
end
