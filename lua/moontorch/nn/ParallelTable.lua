-- nn.ParallelTable: child i is applied to input[i]; the output is the table of results.
local torch = require 'moontorch'
require 'moontorch.nn'

local ParallelTable, parent = torch.class('nn.ParallelTable', 'nn.Container')

function ParallelTable:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
end

local function check(self, input)
   if type(input) ~= 'table' or #input < #self.modules then
      error(('nn.ParallelTable: expected a table of at least %d inputs, got %s'):format(#self.modules,
         type(input) == 'table' and ('a table of ' .. #input) or torch.type(input)), 3)
   end
end

function ParallelTable:updateOutput(input)
   check(self, input)
   for i = 1, #self.modules do
      self.output[i] = self:rethrowErrors(self.modules[i], i, 'updateOutput', input[i])
   end
   for i = #self.modules + 1, #self.output do self.output[i] = nil end
   return self.output
end

function ParallelTable:updateGradInput(input, gradOutput)
   for i, m in ipairs(self.modules) do
      self.gradInput[i] = self:rethrowErrors(m, i, 'updateGradInput', input[i], gradOutput[i])
   end
   return self.gradInput
end

function ParallelTable:accGradParameters(input, gradOutput, scale)
   for i, m in ipairs(self.modules) do
      self:rethrowErrors(m, i, 'accGradParameters', input[i], gradOutput[i], scale or 1)
   end
end

function ParallelTable:backward(input, gradOutput, scale)
   for i, m in ipairs(self.modules) do
      self.gradInput[i] = self:rethrowErrors(m, i, 'backward', input[i], gradOutput[i], scale or 1)
   end
   return self.gradInput
end

function ParallelTable:__tostring__() return self:_branchString('input', '   ... -> output') end
