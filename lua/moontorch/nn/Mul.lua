-- nn.Mul(): y = w x with a single learned scalar w (weight, of one element).
-- Torch7's initialisation: uniform in +-1.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local Mul, parent = torch.class('nn.Mul', 'nn.Module')

function Mul:__init()
   parent.__init(self)
   self.weight = torch.Tensor(1)
   self.gradWeight = torch.Tensor(1):zero()
   self:reset()
end

function Mul:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(1)) end
   self.weight:uniform(-stdv, stdv)
   return self
end

function Mul:updateOutput(input)
   E.sameType(self, input, self.weight)
   return torch.mul(utils.result(self, 'output', input):resizeAs(input), input, self.weight[1])
end

function Mul:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   return torch.mul(gi, gradOutput, self.weight[1])
end

function Mul:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   self.gradWeight:add(scale * input:dot(gradOutput))
end
