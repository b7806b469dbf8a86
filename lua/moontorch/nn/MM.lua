-- nn.MM([transA = false][, transB = false]): {A, B} -> A B for two matrices, or for two
-- batches of matrices (b x m x n and b x n x p) with bmm; transA/transB transpose A/B (their
-- last two dimensions) first.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local MM, parent = torch.class('nn.MM', 'nn.Module')

local function shape(t) return table.concat(T.sizes(t), 'x') end

function MM:__init(transA, transB)
   parent.__init(self)
   self.transA = transA or false
   self.transB = transB or false
   self.gradInput = { torch.Tensor(), torch.Tensor() }
end

-- A and B checked, and the transposes applied: a, b with a:size(-1) == b:size(-2)
local function operands(self, input)
   if type(input) ~= 'table' or #input ~= 2 or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.MM: expected a table of two tensors {A, B}', 4)
   end
   local a, b = input[1], input[2]
   local d = a:dim()
   if (d ~= 2 and d ~= 3) or b:dim() ~= d then
      error(('nn.MM: expected two matrices or two batches of matrices, got sizes %s and %s'):format(shape(a),
         shape(b)), 4)
   end
   if a:type() ~= b:type() then error(('nn.MM: A is a %s but B a %s'):format(a:type(), b:type()), 4) end
   if d == 3 and a:size(1) ~= b:size(1) then
      error(('nn.MM: batches of %d and %d matrices'):format(a:size(1), b:size(1)), 4)
   end
   if self.transA then a = a:transpose(d - 1, d) end
   if self.transB then b = b:transpose(d - 1, d) end
   if a:size(d) ~= b:size(d - 1) then
      error(('nn.MM: cannot multiply %s by %s (sizes after the transposes)'):format(shape(a), shape(b)), 4)
   end
   return a, b, d
end

local function mul(res, x, y, d)
   if d == 2 then return torch.mm(res, x, y) end
   return torch.bmm(res, x, y)
end

function MM:updateOutput(input)
   local a, b, d = operands(self, input)
   return mul(utils.result(self, 'output', a), a, b, d)
end

-- C = a b gives dA = G b^T, dB = a^T G; for a transposed operand the gradient is transposed back.
function MM:updateGradInput(input, gradOutput)
   local a, b, d = operands(self, input)
   if not torch.isTensor(gradOutput) or gradOutput:dim() ~= d or gradOutput:size(d - 1) ~= a:size(d - 1)
      or gradOutput:size(d) ~= b:size(d) then
      error(('nn.MM: gradOutput has size %s, expected the output size'):format(
         torch.isTensor(gradOutput) and shape(gradOutput) or torch.type(gradOutput)), 2)
   end
   local function tr(x) return x:transpose(d - 1, d) end
   for i = 1, 2 do
      if not torch.isTensor(self.gradInput[i]) or self.gradInput[i]:type() ~= input[i]:type() then
         self.gradInput[i] = T.empty_tensor(input[i]:dtype(), input[i]:device())
      end
   end
   local ga, gb = self.gradInput[1], self.gradInput[2]
   if self.transA then mul(ga, b, tr(gradOutput), d) else mul(ga, gradOutput, tr(b), d) end
   if self.transB then mul(gb, tr(gradOutput), a, d) else mul(gb, tr(a), gradOutput, d) end
   for i = #self.gradInput, 3, -1 do self.gradInput[i] = nil end
   return self.gradInput
end
