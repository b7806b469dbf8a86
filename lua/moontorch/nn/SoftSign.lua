-- nn.SoftSign: x / (1 + |x|); d/dx = 1 / (1 + |x|)^2. Buffers temp and tempgrad as Torch7's.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local SoftSign, parent = torch.class('nn.SoftSign', 'nn.Module')

function SoftSign:updateOutput(input)
   P.checkInput(self, input)
   local denom = P.buffer(self, 'temp', input):abs(input):add(1)
   return P.output(self, input, false):cdiv(denom)
end

function SoftSign:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local denom = P.buffer(self, 'tempgrad', input):abs(input):add(1)
   return P.gradInput(self, gradOutput, false):cdiv(denom:cmul(denom))
end

function SoftSign:clearState()
   if self.temp then self.temp:set() end
   if self.tempgrad then self.tempgrad:set() end
   return parent.clearState(self)
end
