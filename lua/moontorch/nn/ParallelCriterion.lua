-- nn.ParallelCriterion([repeatTarget = false]): the weighted sum of criterions, the i-th applied
-- to input[i] and target[i] (or to the whole target when repeatTarget).
local torch = require 'moontorch'
require 'moontorch.nn'

local PC, parent = torch.class('nn.ParallelCriterion', 'nn.Criterion')

function PC:__init(repeatTarget)
   parent.__init(self)
   self.criterions = {}
   self.weights = {}
   self.gradInput = {}
   self.repeatTarget = repeatTarget
end

function PC:add(criterion, weight)
   if criterion == nil then error('nn.ParallelCriterion: no criterion given to add', 2) end
   table.insert(self.criterions, criterion)
   table.insert(self.weights, weight or 1)
   return self
end

local function args(self, input, target)
   if type(input) ~= 'table' or #input < #self.criterions then
      error(('nn.ParallelCriterion: expected a table of %d inputs, got %s'):format(#self.criterions,
         type(input) == 'table' and #input .. ' inputs' or torch.type(input)), 3)
   end
   if not self.repeatTarget and (type(target) ~= 'table' or #target < #self.criterions) then
      error(('nn.ParallelCriterion: expected a table of %d targets (or repeatTarget), got %s'):format(
         #self.criterions, type(target) == 'table' and #target .. ' targets' or torch.type(target)), 3)
   end
end

function PC:updateOutput(input, target)
   args(self, input, target)
   self.output = 0
   for i, c in ipairs(self.criterions) do
      local t = self.repeatTarget and target or target[i]
      self.output = self.output + self.weights[i] * c:updateOutput(input[i], t)
   end
   return self.output
end

-- w * g, recursively through tables, as fresh tensors
local function scaled(g, w)
   if torch.isTensor(g) then return torch.mul(g, w) end
   local out = {}
   for k, v in pairs(g) do out[k] = scaled(v, w) end
   return out
end

-- zeros shaped as x (tensor or nested table)
local function zeros_like(x)
   if torch.isTensor(x) then return x.new(x:size()):zero() end
   local out = {}
   for k, v in pairs(x) do out[k] = zeros_like(v) end
   return out
end

function PC:updateGradInput(input, target)
   args(self, input, target)
   local gi = {}
   for i = 1, #input do gi[i] = zeros_like(input[i]) end
   for i, c in ipairs(self.criterions) do
      local t = self.repeatTarget and target or target[i]
      gi[i] = scaled(c:updateGradInput(input[i], t), self.weights[i])
   end
   self.gradInput = gi
   return self.gradInput
end

function PC:type(typename, tensorCache)
   self.gradInput = {}
   return parent.type(self, typename, tensorCache)
end
