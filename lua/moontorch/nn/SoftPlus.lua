-- nn.SoftPlus([beta = 1]): log(1 + exp(beta * x)) / beta, and x itself where beta * x exceeds
-- self.threshold (20), as Torch7 does to avoid overflow.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local SoftPlus, parent = torch.class('nn.SoftPlus', 'nn.Module')

function SoftPlus:__init(beta)
   parent.__init(self)
   if beta ~= nil and (type(beta) ~= 'number' or beta == 0) then
      error('nn.SoftPlus: beta must be a non-zero number, got ' .. tostring(beta), 2)
   end
   self.beta = beta or 1
   self.threshold = 20
end

function SoftPlus:updateOutput(input)
   P.checkInput(self, input)
   local beta, th = self.beta, self.threshold
   local bx = input:clone():mul(beta)
   local linear = P.mask(bx, 'gt', th)
   -- exp's argument is capped at th, so the branch not taken stays finite (no 0 * inf)
   local y = P.buffer(self, 'output', input):clamp(bx, -math.huge, th):exp():log1p():div(beta)
   -- y where not linear, x where linear: each product is exact, one of the two is zero
   y:cmul(linear:clone():mul(-1):add(1)):addcmul(linear, input)
   return y
end

-- d/dx = sigmoid(beta * x) = 1 - exp(-beta * y), read from the output as Torch7 does; 1 where linear
function SoftPlus:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local by = self.output:clone():mul(self.beta)
   local slope = by:clone():mul(-1):expm1():mul(-1):maskedFill(by:gt(self.threshold), 1)
   return P.gradInput(self, gradOutput, false):cmul(slope)
end
