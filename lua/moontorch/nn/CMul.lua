-- nn.CMul(size...): y = w .* x with a learned weight of the given size (numbers or a
-- LongStorage). Where the weight has size 1 it is expanded along that dimension; an input
-- with an extra first dimension is a batch (see elementwise.paramView).
-- Torch7's initialisation: uniform in +-1/sqrt(#weight).
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local CMul, parent = torch.class('nn.CMul', 'nn.Module')

function CMul:__init(...)
   parent.__init(self)
   self.size = E.sizeArg('nn.CMul', ...)
   self.weight = torch.Tensor(self.size)
   self.gradWeight = torch.Tensor(self.size):zero()
   self:reset()
end

function CMul:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:nElement()) end
   self.weight:uniform(-stdv, stdv)
   return self
end

function CMul:updateOutput(input)
   E.sameType(self, input, self.weight)
   local w = E.paramView(self, self.weight, input)
   return torch.cmul(utils.result(self, 'output', input):resizeAs(input), input, w)
end

function CMul:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.cmul(gi, gradOutput, (E.paramView(self, self.weight, input)))
end

function CMul:accGradParameters(input, gradOutput, scale)
   local _, case = E.paramView(self, self.weight, input)
   local prod = torch.cmul(utils.result(self, '_repeat', input), input, gradOutput)
   self.gradWeight:add(scale or 1, E.reduceToParam(prod, self.weight, input, case))
end

function CMul:clearState()
   self._repeat = nil
   return parent.clearState(self)
end
