-- nn.CMinTable: the elementwise minimum of a table of same-sized tensors; the gradient goes to
-- the first input holding the minimum. Shares CMaxTable's code with the comparison reversed.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
require 'moontorch.nn.CMaxTable'

local CMinTable, parent = torch.class('nn.CMinTable', 'nn.Module')

function CMinTable:__init()
   parent.__init(self)
   self.gradInput = {}
   self.minIdx = torch.Tensor()
   self.mask = torch.Tensor()
end

function CMinTable:updateOutput(input)
   return nn.CMaxTable._forward(self, input, 'nn.CMinTable', 'lt', 'cmin', 'minIdx')
end

function CMinTable:updateGradInput(input, gradOutput)
   return nn.CMaxTable._backward(self, input, gradOutput, 'minIdx')
end

function CMinTable:clearState()
   self:_clearFields('minIdx', 'mask', '_buf')
   return parent.clearState(self)
end
