-- nn.ReLU([inplace]): max(0, x). In place, the output is the input tensor itself.
-- As in Torch7 it is nn.Threshold(0, 0, inplace) (same fields), run by a fused C kernel.
local torch = require 'moontorch'
require 'moontorch.nn'
require 'moontorch.nn.Threshold'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local ReLU, parent = torch.class('nn.ReLU', 'nn.Threshold')

function ReLU:__init(inplace)
   parent.__init(self, 0, 0, inplace)
end

-- Shared by the pointwise activations: kind is an MT_ACT_* constant, alpha its parameter.
function ReLU.activation_forward(self, input, kind, alpha, inplace)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   if inplace then
      check(C.mt_nn_activation_forward(input.h, input.h, kind, alpha))
      self.output = input
   else
      if self.output == input or self.output:type() ~= input:type() then
         self.output = T.empty_tensor(input:dtype(), input:device())
      end
      check(C.mt_nn_activation_forward(self.output.h, input.h, kind, alpha))
   end
   return self.output
end

function ReLU.activation_backward(self, saved, gradOutput, kind, alpha, inplace)
   if inplace then
      check(C.mt_nn_activation_backward(gradOutput.h, gradOutput.h, saved.h, kind, alpha))
      self.gradInput = gradOutput
   else
      if self.gradInput == gradOutput or self.gradInput:type() ~= gradOutput:type() then
         self.gradInput = T.empty_tensor(gradOutput:dtype(), gradOutput:device())
      end
      check(C.mt_nn_activation_backward(self.gradInput.h, gradOutput.h, saved.h, kind, alpha))
   end
   return self.gradInput
end

-- Sigmoid and Tanh: a parameterless activation whose backward needs only its output, so one
-- pair of methods serves both and only the MT_ACT_* kind differs.
function ReLU.defineOutputActivation(class, kind)
   function class:updateOutput(input)
      return ReLU.activation_forward(self, input, kind, 0, false)
   end
   function class:updateGradInput(input, gradOutput)
      return ReLU.activation_backward(self, self.output, gradOutput, kind, 0, false)
   end
end

-- a threshold or value changed after construction leaves the C kernel to nn.Threshold
local function plain(self) return (self.threshold or 0) == 0 and (self.val or 0) == 0 end

function ReLU:updateOutput(input)
   if not plain(self) then return parent.updateOutput(self, input) end
   return ReLU.activation_forward(self, input, C.MT_ACT_RELU, 0, self.inplace)
end

-- the output has the input's sign, so it serves in place too
function ReLU:updateGradInput(input, gradOutput)
   if not plain(self) then return parent.updateGradInput(self, input, gradOutput) end
   return ReLU.activation_backward(self, self.inplace and self.output or input, gradOutput, C.MT_ACT_RELU, 0,
      self.inplace)
end

function ReLU:__tostring__() return torch.type(self) .. (self.inplace and ' (in place)' or '') end
