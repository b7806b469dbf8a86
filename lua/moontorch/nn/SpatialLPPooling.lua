-- nn.SpatialLPPooling(nInputPlane, pnorm, kW, kH, [dW=kW], [dH=kH]) as in Torch7: the p-norm
-- (sum of x^p)^(1/p) over each kW x kH window of a C x H x W or N x C x H x W input (x^p itself,
-- so odd p wants non-negative inputs, as in Torch7). One C pass each way (mt_nn_lppool2d_*,
-- csrc/nn/lppool.c; the backward reads the forward's output). Torch7 builds it as a Sequential
-- (Power, SpatialAveragePooling, MulConstant, Power) and keeps no pnorm field: a module read from
-- a Torch7 file takes p from its first layer (nn.Square: 2, nn.Power: its `pow`).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local LP, parent = torch.class('nn.SpatialLPPooling', 'nn.Module')

local NAME = 'nn.SpatialLPPooling'

function LP:__init(nInputPlane, pnorm, kW, kH, dW, dH)
   parent.__init(self)
   for _, v in ipairs { { nInputPlane, 'nInputPlane' }, { kW, 'kW' }, { kH, 'kH' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   if type(pnorm) ~= 'number' or pnorm <= 0 then
      error(('%s: pnorm must be a positive number, got %s'):format(NAME, tostring(pnorm)), 2)
   end
   self.nInputPlane, self.pnorm = nInputPlane, pnorm
   self.kW, self.kH = kW, kH
   self.dW, self.dH = dW or kW, dH or kH
end

local function pnorm(self)
   if self.pnorm then return self.pnorm end
   local first = self.modules and self.modules[1]
   if torch.type(first) == 'nn.Square' then return 2 end
   if first and type(first.pow) == 'number' then return first.pow end
   error(('%s: no pnorm (and no Torch7 Power or Square layer to take it from)'):format(NAME), 3)
end

local function check_input(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   local planes = self.nInputPlane or (d >= 3 and input:size(d - 2))
   if (d ~= 3 and d ~= 4) or input:size(d - 2) ~= planes then
      error(('%s: expected a 3-d or 4-d input with %d planes, got size %s'):format(NAME, planes or 0,
         table.concat(T.sizes(input), 'x')), 3)
   end
end

function LP:updateOutput(input)
   check_input(self, input)
   self.output = torch.isTensor(self.output) and self.output:type() == input:type() and self.output ~= input
      and self.output or input.new()
   local out = self.output
   check(C.mt_nn_lppool2d_forward(out.h, input.h, pnorm(self), self.kW, self.kH, self.dW, self.dH))
   return out
end

function LP:updateGradInput(input, gradOutput)
   check_input(self, input)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   self.gradInput = torch.isTensor(self.gradInput) and self.gradInput:type() == input:type()
      and self.gradInput ~= input and self.gradInput ~= gradOutput and self.gradInput or input.new()
   local gi, out = self.gradInput, self.output
   check(C.mt_nn_lppool2d_backward(gi.h, gradOutput.h, input.h, out.h, pnorm(self), self.kW, self.kH, self.dW,
      self.dH))
   return gi
end

function LP:__tostring__()
   return ('%s(%s, %s, %dx%d, %d,%d)'):format(torch.type(self), tostring(self.nInputPlane), tostring(self.pnorm),
      self.kW, self.kH, self.dW, self.dH)
end

return LP
