-- nn.MultiCriterion(): the weighted sum of criterions all applied to the same input and target.
-- The weights live in a DoubleStorage, as Torch7 keeps them.
local torch = require 'moontorch'
require 'moontorch.nn'

local MC, parent = torch.class('nn.MultiCriterion', 'nn.Criterion')

function MC:__init()
   parent.__init(self)
   self.criterions = {}
   self.weights = torch.DoubleStorage()
end

function MC:add(criterion, weight)
   if criterion == nil then error('nn.MultiCriterion: no criterion given to add', 2) end
   table.insert(self.criterions, criterion)
   local n = #self.criterions
   local w = torch.DoubleStorage(n)
   for i = 1, n - 1 do w[i] = self.weights[i] end
   w[n] = weight or 1
   self.weights = w
   return self
end

function MC:updateOutput(input, target)
   self.output = 0
   for i, c in ipairs(self.criterions) do
      self.output = self.output + self.weights[i] * c:updateOutput(input, target)
   end
   return self.output
end

-- acc + w * g, recursively through tables (acc nil: a fresh w * g)
local function accumulate(acc, g, w)
   if torch.isTensor(g) then
      if acc == nil then return torch.mul(g, w) end
      return acc:add(w, g)
   end
   acc = acc or {}
   for k, v in pairs(g) do acc[k] = accumulate(acc[k], v, w) end
   return acc
end

function MC:updateGradInput(input, target)
   local gi
   for i, c in ipairs(self.criterions) do
      gi = accumulate(gi, c:updateGradInput(input, target), self.weights[i])
   end
   self.gradInput = gi or (torch.isTensor(input) and input.new(input:size()):zero() or {})
   return self.gradInput
end

function MC:type(typename, tensorCache)
   for _, c in ipairs(self.criterions) do c:type(typename, tensorCache) end
   return parent.type(self, typename, tensorCache)
end
