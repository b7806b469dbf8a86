-- nn.MulConstant(constant_scalar[, ip = false]): y = c x for a number c. In place, the input
-- becomes the output and gradOutput the gradient, and backward restores the input (c ~= 0).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local MulConstant, parent = torch.class('nn.MulConstant', 'nn.Module')

function MulConstant:__init(constant_scalar, ip)
   if type(constant_scalar) ~= 'number' then
      error('nn.MulConstant: expected a number constant, got ' .. torch.type(constant_scalar), 2)
   end
   if ip ~= nil and type(ip) ~= 'boolean' then error('nn.MulConstant: the in-place flag must be boolean', 2) end
   parent.__init(self)
   self.constant_scalar = constant_scalar
   self.inplace = ip or false
end

function MulConstant:updateOutput(input)
   T.expect_tensor(input, 'nn.MulConstant', 'input', 2)
   if self.inplace then
      input:mul(self.constant_scalar)
      self.output = input
   else
      if self.output:type() ~= input:type() then self.output = input.new() end
      self.output:resizeAs(input):copy(input):mul(self.constant_scalar)
   end
   return self.output
end

function MulConstant:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   if self.inplace then
      gradOutput:mul(self.constant_scalar)
      self.gradInput = gradOutput
      input:div(self.constant_scalar)
   else
      if self.gradInput:type() ~= gradOutput:type() then self.gradInput = gradOutput.new() end
      self.gradInput:resizeAs(gradOutput):copy(gradOutput):mul(self.constant_scalar)
   end
   return self.gradInput
end
