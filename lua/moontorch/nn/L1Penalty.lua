-- nn.L1Penalty(l1weight[, sizeAverage = false, provideOutput = true]): an L1 regulariser on a
-- hidden state. forward passes the input through unchanged (output is the input tensor) and
-- records loss = l1weight * |x|_1 (divided by the element count with sizeAverage); backward adds
-- l1weight * sign(x) to gradOutput (or returns it alone when provideOutput is false, for a
-- state that feeds nothing else).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local L1Penalty, parent = torch.class('nn.L1Penalty', 'nn.Module')

function L1Penalty:__init(l1weight, sizeAverage, provideOutput)
   if type(l1weight) ~= 'number' then
      error('nn.L1Penalty: expected a number l1weight, got ' .. torch.type(l1weight), 2)
   end
   parent.__init(self)
   self.l1weight = l1weight
   self.sizeAverage = sizeAverage or false
   if provideOutput == nil then self.provideOutput = true else self.provideOutput = provideOutput end
end

local function weight(self, input)
   if self.sizeAverage == true then return self.l1weight / input:nElement() end
   return self.l1weight
end

function L1Penalty:updateOutput(input)
   T.expect_tensor(input, 'nn.L1Penalty', 'input', 2)
   self.loss = weight(self, input) * input:norm(1)
   self.output = input
   return self.output
end

function L1Penalty:updateGradInput(input, gradOutput)
   T.expect_tensor(input, 'nn.L1Penalty', 'input', 2)
   if self.gradInput:type() ~= input:type() then self.gradInput = input.new() end
   self.gradInput:resizeAs(input):copy(input):sign():mul(weight(self, input))
   if self.provideOutput == true then
      if not torch.isTensor(gradOutput) or gradOutput:nElement() ~= input:nElement() then
         error(('nn.L1Penalty: gradOutput must have the input\'s %d elements'):format(input:nElement()), 2)
      end
      self.gradInput:add(gradOutput)
   end
   return self.gradInput
end
