-- volumetric_fractional_spec.lua: nn.VolumetricFractionalMaxPooling against a direct float64
-- reference (every window's maximum, windows placed by the module's own random samples with
-- Torch7's sequence rule), nn.Jacobian, ratios, batches and errors.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local function starts(u, inSize, outSize, pool) -- 0-based, the documented rule
   local seq = {}
   local alpha = outSize > 1 and (inSize - pool) / (outSize - 1) or 0
   for i = 0, outSize - 2 do seq[i + 1] = math.floor((i + u) * alpha) - math.floor(u * alpha) end
   seq[outSize] = inSize - pool
   return seq
end

describe('nn.VolumetricFractionalMaxPooling', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('takes the maximum of every window its samples place', function()
      local N, C, Ti, H, W = 2, 3, 7, 6, 8
      local pt, pw, ph, oT, oW, oH = 2, 3, 2, 4, 4, 3
      local m = nn.VolumetricFractionalMaxPooling(pt, pw, ph, oT, oW, oH)
      -- time last: N x C x H x W x T in, N x C x oH x oW x oT out (Torch7's layout)
      local x = util.rand_tensor({ N, C, H, W, Ti }, 'torch.DoubleTensor', -3, 3)
      local y = m:forward(x)
      assert.are.same({ N, C, oH, oW, oT }, y:size():totable())
      local rs = m.randomSamples
      for n = 1, N do
         for c = 1, C do
            local st = starts(rs[n][c][1], Ti, oT, pt)
            local sw = starts(rs[n][c][2], W, oW, pw)
            local sh = starts(rs[n][c][3], H, oH, ph)
            for t = 1, oT do for i = 1, oH do for j = 1, oW do
               local best = -math.huge
               for a = 0, pt - 1 do for b = 0, ph - 1 do for e = 0, pw - 1 do
                  best = math.max(best, x[n][c][sh[i] + b + 1][sw[j] + e + 1][st[t] + a + 1])
               end end end
               assert(y[n][c][i][j][t] == best, ('window %d,%d,%d,%d,%d'):format(n, c, t, i, j))
            end end end
         end
      end
   end)

   it('has the right gradient with fixed regions, and draws new ones otherwise', function()
      local m = nn.VolumetricFractionalMaxPooling(2, 2, 2, 0.6, 0.5, 0.7):fixPoolingRegions()
      local x = torch.Tensor(2, 5, 6, 4) -- C x H x W x T
      x:uniform(-2, 2)
      -- floor(5 * 0.7) x floor(6 * 0.5) x floor(4 * 0.6)
      assert.are.same({ 2, 3, 3, 2 }, m:forward(x):size():totable())
      assert(nn.Jacobian.testJacobian(m, x) < 1e-6)
      local free = nn.VolumetricFractionalMaxPooling(2, 2, 2, 3, 3, 3)
      local x5 = util.rand_tensor({ 1, 2, 7, 7, 7 }, 'torch.DoubleTensor', -1, 1)
      free:forward(x5)
      local s1 = free.randomSamples:clone()
      free:forward(x5)
      assert((free.randomSamples - s1):abs():max() > 0)
   end)

   it('names what was wrong', function()
      util.assert_error(function() nn.VolumetricFractionalMaxPooling(1, 2, 2, 3, 3, 3) end, 'poolSizeT')
      util.assert_error(function() nn.VolumetricFractionalMaxPooling(2, 2, 2, 0.5, 1.5, 0.5) end, 'ratios')
      local m = nn.VolumetricFractionalMaxPooling(2, 2, 2, 5, 5, 5)
      util.assert_error(function() m:forward(torch.randn(1, 4, 4, 4)) end, 'cannot give a 5x5x5 output')
      util.assert_error(function() m:forward(torch.randn(4, 4, 4)) end, 'expected a 4-d or 5-d input')
   end)
end)
