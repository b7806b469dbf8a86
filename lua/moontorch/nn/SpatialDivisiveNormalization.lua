-- nn.SpatialDivisiveNormalization([nInputPlane=1], [kernel=9x9 ones], [threshold=1e-4],
-- [thresval=threshold]) as in Torch7: divides every plane by the local standard deviation
-- sqrt(sum over planes and the kernel window of kernel * x^2), itself divided by Torch7's coef
-- (the same sum over a plane of ones: the kernel mass inside the image, 1 away from the
-- borders); where that is not above threshold, by thresval instead. The kernel is 2-d, or 1-d
-- and used separably (as its outer product), with odd sizes; it is normalized as Torch7 does
-- (2-d: to sum 1/nInputPlane, 1-d: 1/sqrt(nInputPlane)), on a copy. The window sums are the C
-- convolution (csrc/nn/conv.c) with the kernel repeated over the planes, zero-padded to keep
-- the size.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local SDN, parent = torch.class('nn.SpatialDivisiveNormalization', 'nn.Module')

local NAME = 'nn.SpatialDivisiveNormalization'

-- Shared with nn.SpatialContrastiveNormalization: nInputPlane and the kernel checked, the kernel
-- (a copy) or Torch7's default.
function SDN._args(name, nInputPlane, kernel, level)
   nInputPlane = nInputPlane or 1
   if type(nInputPlane) ~= 'number' or nInputPlane < 1 or nInputPlane ~= math.floor(nInputPlane) then
      error(('%s: nInputPlane must be a positive integer, got %s'):format(name, tostring(nInputPlane)), level + 1)
   end
   if kernel == nil then return nInputPlane, torch.Tensor(9, 9):fill(1) end
   T.expect_tensor(kernel, name, 'kernel', level + 1)
   local kd = kernel:dim()
   if kd ~= 1 and kd ~= 2 then
      error(('%s: the averaging kernel must be 1-d or 2-d, got %d-d'):format(name, kd), level + 1)
   end
   if kernel:size(1) % 2 == 0 or (kd == 2 and kernel:size(2) % 2 == 0) then
      error(('%s: the averaging kernel must have odd sizes, got %s'):format(name, table.concat(T.sizes(kernel),
         'x')), level + 1)
   end
   return nInputPlane, kernel:clone()
end

function SDN:__init(nInputPlane, kernel, threshold, thresval)
   parent.__init(self)
   self.nInputPlane, self.kernel = SDN._args(NAME, nInputPlane, kernel, 3)
   self.threshold = threshold or 1e-4
   self.thresval = thresval or threshold or 1e-4
   if type(self.threshold) ~= 'number' or type(self.thresval) ~= 'number' then
      error(NAME .. ': threshold and thresval must be numbers', 2)
   end
   local s = self.kernel:sum()
   if self.kernel:dim() == 2 then s = s * self.nInputPlane else s = s * math.sqrt(self.nInputPlane) end
   self.kernel:div(s)
end

-- the 1 x nIn x kH x kW weight of the window sums, in like's type, and its padding
function SDN:_weight(like)
   local k = self.kernel
   if k:dim() == 1 then k = torch.ger(k, k) end
   local kH, kW = k:size(1), k:size(2)
   local w = like.new():resize(1, self.nInputPlane, kH, kW)
   w:copy(k:view(1, 1, kH, kW):expand(1, self.nInputPlane, kH, kW))
   return w, (kW - 1) / 2, (kH - 1) / 2
end

local function as4d(self, t, what) return cc.planes4d(self, NAME, t, what) end

local function window_sums(w, padW, padH, x) return cc.forward(x.new(), x, w, nil, 1, 1, padW, padH, 1) end

function SDN:updateOutput(input)
   local x = as4d(self, input, 'input')
   local N, H, W = x:size(1), x:size(3), x:size(4)
   local w, padW, padH = self:_weight(x)
   self.coef = window_sums(w, padW, padH, x.new():resize(1, self.nInputPlane, H, W):fill(1))
   -- N x 1 x H x W: the local standard deviations, adjusted by coef, then thresholded
   self._stds = window_sums(w, padW, padH, torch.cmul(x, x)):sqrt()
   self._adjusted = torch.cdiv(self._stds, self.coef:expand(N, 1, H, W))
   self._kept = self._adjusted:gt(self.threshold)
   self._divisor = self._adjusted:clone():maskedFill(self._kept:eq(0), self.thresval)
   self.output = torch.cdiv(x, self._divisor:expandAs(x)):view(T.sizes(input))
   return self.output
end

function SDN:updateGradInput(input, gradOutput)
   local x = as4d(self, input, 'input')
   local g = as4d(self, gradOutput, 'gradOutput')
   local N, H, W = x:size(1), x:size(3), x:size(4)
   local div = self._divisor:expandAs(x)
   local gi = torch.cdiv(g, div)
   -- through the divisor: -sum over planes of g * x / divisor^2, where the threshold kept it
   local gd = torch.cmul(g, x):sum(2):cdiv(self._divisor):cdiv(self._divisor):mul(-1)
   gd:maskedFill(self._kept:eq(0), 0)
   -- through coef and the square root (Torch7's Sqrt gives 0 where the root is 0)
   gd:cdiv(self.coef:expand(N, 1, H, W)):cdiv(self._stds):mul(0.5):maskedFill(self._stds:eq(0), 0)
   local w, padW, padH = self:_weight(x)
   local gsq = cc.backward_input(x.new(), x, gd, w, 1, 1, padW, padH, 1)
   gi:add(gsq:cmul(x):mul(2))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function SDN:clearState()
   self._stds, self._adjusted, self._kept, self._divisor = nil, nil, nil, nil
   return parent.clearState(self)
end

return SDN
