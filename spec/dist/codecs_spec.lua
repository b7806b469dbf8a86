-- codecs_spec.lua: dist.DataParallel's per-bucket compressors (compress = 'onebit', 'powersgd',
-- 'fp16'; dist/codec.lua) on 1, 2 and 4 ranks, on fresh random gradients (the seed is
-- printed): the 1-bit kernels against a hand-made vector and a float64 reference; per
-- compressor, error feedback's invariant (what the ranks sent plus their residuals is what they
-- accumulated), PowerSGD at full rank against the dense average, the warm-up's plain steps, the
-- bytes counted exactly, and the residuals through state()/setLocalState().
-- ctest: ranks 1 2 4
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local dist = require 'moontorch.dist'
local D = require('moontorch.dist.lib').C

local world = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or '1')
dist.init{ timeout = 120, model = false }
local R, N = dist.rank(), dist.size()
local seed = dist.broadcastNumber(tonumber(os.getenv('MT_TEST_SEED'))
   or (os.time() % 100000 * 1000 + math.floor(os.clock() * 1e3) % 1000))
if R == 0 then io.stderr:write(('[dist codecs spec seed %d, %d ranks]\n'):format(seed, N)) end
assert(world == N)

local maxdiff = require('spec.util').maxdiff

-- a model with matrices of several shapes (a convolution, two linear layers) and vectors
local function model()
   torch.manualSeed(seed)
   return nn.Sequential()
      :add(nn.SpatialConvolution(3, 8, 3, 3))  -- weight 8 x 3 x 3 x 3: a matrix 8 x 27
      :add(nn.ReLU())
      :add(nn.View(-1):setNumInputDims(3))
      :add(nn.Linear(8 * 6 * 6, 64))          -- 64 x 288
      :add(nn.Tanh())
      :add(nn.Linear(64, 10))                 -- 10 x 64
end

-- one step on this rank's own batch: the local gradient (float64), then the synchronised update
local function step(dp, s)
   torch.manualSeed(seed + 7919 * s + 104729 * R)
   local x, dy = torch.randn(4, 3, 8, 8), torch.randn(4, 10)
   dp:zeroGradParameters()
   dp.module:forward(x)
   dp.module:backward(x, dy)
   local _, g = dp:getParameters()
   local mine = g:double()
   dp:allreduceGradients()
   return mine, g:double()
end

-- the sum over ranks of a float64 vector
local function sumRanks(v)
   local all = dist.allgather(torch.DoubleTensor(N * v:nElement()), v)
   local s = torch.DoubleTensor(v:nElement()):zero()
   for r = 0, N - 1 do s:add(all:narrow(1, r * v:nElement() + 1, v:nElement())) end
   return s
end

-- the codec's residuals laid out over the flat gradient (zero where it keeps none)
local function residualFlat(dp)
   local e = torch.DoubleTensor(dp.gradParams:nElement()):zero()
   local c = dp.codec
   if dp.compress == 'onebit' then
      for b, bk in ipairs(dp.buckets) do e:narrow(1, bk.lo + 1, bk.hi - bk.lo):copy(c.memory['e' .. b]) end
   else
      for b, pl in ipairs(c.plans) do
         for i, mt in ipairs(pl.mats) do
            e:narrow(1, mt.lo + 1, mt.n * mt.m):copy(c.memory[('e%d.%d'):format(b, i)])
         end
      end
   end
   return e
end

describe('dist codecs', function()
teardown(function() dist.finalize() end)

describe('PowerSGD orthogonalization', function()
   local orthogonalize = require('moontorch.dist.powersgd').orthogonalize
   local function gram_error(p)
      local d = p:double()
      return maxdiff(d:t() * d, torch.eye(p:size(2)))
   end

   it('keeps a real direction the columns before it nearly explain, and leaves P orthonormal', function()
      torch.manualSeed(seed + 7)
      for _, remainder in ipairs { 1e-3, 3e-5, 2.6e-5, 1e-5 } do
         local p0 = torch.randn(16, 4)
         local direction = torch.randn(16)
         -- column 3: columns 1 and 2 plus a small but real part of its own
         p0:select(2, 3):copy(p0:select(2, 1) + p0:select(2, 2)):add(remainder * p0:select(2, 3):norm(), direction)
         local p = p0:float()
         orthogonalize(p)
         assert.is_true(gram_error(p) < 1e-6, ('remainder %g: P^T P - I = %g'):format(remainder, gram_error(p)))
         -- the span still holds every original column: P P^T p0 = p0
         local pd, f = p:double(), p0:float():double()
         local lost = maxdiff(pd * (pd:t() * f), f) / f:clone():abs():max()
         assert.is_true(lost < 1e-5, ('remainder %g: a direction was dropped (%g)'):format(remainder, lost))
      end
   end)

   it('makes a column of float32 noise a unit vector orthogonal to the rest, and a zero column stays zero', function()
      torch.manualSeed(seed + 8)
      local p = torch.randn(12, 4):float()
      p:select(2, 2):copy(p:select(2, 1)):mul(3) -- dependent up to float32 rounding
      p:select(2, 4):zero()
      orthogonalize(p)
      local d = p:double()
      assert.are.equal(0, d:select(2, 4):abs():max())
      local three = d:narrow(2, 1, 3)
      assert.is_true(maxdiff(three:t() * three, torch.eye(3)) < 1e-6)
   end)
end)

describe('1-bit kernels', function()
   it('encode a hand-made vector: the mean magnitude per chunk, a bit per sign, the residual', function()
      local v = torch.FloatTensor { 3, -1, 0, -2, 5, 1, -4, 2, 0.5, -0.5 }
      local bits, scales = torch.ByteTensor(2), torch.FloatTensor(2)
      T.check(D.mt_dist_onebit_encode(v.h, nil, bits.h, scales.h, 8), 'encode')
      assert.same({ 2.25, 0.5 }, { scales[1], scales[2] })
      -- signs 1 0 1 0 1 1 0 1 (0 counts as positive) from bit 0 up: 1 + 4 + 16 + 32 + 128
      assert.same({ 181, 1 }, { bits[1], bits[2] })
      assert.same({ 0.75, 1.25, -2.25, 0.25, 2.75, -1.25, -1.75, -0.25, 0, 0 }, v:totable())
      local out = torch.FloatTensor(10)
      T.check(D.mt_dist_onebit_decode(out.h, bits.h, scales.h, 8, 1, 1), 'decode')
      assert.same({ 2.25, -2.25, 2.25, -2.25, 2.25, 2.25, -2.25, 2.25, 0.5, -0.5 }, out:totable())
   end)

   it('encode and decode random vectors as a float64 reference does', function()
      torch.manualSeed(seed + R)
      local n, chunk, blocks = 10007, 64, 3
      -- the residual v and the gradient g, added inside the encoding (in float32, as here)
      local v, g = torch.DoubleTensor(n):normal(0, 3):float(), torch.DoubleTensor(n):normal(0, 1):float()
      local xf = torch.add(v, g):double()
      local nb, nc = math.ceil(n / 8), math.ceil(n / chunk)
      local bits, scales = torch.ByteTensor(nb), torch.FloatTensor(nc)
      T.check(D.mt_dist_onebit_encode(v.h, g.h, bits.h, scales.h, chunk), 'encode')
      local worst = 0
      for c = 1, nc do
         local lo, hi = (c - 1) * chunk + 1, math.min(c * chunk, n)
         local s = xf:narrow(1, lo, hi - lo + 1):clone():abs():mean()
         worst = math.max(worst, math.abs(scales[c] - s) / s)
         for i = lo, hi do
            local positive = xf[i] >= 0
            assert.equal(positive and 1 or 0, math.floor(bits[math.floor((i - 1) / 8) + 1] / 2 ^ ((i - 1) % 8)) % 2)
            local want = xf[i] - (positive and scales[c] or -scales[c])
            assert.is_true(math.abs(v[i] - want) <= 1e-6 * (1 + math.abs(want)), ('residual %d'):format(i))
         end
      end
      assert.is_true(worst < 1e-6, 'scale error ' .. worst)
      -- decode: blocks of random bits and scales, summed in order and scaled
      local rb = torch.ByteTensor(blocks * nb):random(0, 255)
      local rs = torch.FloatTensor(blocks * nc):uniform(0.1, 2)
      local out = torch.FloatTensor(n)
      T.check(D.mt_dist_onebit_decode(out.h, rb.h, rs.h, chunk, blocks, 0.25), 'decode')
      local want = torch.DoubleTensor(n):zero()
      for b = 0, blocks - 1 do
         for i = 1, n do
            local bit = math.floor(rb[b * nb + math.floor((i - 1) / 8) + 1] / 2 ^ ((i - 1) % 8)) % 2
            local s = rs[b * nc + math.floor((i - 1) / chunk) + 1]
            want[i] = want[i] + (bit == 1 and s or -s)
         end
      end
      assert.is_true(maxdiff(out:double(), want:mul(0.25)) < 1e-5)
   end)

   it('refuse a chunk that is not a multiple of 8, short buffers and other dtypes, naming them', function()
      local v, bits, scales = torch.FloatTensor(20):normal(), torch.ByteTensor(3), torch.FloatTensor(3)
      local function err(st) return st ~= 0 and T.error_message() or 'no error' end
      assert.matches('chunk must be a positive multiple of 8, got 12',
         err(D.mt_dist_onebit_encode(v.h, nil, bits.h, scales.h, 12)))
      assert.matches('bits has 2 elements, needs 3',
         err(D.mt_dist_onebit_encode(v.h, nil, torch.ByteTensor(2).h, scales.h, 8)))
      assert.matches('g has 19 elements, needs 20',
         err(D.mt_dist_onebit_encode(v.h, torch.FloatTensor(19).h, bits.h, scales.h, 8)))
      assert.matches('g has 21 elements but v 20',
         err(D.mt_dist_onebit_encode(v.h, torch.FloatTensor(21).h, bits.h, scales.h, 8)))
      assert.matches('v must be float32, got float64',
         err(D.mt_dist_onebit_encode(torch.DoubleTensor(20).h, nil, bits.h, scales.h, 8)))
      assert.matches('scales has 3 elements, needs 6',
         err(D.mt_dist_onebit_decode(v.h, torch.ByteTensor(6).h, scales.h, 8, 2, 1)))
   end)
end)

describe('DataParallel', function()
   for _, case in ipairs {
      { compress = 'onebit', opts = { chunk = 64 } },
      { compress = 'onebit', opts = { chunk = 2048 } },
      { compress = 'powersgd', opts = { rank = 2, start = 0 } },
      { compress = 'powersgd', opts = { rank = 1, start = 0, warmStart = false } },
   } do
      local what = case.opts.chunk and ('chunk ' .. case.opts.chunk)
         or ('rank ' .. case.opts.rank .. (case.opts.warmStart == false and ', no warm start' or ''))
      it(('keeps sent + residual == accumulated over the ranks (%s, %s)'):format(case.compress, what), function()
         local opts = { compress = case.compress, bucketMB = 0.02 }
         for k, v in pairs(case.opts) do opts[k] = v end
         local dp = dist.DataParallel(model(), opts)
         assert.is_true(#dp.buckets >= 2)
         for s = 1, 5 do
            local before = residualFlat(dp)
            local mine, update = step(dp, s)
            local after = residualFlat(dp)
            -- this rank sent mine + before - after; the update is the ranks' average of it
            local sent = mine:clone():add(before):add(-1, after)
            local avg = sumRanks(sent):div(N)
            assert.is_true(maxdiff(update, avg) < 1e-4 * (1 + update:clone():abs():max()),
               ('step %d: %g'):format(s, maxdiff(update, avg)))
            assert.is_true(after:clone():abs():sum() > 0) -- the codes left something out
            assert.equal(update:nElement(), update:eq(update):sum()) -- no NaN
            if case.compress == 'powersgd' then
               -- what went dense (vectors) is the plain average
               for b, pl in ipairs(dp.codec.plans) do
                  for _, d in ipairs(pl.dense) do
                     local w = sumRanks(mine:narrow(1, d.lo + 1, d.len):clone()):div(N)
                     assert.is_true(maxdiff(update:narrow(1, d.lo + 1, d.len), w) < 1e-5, 'dense ' .. b)
                  end
               end
            end
         end
      end)
   end

   it('counts the bytes of each compressor exactly', function()
      local function layoutOf(dp)
         local m, p, list = dp.module, {}, {}
         local params = m:parameters()
         for _, t in ipairs(params) do p[#p + 1] = t end
         for _, t in ipairs(p) do list[#list + 1] = t:nElement() end
         return p, list
      end
      -- onebit: ceil(n/8) bytes of signs and 4 per chunk, per bucket
      local dp = dist.DataParallel(model(), { compress = 'onebit', chunk = 64, bucketMB = 0.02 })
      step(dp, 1)
      local want, dense = 0, 0
      for _, bk in ipairs(dp.buckets) do
         local n = bk.hi - bk.lo
         want, dense = want + math.ceil(n / 8) + 4 * math.ceil(n / 64), dense + 4 * n
      end
      assert.equal(want, dp.stats.bytes)
      assert.equal(dense, dp.stats.denseBytes)
      assert.equal(4 * dp.gradParams:nElement(), dense)
      -- powersgd rank 2: (n + m) * 2 floats per matrix, the vectors whole
      dp = dist.DataParallel(model(), { compress = 'powersgd', rank = 2, start = 0 })
      step(dp, 1)
      local params = layoutOf(dp)
      want = 0
      for _, t in ipairs(params) do
         if t:dim() >= 2 then
            local n, m = t:size(1), t:nElement() / t:size(1)
            want = want + ((n + m) * 2 * 2 < n * m and (n + m) * 2 or n * m)
         else
            want = want + t:nElement()
         end
      end
      assert.equal(4 * want, dp.stats.bytes)
      assert.equal(2, dp.stats.rank)
      -- fp16: two bytes per element
      dp = dist.DataParallel(model(), { compress = 'fp16' })
      step(dp, 1)
      assert.equal(2 * dp.gradParams:nElement(), dp.stats.bytes)
      assert.equal(0.5, dp.stats.density)
   end)

   -- a fresh Q each step: a warm-started Q is last step's M^T P, of the rank of last step's
   -- gradients (at most the batch size for a linear layer), and need not span this step's rows
   it('at full rank with a fresh Q, PowerSGD gives the dense average', function()
      local dp = dist.DataParallel(model(), { compress = 'powersgd', rank = 1000, minCompressionRate = 0, start = 0,
         warmStart = false, bucketMB = 0.02 })
      local matrices = 0
      for _, l in ipairs(dp.codec:layout()) do matrices = matrices + l.matrices end
      assert.equal(3, matrices)
      for s = 1, 3 do
         local mine, update = step(dp, s)
         local want = sumRanks(mine):div(N)
         local err = maxdiff(update, want) / want:clone():abs():max()
         assert.is_true(err < 1e-4, ('step %d: relative error %g'):format(s, err))
      end
   end)

   it('fp16 sends each bucket divided by N and rounded once to half', function()
      local dp = dist.DataParallel(model(), { compress = 'fp16', bucketMB = 0.02 })
      for s = 1, 3 do
         local mine, update = step(dp, s)
         -- the reference: each rank's g / N rounded to half, summed in float64
         local want = sumRanks(mine:float():div(N):half():double())
         local exact = sumRanks(mine):div(N)
         local tol = N * 2 ^ -10 * exact:clone():abs():max()
         assert.is_true(maxdiff(update, want) <= tol, ('step %d: %g'):format(s, maxdiff(update, want)))
         assert.is_true(maxdiff(update, exact) <= 2 * tol)
      end
   end)

   it('averages plainly for the first `start` steps, then compresses', function()
      for _, name in ipairs { 'onebit', 'powersgd', 'fp16' } do
         local dp = dist.DataParallel(model(), { compress = name, start = 2 })
         for s = 1, 3 do
            local mine, update = step(dp, s)
            local want = sumRanks(mine):div(N)
            if s <= 2 then
               assert.is_true(dp.stats.warmup, name)
               assert.is_true(maxdiff(update, want) < 1e-6, name)
               assert.equal(4 * dp.gradParams:nElement(), dp.stats.bytes)
            else
               assert.is_nil(dp.stats.warmup, name)
               assert.is_true(dp.stats.bytes < 4 * dp.gradParams:nElement(), name)
            end
         end
      end
   end)

   it('carries the residuals and warm-start factors through state() and setLocalState()', function()
      for _, name in ipairs { 'onebit', 'powersgd' } do
         local a = dist.DataParallel(model(), { compress = name, start = 0, chunk = name == 'onebit' and 64 or nil })
         for s = 1, 3 do step(a, s) end
         local tensors, meta = a:localState()
         local b = dist.DataParallel(model(), { compress = name, start = 0, chunk = name == 'onebit' and 64 or nil })
         b:getParameters():copy(a:getParameters())
         b:setLocalState(tensors, meta)
         local _, ua = step(a, 4)
         local _, ub = step(b, 4)
         assert.equal(0, maxdiff(ua, ub), name)
         local c = dist.DataParallel(model(), { compress = name == 'onebit' and 'powersgd' or 'onebit', start = 0 })
         assert.has_error(function() c:setLocalState(tensors, meta) end)
      end
   end)

   it('names what is wrong: an unknown option, a half model, a bad rank or chunk', function()
      local function msg(fn)
         local ok, e = pcall(fn)
         assert.is_false(ok)
         return tostring(e)
      end
      assert.matches("dist.powersgd: unknown option 'rnak'",
         msg(function() dist.DataParallel(model(), { compress = 'powersgd', rnak = 2 }) end))
      assert.matches('rank must be a whole number >= 1, got 0',
         msg(function() dist.DataParallel(model(), { compress = 'powersgd', rank = 0 }) end))
      assert.matches('chunk must be a positive multiple of 8, got 100',
         msg(function() dist.DataParallel(model(), { compress = 'onebit', chunk = 100 }) end))
      assert.matches('gradients must be float32, got torch.HalfTensor',
         msg(function() dist.DataParallel(model():half(), { compress = 'onebit' }) end))
      assert.matches("compress must be one of none, rgc, powersgd, onebit, fp16, auto, got 'topk'",
         msg(function() dist.DataParallel(model(), { compress = 'topk' }) end))
      assert.matches("option 'density' needs compress = 'rgc' or 'auto'",
         msg(function() dist.DataParallel(model(), { compress = 'onebit', density = 0.01 }) end))
   end)
end)
end)
