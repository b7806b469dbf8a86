-- nn.VolumetricFullConvolution(nIn, nOut, kT, kW, kH, [dT=1], [dW=1], [dH=1], [padT=0], [padW=0], [padH=0],
-- [adjT=0], [adjW=0], [adjH=0]), Torch7's 3-d transposed convolution. Weight: nIn x nOut x kT x kH x kW,
-- which is the weight of the convolution nOut -> nIn that this module transposes: the forward pass
-- is that convolution's input gradient, the input gradient its forward pass and the weight
-- gradient its weight gradient with input and gradOutput exchanged (the shared passes of
-- nn.VolumetricConvolution). Output size: (n - 1) * d - 2 * pad + k + adj. The input may be
-- {input, target}: adj is then chosen so that the output has target's last three sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'
require 'moontorch.nn.VolumetricConvolution'
local VC = nn.VolumetricConvolution

local Full, parent = torch.class('nn.VolumetricFullConvolution', 'nn.Module')

local NAME = 'nn.VolumetricFullConvolution'

function Full:__init(nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH)
   parent.__init(self)
   local posint = cc.posint
   posint(nIn, 'nInputPlane', NAME, 3); posint(nOut, 'nOutputPlane', NAME, 3)
   posint(kT, 'kT', NAME, 3); posint(kW, 'kW', NAME, 3); posint(kH, 'kH', NAME, 3)
   self.nInputPlane, self.nOutputPlane = nIn, nOut
   self.kT, self.kW, self.kH = kT, kW, kH
   self.dT, self.dW, self.dH = dT or 1, dW or 1, dH or 1
   posint(self.dT, 'dT', NAME, 3); posint(self.dW, 'dW', NAME, 3); posint(self.dH, 'dH', NAME, 3)
   self.padT, self.padW, self.padH = padT or 0, padW or 0, padH or 0
   self.adjT, self.adjW, self.adjH = adjT or 0, adjW or 0, adjH or 0
   for _, v in ipairs { 'padT', 'padW', 'padH', 'adjT', 'adjW', 'adjH' } do
      if self[v] < 0 then error(('%s: %s must not be negative, got %s'):format(NAME, v, self[v]), 2) end
   end
   -- an output position past adj would be out of reach of every input position
   if self.adjT >= self.dT or self.adjW >= self.dW or self.adjH >= self.dH then
      error(('%s: adj %d,%d,%d must be smaller than the stride %d,%d,%d'):format(NAME, self.adjT, self.adjW,
         self.adjH, self.dT, self.dW, self.dH), 2)
   end
   self.weight = torch.Tensor(nIn, nOut, kT, kH, kW)
   self.gradWeight = torch.Tensor(nIn, nOut, kT, kH, kW):zero()
   self.bias = torch.Tensor(nOut)
   self.gradBias = torch.Tensor(nOut):zero()
   self:reset()
end

Full.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(kT*kW*kH*nInputPlane)
function Full:reset(stdv) return cc.reset(self, stdv, self.kT * self.kW * self.kH * self.nInputPlane) end

-- Modules saved by old Torch7 versions have no adj fields, name the padding pT/pW/pH and hold
-- the weight (and its gradient) as nOut x nIn x ...: bring them to the current layout once.
function Full:backCompatibility()
   if self.adjW then return end
   self.weight = self.weight:transpose(1, 2):contiguous()
   if self.gradWeight then self.gradWeight = self.gradWeight:transpose(1, 2):contiguous() end
   self.padT, self.padW, self.padH = self.padT or self.pT or 0, self.padW or self.pW or 0, self.padH or self.pH or 0
   self.adjT, self.adjW, self.adjH = 0, 0, 0
end

-- (input as 5-d, was it 4-d?, adjT, adjW, adjH) for a tensor or {input, target} input
local function unpack_input(self, input)
   self:backCompatibility()
   local x, adjT, adjW, adjH = input, self.adjT, self.adjW, self.adjH
   if torch.type(input) == 'table' then
      x = input[1]
      local target = T.expect_tensor(input[2], NAME, 'input[2] (the target)', 4)
      local td = target:dim()
      if td < 3 then error(('%s: the target must have at least 3 dimensions'):format(NAME), 4) end
      local tT, tH, tW = target:size(td - 2), target:size(td - 1), target:size(td)
      adjT = (tT + 2 * self.padT - self.kT) % self.dT
      adjW = (tW + 2 * self.padW - self.kW) % self.dW
      adjH = (tH + 2 * self.padH - self.kH) % self.dH
   end
   local v, single = VC._batched(self, x, 'input', self.nInputPlane)
   return v, single, adjT, adjW, adjH
end

-- the convolution this module transposes
local function geometry(self) return VC._geometry(self) end

function Full:updateOutput(input)
   local x, single, adjT, adjW, adjH = unpack_input(self, input)
   local sz = T.sizes(x)
   local oT = (sz[3] - 1) * self.dT - 2 * self.padT + self.kT + adjT
   local oH = (sz[4] - 1) * self.dH - 2 * self.padH + self.kH + adjH
   local oW = (sz[5] - 1) * self.dW - 2 * self.padW + self.kW + adjW
   if oT < 1 or oH < 1 or oW < 1 then
      error(('%s: input %dx%dx%d (TxHxW) is too small: output would be %dx%dx%d'):format(NAME, sz[3], sz[4], sz[5],
         oT, oH, oW), 2)
   end
   local y = VC._backwardInput(VC._result(self, '_output', x), { sz[1], self.nOutputPlane, oT, oH, oW }, x,
      self.weight, geometry(self))
   if self.bias then y:add(self.bias:view(1, self.nOutputPlane, 1, 1, 1):expandAs(y)) end
   self.output = single and y:select(1, 1) or y
   return self.output
end

function Full:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = unpack_input(self, input)
   local dy = VC._batched(self, gradOutput, 'gradOutput', self.nOutputPlane)
   local gi = VC._forward(VC._result(self, '_gradInput', x), dy, self.weight, nil, geometry(self))
   local g = single and gi:select(1, 1) or gi
   return cc.full_grad_input(self, input, g)
end

function Full:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = unpack_input(self, input)
   local dy = VC._batched(self, gradOutput, 'gradOutput', self.nOutputPlane)
   VC._backwardParams(self.gradWeight, dy, x, scale, geometry(self))
   if self.gradBias then self.gradBias:add(scale, cc.plane_sums(dy)) end
end

function Full:clearState()
   self._output, self._gradInput, self._zeroScalar = nil, nil, nil
   return parent.clearState(self)
end

function Full:__tostring__()
   local s = ('%s(%d -> %d, %dx%dx%d'):format(torch.type(self), self.nInputPlane, self.nOutputPlane, self.kT,
      self.kW, self.kH)
   local pad = self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0
   local adj = self.adjT ~= 0 or self.adjW ~= 0 or self.adjH ~= 0
   if self.dT ~= 1 or self.dW ~= 1 or self.dH ~= 1 or pad then
      s = s .. (', %d,%d,%d'):format(self.dT, self.dW, self.dH)
   end
   if pad then s = s .. (', %d,%d,%d'):format(self.padT, self.padW, self.padH) end
   if adj then s = s .. (', %d,%d,%d'):format(self.adjT, self.adjW, self.adjH) end
   s = s .. ')'
   if not self.bias then s = s .. ' without bias' end
   return s
end

return Full
