-- nn.ELU([alpha = 1] [, inplace]): x where x > 0, alpha * (exp(x) - 1) otherwise. The gradient
-- is read from the output as Torch7 does: output + alpha where output <= 0, else 1.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C = T.clib
local P = require 'moontorch.nn.transfer_common'

local ELU, parent = torch.class('nn.ELU', 'nn.Module')

function ELU:__init(alpha, inplace)
   parent.__init(self)
   if alpha ~= nil and type(alpha) ~= 'number' then error('nn.ELU: alpha must be a number, got ' .. type(alpha), 2) end
   self.alpha = alpha or 1
   self.inplace = P.checkInplace('nn.ELU', inplace)
end

-- one fused C pass each way (MT_ACT_ELU); in place, the output is the input and the gradient
-- overwrites gradOutput, as for nn.ReLU
function ELU:updateOutput(input)
   P.checkInput(self, input)
   return nn.ReLU.activation_forward(self, input, C.MT_ACT_ELU, self.alpha, self.inplace)
end

function ELU:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   return nn.ReLU.activation_backward(self, self.output, gradOutput, C.MT_ACT_ELU, self.alpha, self.inplace)
end

function ELU:__tostring__() return ('%s (alpha:%f)'):format(torch.type(self), self.alpha) end
