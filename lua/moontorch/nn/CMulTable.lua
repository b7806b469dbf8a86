-- nn.CMulTable: the elementwise product of a table of same-sized tensors.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local CMulTable, parent = torch.class('nn.CMulTable', 'nn.Module')

function CMulTable:__init()
   parent.__init(self)
   self.gradInput = {}
end

function CMulTable:updateOutput(input)
   utils.checkTensorTable('nn.CMulTable', input)
   if self.output:type() ~= input[1]:type() then self.output = input[1].new() end
   self.output:resizeAs(input[1]):copy(input[1])
   for i = 2, #input do self.output:cmul(input[i]) end
   return self.output
end

-- d/dx_i = gradOutput * prod_{j ~= i} x_j, formed by products (no division: inputs may be 0)
function CMulTable:updateGradInput(input, gradOutput)
   for i = 1, #input do
      local g = self.gradInput[i]
      if not g or g:type() ~= input[i]:type() then g = input[i].new() end
      g:resizeAs(gradOutput):copy(gradOutput)
      for j = 1, #input do
         if j ~= i then g:cmul(input[j]) end
      end
      self.gradInput[i] = g
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end
