-- nn.SpatialConvolutionLocal(nIn, nOut, iW, iH, kW, kH, [dW=1], [dH=1], [padW=0], [padH=padW]) as in
-- Torch7: a convolution whose weights are not shared, one filter bank per output position, for
-- inputs of the fixed size nIn x iH x iW (or a batch of them). Weight: oH x oW x nOut x nIn x kH x kW;
-- bias: nOut x oH x oW. The input patches come from two tensor unfolds and every position's
-- product is one batch of a bmm; the input gradient adds the patch gradients back per kernel
-- offset through strided views (any device).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local Local, parent = torch.class('nn.SpatialConvolutionLocal', 'nn.Module')

local NAME = 'nn.SpatialConvolutionLocal'

function Local:__init(nIn, nOut, iW, iH, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   dW, dH = dW or 1, dH or 1
   padW = padW or 0
   padH = padH or padW
   cc.posints(NAME, { { nIn, 'nInputPlane' }, { nOut, 'nOutputPlane' }, { iW, 'iW' }, { iH, 'iH' }, { kW, 'kW' },
      { kH, 'kH' }, { dW, 'dW' }, { dH, 'dH' }, { padW + 1, 'padW + 1' }, { padH + 1, 'padH + 1' } })
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.iW, self.iH, self.kW, self.kH, self.dW, self.dH = iW, iH, kW, kH, dW, dH
   self.padW, self.padH = padW, padH
   self.oW = math.floor((2 * padW + iW - kW) / dW) + 1
   self.oH = math.floor((2 * padH + iH - kH) / dH) + 1
   if self.oW < 1 or self.oH < 1 then
      error(('%s: the kernel %dx%d does not fit the padded input %dx%d'):format(NAME, kW, kH, iW + 2 * padW,
         iH + 2 * padH), 2)
   end
   self.weight = torch.Tensor(self.oH, self.oW, nOut, nIn, kH, kW)
   self.bias = torch.Tensor(nOut, self.oH, self.oW)
   self.gradWeight = torch.Tensor(self.oH, self.oW, nOut, nIn, kH, kW):zero()
   self.gradBias = torch.Tensor(nOut, self.oH, self.oW):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*kH*nInputPlane)
function Local:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH * self.nInputPlane) end

-- the input as N x nIn x iH x iW, and whether it had no batch dimension
local function as4d(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   local ok = (d == 3 or d == 4) and input:size(d - 2) == self.nInputPlane and input:size(d - 1) == self.iH
      and input:size(d) == self.iW
   if not ok then
      error(('%s: expected an input of size %dx%dx%d (or a batch of them), got %s'):format(NAME, self.nInputPlane,
         self.iH, self.iW, table.concat(T.sizes(input), 'x')), 4)
   end
   if d == 3 then return input:view(1, self.nInputPlane, self.iH, self.iW), true end
   return input, false
end

local function mats(self, w)
   return w:view(self.oH * self.oW, self.nOutputPlane, self.nInputPlane * self.kH * self.kW)
end

-- padded input or gradient buffer: zeros with x in the middle
function Local:_padded(x)
   if self.padW == 0 and self.padH == 0 then return x end
   local p = x.new():resize(x:size(1), x:size(2), self.iH + 2 * self.padH, self.iW + 2 * self.padW):zero()
   p:narrow(3, self.padH + 1, self.iH):narrow(4, self.padW + 1, self.iW):copy(x)
   return p
end

function Local:updateOutput(input)
   local x, single = as4d(self, input)
   local N, L = x:size(1), self.oH * self.oW
   local u = self:_padded(x):unfold(3, self.kH, self.dH):unfold(4, self.kW, self.dW) -- N x C x oH x oW x kH x kW
   -- Torch7's buffer name: the patches, oH*oW x (nIn*kH*kW) x N
   self.finput = u:permute(3, 4, 2, 5, 6, 1):contiguous():view(L, self.nInputPlane * self.kH * self.kW, N)
   local y = torch.bmm(mats(self, self.weight), self.finput) -- L x nOut x N
   local out = y:view(self.oH, self.oW, self.nOutputPlane, N):permute(4, 3, 1, 2):contiguous()
   out:add(self.bias:view(1, self.nOutputPlane, self.oH, self.oW):expandAs(out))
   self.output = single and out:select(1, 1) or out
   return self.output
end

-- gradOutput as oH*oW x nOut x N. updateGradInput leaves its permuted copy for the
-- accGradParameters that follows it in the same backward (the same gradOutput tensor, which, as
-- the input since forward, must not change in between); that call takes it once.
function Local:_grad(gradOutput, N, take)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   if gradOutput:nElement() ~= N * self.nOutputPlane * self.oH * self.oW then
      error(('%s: gradOutput has size %s, expected %dx%dx%d per sample'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), self.nOutputPlane, self.oH, self.oW), 3)
   end
   local c = self._gradCache
   self._gradCache = nil
   if take and c and c.src == gradOutput and c.N == N then return c.g end
   local g = gradOutput:contiguous():view(N, self.nOutputPlane, self.oH, self.oW)
   g = g:permute(3, 4, 2, 1):contiguous():view(self.oH * self.oW, self.nOutputPlane, N)
   if not take then self._gradCache = { src = gradOutput, N = N, g = g } end
   return g
end

function Local:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x = as4d(self, input)
   local N = x:size(1)
   local gp = torch.bmm(mats(self, self.weight):transpose(2, 3), self:_grad(gradOutput, N))
   gp = gp:view(self.oH, self.oW, self.nInputPlane, self.kH, self.kW, N)
   local Hp, Wp = self.iH + 2 * self.padH, self.iW + 2 * self.padW
   local gpad = x.new():resize(N, self.nInputPlane, Hp, Wp):zero()
   -- kernel offset (a, b) of every patch touches rows a, a+dH, ... and columns b, b+dW, ...
   for a = 1, self.kH do
      for b = 1, self.kW do
         local rows = gpad:narrow(3, a, (self.oH - 1) * self.dH + 1):unfold(3, 1, self.dH):select(5, 1)
         local dst = rows:narrow(4, b, (self.oW - 1) * self.dW + 1):unfold(4, 1, self.dW):select(5, 1)
         dst:add(gp:select(4, a):select(4, b):permute(4, 3, 1, 2))
      end
   end
   local gi = gpad
   if self.padW ~= 0 or self.padH ~= 0 then
      gi = gpad:narrow(3, self.padH + 1, self.iH):narrow(4, self.padW + 1, self.iW):contiguous()
   end
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Local:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = as4d(self, input)
   local N = x:size(1)
   local g = self:_grad(gradOutput, N, true)
   mats(self, self.gradWeight):baddbmm(1, scale, g, self.finput:transpose(2, 3))
   self.gradBias:add(scale, g:sum(3):view(self.oH, self.oW, self.nOutputPlane):permute(3, 1, 2))
end

function Local:clearState()
   self.finput, self._gradCache = nil, nil
   return parent.clearState(self)
end

function Local:__tostring__()
   local s = ('%s(%d -> %d, %dx%d, %dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.iW,
      self.iH, self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. (', %d,%d'):format(self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   return s .. ')'
end

return Local
