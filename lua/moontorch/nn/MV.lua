-- nn.MV([trans = false]): {M, v} -> M v for a matrix and a vector, or for a batch of each
-- (b x m x n and b x n, output b x m) with bmm; trans transposes M (its last two dimensions).
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local MV, parent = torch.class('nn.MV', 'nn.Module')

local function shape(t) return table.concat(T.sizes(t), 'x') end

function MV:__init(trans)
   parent.__init(self)
   self.trans = trans or false
   if type(self.trans) ~= 'boolean' then
      error('nn.MV: trans must be a boolean (transpose the matrix first), got ' .. torch.type(trans), 2)
   end
   self.gradInput = { torch.Tensor(), torch.Tensor() }
end

-- M (transposed if asked) and v checked: m:size(-1) == v:size(-1)
local function operands(self, input)
   if type(input) ~= 'table' or #input ~= 2 or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.MV: expected a table of two tensors {M, v}', 4)
   end
   local m, v = input[1], input[2]
   local d = m:dim()
   if (d ~= 2 and d ~= 3) or v:dim() ~= d - 1 then
      error(('nn.MV: expected a matrix and a vector or batches of them, got sizes %s and %s'):format(shape(m),
         shape(v)), 4)
   end
   if m:type() ~= v:type() then error(('nn.MV: M is a %s but v a %s'):format(m:type(), v:type()), 4) end
   if d == 3 and m:size(1) ~= v:size(1) then
      error(('nn.MV: batches of %d matrices and %d vectors'):format(m:size(1), v:size(1)), 4)
   end
   if self.trans then m = m:transpose(d - 1, d) end
   if m:size(d) ~= v:size(d - 1) then
      error(('nn.MV: cannot multiply %s by a vector of %d (sizes after the transpose)'):format(shape(m),
         v:size(d - 1)), 4)
   end
   return m, v, d
end

function MV:updateOutput(input)
   local m, v, d = operands(self, input)
   local out = utils.result(self, 'output', m)
   if d == 2 then return torch.mv(out, m, v) end
   torch.bmm(out, m, v:contiguous():view(v:size(1), v:size(2), 1))
   return out:resize(m:size(1), m:size(2))
end

-- y = m v gives dm = g v^T and dv = m^T g; a transposed M gets dm transposed back (v g^T).
function MV:updateGradInput(input, gradOutput)
   local m, v, d = operands(self, input)
   local rows = m:size(d - 1)
   if not torch.isTensor(gradOutput) or gradOutput:dim() ~= d - 1 or gradOutput:size(d - 1) ~= rows then
      error(('nn.MV: gradOutput has size %s, expected the output size'):format(
         torch.isTensor(gradOutput) and shape(gradOutput) or torch.type(gradOutput)), 2)
   end
   for i = 1, 2 do
      if not torch.isTensor(self.gradInput[i]) or self.gradInput[i]:type() ~= input[i]:type() then
         self.gradInput[i] = T.empty_tensor(input[i]:dtype(), input[i]:device())
      end
   end
   local gm, gv = self.gradInput[1], self.gradInput[2]
   if d == 2 then
      if self.trans then torch.ger(gm, v, gradOutput) else torch.ger(gm, gradOutput, v) end
      torch.mv(gv, m:t(), gradOutput)
   else
      local b, n = m:size(1), m:size(3)
      local g = gradOutput:contiguous():view(b, rows, 1)
      local vr = v:contiguous():view(b, 1, n)
      if self.trans then
         torch.bmm(gm, vr:transpose(2, 3), g:transpose(2, 3))
      else
         torch.bmm(gm, g, vr)
      end
      torch.bmm(gv, m:transpose(2, 3), g)
      gv:resize(b, n)
   end
   for i = #self.gradInput, 3, -1 do self.gradInput[i] = nil end
   return self.gradInput
end
