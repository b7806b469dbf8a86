-- nn.LogSigmoid: log(1 / (1 + exp(-x))) = min(x, 0) - log(1 + exp(-|x|)), a form that neither
-- overflows nor loses the small values; d/dx = sigmoid(-x). self.buffer holds 1 + exp(-|x|) as
-- Torch7's does.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local LogSigmoid, parent = torch.class('nn.LogSigmoid', 'nn.Module')

function LogSigmoid:updateOutput(input)
   P.checkInput(self, input)
   local e = P.buffer(self, 'buffer', input):abs(input):mul(-1):exp()   -- exp(-|x|) in (0, 1]
   local out = P.output(self, input, false):clamp(-math.huge, 0):csub(e:clone():log1p())
   e:add(1)
   return out
end

function LogSigmoid:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local s = input:clone():mul(-1):sigmoid()
   return P.gradInput(self, gradOutput, false):cmul(s)
end

function LogSigmoid:clearState()
   if self.buffer then self.buffer:set() end
   return parent.clearState(self)
end
