-- nn.CAdd(size...): y = x + b with a learned bias of the given size (numbers or a
-- LongStorage). Where the bias has size 1 it is expanded along that dimension; an input with
-- an extra first dimension is a batch (see elementwise.paramView).
-- Torch7's initialisation: uniform in +-1/sqrt(#bias).
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local CAdd, parent = torch.class('nn.CAdd', 'nn.Module')

function CAdd:__init(...)
   parent.__init(self)
   self.size = E.sizeArg('nn.CAdd', ...)
   self.bias = torch.Tensor(self.size)
   self.gradBias = torch.Tensor(self.size):zero()
   self:reset()
end

function CAdd:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.bias:nElement()) end
   self.bias:uniform(-stdv, stdv)
   return self
end

function CAdd:updateOutput(input)
   E.sameType(self, input, self.bias)
   local b = E.paramView(self, self.bias, input)
   return torch.add(utils.result(self, 'output', input):resizeAs(input), input, b)
end

function CAdd:updateGradInput(input, gradOutput)
   return E.gradInput(self, input, gradOutput):copy(gradOutput)
end

function CAdd:accGradParameters(input, gradOutput, scale)
   local _, case = E.paramView(self, self.bias, input)
   self.gradBias:add(scale or 1, E.reduceToParam(gradOutput, self.bias, input, case))
end
