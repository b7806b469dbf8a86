-- nn.VolumetricMaxPooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH], [padT=0], [padW=0], [padH=0]) with
-- :ceil()/:floor(), as in Torch7. Input: C x T x H x W or N x C x T x H x W. One C op each way
-- (csrc/nn/vol_pool.c): the forward takes each window's maximum (a NaN wins) and keeps in
-- self.indices (int64, the output's size) its 0-based position within its T x H x W input volume,
-- which nn.VolumetricMaxUnpooling and the backward pass use. Dilation (the fields of
-- nn.VolumetricDilatedMaxPooling) spaces the window's taps.
local torch = require 'moontorch'
require 'moontorch.nn'
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

-- the window arguments of the C op: kernel, stride, padding, dilation, ceil mode
local function window(self)
   return self.kT, self.kW, self.kH, self.dT, self.dW, self.dH, self.padT, self.padW, self.padH,
      self.dilationT or 1, self.dilationW or 1, self.dilationH or 1, self.ceil_mode and 1 or 0
end

function Pool:updateOutput(input)
   local name = torch.type(self)
   T.expect_tensor(input, name, 'input', 3)
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: expected a 4-d or 5-d input, got size %s'):format(name, table.concat(T.sizes(input), 'x')), 2)
   end
   checkWindow(self, 3)
   -- Torch7's fields: nn.VolumetricMaxUnpooling restores this size
   self.itime, self.iheight, self.iwidth = input:size(d - 2), input:size(d - 1), input:size(d)
   local y = self.output
   if not torch.isTensor(y) or y:type() ~= input:type() or y == input then y = input.new(); self.output = y end
   if not torch.isTensor(self.indices) or self.indices:device() ~= input:device() then
      self.indices = T.empty_tensor(T.LONG, input:device())
   end
   T.check(T.clib.mt_nn_maxpool3d_forward(y.h, self.indices.h, input.h, window(self)))
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   local name = torch.type(self)
   T.expect_tensor(gradOutput, name, 'gradOutput', 3)
   if gradOutput:nElement() ~= self.indices:nElement() then
      error(('%s: gradOutput has size %s but the output has %s'):format(name,
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.indices), 'x')), 2)
   end
   local gi = self.gradInput
   if not torch.isTensor(gi) or gi:type() ~= input:type() then gi = input.new(); self.gradInput = gi end
   local dy = gradOutput:dim() == self.indices:dim() and gradOutput or gradOutput:view(T.sizes(self.indices))
   T.check(T.clib.mt_nn_maxpool3d_backward(gi.h, dy.h, self.indices.h, input.h, window(self)))
   return self.gradInput
end

-- flat 1-based positions, in an N*C*T*H*W vector, of the elements the indices name
-- (nn.VolumetricMaxUnpooling)
function Pool._positions(indices, planes, volume)
   local n = indices:nElement() / planes
   local base = torch.range(0, planes - 1):long():mul(volume):add(1)
   if base:device() ~= indices:device() then
      base = T.empty_tensor(base:dtype(), indices:device()):resize(planes):copy(base)
   end
   return indices:contiguous():view(planes, n):clone():add(base:view(planes, 1):expand(planes, n))
      :view(planes * n)
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
