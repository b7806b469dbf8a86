-- local_normalization_spec.lua: nn.SpatialDivisiveNormalization and
-- nn.SpatialContrastiveNormalization against float64 loops written from Torch7's definition
-- (window sums of the normalized kernel over all planes, divided by the same sums over a plane of
-- ones; the threshold and its replacement value), 2-d and 1-d kernels; gradients with nn.Jacobian,
-- on fresh random inputs of small odd sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local t7 = require 'spec.nn.t7_bytes'
local rand, jac = peer.rand, peer.jac
local TOL = { atol = 1e-12, rtol = 1e-10 }

-- the kernel as a Lua 2-d array (a 1-d one as its outer product), normalized to sum 1/nPlanes
local function kernel2d(k, nPlanes)
   local K, s = {}, 0
   if k:dim() == 1 then
      for a = 1, k:size(1) do
         K[a] = {}
         for b = 1, k:size(1) do K[a][b] = k[a] * k[b]; s = s + K[a][b] end
      end
   else
      for a = 1, k:size(1) do
         K[a] = {}
         for b = 1, k:size(2) do K[a][b] = k[a][b]; s = s + K[a][b] end
      end
   end
   for a = 1, #K do
      for b = 1, #K[1] do K[a][b] = K[a][b] / (s * nPlanes) end
   end
   return K
end

-- per sample n, position (y, x): sum over planes and window of K * f(x), and the same sum of K
-- over the positions inside the image (Torch7's coef)
local function window(xf, N, C, H, W, K, f)
   local kH, kW = #K, #K[1]
   local pH, pW = (kH - 1) / 2, (kW - 1) / 2
   local sums, coef = {}, {}
   for n = 1, N do
      sums[n] = {}
      for y = 1, H do
         for x = 1, W do
            local s, c = 0, 0
            for i = 1, C do
               for a = 1, kH do
                  for b = 1, kW do
                     local yy, xx = y + a - 1 - pH, x + b - 1 - pW
                     if yy >= 1 and yy <= H and xx >= 1 and xx <= W then
                        s = s + K[a][b] * f(xf[(((n - 1) * C + i - 1) * H + yy - 1) * W + xx])
                        c = c + K[a][b]
                     end
                  end
               end
            end
            sums[n][(y - 1) * W + x], coef[(y - 1) * W + x] = s, c
         end
      end
   end
   return sums, coef
end

local function dims(x)
   if x:dim() == 3 then return 1, x:size(1), x:size(2), x:size(3) end
   return x:size(1), x:size(2), x:size(3), x:size(4)
end

local function ref_divisive(x, k, threshold, thresval)
   local N, C, H, W = dims(x)
   local xf = util.flat(x)
   local sums, coef = window(xf, N, C, H, W, kernel2d(k, C), function(v) return v * v end)
   local out = {}
   for n = 1, N do
      for i = 1, C do
         for p = 1, H * W do
            local adj = math.sqrt(sums[n][p]) / coef[p]
            local d = adj > threshold and adj or thresval
            local at = ((n - 1) * C + i - 1) * H * W + p
            out[at] = xf[at] / d
         end
      end
   end
   return out
end

local function ref_subtractive(x, k)
   local N, C, H, W = dims(x)
   local xf = util.flat(x)
   local sums, coef = window(xf, N, C, H, W, kernel2d(k, C), function(v) return v end)
   local out = {}
   for n = 1, N do
      for i = 1, C do
         for p = 1, H * W do
            local at = ((n - 1) * C + i - 1) * H * W + p
            out[at] = xf[at] - sums[n][p] / coef[p]
         end
      end
   end
   return out
end

local function U(lo, hi, ...) return (util.rand_tensor({ ... }, 'torch.DoubleTensor', lo, hi)) end

describe('nn.SpatialDivisiveNormalization', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('divides by the local standard deviation over the planes (2-d and 1-d kernels, batched and not)', function()
      local k2 = U(0.2, 1, 3, 5)
      local m = nn.SpatialDivisiveNormalization(3, k2)
      local x = rand(2, 3, 6, 7)
      local y = m:forward(x)
      assert.are.same({ 2, 3, 6, 7 }, T.sizes(y))
      util.assert_close(util.flat(y), ref_divisive(x, k2, 1e-4, 1e-4), TOL, '2-d kernel, batch')
      util.assert_close(util.flat(m:forward(x[2])), ref_divisive(x[2], k2, 1e-4, 1e-4), TOL, '2-d kernel, single')
      local k1 = U(0.2, 1, 5)
      local m1 = nn.SpatialDivisiveNormalization(2, k1)
      local x1 = rand(2, 5, 4)
      util.assert_close(util.flat(m1:forward(x1)), ref_divisive(x1, k1, 1e-4, 1e-4), TOL, '1-d kernel')
      -- Torch7 keeps the kernel normalized: 2-d to sum 1/nInputPlane, 1-d to 1/sqrt(nInputPlane)
      util.assert_close({ m.kernel:sum() }, { 1 / 3 }, TOL, '2-d kernel sum')
      util.assert_close({ m1.kernel:sum() }, { 1 / math.sqrt(2) }, TOL, '1-d kernel sum')
      -- the caller's kernel is left as it was
      assert.is_true(k2:max() > 0.2 * 0.99 and k2:max() <= 1, 'the kernel given is unchanged')
   end)

   it('divides by thresval where the adjusted deviation is not above the threshold', function()
      local k = U(0.5, 1, 3, 3)
      local m = nn.SpatialDivisiveNormalization(2, k, 0.45, 2.5)
      local x = rand(2, 2, 5, 5)
      -- a quiet corner: there the deviation is below the threshold
      x:narrow(3, 1, 2):narrow(4, 1, 2):mul(0.01)
      local want = ref_divisive(x, k, 0.45, 2.5)
      util.assert_close(util.flat(m:forward(x)), want, TOL, 'thresholded')
      local kept = 0
      for i, v in ipairs(util.flat(x)) do if math.abs(v / 2.5 - want[i]) < 1e-15 then kept = kept + 1 end end
      assert.is_true(kept > 0, 'some positions took thresval')
      -- thresval defaults to the threshold
      assert.are.equal(0.3, nn.SpatialDivisiveNormalization(2, k, 0.3).thresval)
   end)

   it('has the input jacobian of its forward', function()
      jac(nn.SpatialDivisiveNormalization(3, U(0.5, 1, 3, 3)), rand(3, 5, 4), '2-d kernel')
      jac(nn.SpatialDivisiveNormalization(2, U(0.5, 1, 5)), rand(2, 2, 5, 6), '1-d kernel, batch')
   end)

   it('names the module and what is wrong in its errors', function()
      local N = 'nn.SpatialDivisiveNormalization: '
      assert.has_error(function() nn.SpatialDivisiveNormalization(2, torch.ones(3, 4)) end,
         N .. 'the averaging kernel must have odd sizes, got 3x4')
      assert.has_error(function() nn.SpatialDivisiveNormalization(2, torch.ones(3, 3, 3)) end,
         N .. 'the averaging kernel must be 1-d or 2-d, got 3-d')
      assert.has_error(function() nn.SpatialDivisiveNormalization(0) end,
         N .. 'nInputPlane must be a positive integer, got 0')
      local m = nn.SpatialDivisiveNormalization(3, torch.ones(3, 3))
      assert.has_error(function() m:forward(rand(2, 5, 5)) end,
         N .. 'expected a 3-d or 4-d input with 3 planes, got size 2x5x5')
   end)
end)

describe('nn.SpatialContrastiveNormalization', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('subtracts the local mean, then divides by the local standard deviation', function()
      local k = U(0.3, 1, 3, 3)
      local m = nn.SpatialContrastiveNormalization(3, k)
      local x = rand(2, 3, 5, 6)
      local centred = torch.DoubleTensor(ref_subtractive(x, k)):view(2, 3, 5, 6)
      util.assert_close(util.flat(m:forward(x)), ref_divisive(centred, k, 1e-4, 1e-4), TOL, '2-d kernel')
      local k1 = U(0.3, 1, 3)
      local m1 = nn.SpatialContrastiveNormalization(2, k1, 0.2, 0.6)
      local x1 = rand(2, 6, 5)
      local c1 = torch.DoubleTensor(ref_subtractive(x1, k1)):view(2, 6, 5)
      util.assert_close(util.flat(m1:forward(x1)), ref_divisive(c1, k1, 0.2, 0.6), TOL, '1-d kernel, threshold')
   end)

   it('has the input jacobian of its forward', function()
      jac(nn.SpatialContrastiveNormalization(2, U(0.5, 1, 3, 3)), rand(2, 2, 5, 5), 'batch')
      jac(nn.SpatialContrastiveNormalization(3, U(0.5, 1, 5)), rand(3, 6, 5), '1-d kernel')
   end)

   it('gives the float64 results after :float() within float32 rounding', function()
      local m = nn.SpatialContrastiveNormalization(3, U(0.5, 1, 3, 3))
      local x = rand(2, 3, 5, 5)
      local want = util.flat(m:forward(x))
      m:float()
      local got = m:forward(x:float())
      assert.are.equal('torch.FloatTensor', got:type())
      util.assert_close(util.flat(got), want, { atol = 1e-5, rtol = 1e-4 }, 'float')
   end)

   it('reads the modules Torch7 saved (its normalized kernels, the parts in a Sequential)', function()
      local k, th, tv = U(0.3, 1, 3, 5), 0.25, 0.7
      local stored = k / (k:sum() * 2) -- Torch7 normalizes the kernel in place, to sum 1/nInputPlane
      local function common(extra)
         local f = { { 'nInputPlane', t7.number(2) }, { 'kernel', t7.dtensor(stored) },
            { 'output', t7.dtensor() }, { 'gradInput', t7.dtensor() }, { 'train', t7.boolean(true) } }
         for _, e in ipairs(extra) do f[#f + 1] = e end
         return t7.fields(f)
      end
      local threshold, thresval = { 'threshold', t7.number(th) }, { 'thresval', t7.number(tv) }
      local coef = function() return { 'coef', t7.dtensor(torch.ones(1, 1, 1)) } end
      local ssn = t7.object('nn.SpatialSubtractiveNormalization', common { coef() })
      local sdn = t7.object('nn.SpatialDivisiveNormalization', common { threshold, thresval, coef() })
      local seq = t7.object('nn.Sequential', t7.fields {
         { 'modules', t7.table_ { { t7.number(1), ssn }, { t7.number(2), sdn } } },
         { 'output', t7.dtensor() }, { 'gradInput', t7.dtensor() }, { 'train', t7.boolean(true) } })
      local bytes = t7.encode(t7.object('nn.SpatialContrastiveNormalization',
         common { threshold, thresval, { 'normalizer', seq } }))
      local m = torch.deserialize(bytes)
      assert.are.equal('nn.SpatialContrastiveNormalization', torch.type(m))
      local x = rand(2, 2, 5, 6)
      local centred = torch.DoubleTensor(ref_subtractive(x, k)):view(2, 2, 5, 6)
      util.assert_close(util.flat(m:forward(x)), ref_divisive(centred, k, th, tv), TOL, 'read from Torch7 bytes')
      jac(m, x, 'read from Torch7 bytes')
   end)

   it('checks its kernel as the parts do', function()
      assert.has_error(function() nn.SpatialContrastiveNormalization(2, torch.ones(2)) end,
         'nn.SpatialContrastiveNormalization: the averaging kernel must have odd sizes, got 2')
   end)
end)
