-- nn.Add(inputSize[, scalar]): y = x + b with a learned bias of inputSize elements, or one
-- bias for all elements when scalar is true. An input with more elements is a batch: its
-- first dimension counts samples of inputSize elements each.
-- Torch7's initialisation: bias uniform in +-1/sqrt(#bias).
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local Add, parent = torch.class('nn.Add', 'nn.Module')

function Add:__init(inputSize, scalar)
   parent.__init(self)
   local size = scalar and 1 or inputSize
   if type(size) ~= 'number' or size < 1 or size % 1 ~= 0 then
      error('nn.Add: expected a positive integer inputSize, got ' .. tostring(inputSize), 2)
   end
   self.scalar = scalar
   self.bias = torch.Tensor(size)
   self.gradBias = torch.Tensor(size):zero()
   self:reset()
end

function Add:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.bias:size(1)) end
   self.bias:uniform(-stdv, stdv)
   return self
end

function Add:updateOutput(input)
   E.sameType(self, input, self.bias)
   local out = utils.result(self, 'output', input):resizeAs(input)
   if self.scalar then return torch.add(out, input, self.bias[1]) end
   return torch.add(out, input, (E.paramView(self, self.bias, input)))
end

function Add:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return gi:copy(gradOutput)
end

function Add:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if self.scalar then
      self.gradBias:add(scale * gradOutput:sum())
   else
      local _, case = E.paramView(self, self.bias, input)
      self.gradBias:add(scale, E.reduceToParam(gradOutput, self.bias, input, case))
   end
end
