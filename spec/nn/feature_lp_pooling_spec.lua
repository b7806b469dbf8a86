-- feature_lp_pooling_spec.lua: nn.FeatureLPPooling against a float64 loop written from THNN's
-- definition (windows of `width` features every `stride`, (sum x^p)^(1/p) with no absolute value)
-- in batch mode and not, 1 to 3 dimensions after the batch; gradients with nn.Jacobian and
-- THNN's zero gradient where an output is 0; on fresh random inputs.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local TOL = { atol = 1e-12, rtol = 1e-10 }

local function U(lo, hi, sizes) return (util.rand_tensor(sizes, 'torch.DoubleTensor', lo, hi)) end

-- the input seen as B x F x R (batch, features, the rest); returns the flat output and its sizes
local function ref(x, width, stride, p, batch)
   local sizes = T.sizes(x)
   local f = batch and 2 or 1
   local B = batch and sizes[1] or 1
   local F = sizes[f]
   local R = x:nElement() / (B * F)
   local Fo = math.floor((F - width) / stride) + 1
   local xf, out = util.flat(x), {}
   for b = 1, B do
      for k = 1, Fo do
         for r = 1, R do
            local s = 0
            for i = 0, width - 1 do s = s + xf[((b - 1) * F + (k - 1) * stride + i) * R + r] ^ p end
            out[((b - 1) * Fo + k - 1) * R + r] = s ^ (1 / p)
         end
      end
   end
   sizes[f] = Fo
   return out, sizes
end

describe('nn.FeatureLPPooling', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('pools windows of features with the p-norm, in batch mode and not, over 1 to 3 dimensions', function()
      local shapes = { [false] = { { 11 }, { 9, 3 }, { 10, 2, 3 } },
         [true] = { { 2, 11 }, { 3, 9, 2 }, { 2, 10, 3, 2 } } }
      for _, batch in ipairs { false, true } do
         for _, sizes in ipairs(shapes[batch]) do
            for _, cfg in ipairs { { 3, 2, 2 }, { 4, 1, 1 }, { 2, 3, 3 }, { 5, 4, 2.5 } } do
               local width, stride, p = cfg[1], cfg[2], cfg[3]
               local x = U(0.1, 2, sizes)
               local m = nn.FeatureLPPooling(width, stride, p, batch)
               local want, wsizes = ref(x, width, stride, p, batch)
               local y = m:forward(x)
               local what = ('%s batch %s w%d s%d p%g'):format(table.concat(sizes, 'x'), tostring(batch), width,
                  stride, p)
               assert.are.same(wsizes, T.sizes(y), what .. ': size')
               util.assert_close(util.flat(y), want, TOL, what)
            end
         end
      end
      -- no absolute value: an odd power of negative inputs stays negative
      local x = U(-2, -0.1, { 6 })
      local want = ref(x, 2, 2, 1, false)
      util.assert_close(util.flat(nn.FeatureLPPooling(2, 2, 1):forward(x)), want, TOL, 'p = 1, negative')
      assert.is_true(want[1] < 0)
   end)

   it('has the input jacobian of its forward; 0 where the output is 0', function()
      peer.jac(nn.FeatureLPPooling(3, 2, 2, true), U(-1, 1, { 2, 9, 3 }), 'p = 2, batch', -1, 1)
      peer.jac(nn.FeatureLPPooling(4, 1, 3, false), U(0.5, 2, { 8, 2, 2 }), 'p = 3', 0.5, 2)
      peer.jac(nn.FeatureLPPooling(2, 1, 1.5, false), U(0.5, 2, { 7 }), 'p = 1.5', 0.5, 2)
      -- THNN skips a window whose output is 0 (with p = 1 the derivative would be 1 there)
      for _, p in ipairs { 1, 2 } do
         local m = nn.FeatureLPPooling(3, 1, p)
         local x = torch.zeros(10)
         x[10] = 1
         m:forward(x)
         local g = m:backward(x, U(0.5, 1, { 8 }))
         assert.are.equal(0, g:narrow(1, 1, 7):abs():max(), 'p = ' .. p)
         assert.is_true(g[10] > 0, 'p = ' .. p .. ': the window with a non-zero output')
      end
   end)

   it('names the module and what is wrong in its errors', function()
      local N = 'nn.FeatureLPPooling: '
      assert.has_error(function() nn.FeatureLPPooling(1, 1, 2) end,
         N .. 'width must be an integer within 2 to 16, got 1')
      assert.has_error(function() nn.FeatureLPPooling(3, 5, 2) end,
         N .. 'stride must be an integer within 1 to 4, got 5')
      assert.has_error(function() nn.FeatureLPPooling(3, 1) end, N .. 'power must be a non-zero number, got nil')
      assert.has_error(function() nn.FeatureLPPooling(3, 1, 2, true):forward(torch.ones(5)) end,
         N .. 'expected a 2- to 4-d input (batch_mode true), got size 5')
      assert.has_error(function() nn.FeatureLPPooling(3, 1, 2):forward(torch.ones(2, 3, 4, 5)) end,
         N .. 'expected a 1- to 3-d input (batch_mode false), got size 2x3x4x5')
      assert.has_error(function() nn.FeatureLPPooling(4, 1, 2):forward(torch.ones(3, 2)) end,
         N .. 'the input has 3 features, fewer than width 4')
   end)
end)
