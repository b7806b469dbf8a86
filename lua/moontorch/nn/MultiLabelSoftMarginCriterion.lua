-- nn.MultiLabelSoftMarginCriterion([weights] [, sizeAverage = true]): independent logistic
-- losses of scores x against 0/1 targets, -w (t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))),
-- in the stable form log(1 + exp(-|x|)) + max(x, 0) - t x; weights per element of a 1-d input or
-- per column of N x C; mean over all elements or sum.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local MLSM, parent = torch.class('nn.MultiLabelSoftMarginCriterion', 'nn.Criterion')

function MLSM:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights ~= nil then
      if not torch.isTensor(weights) or weights:dim() ~= 1 then
         error('nn.MultiLabelSoftMarginCriterion: weights must be a 1-d tensor', 2)
      end
      self.weights = weights
   end
   self.sigmoid = nn.Sigmoid()
end

local function args(self, input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.MultiLabelSoftMarginCriterion: expected input and target tensors with as many elements, got %s and %s')
         :format(torch.isTensor(input) and input:nElement() or torch.type(input),
            torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   local t = target:view(input:size()):typeAs(input)
   local w = self.weights
   if w == nil then return t end
   w = w:typeAs(input)
   if input:dim() == 1 and w:nElement() == input:nElement() then return t, w end
   if input:dim() ~= 2 or w:nElement() ~= input:size(2) then
      error(('nn.MultiLabelSoftMarginCriterion: %d weights do not fit an input of size %s'):format(w:nElement(),
         table.concat(input:size():totable(), 'x')), 3)
   end
   return t, w:view(1, w:nElement()):expandAs(input)
end

function MLSM:updateOutput(input, target)
   local t, w = args(self, input, target)
   local l = torch.abs(input):mul(-1):exp():log1p():add(torch.cmax(input, 0)):add(-1, torch.cmul(input, t))
   if w then l:cmul(w) end
   self.output = l:sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function MLSM:updateGradInput(input, target)
   local t, w = args(self, input, target)
   local p = self.sigmoid:updateOutput(input)
   self.gradInput = torch.add(p, -1, t)
   if w then self.gradInput:cmul(w) end
   if self.sizeAverage then self.gradInput:div(input:nElement()) end
   return self.gradInput
end
