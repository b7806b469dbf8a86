-- nn.NarrowTable(offset [, length = 1]): a table -> the sub-table of length elements from offset
-- (the elements themselves, not copies). The gradient of every other element is zeros of its size.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local NarrowTable, parent = torch.class('nn.NarrowTable', 'nn.Module')

function NarrowTable:__init(offset, length)
   parent.__init(self)
   if type(offset) ~= 'number' then error('nn.NarrowTable(offset [, length]): expected an offset', 2) end
   self.offset = offset
   self.length = length or 1
   self.output = {}
   self.gradInput = {}
end

local function check(self, input)
   if type(input) ~= 'table' or torch.isTensor(input) then
      error('nn.NarrowTable: expected a table, got ' .. torch.type(input), 3)
   end
   local last = self.offset + self.length - 1
   if self.offset < 1 or last > #input then
      error(('nn.NarrowTable: elements %d to %d do not exist in an input table of %d elements'):format(
         self.offset, last, #input), 3)
   end
end

function NarrowTable:updateOutput(input)
   check(self, input)
   local out = {}
   for i = 1, self.length do out[i] = input[self.offset + i - 1] end
   self.output = out
   return self.output
end

function NarrowTable:updateGradInput(input, gradOutput)
   check(self, input)
   local gi = self.gradInput
   for i = 1, #input do
      if i >= self.offset and i < self.offset + self.length then
         gi[i] = gradOutput[i - self.offset + 1]
      else
         gi[i] = utils.zeroLike(gi[i], input[i])
      end
   end
   for i = #input + 1, #gi do gi[i] = nil end
   return self.gradInput
end

function NarrowTable:type(t, tensorCache)
   self.output = {}
   self.gradInput = {}
   return parent.type(self, t, tensorCache)
end

function NarrowTable:clearState()
   self.output = {}
   self.gradInput = {}
   return self
end
