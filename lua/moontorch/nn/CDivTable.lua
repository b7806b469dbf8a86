-- nn.CDivTable: input[1] / input[2], elementwise, for two same-sized tensors.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local CDivTable, parent = torch.class('nn.CDivTable', 'nn.Module')

function CDivTable:__init()
   parent.__init(self)
   self.gradInput = {}
end

function CDivTable:updateOutput(input)
   utils.checkTensorTable('nn.CDivTable', input, 2)
   if self.output:type() ~= input[1]:type() then self.output = input[1].new() end
   self.output:resizeAs(input[1]):copy(input[1]):cdiv(input[2])
   return self.output
end

-- d/da = g / b; d/db = -g * a / b^2 = -(g / b) * (a / b), with a / b the output
function CDivTable:updateGradInput(input, gradOutput)
   for i = 1, 2 do
      local g = self.gradInput[i]
      if not g or g:type() ~= input[i]:type() then g = input[i].new() end
      self.gradInput[i] = g
   end
   self.gradInput[1]:resizeAs(gradOutput):copy(gradOutput):cdiv(input[2])
   self.gradInput[2]:resizeAs(gradOutput):copy(self.gradInput[1]):cmul(self.output):mul(-1)
   for i = 3, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end
