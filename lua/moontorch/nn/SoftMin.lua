-- nn.SoftMin: exp(-x_i) / sum_j exp(-x_j), i.e. nn.SoftMax of -x (over the same dimension), whose
-- gradient is SoftMax's with the sign flipped. -x is kept in self.mininput, as Torch7 does.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local SoftMin, parent = torch.class('nn.SoftMin', 'nn.Module')

local function negated(self, input)
   P.checkInput(self, input)
   return P.buffer(self, 'mininput', input):copy(input):mul(-1)
end

function SoftMin:updateOutput(input)
   return nn.SoftMax.softmax_forward(self, negated(self, input), 0)
end

function SoftMin:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   nn.SoftMax.softmax_backward(self, negated(self, input), gradOutput, 0)
   return self.gradInput:mul(-1)
end

function SoftMin:clearState()
   if self.mininput then self.mininput:set() end
   return parent.clearState(self)
end
