-- nn.VolumetricMaxPooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH], [padT=0], [padW=0], [padH=0]) with
-- :ceil()/:floor(), as in Torch7. Input: C x T x H x W or N x C x T x H x W. A max over a box is
-- separable, so the module pools H x W by the C 2-d max pooling (undilated) or along W then H, and
-- then along T, each 1-d pass a max over unfolded windows of a -inf padded copy, and composes the
-- winners' positions with gathers. self.indices (int64, the output's size) holds each maximum's
-- 0-based position within its T x H x W input volume, which nn.VolumetricMaxUnpooling and the
-- backward pass (an indexAdd) use. Dilation (the fields of
-- nn.VolumetricDilatedMaxPooling) spaces the window's taps.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'

local Pool, parent = torch.class('nn.VolumetricMaxPooling', 'nn.Module')

local function checkWindow(self, level)
   local name = torch.type(self)
   for _, f in ipairs { 'kT', 'kW', 'kH', 'dT', 'dW', 'dH', 'dilationT', 'dilationW', 'dilationH' } do
      local v = self[f]
      if v ~= nil and (type(v) ~= 'number' or v < 1 or v ~= math.floor(v)) then
         error(('%s: %s must be a positive integer, got %s'):format(name, f, tostring(v)), level)
      end
   end
   for _, p in ipairs { { 'padT', 'kT' }, { 'padW', 'kW' }, { 'padH', 'kH' } } do
      local v, k = self[p[1]], self[p[2]]
      if type(v) ~= 'number' or v < 0 or v > k / 2 then
         error(('%s: %s must be between 0 and half of %s (%d), got %s'):format(name, p[1], p[2], k, tostring(v)),
            level)
      end
   end
end
Pool._checkWindow = checkWindow

function Pool:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self)
   self.kT, self.kW, self.kH = kT, kW, kH
   self.dT, self.dW, self.dH = dT or kT, dW or kW, dH or kH
   self.padT, self.padW, self.padH = padT or 0, padW or 0, padH or 0
   self.ceil_mode = false
   self.indices = torch.LongTensor()
   checkWindow(self, 3)
end

function Pool:ceil() self.ceil_mode = true return self end
function Pool:floor() self.ceil_mode = false return self end

-- output length of one dimension (Torch7's rule: in ceil mode the last window must start
-- inside the input or its left padding)
local function outLen(n, k, d, pad, dil, ceil)
   local span = n + 2 * pad - dil * (k - 1) - 1
   local o = (ceil and math.ceil(span / d) or math.floor(span / d)) + 1
   if ceil and (o - 1) * d >= n + pad then o = o - 1 end
   return o
end
Pool._outLen = outLen

-- 1-d max pooling of x along dim: values and the winners' 0-based positions along dim
local function pool1d(x, dim, k, d, pad, dil, ceil)
   local n = x:size(dim)
   local o = outLen(n, k, d, pad, dil, ceil)
   local e = dil * (k - 1) + 1
   local sz = T.sizes(x)
   sz[dim] = math.max(n + 2 * pad, (o - 1) * d + e)
   local p = x.new():resize(torch.LongStorage(sz)):fill(-math.huge)
   p:narrow(dim, pad + 1, n):copy(x)
   local last = #sz + 1
   local w = p:unfold(dim, e, d):narrow(dim, 1, o):unfold(last, 1, dil):select(last + 1, 1)
   local v, a = w:max(last)
   v, a = v:select(last, 1), a:select(last, 1)
   -- window start o_i*d - pad plus tap (a-1)*dil
   local osz = T.sizes(v)
   local shape = {}
   for i = 1, #osz do shape[i] = i == dim and o or 1 end
   local start = torch.range(0, o - 1):long():mul(d):add(-pad)
   if start:device() ~= a:device() then start = T.empty(start:dtype(), a:device()):resize(o):copy(start) end
   local pos = a:add(-1):mul(dil):add(start:view(torch.LongStorage(shape)):expandAs(a))
   return v, pos
end

-- (5-d contiguous input, was it 4-d?)
local function batched(self, input, what)
   local name = torch.type(self)
   T.expect_tensor(input, name, what, 4)
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: expected a 4-d or 5-d %s, got size %s'):format(name, what, table.concat(T.sizes(input), 'x')), 4)
   end
   local x = input:isContiguous() and input or input:contiguous()
   if d == 4 then return x:view(1, x:size(1), x:size(2), x:size(3), x:size(4)), true end
   return x, false
end
Pool._batched = batched

function Pool:updateOutput(input)
   local x, single = batched(self, input, 'input')
   local Ti, H, W = x:size(3), x:size(4), x:size(5)
   -- Torch7's fields: nn.VolumetricMaxUnpooling restores this size
   self.itime, self.iheight, self.iwidth = Ti, H, W
   local dilT, dilW, dilH = self.dilationT or 1, self.dilationW or 1, self.dilationH or 1
   local ceil = self.ceil_mode
   local oT, oH, oW = outLen(Ti, self.kT, self.dT, self.padT, dilT, ceil),
      outLen(H, self.kH, self.dH, self.padH, dilH, ceil), outLen(W, self.kW, self.dW, self.padW, dilW, ceil)
   if oT < 1 or oH < 1 or oW < 1 then
      error(('%s: input %dx%dx%d (TxHxW) is too small: output would be %dx%dx%d'):format(torch.type(self), Ti, H, W,
         oT, oH, oW), 2)
   end
   if dilW == 1 and dilH == 1 then
      -- the H x W part by the C 2-d max pooling over the frames as planes (same output-size
      -- rule), then T over the 1/(kH kW) as large result
      local N, P = x:size(1), x:size(2)
      local v2, i2 = x.new(), T.empty(T.LONG, x:device())
      local planes = x:view(N, P * Ti, H, W)
      T.check(T.C.mt_maxpool2d_forward(v2.h, i2.h, planes.h, self.kW, self.kH, self.dW, self.dH, self.padW,
         self.padH, ceil and 1 or 0))
      local vt, pt = pool1d(v2:view(N, P, Ti, oH, oW), 3, self.kT, self.dT, self.padT, dilT, ceil)
      self.indices = pt:clone():mul(H * W):add(i2:view(N, P, Ti, oH, oW):gather(3, pt:add(1)))
      self.output = single and vt:select(1, 1) or vt
      if single then self.indices = self.indices:select(1, 1) end
      return self.output
   end
   local vw, pw = pool1d(x, 5, self.kW, self.dW, self.padW, dilW, ceil)
   local vh, ph = pool1d(vw, 4, self.kH, self.dH, self.padH, dilH, ceil)
   pw = pw:gather(4, ph + 1)
   local vt, pt = pool1d(vh, 3, self.kT, self.dT, self.padT, dilT, ceil)
   ph, pw = ph:gather(3, pt + 1), pw:gather(3, pt + 1)
   self.indices = pt:mul(H):add(ph):mul(W):add(pw)
   self.output = single and vt:select(1, 1) or vt
   if single then self.indices = self.indices:select(1, 1) end
   return self.output
end

-- flat 1-based positions, in an N*C*T*H*W vector, of the elements the indices name
function Pool._positions(indices, planes, volume)
   local n = indices:nElement() / planes
   local base = torch.range(0, planes - 1):long():mul(volume):add(1)
   if base:device() ~= indices:device() then
      base = T.empty(base:dtype(), indices:device()):resize(planes):copy(base)
   end
   return indices:contiguous():view(planes, n):clone():add(base:view(planes, 1):expand(planes, n))
      :view(planes * n)
end

function Pool:updateGradInput(input, gradOutput)
   local x = batched(self, input, 'input')
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 4)
   if gradOutput:nElement() ~= self.indices:nElement() then
      error(('%s: gradOutput has size %s but the output has %s'):format(torch.type(self),
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.indices), 'x')), 2)
   end
   local planes = x:size(1) * x:size(2)
   local pos = Pool._positions(self.indices, planes, x:size(3) * x:size(4) * x:size(5))
   local gi = x.new():resize(x:nElement()):zero()
   gi:indexAdd(1, pos, gradOutput:contiguous():view(gradOutput:nElement()))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

Pool.clearState = P.clearIndices

function Pool:__tostring__()
   local s = ('%s(%dx%dx%d, %d,%d,%d'):format(torch.type(self), self.kT, self.kW, self.kH, self.dT, self.dW, self.dH)
   if self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. (', %d,%d,%d'):format(self.padT, self.padW, self.padH)
   end
   if self.dilationT then s = s .. (', %d,%d,%d'):format(self.dilationT, self.dilationW, self.dilationH) end
   return s .. ')'
end

return Pool
