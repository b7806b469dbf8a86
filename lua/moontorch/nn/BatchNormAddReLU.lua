-- nn.BatchNormAddReLU(nFeature [, eps] [, momentum] [, affine]): relu(bn(x) + residual) for an
-- input {x, residual} (gradInput {gx, gresidual}), the end of a ResNet block in one C pass each
-- way, bit-identical to SpatialBatchNormalization -> CAddTable -> ReLU: the BN output and the
-- sum are rounded to the dtype as those modules round them. The batch norm fields are
-- SpatialBatchNormalization's, so weights, getParameters and checkpoints carry.
local torch = require 'moontorch'
require 'moontorch.nn'
require 'moontorch.nn.SpatialBatchNormalization'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local BNA, parent = torch.class('nn.BatchNormAddReLU', 'nn.SpatialBatchNormalization')

function BNA:__init(...)
   parent.__init(self, ...)
   self.gradInput = {}
end

local function h(t) return t and t.h or nil end

local function pair(self, input)
   if type(input) ~= 'table' or #input ~= 2 or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error(torch.type(self) .. ': expected an input {x, residual} of two tensors', 3)
   end
   self:checkInputDim(input[1])
   local x, r = input[1], input[2]
   if not r:isSameSizeAs(x) or r:type() ~= x:type() then
      error(('%s: residual (%s of size %s) must match x (%s of size %s)'):format(torch.type(self), r:type(),
         table.concat(T.sizes(r), 'x'), x:type(), table.concat(T.sizes(x), 'x')), 3)
   end
   return x, r
end

function BNA:updateOutput(input)
   local x, r = pair(self, input)
   return self:forwardSlices(x, r, function(out, xs, rs, sm, ss)
      check(C.mt_nn_batchnorm_act_forward(out.h, xs.h, rs.h, h(self.weight), h(self.bias), self.running_mean.h,
         self.running_var.h, sm.h, ss.h, self.train and 1 or 0, self.momentum, self.eps, 1))
   end)
end

-- gradInput[i], (re)made in x's type
local function grad(self, i, x)
   local g = self.gradInput[i]
   if not torch.isTensor(g) or g:type() ~= x:type() then
      g = T.empty_tensor(x:dtype(), x:device())
      self.gradInput[i] = g
   end
   return g
end

local function backward(self, input, gradOutput, scale, wantInput, gradWeight, gradBias)
   local x = pair(self, input)
   local gx = wantInput and grad(self, 1, x) or nil
   local gr = wantInput and grad(self, 2, x) or nil
   self:backwardSlices(x, gradOutput, gx, gr, function(gi, gres, xs, y, go, sm, ss)
      check(C.mt_nn_batchnorm_act_backward(h(gi), h(gres), h(gradWeight), h(gradBias), xs.h, y.h, go.h,
         h(self.weight), self.running_mean.h, self.running_var.h, sm.h, ss.h, self.train and 1 or 0, scale or 1,
         self.eps, 1))
   end)
   return self.gradInput
end

function BNA:backward(input, gradOutput, scale)
   return backward(self, input, gradOutput, scale, true, self.gradWeight, self.gradBias)
end

function BNA:updateGradInput(input, gradOutput)
   return backward(self, input, gradOutput, 1, true, nil, nil)
end

function BNA:accGradParameters(input, gradOutput, scale)
   if self.affine then backward(self, input, gradOutput, scale, false, self.gradWeight, self.gradBias) end
end

return BNA
