-- nn.ELU([alpha = 1] [, inplace]): x where x > 0, alpha * (exp(x) - 1) otherwise. The gradient
-- is read from the output as Torch7 does: output + alpha where output <= 0, else 1.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.pointwise'

local ELU, parent = torch.class('nn.ELU', 'nn.Module')

function ELU:__init(alpha, inplace)
   parent.__init(self)
   if alpha ~= nil and type(alpha) ~= 'number' then error('nn.ELU: alpha must be a number, got ' .. type(alpha), 2) end
   self.alpha = alpha or 1
   self.inplace = P.checkInplace('nn.ELU', inplace)
end

function ELU:updateOutput(input)
   P.checkInput(self, input)
   -- max(x, 0) + alpha * expm1(min(x, 0)): for each x one term is exactly zero
   local neg = input:clone():clamp(-math.huge, 0):expm1():mul(self.alpha)
   return P.output(self, input, self.inplace):clamp(0, math.huge):add(neg)
end

function ELU:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local slope = self.output:clone():add(self.alpha):maskedFill(self.output:gt(0), 1)
   return P.gradInput(self, gradOutput, self.inplace):cmul(slope)
end

function ELU:__tostring__() return ('%s (alpha:%f)'):format(torch.type(self), self.alpha) end
