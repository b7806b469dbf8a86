-- nn.VolumetricConvolution(nIn, nOut, kT, kW, kH, [dT=1], [dW=1], [dH=1], [padT=0], [padW=padT],
-- [padH=padW]) as in Torch7. Input: nIn x T x H x W or batch x nIn x T x H x W; weight:
-- nOut x nIn x kT x kH x kW. Each sample's input is unfolded into columns, one row per (plane,
-- kt, ky, kx) tap and one column per output cell (C vol2col, csrc/nn/vol.c), so the convolution
-- is one GEMM with the weight as an nOut x (nIn*kT*kH*kW) matrix; the input gradient folds the
-- transposed product back (col2vol). The GEMMs split over threads themselves (gemm_par.c). The
-- three passes below (_forward, _backwardInput, _backwardParams) are shared with
-- nn.VolumetricFullConvolution and nn.VolumetricDilatedConvolution.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ffi = require 'ffi'
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

-- Scratch columns, by type and device, shared by every module (the passes never nest): fresh
-- ones each call cost more in page faults than the copies into them. Weak values: the collector
-- may take them back between calls.
local scratch = setmetatable({}, { __mode = 'v' })
local function colbuf(like)
   local key = like:type() .. ' ' .. like:device()
   local b = scratch[key]
   if not b then
      b = like.new()
      scratch[key] = b
   end
   return b
end

local function conv_out(n, k, d, pad, dil)
   return math.floor((n + 2 * pad - dil * (k - 1) - 1) / d) + 1
end
Conv._outSize = conv_out

-- dy must be N x O x oT x oH x oW, the size of the convolution's output
local function expect_grad(dy, N, O, oT, oH, oW)
   if dy:size(1) ~= N or dy:size(2) ~= O or dy:size(3) ~= oT or dy:size(4) ~= oH or dy:size(5) ~= oW then
      error(('3-d convolution: gradOutput has size %s, expected %dx%dx%dx%dx%d'):format(
         table.concat(T.sizes(dy), 'x'), N, O, oT, oH, oW), 4)
   end
end

-- the columns of sample xn (C x T x H x W) for a kernel kT x kH x kW, into the scratch buffer
local function vol2col(xn, kT, kH, kW, g)
   local col = colbuf(xn)
   check(C.mt_nn_vol2col(col.h, xn.h, kT, kW, kH, g.dT, g.dW, g.dH, g.padT, g.padW, g.padH, g.dilT, g.dilW,
      g.dilH))
   return col
end

-- float32 on the CPU: oneDNN's 3-d convolution (csrc/cpu/nn_vol_onednn.c) where it is built in and
-- has an implementation for the shape; false otherwise (the caller takes the vol2col path). Used
-- for the forward and the input gradient (3x faster than vol2col + GEMM on the bench layer, one
-- thread), not for the weight gradient (oneDNN's was 15% slower there). Below ONEDNN_MACS
-- multiply-adds vol2col runs: a oneDNN call costs a parallel region and its barriers whatever
-- the size, which on a loaded machine cost more than the whole small convolution. Unlike 2-d
-- convolutions (torch.convBackend) the choice is fixed, so results are reproducible from run
-- to run.
local ONEDNN_MACS = 2 ^ 20
Conv._onednnCalls = 0
local ran = ffi.new('int[1]')
local function onednn(pass, out, out2, a, b, bias, scale, g, macs)
   if a:type() ~= 'torch.FloatTensor' or macs < ONEDNN_MACS then return false end
   local w = b:isContiguous() and b or b:contiguous()
   check(C.mt_nn_conv3d_onednn(pass, out.h, out2 and out2.h or nil, a.h, w.h, bias and bias.h or nil, scale, g.dT,
      g.dW, g.dH, g.padT, g.padW, g.padH, g.dilT, g.dilW, g.dilH, ran))
   if ran[0] == 1 then Conv._onednnCalls = Conv._onednnCalls + 1 end
   return ran[0] == 1
end

-- y = conv3d(x, w) + bias; x: N x C x T x H x W, w: O x C x kT x kH x kW; y is resized. One GEMM per
-- sample on its columns (csrc/nn/vol.c): y[n] (O x oT*oH*oW) = w (O x C*kT*kH*kW) * cols(x[n]).
function Conv._forward(y, x, w, bias, g)
   local N, O, kT, kH, kW = x:size(1), w:size(1), w:size(3), w:size(4), w:size(5)
   local oT = conv_out(x:size(3), kT, g.dT, g.padT, g.dilT)
   local oH = conv_out(x:size(4), kH, g.dH, g.padH, g.dilH)
   local oW = conv_out(x:size(5), kW, g.dW, g.padW, g.dilW)
   local L = oT * oH * oW
   y:resize(N, O, oT, oH, oW)
   if onednn(0, y, nil, x, w, bias, 1, g, N * O * L * x:size(2) * kT * kH * kW) then return y end
   local w2 = w:contiguous()
   w2 = w2:view(O, w2:nElement() / O)
   for n = 1, N do
      local xn = x:select(1, n)
      local col = vol2col(xn, kT, kH, kW, g)
      local yn = y:select(1, n):view(O, L)
      if bias then
         yn:copy(bias:view(O, 1):expand(O, L))
         yn:addmm(1, yn, 1, w2, col)
      else
         yn:addmm(0, yn, 1, w2, col)
      end
   end
   return y
end

-- gi (resized to size, N x C x T x H x W) = the input gradient of conv3d for gradOutput dy: per
-- sample the columns w^T * dy[n] summed back into the volume (col2vol)
function Conv._backwardInput(gi, size, dy, w, g)
   local N, O, Cin, kT, kH, kW = size[1], w:size(1), size[2], w:size(3), w:size(4), w:size(5)
   expect_grad(dy, N, O, conv_out(size[3], kT, g.dT, g.padT, g.dilT), conv_out(size[4], kH, g.dH, g.padH, g.dilH),
      conv_out(size[5], kW, g.dW, g.padW, g.dilW))
   local L = dy:size(3) * dy:size(4) * dy:size(5)
   gi:resize(torch.LongStorage(size))
   if onednn(1, gi, nil, dy, w, nil, 1, g, N * O * L * Cin * kT * kH * kW) then return gi end
   local w2 = w:contiguous()
   w2 = w2:view(O, w2:nElement() / O)
   local col = colbuf(dy)
   col:resize(w2:size(2), L)
   for n = 1, N do
      local dn = dy:select(1, n):view(O, L)
      col:addmm(0, col, 1, w2:t(), dn)
      local gn = gi:select(1, n)
      check(C.mt_nn_col2vol(gn.h, col.h, Cin, size[3], size[4], size[5], kT, kW, kH, g.dT, g.dW, g.dH, g.padT,
         g.padW, g.padH, g.dilT, g.dilW, g.dilH))
   end
   return gi
end

-- gw += scale * dL/dw of conv3d(x, w) for gradOutput dy (gw: O x C x kT x kH x kW, contiguous):
-- per sample gw += scale * dy[n] * cols(x[n])^T. On the CPU in float32 / float64 that runs in C
-- (csrc/cpu/nn_vol_grad.c) on blocks of columns that stay in cache: 33-45 against 43-56 ms on the
-- bench layer, one thread.
function Conv._backwardParams(gw, x, dy, scale, g)
   local N, O, kT, kH, kW = x:size(1), gw:size(1), gw:size(3), gw:size(4), gw:size(5)
   expect_grad(dy, N, O, conv_out(x:size(3), kT, g.dT, g.padT, g.dilT), conv_out(x:size(4), kH, g.dH, g.padH, g.dilH),
      conv_out(x:size(5), kW, g.dW, g.padW, g.dilW))
   local L = dy:size(3) * dy:size(4) * dy:size(5)
   local gw2 = gw:isContiguous() and gw or gw:contiguous()
   check(C.mt_nn_conv3d_grad_weight(gw2.h, x.h, dy.h, scale, g.dT, g.dW, g.dH, g.padT, g.padW, g.padH, g.dilT,
      g.dilW, g.dilH, ran))
   if ran[0] == 1 then
      if gw2 ~= gw then gw:copy(gw2) end
      return
   end
   local m = gw2:view(O, gw2:nElement() / O)
   for n = 1, N do
      local xn = x:select(1, n)
      local col = vol2col(xn, kT, kH, kW, g)
      local dn = dy:select(1, n):view(O, L)
      m:addmm(1, m, scale, dn, col:t())
   end
   if gw2 ~= gw then gw:copy(gw2) end
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
   if self.gradBias then self.gradBias:add(scale, cc.plane_sums(dy)) end
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
