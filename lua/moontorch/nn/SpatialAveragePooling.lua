-- nn.SpatialAveragePooling(kW, kH, [dW=1], [dH=1], [padW=0], [padH=0]) as in Torch7: :ceil()/:floor(),
-- padding counted in the divisor by default (:setCountExcludePad() / :setCountIncludePad()).
-- Input: C x H x W or N x C x H x W. Math in C (csrc/nn/pool.c).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local Pool, parent = torch.class('nn.SpatialAveragePooling', 'nn.Module')

function Pool:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   nn.utils.checkWindow(self, kW, kH)
   self.kW, self.kH = kW, kH
   self.dW, self.dH = dW or 1, dH or 1
   self.padW, self.padH = padW or 0, padH or 0
   self.ceil_mode = false
   self.count_include_pad = true
   self.divide = true
end

function Pool:ceil() self.ceil_mode = true return self end
function Pool:floor() self.ceil_mode = false return self end
function Pool:setCountIncludePad() self.count_include_pad = true return self end
function Pool:setCountExcludePad() self.count_include_pad = false return self end

local result = nn.utils.result

-- the window actually used (global pooling overrides this to cover the whole image)
function Pool:_window(input) return self.kW, self.kH, self.dW, self.dH, self.padW, self.padH end

function Pool:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   local kW, kH, dW, dH, padW, padH = self:_window(input)
   check(C.mt_avgpool2d_forward(result(self, 'output', input).h, input.h, kW, kH, dW, dH, padW, padH,
      self.ceil_mode and 1 or 0, self.count_include_pad and 1 or 0))
   if self.divide == false then self.output:mul(kW * kH) end -- Torch7's legacy sum pooling
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 3)
   local kW, kH, dW, dH, padW, padH = self:_window(input)
   check(C.mt_avgpool2d_backward(result(self, 'gradInput', input).h, gradOutput.h, input.h, kW, kH, dW, dH, padW,
      padH, self.ceil_mode and 1 or 0, self.count_include_pad and 1 or 0))
   if self.divide == false then self.gradInput:mul(kW * kH) end
   return self.gradInput
end

Pool.__tostring__ = nn.utils.poolToString

return Pool
