-- nn.ModuleCriterion(criterion[, inputModule][, targetModule][, castTarget = true]): criterion applied
-- to inputModule(input) and targetModule(target) (each optional). The gradient is backpropagated
-- through inputModule, whose parameters it does not update. :type() leaves targetModule alone when
-- castTarget is false (targets such as class indices keep their type).
local torch = require 'moontorch'
require 'moontorch.nn'

local ModuleCriterion, parent = torch.class('nn.ModuleCriterion', 'nn.Criterion')

function ModuleCriterion:__init(criterion, inputModule, targetModule, castTarget)
   parent.__init(self)
   if not torch.isTypeOf(criterion, 'nn.Criterion') then
      error('nn.ModuleCriterion: argument 1 must be a criterion, got ' .. torch.type(criterion), 3)
   end
   for i, m in ipairs { inputModule or false, targetModule or false } do
      if m and not torch.isTypeOf(m, 'nn.Module') then
         error(('nn.ModuleCriterion: argument %d must be a module or nil, got %s'):format(i + 1, torch.type(m)), 3)
      end
   end
   self.criterion = criterion
   self.inputModule = inputModule
   self.targetModule = targetModule
   if castTarget == nil then castTarget = true end
   self.castTarget = castTarget
   if inputModule then
      local params = inputModule:parameters()
      if params and #params > 0 then print("Warning: nn.ModuleCriterion doesn't support parameter updates") end
   end
end

function ModuleCriterion:updateOutput(input, target)
   if self.inputModule then self.input = self.inputModule:forward(input) end
   if self.targetModule then self.target = self.targetModule:forward(target) end
   self.output = self.criterion:forward(self.input or input, self.target or target)
   return self.output
end

function ModuleCriterion:updateGradInput(input, target)
   self.gradInput = self.criterion:backward(self.input or input, self.target or target)
   if self.inputModule then self.gradInput = self.inputModule:backward(input, self.gradInput) end
   return self.gradInput
end

function ModuleCriterion:type(typename, tensorCache)
   if not typename then return self._type end
   local target = self.targetModule
   if not self.castTarget then self.targetModule = nil end
   parent.type(self, typename, tensorCache)
   self.targetModule = target
   if not self.castTarget then self.target = nil end -- its output, left as it was
   return self
end

function ModuleCriterion:clearState()
   self.input, self.target = nil, nil
   for _, m in ipairs { self.inputModule or false, self.targetModule or false, self.criterion } do
      if m then m:clearState() end
   end
   self.gradInput = torch.Tensor()
   return self
end

function ModuleCriterion:__tostring__()
   return ('%s(%s)'):format(torch.type(self), tostring(self.criterion))
end
