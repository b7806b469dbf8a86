-- nn.RReLU([l = 1/8, u = 1/3] [, inplace]): x where x > 0, a * x otherwise. In training each
-- non-positive element draws its slope a from U(l, u) (torch's generator, so torch.manualSeed
-- repeats it); self.noise keeps the slopes (1 for positive inputs) for backward. In evaluate()
-- the slope is the mean (l + u) / 2, as LeakyReLU. Training draws and applies the slopes in one
-- C pass (mt_nn_rrelu_forward: element i uses counter offset + i of the generator, so the numbers
-- are those of noise:uniform(l, u) and do not depend on the thread count); evaluation and its
-- backward are the LeakyReLU C op with that mean slope.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local RReLU, parent = torch.class('nn.RReLU', 'nn.Module')

function RReLU:__init(l, u, ip)
   parent.__init(self)
   self.lower = l or 1 / 8
   self.upper = u or 1 / 3
   if type(self.lower) ~= 'number' or type(self.upper) ~= 'number' or self.lower < 0 or self.lower > self.upper then
      error(('nn.RReLU: expected 0 <= l <= u, got l = %s, u = %s'):format(tostring(self.lower),
         tostring(self.upper)), 2)
   end
   self.noise = torch.Tensor()
   self.train = true
   self.inplace = P.checkInplace('nn.RReLU', ip)
end

local LEAKY = 1 -- MT_ACT_LEAKY_RELU

function RReLU:updateOutput(input)
   P.checkInput(self, input)
   local out = self.inplace and input or P.buffer(self, 'output', input)
   self.output = out
   if self.train then
      local noise = P.buffer(self, 'noise', input)
      check(C.mt_nn_rrelu_forward(out.h, noise.h, input.h, torch._generator, self.lower, self.upper))
   else
      check(C.mt_nn_activation_forward(out.h, input.h, LEAKY, (self.lower + self.upper) / 2))
   end
   return out
end

-- In place the input holds the output, whose sign is the input's (slopes are >= 0).
function RReLU:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local gi = self.inplace and gradOutput or P.buffer(self, 'gradInput', gradOutput)
   self.gradInput = gi
   if self.train and self.upper - self.lower > 1e-6 then
      if not self.noise:isSameSizeAs(input) then
         error('nn.RReLU: backward needs the noise of a forward in training on an input of this size', 3)
      end
      torch.cmul(gi, gradOutput, self.noise)
   else
      check(C.mt_nn_activation_backward(gi.h, gradOutput.h, input.h, LEAKY, (self.lower + self.upper) / 2))
   end
   return gi
end

function RReLU:__tostring__() return ('%s (l:%f, u:%f)'):format(torch.type(self), self.lower, self.upper) end

function RReLU:clearState()
   if self.noise then self.noise:set() end
   return parent.clearState(self)
end
