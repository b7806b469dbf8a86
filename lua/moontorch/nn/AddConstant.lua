-- nn.AddConstant(constant_scalar[, ip = false]): y = x + c. c is a number, or a 1-d tensor added
-- to each row of a vector or N x D input. In place, the input becomes the output and backward
-- restores it.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local AddConstant, parent = torch.class('nn.AddConstant', 'nn.Module')

function AddConstant:__init(constant_scalar, ip)
   if type(constant_scalar) ~= 'number' and not torch.isTensor(constant_scalar) then
      error('nn.AddConstant: expected a number or a tensor constant, got ' .. torch.type(constant_scalar), 2)
   end
   if ip ~= nil and type(ip) ~= 'boolean' then error('nn.AddConstant: the in-place flag must be boolean', 2) end
   parent.__init(self)
   self.constant_scalar = constant_scalar
   self.inplace = ip or false
end

-- the constant in a form that broadcasts over the input
local function constant(self, input)
   local c = self.constant_scalar
   if type(c) == 'number' then return c end
   local d = input:dim()
   if d < 1 or d > 2 or c:dim() ~= 1 or input:size(d) ~= c:size(1) then
      error(('nn.AddConstant: a constant of size %s needs an input of size %d or Nx%d, got %s'):format(
         table.concat(T.sizes(c), 'x'), c:nElement(), c:nElement(), table.concat(T.sizes(input), 'x')), 4)
   end
   if c:type() ~= input:type() then c = c:type(input:type()) end
   if d == 2 then return c:view(1, c:size(1)):expandAs(input) end
   return c
end

function AddConstant:updateOutput(input)
   T.expect_tensor(input, 'nn.AddConstant', 'input', 2)
   local c = constant(self, input)
   if self.inplace then
      input:add(c)
      self.output = input
   else
      if self.output:type() ~= input:type() then self.output = input.new() end
      self.output:resizeAs(input):copy(input):add(c)
   end
   return self.output
end

function AddConstant:updateGradInput(input, gradOutput)
   if self.inplace then
      self.gradInput = gradOutput
      local c = constant(self, input)
      if type(c) == 'number' then input:add(-c) else input:add(-1, c) end
   else
      if self.gradInput:type() ~= gradOutput:type() then self.gradInput = gradOutput.new() end
      self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   end
   return self.gradInput
end
