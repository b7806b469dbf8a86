-- nn.CriterionTable(criterion): a module whose input is the table {input, target} of the
-- wrapped criterion: output is the loss, gradInput the one-element table {dloss/dinput} (as
-- Torch7, no gradient for the target).
local torch = require 'moontorch'
require 'moontorch.nn'

local CriterionTable, parent = torch.class('nn.CriterionTable', 'nn.Module')

function CriterionTable:__init(criterion)
   if not torch.isTypeOf(criterion, 'nn.Criterion') then
      error('nn.CriterionTable: expected a criterion, got ' .. torch.type(criterion), 2)
   end
   parent.__init(self)
   self.criterion = criterion
   self.gradInput = { criterion.gradInput }
end

local function args(input)
   if type(input) ~= 'table' or #input < 1 then
      error('nn.CriterionTable: expected a table {input, target}, got ' .. torch.type(input), 3)
   end
   return unpack(input)
end

function CriterionTable:updateOutput(input)
   self.output = self.criterion:updateOutput(args(input))
   return self.output
end

function CriterionTable:updateGradInput(input, gradOutput)
   -- the criterion may have replaced its gradInput tensor (a new type), so take the one returned
   self.gradInput[1] = self.criterion:updateGradInput(args(input))
   return self.gradInput
end
