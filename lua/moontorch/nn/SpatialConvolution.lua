-- nn.SpatialConvolution(nIn, nOut, kW, kH, [dW=1], [dH=1], [padW=0], [padH=padW], [groups=1]) and
-- nn.SpatialDilatedConvolution(nIn, nOut, kW, kH, dW, dH, padW, padH, [dilW=1], [dilH=dilW]), as in
-- Torch7 (groups is a moontorch extension). Input: nIn x H x W or batch x nIn x H x W; weight:
-- nOut x nIn/groups x kH x kW. Math in C (csrc/nn/conv.c): im2col + GEMM on the CPU, cuDNN on CUDA.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local cc = require 'moontorch.nn.conv_common'

local Conv, parent = torch.class('nn.SpatialConvolution', 'nn.Module')

local function init(self, name, nIn, nOut, kW, kH, dW, dH, padW, padH, groups, dilW, dilH)
   parent.__init(self)
   cc.posint(nIn, 'nInputPlane', name); cc.posint(nOut, 'nOutputPlane', name)
   cc.posint(kW, 'kW', name); cc.posint(kH, 'kH', name)
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.kW, self.kH = kW, kH
   self.dW, self.dH = dW or 1, dH or 1
   self.padW = padW or 0
   self.padH = padH or self.padW
   self.groups = groups or 1
   self.dilationW = dilW or 1
   self.dilationH = dilH or self.dilationW
   cc.posint(self.dW, 'dW', name); cc.posint(self.dH, 'dH', name); cc.posint(self.groups, 'groups', name)
   cc.posint(self.dilationW, 'dilationW', name); cc.posint(self.dilationH, 'dilationH', name)
   if self.padW < 0 or self.padH < 0 then
      error(('%s: padding must not be negative, got %s,%s'):format(name, self.padW, self.padH), 3)
   end
   if nIn % self.groups ~= 0 or nOut % self.groups ~= 0 then
      error(('%s: nInputPlane %d and nOutputPlane %d must be divisible by groups %d'):format(name, nIn, nOut,
         self.groups), 3)
   end
   self.weight = torch.Tensor(nOut, nIn / self.groups, kH, kW)
   self.bias = torch.Tensor(nOut)
   self.gradWeight = torch.Tensor(nOut, nIn / self.groups, kH, kW):zero()
   self.gradBias = torch.Tensor(nOut):zero()
   self:reset()
end

function Conv:__init(nIn, nOut, kW, kH, dW, dH, padW, padH, groups)
   init(self, 'nn.SpatialConvolution', nIn, nOut, kW, kH, dW, dH, padW, padH, groups)
end

Conv.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(fan-in), fan-in = kW*kH*nIn/groups; reset(stdv) gives a
-- uniform distribution with that standard deviation.
function Conv:reset(stdv) return cc.reset(self, stdv, self.kW * self.kH * self.nInputPlane / (self.groups or 1)) end

local function name_of(self) return torch.type(self) end

-- The input as a 4-d tensor (a 3-d one gains a batch dimension of 1), after type checks.
local function batched(self, input, what)
   local name = name_of(self)
   T.expect_tensor(input, name, what, 4)
   if input:type() ~= self.weight:type() then
      error(('%s: %s is a %s but the module holds %s (convert with :type())'):format(name, what, input:type(),
         self.weight:type()), 4)
   end
   local d = input:dim()
   if d == 3 then return input:unsqueeze(1), true end
   if d ~= 4 then
      error(('%s: expected a 3-d or 4-d %s, got size %s'):format(name, what, table.concat(T.sizes(input), 'x')),
         4)
   end
   return input, false
end

-- result tensors follow the input's type (a module used after :type() keeps working)
local result = nn.utils.result

local function squeeze_batch(t) return t:select(1, 1) end

function Conv:updateOutput(input)
   local x, unbatched = batched(self, input, 'input')
   local out = result(self, 'output', input)
   if unbatched and out:dim() == 3 then out = out:view(1, out:size(1), out:size(2), out:size(3)) end
   check(C.mt_conv2d_forward(out.h, x.h, self.weight.h, self.bias and self.bias.h or nil, self.dW, self.dH,
      self.padW, self.padH, self.dilationW, self.dilationH, self.groups))
   self.output = unbatched and squeeze_batch(out) or out
   return self.output
end

function Conv:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, unbatched = batched(self, input, 'input')
   local dy = batched(self, gradOutput, 'gradOutput')
   local gi = result(self, 'gradInput', input)
   if unbatched and gi:dim() == 3 then gi = gi:view(1, gi:size(1), gi:size(2), gi:size(3)) end
   check(C.mt_conv2d_backward_input(gi.h, x.h, dy.h, self.weight.h, self.dW, self.dH, self.padW, self.padH,
      self.dilationW, self.dilationH, self.groups))
   self.gradInput = unbatched and squeeze_batch(gi) or gi
   return self.gradInput
end

function Conv:accGradParameters(input, gradOutput, scale)
   local x = batched(self, input, 'input')
   local dy = batched(self, gradOutput, 'gradOutput')
   check(C.mt_conv2d_backward_params(self.gradWeight.h, self.gradBias and self.gradBias.h or nil, x.h, dy.h,
      scale or 1, self.dW, self.dH, self.padW, self.padH, self.dilationW, self.dilationH, self.groups))
end

function Conv:__tostring__()
   local s = ('%s(%d -> %d, %dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kW, self.kH)
   local dil = (self.dilationW or 1) ~= 1 or (self.dilationH or 1) ~= 1
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 or dil then
      s = s .. (', %d,%d'):format(self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 or dil then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   if dil then s = s .. (', %d,%d'):format(self.dilationW, self.dilationH) end
   if (self.groups or 1) ~= 1 then s = s .. (', groups %d'):format(self.groups) end
   s = s .. ')'
   if not self.bias then s = s .. ' without bias' end
   return s
end

local Dilated = torch.class('nn.SpatialDilatedConvolution', 'nn.SpatialConvolution')

function Dilated:__init(nIn, nOut, kW, kH, dW, dH, padW, padH, dilW, dilH)
   init(self, 'nn.SpatialDilatedConvolution', nIn, nOut, kW, kH, dW, dH, padW, padH, 1, dilW, dilH)
end

return Conv
