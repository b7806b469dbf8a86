-- nn.ConcatTable: every child sees the same input; the output is the table of their outputs.
-- gradInput is the sum of the children's gradInputs (tensors or nested tables).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local ConcatTable, parent = torch.class('nn.ConcatTable', 'nn.Container')

function ConcatTable:__init()
   parent.__init(self)
   self.output = {}
end

function ConcatTable:updateOutput(input)
   for i = 1, #self.modules do
      self.output[i] = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
   end
   for i = #self.modules + 1, #self.output do self.output[i] = nil end
   return self.output
end

local function sum_grads(self, method, input, gradOutput, scale)
   for i, m in ipairs(self.modules) do
      local g = self:rethrowErrors(m, i, method, input, gradOutput[i], scale)
      if method ~= 'accGradParameters' then
         if i == 1 then self.gradInput = nn.Container._copyInto(self.gradInput, g)
         else nn.Container._addInto(self.gradInput, g) end
      end
   end
   return self.gradInput
end

function ConcatTable:updateGradInput(input, gradOutput) return sum_grads(self, 'updateGradInput', input, gradOutput) end
function ConcatTable:backward(input, gradOutput, scale)
   return sum_grads(self, 'backward', input, gradOutput, scale or 1)
end
function ConcatTable:accGradParameters(input, gradOutput, scale)
   sum_grads(self, 'accGradParameters', input, gradOutput, scale or 1)
end

function ConcatTable:__tostring__() return self:_branchString('input', '   ... -> output') end
