-- nn.Transpose({d1, d2}[, {d3, d4}, ...]): swaps d1 with d2, then d3 with d4, ..., and copies
-- the result. setNumInputDims(n) makes the dimensions count within the last n (a batch keeps
-- its leading ones).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Transpose, parent = torch.class('nn.Transpose', 'nn.Module')
local result = nn.utils.result

function Transpose:__init(...)
   parent.__init(self)
   self.permutations = { ... }
   for i, p in ipairs(self.permutations) do
      if type(p) ~= 'table' or not T.is_int(p[1]) or not T.is_int(p[2]) then
         error(('nn.Transpose: argument %d must be a pair of dimensions {d1, d2}'):format(i), 2)
      end
   end
   self.numInputDims = nil
end

function Transpose:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

-- x with every pair swapped (in reverse order when `back`), dimensions shifted past the batch
function Transpose:_swap(x, ndim, back, what)
   local offset = self.numInputDims and ndim - self.numInputDims or 0
   local n = #self.permutations
   for k = 1, n do
      local p = self.permutations[back and n + 1 - k or k]
      local a, b = p[1] + offset, p[2] + offset
      if a < 1 or b < 1 or a > x:dim() or b > x:dim() then
         error(('nn.Transpose: cannot swap dimensions %d and %d of the %s of size %s'):format(a, b, what,
            table.concat(T.sizes(x), 'x')), 3)
      end
      x = x:transpose(a, b)
   end
   return x
end

function Transpose:updateOutput(input)
   T.expect_tensor(input, 'nn.Transpose', 'input', 2)
   local t = self:_swap(input, input:dim(), false, 'input')
   result(self, 'output', input):resizeAs(t):copy(t)
   return self.output
end

function Transpose:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, 'nn.Transpose', 'gradOutput', 2)
   local g = self:_swap(gradOutput, input:dim(), true, 'gradOutput')
   result(self, 'gradInput', input):resizeAs(g):copy(g)
   return self.gradInput
end
