-- nn.SoftShrink([lambda = 0.5]): x - lambda where x > lambda, x + lambda where x < -lambda,
-- else 0, i.e. x - clamp(x, -lambda, lambda).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
require 'moontorch.nn.HardShrink'
local P = require 'moontorch.nn.transfer_common'

local SoftShrink, parent = torch.class('nn.SoftShrink', 'nn.Module')

local function checkLambda(self, level)
   if type(self.lambda) ~= 'number' or self.lambda < 0 then
      error(('%s: lambda must be a number >= 0, got %s'):format(torch.type(self), tostring(self.lambda)), level)
   end
end

function SoftShrink:__init(lam)
   parent.__init(self)
   self.lambda = lam or 0.5
   checkLambda(self, 3)
end

function SoftShrink:updateOutput(input)
   checkLambda(self, 3)
   P.checkInput(self, input)
   local l = self.lambda
   self.output = P.buffer(self, 'output', input):clamp(input, -l, l):mul(-1):add(input)
   return self.output
end

function SoftShrink:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   return P.gradInput(self, gradOutput, false):maskedFill(nn.HardShrink.band(input, self.lambda), 0)
end
