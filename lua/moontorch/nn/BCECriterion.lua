-- nn.BCECriterion([weights] [, sizeAverage = true]): binary cross-entropy of probabilities input
-- against targets in [0, 1]: -w (t log(x + eps) + (1 - t) log(1 - x + eps)), eps = 1e-12 as
-- Torch7; weights (1-d) weigh each element of a 1-d input, or each column of an N x C input.
local torch = require 'moontorch'
require 'moontorch.nn'

local BCE, parent = torch.class('nn.BCECriterion', 'nn.Criterion')
local eps = 1e-12

function BCE:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights ~= nil then
      if not torch.isTensor(weights) or weights:dim() ~= 1 then
         error('nn.BCECriterion: weights must be a 1-d tensor', 2)
      end
      self.weights = weights
   end
end

function BCE:__len() return self.weights and self.weights:nElement() or 0 end

-- target viewed as input, and the weights expanded to it (or nil)
local function args(self, input, target)
   if not torch.isTensor(input) or not torch.isTensor(target) or input:nElement() ~= target:nElement() then
      error(('nn.BCECriterion: expected input and target tensors with as many elements, got %s and %s'):format(
         torch.isTensor(input) and input:nElement() or torch.type(input),
         torch.isTensor(target) and target:nElement() or torch.type(target)), 3)
   end
   local t = target:view(input:size()):typeAs(input)
   local w = self.weights
   if w == nil then return t end
   w = w:typeAs(input)
   if input:dim() == 1 and w:nElement() == input:nElement() then return t, w end
   if input:dim() ~= 2 or w:nElement() ~= input:size(2) then
      error(('nn.BCECriterion: %d weights do not fit an input of size %s (1-d of as many elements, or N x %d)')
         :format(w:nElement(), table.concat(input:size():totable(), 'x'), w:nElement()), 3)
   end
   return t, w:view(1, w:nElement()):expandAs(input)
end

function BCE:updateOutput(input, target)
   local t, w = args(self, input, target)
   local l = torch.add(input, eps):log():cmul(t)
   l:add(torch.mul(input, -1):add(1 + eps):log():cmul(torch.mul(t, -1):add(1)))
   if w then l:cmul(w) end
   self.output = -l:sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function BCE:updateGradInput(input, target)
   local t, w = args(self, input, target)
   local norm = self.sizeAverage and 1 / input:nElement() or 1
   -- -(t - x) / ((1 - x + eps)(x + eps))
   local den = torch.mul(input, -1):add(1 + eps):cmul(torch.add(input, eps))
   self.gradInput = torch.add(input, -1, t):cdiv(den):mul(norm)
   if w then self.gradInput:cmul(w) end
   return self.gradInput
end
