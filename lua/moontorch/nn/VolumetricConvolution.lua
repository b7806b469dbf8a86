-- nn.VolumetricConvolution(nIn, nOut, kT, kW, kH, [dT=1], [dW=1], [dH=1], [padT=0], [padW=padT],
-- [padH=padW]) as in Torch7. Input: nIn x T x H x W or batch x nIn x T x H x W; weight:
-- nOut x nIn x kT x kH x kW. A 3-d convolution is a sum over the kernel's depth of 2-d ones: for
-- kernel slice kt, output time t reads input time t*dT - padT + kt*dilT (0-based), so the module
-- gathers those input frames into the batch dimension, runs the C 2-d convolution (csrc/nn/conv.c)
-- with weight[:, :, kt] and adds the result into the matching output frames. Frames that fall in
-- the time padding are skipped (they would contribute zeros). The three passes below (_forward,
-- _backwardInput, _backwardParams) are shared with nn.VolumetricFullConvolution and
-- nn.VolumetricDilatedConvolution.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.C, T.check
local cc = require 'moontorch.nn.conv_common'

local Conv, parent = torch.class('nn.VolumetricConvolution', 'nn.Module')

Conv._posint = cc.posint

local function init(self, name, nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH)
   parent.__init(self)
   cc.posint(nIn, 'nInputPlane', name); cc.posint(nOut, 'nOutputPlane', name)
   cc.posint(kT, 'kT', name); cc.posint(kW, 'kW', name); cc.posint(kH, 'kH', name)
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.kT, self.kW, self.kH = kT, kW, kH
   self.dT, self.dW, self.dH = dT or 1, dW or 1, dH or 1
   cc.posint(self.dT, 'dT', name); cc.posint(self.dW, 'dW', name); cc.posint(self.dH, 'dH', name)
   self.padT = padT or 0
   self.padW = padW or self.padT
   self.padH = padH or self.padW
   if self.padT < 0 or self.padW < 0 or self.padH < 0 then
      error(('%s: padding must not be negative, got %s,%s,%s'):format(name, self.padT, self.padW, self.padH), 3)
   end
   if dilT then
      self.dilationT, self.dilationW, self.dilationH = dilT or 1, dilW or 1, dilH or 1
      cc.posint(self.dilationT, 'dilationT', name); cc.posint(self.dilationW, 'dilationW', name)
      cc.posint(self.dilationH, 'dilationH', name)
   end
   self.weight = torch.Tensor(nOut, nIn, kT, kH, kW)
   self.bias = torch.Tensor(nOut)
   self.gradWeight = torch.Tensor(nOut, nIn, kT, kH, kW):zero()
   self.gradBias = torch.Tensor(nOut):zero()
   self:reset()
end
Conv._init = init

function Conv:__init(nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   init(self, 'nn.VolumetricConvolution', nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH)
end

Conv.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(kT*kW*kH*nInputPlane)
function Conv:reset(stdv) return cc.reset(self, stdv, self.kT * self.kW * self.kH * self.nInputPlane) end

-- geometry {dT, dW, dH, padT, padW, padH, dilT, dilW, dilH} of a module
function Conv._geometry(m)
   return { dT = m.dT, dW = m.dW, dH = m.dH, padT = m.padT, padW = m.padW, padH = m.padH,
      dilT = m.dilationT or 1, dilW = m.dilationW or 1, dilH = m.dilationH or 1 }
end

-- For kernel slice kt (1-based): the output frames (1-based) whose input frame lies inside the
-- input, and those input frames, as LongTensors on the input's device; nil when none does.
local function frames(g, kt, T_in, T_out, like)
   local to, ti = {}, {}
   for t = 0, T_out - 1 do
      local i = t * g.dT - g.padT + (kt - 1) * g.dilT
      if i >= 0 and i < T_in then to[#to + 1], ti[#ti + 1] = t + 1, i + 1 end
   end
   if #to == 0 then return nil end
   local a, b = torch.LongTensor(to), torch.LongTensor(ti)
   if like:device() ~= a:device() then
      a = T.empty(a:dtype(), like:device()):resize(#to):copy(a)
      b = T.empty(b:dtype(), like:device()):resize(#ti):copy(b)
   end
   return a, b
end

-- Scratch tensors of the passes below, by role, type and device, shared by every module (the
-- passes never nest): fresh ones each call cost more in page faults than the copies themselves.
-- Weak values: the collector may take them back between calls.
local scratch = setmetatable({}, { __mode = 'v' })
local function buf(role, like)
   local key = role .. ' ' .. like:type() .. ' ' .. like:device()
   local b = scratch[key]
   if not b then
      b = like.new()
      scratch[key] = b
   end
   return b
end

-- N x P x T x H x W as frame-major N x T x P x H x W (contiguous, in scratch `role`): the passes
-- transpose once in and once out, and every frame selection in between copies whole P x H x W blocks
local function frame_major(x, role)
   return buf(role, x):resize(x:size(1), x:size(3), x:size(2), x:size(4), x:size(5)):copy(x:transpose(2, 3))
end

-- frames idx of a frame-major N x T x P x H x W tensor as an (N*n) x P x H x W batch of planes
local function gather(xt, idx, role)
   local s = torch.index(buf(role, xt), xt, 2, idx)
   return s:view(s:size(1) * s:size(2), s:size(3), s:size(4), s:size(5))
end

local function conv_out(n, k, d, pad, dil)
   return math.floor((n + 2 * pad - dil * (k - 1) - 1) / d) + 1
end
Conv._outSize = conv_out

-- y = conv3d(x, w) + bias; x: N x C x T x H x W, w: O x C x kT x kH x kW; y is resized.
function Conv._forward(y, x, w, bias, g)
   local N, T_in, O = x:size(1), x:size(3), w:size(1)
   local kT = w:size(3)
   local oT = conv_out(T_in, kT, g.dT, g.padT, g.dilT)
   local oH = conv_out(x:size(4), w:size(4), g.dH, g.padH, g.dilH)
   local oW = conv_out(x:size(5), w:size(5), g.dW, g.padW, g.dilW)
   local xt = frame_major(x, 'x')
   local yt = buf('y', x):resize(N, oT, O, oH, oW):zero()
   local y2 = buf('y2', x)
   for kt = 1, kT do
      local to, ti = frames(g, kt, T_in, oT, x)
      if to then
         -- temporaries bound to locals: a handle taken from an unnamed cdata may be collected
         -- while the next argument allocates
         local xs, ws = gather(xt, ti, 'xs'), w:select(3, kt):contiguous()
         check(C.mt_conv2d_forward(y2.h, xs.h, ws.h, nil, g.dW, g.dH, g.padW,
            g.padH, g.dilW, g.dilH, 1))
         yt:indexAdd(2, to, y2:view(N, to:size(1), O, oH, oW))
      end
   end
   y:resize(N, O, oT, oH, oW):copy(yt:transpose(2, 3))
   if bias then y:add(bias:view(1, bias:size(1), 1, 1, 1):expandAs(y)) end
   return y
end

-- gi (resized to size, N x C x T x H x W) = the input gradient of conv3d for gradOutput dy
function Conv._backwardInput(gi, size, dy, w, g)
   local N, T_in, oT = size[1], size[3], dy:size(3)
   local dyt = frame_major(dy, 'dy')
   local git = buf('gi', dy):resize(N, T_in, size[2], size[4], size[5]):zero()
   local g2 = buf('g2', dy)
   for kt = 1, w:size(3) do
      local to, ti = frames(g, kt, T_in, oT, dy)
      if to then
         g2:resize(N * to:size(1), size[2], size[4], size[5])
         -- the C routine reads its 'input' argument for the size only
         local ds, ws = gather(dyt, to, 'ds'), w:select(3, kt):contiguous()
         check(C.mt_conv2d_backward_input(g2.h, g2.h, ds.h, ws.h, g.dW, g.dH,
            g.padW, g.padH, g.dilW, g.dilH, 1))
         git:indexAdd(2, ti, g2:view(N, to:size(1), size[2], size[4], size[5]))
      end
   end
   gi:resize(torch.LongStorage(size)):copy(git:transpose(2, 3))
   return gi
end

-- gw += scale * dL/dw of conv3d(x, w) for gradOutput dy (gw: O x C x kT x kH x kW)
function Conv._backwardParams(gw, x, dy, scale, g)
   local N, T_in, oT = x:size(1), x:size(3), dy:size(3)
   local xt, dyt = frame_major(x, 'x'), frame_major(dy, 'dy')
   local tmp = buf('gw', gw)
   for kt = 1, gw:size(3) do
      local to, ti = frames(g, kt, T_in, oT, x)
      if to then
         tmp:resize(gw:size(1), gw:size(2), gw:size(4), gw:size(5)):zero()
         local xs, ds = gather(xt, ti, 'xs'), gather(dyt, to, 'ds')
         check(C.mt_conv2d_backward_params(tmp.h, nil, xs.h, ds.h, scale, g.dW, g.dH, g.padW,
            g.padH, g.dilW, g.dilH, 1))
         gw:select(3, kt):add(tmp)
      end
   end
end

-- the per-plane sums of a 5-d N x P x ... tensor
function Conv._planeSums(t)
   local P = t:size(2)
   return t:transpose(1, 2):contiguous():view(P, t:nElement() / P):sum(2):view(P)
end

-- (input as a contiguous 5-d tensor, was it 4-d?) after checks on dims, type and planes
function Conv._batched(self, input, what, planes)
   local name = torch.type(self)
   T.expect_tensor(input, name, what, 4)
   if input:type() ~= self.weight:type() then
      error(('%s: %s is a %s but the module holds %s (convert with :type())'):format(name, what, input:type(),
         self.weight:type()), 4)
   end
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: expected a 4-d or 5-d %s, got size %s'):format(name, what, table.concat(T.sizes(input), 'x')), 4)
   end
   if planes and input:size(d - 3) ~= planes then
      error(('%s: %s has %d planes, expected %d'):format(name, what, input:size(d - 3), planes), 4)
   end
   local x = input:isContiguous() and input or input:contiguous()
   if d == 4 then return x:view(1, x:size(1), x:size(2), x:size(3), x:size(4)), true end
   return x, false
end
local batched = Conv._batched

local function result(self, field, like)
   local r = self[field]
   if not torch.isTensor(r) or r:type() ~= like:type() then r = like.new(); self[field] = r end
   return r
end
Conv._result = result

function Conv:updateOutput(input)
   local x, single = batched(self, input, 'input', self.nInputPlane)
   local g = Conv._geometry(self)
   local sz = T.sizes(x)
   local oT = conv_out(sz[3], self.kT, g.dT, g.padT, g.dilT)
   local oH = conv_out(sz[4], self.kH, g.dH, g.padH, g.dilH)
   local oW = conv_out(sz[5], self.kW, g.dW, g.padW, g.dilW)
   if oT < 1 or oH < 1 or oW < 1 then
      error(('%s: input %dx%dx%d (TxHxW) is too small: output would be %dx%dx%d'):format(torch.type(self), sz[3],
         sz[4], sz[5], oT, oH, oW), 2)
   end
   local y = Conv._forward(result(self, '_output', x), x, self.weight, self.bias, g)
   self.output = single and y:select(1, 1) or y
   return self.output
end

function Conv:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = batched(self, input, 'input', self.nInputPlane)
   local dy = batched(self, gradOutput, 'gradOutput', self.nOutputPlane)
   local gi = Conv._backwardInput(result(self, '_gradInput', x), T.sizes(x), dy, self.weight, Conv._geometry(self))
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function Conv:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = batched(self, input, 'input', self.nInputPlane)
   local dy = batched(self, gradOutput, 'gradOutput', self.nOutputPlane)
   Conv._backwardParams(self.gradWeight, x, dy, scale, Conv._geometry(self))
   if self.gradBias then self.gradBias:add(scale, Conv._planeSums(dy)) end
end

function Conv:clearState()
   self._output, self._gradInput = nil, nil
   return parent.clearState(self)
end

function Conv:__tostring__()
   local s = ('%s(%d -> %d, %dx%dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kT,
      self.kW, self.kH)
   local pad = self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0
   if self.dT ~= 1 or self.dW ~= 1 or self.dH ~= 1 or pad then
      s = s .. (', %d,%d,%d'):format(self.dT, self.dW, self.dH)
   end
   if pad then s = s .. (', %d,%d,%d'):format(self.padT, self.padW, self.padH) end
   if self.dilationT then s = s .. (', %d,%d,%d'):format(self.dilationT, self.dilationW, self.dilationH) end
   s = s .. ')'
   if not self.bias then s = s .. ' without bias' end
   return s
end

return Conv
