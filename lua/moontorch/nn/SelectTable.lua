-- nn.SelectTable(index): a (nested) table -> its element at index (a tensor or a table, passed on
-- as is). index is a number (negative counts from the end) or a key. The gradient of every other
-- element is zeros of its size, at any depth.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local SelectTable, parent = torch.class('nn.SelectTable', 'nn.Module')

function SelectTable:__init(index)
   parent.__init(self)
   if index == nil then error('nn.SelectTable: expected an index', 2) end
   self.index = index
   self.gradInput = {}
end

function SelectTable:_index(input)
   if type(input) ~= 'table' or torch.isTensor(input) then
      error('nn.SelectTable: expected a table, got ' .. torch.type(input), 3)
   end
   local index = self.index
   if type(index) == 'number' and index < 0 then index = #input + index + 1 end
   if input[index] == nil then
      error(('nn.SelectTable: index %s does not exist in an input table of %d elements'):format(
         tostring(self.index), #input), 3)
   end
   return index
end

function SelectTable:updateOutput(input)
   self.output = input[self:_index(input)]
   return self.output
end

function SelectTable:updateGradInput(input, gradOutput)
   local index = self:_index(input)
   -- zeros for the others; a copy of gradOutput for the selected one (its size may change)
   local gi = type(self.gradInput) == 'table' and not torch.isTensor(self.gradInput) and self.gradInput or {}
   for k in pairs(gi) do if input[k] == nil then gi[k] = nil end end
   for k, v in pairs(input) do
      if k ~= index then gi[k] = utils.zeroLike(gi[k], v) end
   end
   gi[index] = utils.recursiveCopy(gi[index], gradOutput)
   self.gradInput = gi
   return self.gradInput
end

function SelectTable:type(t, tensorCache)
   self.gradInput = {}
   self.output = {}
   return parent.type(self, t, tensorCache)
end

function SelectTable:clearState()
   self.gradInput = {}
   self.output = {}
   return self
end

function SelectTable:__tostring__()
   return torch.type(self) .. '(' .. tostring(self.index) .. ')'
end
