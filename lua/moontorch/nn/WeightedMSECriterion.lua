-- nn.WeightedMSECriterion(w) as Torch7 codes it: nn.MSECriterion between the input and the
-- target multiplied elementwise by w (a copy of w is kept). Only the target is weighted, so the
-- loss is mean((x - w .* t)^2), not a weighted mean of (x - t)^2. When w has one dimension
-- fewer than the input, the first input dimension is a batch and w weights every sample.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local WMSE, parent = torch.class('nn.WeightedMSECriterion', 'nn.MSECriterion')

local NAME = 'nn.WeightedMSECriterion'

function WMSE:__init(w)
   parent.__init(self)
   T.expect_tensor(w, NAME, 'weight', 3)
   self.weight = w:clone()
end

-- the target times the weight, in self.buffer
local function weighted(self, input, target)
   T.expect_tensor(input, NAME, 'input', 4)
   T.expect_tensor(target, NAME, 'target', 4)
   if target:nElement() ~= input:nElement() then
      error(('%s: target has %d elements but the input has %d'):format(NAME, target:nElement(), input:nElement()), 4)
   end
   if self.weight:type() ~= input:type() then self.weight = self.weight:type(input:type()) end
   local w = self.weight
   local buf = input.new():resizeAs(input):copy(target)
   self.buffer = buf
   local per_sample = input:dim() - 1 == w:dim()
   local n = per_sample and input[1]:nElement() or input:nElement()
   if w:nElement() ~= n then
      error(('%s: the weight has %d elements but each %s has %d'):format(NAME, w:nElement(),
         per_sample and 'sample' or 'input', n), 4)
   end
   if per_sample then
      local rows = buf:view(input:size(1), n)
      rows:cmul(w:contiguous():view(1, n):expandAs(rows))
   else
      buf:view(n):cmul(w:contiguous():view(n))
   end
   return buf
end

function WMSE:updateOutput(input, target)
   return parent.updateOutput(self, input, weighted(self, input, target))
end

function WMSE:updateGradInput(input, target)
   return parent.updateGradInput(self, input, weighted(self, input, target))
end
