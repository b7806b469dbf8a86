-- nn.CMaxTable: the elementwise maximum of a table of same-sized tensors. The gradient goes to
-- the first input holding the maximum (ties go to the lowest index), as in Torch7.
-- nn.CMinTable (CMinTable.lua) reuses this with the comparison reversed.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local CMaxTable, parent = torch.class('nn.CMaxTable', 'nn.Module')

function CMaxTable:__init()
   parent.__init(self)
   self.gradInput = {}
   self.maxIdx = torch.Tensor()
   self.mask = torch.Tensor()
end

-- shared by CMaxTable and CMinTable: cmp is 'gt' or 'lt', pick 'cmax' or 'cmin', idx the field
-- holding (as floats of the input's type) which input won at each element
function CMaxTable._forward(self, input, name, cmp, pick, idx)
   utils.checkTensorTable(name, input, nil, 3)
   local x1 = input[1]
   for _, f in ipairs({ 'output', 'mask', '_buf', idx }) do
      if not self[f] or self[f]:type() ~= x1:type() then self[f] = x1.new() end
   end
   local out, at, mask, buf = self.output, self[idx], self.mask, self._buf
   out:resizeAs(x1):copy(x1)
   at:resizeAs(x1):fill(1)
   for i = 2, #input do
      mask[cmp](mask, input[i], out)               -- 1 where input i strictly wins
      out[pick](out, input[i])
      buf:resizeAs(at):fill(i):add(-1, at):cmul(mask)
      at:add(buf)                                  -- at = i where mask, unchanged elsewhere
   end
   return out
end

function CMaxTable._backward(self, input, gradOutput, idx)
   local at, mask = self[idx], self.mask
   for i = 1, #input do
      local g = self.gradInput[i]
      if not g or g:type() ~= input[i]:type() then g = input[i].new() end
      mask:eq(at, i)
      self.gradInput[i] = g:resizeAs(gradOutput):copy(gradOutput):cmul(mask)
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end

function CMaxTable:updateOutput(input)
   return CMaxTable._forward(self, input, 'nn.CMaxTable', 'gt', 'cmax', 'maxIdx')
end

function CMaxTable:updateGradInput(input, gradOutput)
   return CMaxTable._backward(self, input, gradOutput, 'maxIdx')
end

function CMaxTable:clearState()
   self:_clearFields('maxIdx', 'mask', '_buf')
   return parent.clearState(self)
end
