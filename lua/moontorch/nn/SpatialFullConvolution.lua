-- nn.SpatialFullConvolution(nIn, nOut, kW, kH, [dW=1], [dH=1], [padW=0], [padH=0], [adjW=0], [adjH=0]),
-- Torch7's transposed convolution. Weight: nIn x nOut x kH x kW, which is exactly the weight of the
-- convolution nOut -> nIn that this module transposes; so the forward pass is that convolution's
-- input gradient, the input gradient is its forward pass and the weight gradient is its weight
-- gradient with input and gradOutput exchanged (all in C, csrc/nn/conv.c). Output size:
-- (H - 1) * dH - 2 * padH + kH + adjH. The input may be {input, target}: adj is then chosen so
-- that the output has target's last two sizes.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local cc = require 'moontorch.nn.conv_common'

local Full, parent = torch.class('nn.SpatialFullConvolution', 'nn.Module')

local NAME = 'nn.SpatialFullConvolution'

local function posint(v, what) cc.posint(v, what, NAME, 5) end

function Full:__init(nIn, nOut, kW, kH, dW, dH, padW, padH, adjW, adjH)
   parent.__init(self)
   posint(nIn, 'nInputPlane'); posint(nOut, 'nOutputPlane'); posint(kW, 'kW'); posint(kH, 'kH')
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.kW, self.kH = kW, kH
   self.dW, self.dH = dW or 1, dH or 1
   posint(self.dW, 'dW'); posint(self.dH, 'dH')
   self.padW, self.padH = padW or 0, padH or 0
   self.adjW, self.adjH = adjW or 0, adjH or 0
   if self.padW < 0 or self.padH < 0 or self.adjW < 0 or self.adjH < 0 then
      error(('%s: padding and adj must not be negative, got pad %s,%s adj %s,%s'):format(NAME, self.padW, self.padH,
         self.adjW, self.adjH), 2)
   end
   -- an output position past adj would be out of reach of every input position
   if self.adjW > self.dW - 1 or self.adjH > self.dH - 1 then
      error(('%s: adjW %d and adjH %d must be smaller than dW %d and dH %d'):format(NAME, self.adjW, self.adjH,
         self.dW, self.dH), 2)
   end
   self.weight = torch.Tensor(nIn, nOut, kH, kW)
   self.gradWeight = torch.Tensor(nIn, nOut, kH, kW):zero()
   self.bias = torch.Tensor(nOut)
   self.gradBias = torch.Tensor(nOut):zero()
   self:reset()
end

Full.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(kW*kH*nInputPlane)
function Full:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH * self.nInputPlane) end

-- (input tensor as 4-d, unbatched?, adjW, adjH) for a tensor or {input, target} input
local function unpack_input(self, input, what)
   local x, adjW, adjH = input, self.adjW or 0, self.adjH or 0
   if torch.type(input) == 'table' then
      x = input[1]
      local target = T.expect_tensor(input[2], NAME, what .. '[2] (the target)', 4)
      local td = target:dim()
      if td < 2 then error(('%s: the target must have at least 2 dimensions'):format(NAME), 4) end
      local tH, tW = target:size(td - 1), target:size(td)
      adjW = (tW + 2 * self.padW - self.kW) % self.dW
      adjH = (tH + 2 * self.padH - self.kH) % self.dH
   end
   T.expect_tensor(x, NAME, what, 4)
   if x:type() ~= self.weight:type() then
      error(('%s: %s is a %s but the module holds %s (convert with :type())'):format(NAME, what, x:type(),
         self.weight:type()), 4)
   end
   local d = x:dim()
   if d ~= 3 and d ~= 4 then
      error(('%s: expected a 3-d or 4-d %s, got size %s'):format(NAME, what, table.concat(T.sizes(x), 'x')), 4)
   end
   if x:size(d - 2) ~= self.nInputPlane then
      error(('%s: %s has %d planes, expected nInputPlane %d'):format(NAME, what, x:size(d - 2), self.nInputPlane), 4)
   end
   if d == 3 then return x:view(1, x:size(1), x:size(2), x:size(3)), true, adjW, adjH end
   return x:isContiguous() and x or x:contiguous(), false, adjW, adjH
end

local function as4d(t)
   if t:dim() == 3 then return t:view(1, t:size(1), t:size(2), t:size(3)) end
   return t:isContiguous() and t or t:contiguous()
end

local function result(self, field, like)
   local r = self[field]
   if not torch.isTensor(r) or r:type() ~= like:type() then r = like.new(); self[field] = r end
   return r
end

function Full:updateOutput(input)
   local x, unbatched, adjW, adjH = unpack_input(self, input, 'input')
   local N, H, W = x:size(1), x:size(3), x:size(4)
   local oH = (H - 1) * self.dH - 2 * self.padH + self.kH + adjH
   local oW = (W - 1) * self.dW - 2 * self.padW + self.kW + adjW
   if oH < 1 or oW < 1 then
      error(('%s: input %dx%d is too small: output would be %dx%d'):format(NAME, H, W, oH, oW), 2)
   end
   local out = result(self, 'output', x):resize(N, self.nOutputPlane, oH, oW)
   -- the convolution's input gradient reads its 'input' argument for the size only
   check(C.mt_conv2d_backward_input(out.h, out.h, x.h, self.weight.h, self.dW, self.dH, self.padW, self.padH, 1, 1,
      1))
   if self.bias then out:add(self.bias:view(1, self.nOutputPlane, 1, 1):expandAs(out)) end
   self.output = unbatched and out:select(1, 1) or out
   return self.output
end

function Full:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, unbatched = unpack_input(self, input, 'input')
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local gi = result(self, '_gradInput', x)
   check(C.mt_conv2d_forward(gi.h, as4d(gradOutput).h, self.weight.h, nil, self.dW, self.dH, self.padW, self.padH,
      1, 1, 1))
   local g = unbatched and gi:select(1, 1) or gi
   return cc.full_grad_input(self, input, g)
end

function Full:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = unpack_input(self, input, 'input')
   local dy = as4d(T.expect_tensor(gradOutput, NAME, 'gradOutput', 3))
   check(C.mt_conv2d_backward_params(self.gradWeight.h, nil, dy.h, x.h, scale, self.dW, self.dH, self.padW,
      self.padH, 1, 1, 1))
   if self.gradBias then
      self.gradBias:add(scale, cc.plane_sums(dy))
   end
end

function Full:clearState()
   self._gradInput, self._zeroScalar = nil, nil
   return parent.clearState(self)
end

function Full:__tostring__()
   local s = ('%s(%d -> %d, %dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. (', %d,%d'):format(self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 or (self.adjW or 0) ~= 0 or (self.adjH or 0) ~= 0 then
      s = s .. (', %d,%d'):format(self.padW, self.padH)
   end
   if (self.adjW or 0) ~= 0 or (self.adjH or 0) ~= 0 then s = s .. (', %d,%d'):format(self.adjW, self.adjH) end
   s = s .. ')'
   if not self.bias then s = s .. ' without bias' end
   return s
end

return Full
