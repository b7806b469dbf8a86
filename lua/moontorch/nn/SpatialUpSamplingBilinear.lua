-- nn.SpatialUpSamplingBilinear(scale) or ({oheight=, owidth=}) as in Torch7: bilinear interpolation
-- of the last two dimensions of a 3-d or 4-d input with the corners aligned (output pixel o reads
-- input position o * (H - 1) / (oH - 1)); with a scale the output is H*scale x W*scale. The
-- interpolation is separable, so it is two matrix products with oH x H and oW x W weight matrices
-- (an mm over all rows, then a bmm over the planes), and the gradient is the same products
-- transposed (mm / bmm, so any device).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local Up, parent = torch.class('nn.SpatialUpSamplingBilinear', 'nn.Module')

local NAME = 'nn.SpatialUpSamplingBilinear'

local function posint(v, what)
   if type(v) ~= 'number' or v ~= math.floor(v) or v < 1 then
      error(('%s: %s must be a positive integer, got %s'):format(NAME, what, tostring(v)), 4)
   end
end

function Up:__init(params)
   parent.__init(self)
   if type(params) == 'table' then
      posint(params.oheight, 'oheight'); posint(params.owidth, 'owidth')
      self.oheight, self.owidth = params.oheight, params.owidth
   else
      posint(params, 'scale')
      self.scale_factor = params
   end
end

-- the n x m interpolation matrix from m input to n output positions (corners aligned)
local function weights(n, m, like)
   local A = torch.DoubleTensor(n, m):zero()
   local r = n > 1 and (m - 1) / (n - 1) or 0
   for o = 0, n - 1 do
      local src = o * r
      local i = math.min(math.floor(src), m - 1)
      local f = src - i
      A[o + 1][i + 1] = 1 - f
      if f > 0 then A[o + 1][i + 2] = f end
   end
   return like.new():resize(n, m):copy(A)
end

local function planes(t, what)
   T.expect_tensor(t, NAME, what, 4)
   local d = t:dim()
   if d ~= 3 and d ~= 4 then error(('%s: expected a 3-d or 4-d %s, got %d-d'):format(NAME, what, d), 3) end
   return t:nElement() / (t:size(d - 1) * t:size(d)), t:size(d - 1), t:size(d)
end

-- X (n planes of h x w) -> L X R for L h' x h, R w x w' (both contiguous): one mm over all rows,
-- then one bmm with L broadcast over the planes (no transposed copies); y and out are buffers
local function apply(y, out, x, n, h, w, L, R)
   local h2, w2 = L:size(1), R:size(2)
   x = x:isContiguous() and x or x:contiguous()
   torch.mm(y, x:view(n * h, w), R)
   return torch.bmm(out, L:view(1, h2, h):expand(n, h2, h), y:view(n, h, w2))
end

-- the interpolation matrices for these sizes, type and device, kept until they change:
-- _Ah (oH x H), _Aw (oW x W) as Torch7 names them, and the layouts apply wants
local function matrices(self, H, W, oH, oW, like)
   local key = ('%d %d %d %d %s %d'):format(H, W, oH, oW, like:type(), like:device())
   if self._key ~= key or not self._Ah then
      self._Ah, self._Aw = weights(oH, H, like), weights(oW, W, like)
      self._AwT, self._AhT = self._Aw:t():contiguous(), self._Ah:t():contiguous()
      self._key = key
   end
end

function Up:updateOutput(input)
   local n, H, W = planes(input, 'input')
   local oH = self.scale_factor and H * self.scale_factor or self.oheight
   local oW = self.scale_factor and W * self.scale_factor or self.owidth
   matrices(self, H, W, oH, oW, input)
   local sz = T.sizes(input)
   sz[#sz - 1], sz[#sz] = oH, oW
   local out = apply(utils.result(self, '_y', input), utils.result(self, '_out', input), input, n, H, W, self._Ah,
      self._AwT)
   self.output = out:view(torch.LongStorage(sz))
   return self.output
end

function Up:updateGradInput(input, gradOutput)
   local n = planes(input, 'input')
   local oH, oW = self._Ah:size(1), self._Aw:size(1)
   if gradOutput:nElement() ~= n * oH * oW then
      error(('%s: gradOutput has %d elements, expected %d'):format(NAME, gradOutput:nElement(), n * oH * oW), 2)
   end
   local gi = apply(utils.result(self, '_y', gradOutput), utils.result(self, '_gi', gradOutput), gradOutput, n, oH,
      oW, self._AhT, self._Aw)
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Up:clearState()
   self._Ah, self._Aw, self._AhT, self._AwT, self._key = nil, nil, nil, nil, nil
   self._y, self._out, self._gi = nil, nil, nil
   return parent.clearState(self)
end

function Up:__tostring__()
   if self.scale_factor then return ('%s(%d)'):format(torch.type(self), self.scale_factor) end
   return ('%s(%dx%d)'):format(torch.type(self), self.oheight, self.owidth)
end

return Up
