-- nn.LeakyReLU([negval = 1/100] [, inplace]): x for x > 0, negval * x otherwise.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local C = require('moontorch.internal').clib

local LeakyReLU, parent = torch.class('nn.LeakyReLU', 'nn.Module')

function LeakyReLU:__init(negval, ip)
   parent.__init(self)
   if type(negval) == 'boolean' then negval, ip = 0.01, negval end
   self.negval = negval or 0.01
   self.inplace = ip or false
   -- as Torch7: a negative slope would flip the input's sign, which backward reads, so such a
   -- module quietly keeps a separate output
   if self.negval < 0 then self.inplace = false end
end

function LeakyReLU:updateOutput(input)
   return nn.ReLU.activation_forward(self, input, C.MT_ACT_LEAKY_RELU, self.negval, self.inplace)
end

function LeakyReLU:updateGradInput(input, gradOutput)
   return nn.ReLU.activation_backward(self, self.inplace and self.output or input, gradOutput, C.MT_ACT_LEAKY_RELU,
      self.negval, self.inplace)
end

function LeakyReLU:__tostring__() return torch.type(self) .. ('(%g)'):format(self.negval) end
