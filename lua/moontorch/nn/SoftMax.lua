-- nn.SoftMax: exp(x_i) / sum_j exp(x_j) over the last dimension of a vector or N x C batch (and over dim 2 of
-- N x C x H x W inputs, as Torch7's), computed in C.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local SoftMax = torch.class('nn.SoftMax', 'nn.Module')

-- The C dimension the softmax runs over: the last of a vector or N x C batch, the channels of
-- C x H x W and N x C x H x W (as Torch7's).
local function dim_of(self, input)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   local d = input:dim()
   if d == 1 or d == 2 then return d - 1 end
   if d == 3 or d == 4 then return d - 3 end
   error(torch.type(self) .. ': expected a 1-d to 4-d input, got size ' .. table.concat(T.sizes(input), 'x'), 3)
end

-- Shared with nn.LogSoftMax (log = 1). Called as tail calls so that errors point past forward().
function SoftMax.softmax_forward(self, input, log)
   local dim = dim_of(self, input)
   if self.output:type() ~= input:type() then self.output = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_softmax_forward(self.output.h, input.h, dim, log))
   return self.output
end

function SoftMax.softmax_backward(self, input, gradOutput, log)
   local dim = dim_of(self, input)
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_softmax_backward(self.gradInput.h, gradOutput.h, self.output.h, dim, log))
   return self.gradInput
end

function SoftMax:updateOutput(input) return SoftMax.softmax_forward(self, input, 0) end
function SoftMax:updateGradInput(input, gradOutput) return SoftMax.softmax_backward(self, input, gradOutput, 0) end
