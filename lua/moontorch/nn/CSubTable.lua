-- nn.CSubTable: input[1] - input[2], for two same-sized tensors.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local CSubTable, parent = torch.class('nn.CSubTable', 'nn.Module')

function CSubTable:__init()
   parent.__init(self)
   self.gradInput = {}
end

function CSubTable:updateOutput(input)
   utils.checkTensorTable('nn.CSubTable', input, 2)
   if self.output:type() ~= input[1]:type() then self.output = input[1].new() end
   self.output:resizeAs(input[1]):copy(input[1]):add(-1, input[2])
   return self.output
end

function CSubTable:updateGradInput(input, gradOutput)
   for i = 1, 2 do
      local g = self.gradInput[i]
      if not g or g:type() ~= input[i]:type() then g = input[i].new() end
      self.gradInput[i] = g:resizeAs(gradOutput):copy(gradOutput)
   end
   self.gradInput[2]:mul(-1)
   for i = 3, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end
