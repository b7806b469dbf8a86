-- nn.GradientReversal([lambda = 1]): the identity forward; backward passes -lambda * gradOutput,
-- so the layers below ascend the objective the layers above descend (domain-adversarial
-- training, arXiv:1505.07818). setLambda changes lambda during training.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local GradientReversal, parent = torch.class('nn.GradientReversal', 'nn.Module')
local result = nn.utils.result

function GradientReversal:__init(lambda)
   parent.__init(self)
   lambda = lambda or 1
   if type(lambda) ~= 'number' then
      error('nn.GradientReversal: lambda must be a number, got ' .. tostring(lambda), 2)
   end
   self.lambda = lambda
end

function GradientReversal:setLambda(lambda)
   if type(lambda) ~= 'number' then
      error('nn.GradientReversal: lambda must be a number, got ' .. tostring(lambda), 2)
   end
   self.lambda = lambda
end

function GradientReversal:updateOutput(input)
   self.output = T.expect_tensor(input, 'nn.GradientReversal', 'input', 2)
   return self.output
end

function GradientReversal:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, 'nn.GradientReversal', 'gradOutput', 2)
   result(self, 'gradInput', gradOutput):resizeAs(gradOutput):copy(gradOutput):mul(-self.lambda)
   return self.gradInput
end

-- files from Torch7 before lambda existed (its version 1) mean lambda = 1
function GradientReversal:__afterLoad()
   if self.lambda == nil then self.lambda = 1 end
end

function GradientReversal:clearState()
   self.output = torch.Tensor() -- the input itself
   self.gradInput:set()
   return self
end
