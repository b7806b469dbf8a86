-- nn.SpatialSubtractiveNormalization([nInputPlane=1], [kernel=9x9 ones]) as in Torch7: subtracts
-- from every plane the kernel-weighted mean of the neighbourhood over all planes. The kernel is 2-d
-- or 1-d (then used separably, as its outer product); its sizes must be odd. Near the borders the
-- mean is over the part of the window inside the image (divided by the same convolution of ones,
-- Torch7's coef). The means are one convolution (csrc/nn/conv.c) of the input with the kernel
-- repeated over the planes, zero-padded to keep the size.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'
local C, check = T.clib, T.check

local SSN, parent = torch.class('nn.SpatialSubtractiveNormalization', 'nn.Module')

local NAME = 'nn.SpatialSubtractiveNormalization'

function SSN:__init(nInputPlane, kernel)
   parent.__init(self)
   self.nInputPlane = nInputPlane or 1
   if type(self.nInputPlane) ~= 'number' or self.nInputPlane < 1
      or self.nInputPlane ~= math.floor(self.nInputPlane) then
      error(('%s: nInputPlane must be a positive integer, got %s'):format(NAME, tostring(nInputPlane)), 2)
   end
   kernel = kernel and T.expect_tensor(kernel, NAME, 'kernel', 2) or torch.Tensor(9, 9):fill(1)
   local kd = kernel:dim()
   if kd ~= 1 and kd ~= 2 then error(('%s: the averaging kernel must be 1-d or 2-d, got %d-d'):format(NAME, kd), 2) end
   if kernel:size(1) % 2 == 0 or (kd == 2 and kernel:size(2) % 2 == 0) then
      error(('%s: the averaging kernel must have odd sizes, got %s'):format(NAME, table.concat(T.sizes(kernel), 'x')),
         2)
   end
   -- normalized as Torch7 does (a copy: the caller's tensor is left alone)
   self.kernel = kernel:clone():div(kernel:sum() * self.nInputPlane)
end

-- the 1 x nIn x kH x kW weight of the mean estimator, in the input's type
function SSN:_weight(like)
   local k = self.kernel
   if k:dim() == 1 then k = torch.ger(k, k) end
   local w = like.new():resize(1, self.nInputPlane, k:size(1), k:size(2))
   w:copy(k:view(1, 1, k:size(1), k:size(2)):expand(1, self.nInputPlane, k:size(1), k:size(2)))
   return w
end

local function conv(w, x)
   local y = x.new()
   check(C.mt_conv2d_forward(y.h, x.h, w.h, nil, 1, 1, (w:size(4) - 1) / 2, (w:size(3) - 1) / 2, 1, 1, 1))
   return y
end

local function as4d(self, t, what) return cc.planes4d(self, NAME, t, what) end

function SSN:updateOutput(input)
   local x = as4d(self, input, 'input')
   local w = self:_weight(x)
   local H, W = x:size(3), x:size(4)
   -- Torch7's coef: the kernel mass inside the image at each position
   self.coef = conv(w, x.new():resize(1, self.nInputPlane, H, W):fill(1))
   self._adjusted = conv(w, x):cdiv(self.coef:expand(x:size(1), 1, H, W))
   self.output = x:clone():add(-1, self._adjusted:expandAs(x)):view(T.sizes(input))
   return self.output
end

function SSN:updateGradInput(input, gradOutput)
   local x = as4d(self, input, 'input')
   local g = as4d(self, gradOutput, 'gradOutput')
   local N, H, W = x:size(1), x:size(3), x:size(4)
   -- the mean took every plane: its gradient is the plane sum of gradOutput over coef, spread back
   local gm = g:sum(2):cdiv(self.coef:expand(N, 1, H, W))
   local gi = x.new()
   check(C.mt_conv2d_backward_input(gi.h, x.h, gm.h, self:_weight(x).h, 1, 1, (self.kernel:size(self.kernel:dim()) - 1)
      / 2, (self.kernel:size(1) - 1) / 2, 1, 1, 1))
   self.gradInput = g:clone():add(-1, gi):view(T.sizes(input))
   return self.gradInput
end

function SSN:clearState()
   self._adjusted = nil
   return parent.clearState(self)
end

return SSN
