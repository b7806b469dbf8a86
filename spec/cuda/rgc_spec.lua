-- rgc_spec.lua: the CUDA bodies of residual gradient compression (kernels/dist_topk.cu,
-- dist_rgc.cu) against the CPU ones (csrc/cpu/dist_topk.c, dist_rgc.c) on the same fresh random
-- inputs (spec/util.lua prints the seed): top-k selection (exact and trimmed equal the CPU's
-- pairs; threshold meets its contract, since the device picks its own threshold), the residual
-- mask and the scatter-add of several ranks' blocks; 1-bit encode and decode (kernels/
-- dist_onebit.cu). GPU tests show as pending without a GPU.
local ffi = require 'ffi'
local bit = require 'bit'
local torch = require 'moontorch'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local gpu_it = cu.gpu_it

describe('dist.rgc on CUDA', function()
   local topk = require 'moontorch.dist.topk'
   local T = require 'moontorch.internal'
   local C = T.clib
   local D = require('moontorch.dist.lib').C

   -- CPU tensors only: the address of the first element
   local function ptr(t, ct) return ffi.cast(ct or 'float*', C.mt_tensor_data(t.h)) end

   -- n float32 values: random sign times a magnitude in [1e-3, 1); `levels` > 0 draws the
   -- magnitude from that many values instead, so that many elements tie
   local function randv(n, levels)
      local v = torch.FloatTensor(n)
      local p = ptr(v)
      for i = 0, n - 1 do
         local m = levels and math.random(levels) / levels or 1e-3 + (1 - 1e-3) * math.random()
         p[i] = (math.random() < 0.5 and -1 or 1) * m
      end
      return v
   end

   local function kof(n, d) return math.max(1, math.ceil(d * n)) end

   -- two CPU int32 / float32 tensors equal bit for bit (NaN included)
   local function assert_bits(a, b, what)
      assert.equal(a:nElement(), b:nElement(), what .. ': number of elements')
      local pa, pb = ptr(a, 'int32_t*'), ptr(b, 'int32_t*')
      for i = 0, a:nElement() - 1 do
         if pa[i] ~= pb[i] then
            error(('%s: element %d differs (%d vs %d bits)'):format(what, i + 1, pa[i], pb[i]), 2)
         end
      end
   end

   -- the GPU's selection of v (on the CPU) with the CPU's: both results as CPU tensors
   local function both(v, d, opts)
      local ci, cv = topk(v, d, opts)
      local gi, gv = topk(v:cuda(), d, opts)
      assert(gi:isCuda() and gv:isCuda(), 'the selection of a CUDA tensor left the device')
      return ci, cv, gi:cpu(), gv:cpu()
   end

   -- threshold's contract: k..kmax pairs (exactly k when ties make that impossible), ascending,
   -- values v's, and no unselected |v| above a selected one (keys: NaN counts as largest)
   local function assert_threshold(v, d, slack, idx, val, what)
      local n = v:nElement()
      local k = kof(n, d)
      local kmax = math.min(n, math.floor(k * (1 + slack)))
      local c = idx:nElement()
      assert(c >= k and c <= kmax, ('%s: %d selected, expected %d..%d'):format(what, c, k, kmax))
      local p, pk = ptr(v), ptr(v, 'uint32_t*')
      local pi, pv = ptr(idx, 'int32_t*'), ptr(val, 'uint32_t*')
      local sel = ffi.new('uint8_t[?]', n)
      local lo = 0xffffffff
      for j = 0, c - 1 do
         local i = pi[j] - 1
         assert(i >= 0 and i < n, what .. ': index out of range')
         if j > 0 then assert(pi[j] > pi[j - 1], what .. ': indices not ascending at ' .. (j + 1)) end
         assert(pv[j] == pk[i], what .. ': value is not v\'s at index ' .. (i + 1))
         sel[i] = 1
         lo = math.min(lo, bit.band(pk[i], 0x7fffffff))
      end
      for i = 0, n - 1 do
         if sel[i] == 0 and bit.band(pk[i], 0x7fffffff) > lo then
            error(('%s: unselected %d has |v| %.9g above a selected one'):format(what, i + 1, math.abs(p[i])), 2)
         end
      end
   end

   local sizes = { 1, 1000, 1000000 }
   local densities = { 0.001, 0.01, 0.5, 1.0 }

   gpu_it('exact and trimmed select exactly the CPU\'s pairs', function()
      for _, n in ipairs(sizes) do
         local v = randv(n)
         for _, d in ipairs(densities) do
            for _, m in ipairs({ 'exact', 'trimmed' }) do
               local what = ('%s n %d density %g'):format(m, n, d)
               local ci, cv, gi, gv = both(v, d, { method = m })
               assert.equal(kof(n, d), gi:nElement(), what .. ': count')
               assert_bits(gi, ci, what .. ' idx')
               assert_bits(gv, cv, what .. ' val')
            end
         end
      end
   end)

   gpu_it('threshold meets its contract', function()
      for _, n in ipairs(sizes) do
         local v = randv(n)
         for _, d in ipairs(densities) do
            for _, slack in ipairs({ 0.2, 0 }) do
               local _, _, gi, gv = both(v, d, { method = 'threshold', slack = slack })
               assert_threshold(v, d, slack, gi, gv, ('threshold n %d density %g slack %g'):format(n, d, slack))
            end
         end
      end
   end)

   gpu_it('ties: lower index first, as on the CPU', function()
      local n = 100000
      local v = randv(n, 8) -- 8 magnitudes: every k-th key is shared by thousands
      for _, d in ipairs({ 0.001, 0.2, 0.7 }) do
         for _, m in ipairs({ 'exact', 'trimmed' }) do
            local ci, cv, gi, gv = both(v, d, { method = m })
            assert_bits(gi, ci, ('%s ties density %g idx'):format(m, d))
            assert_bits(gv, cv, ('%s ties density %g val'):format(m, d))
         end
         local _, _, gi, gv = both(v, d, { method = 'threshold', slack = 0.2 })
         assert_threshold(v, d, 0.2, gi, gv, ('threshold ties density %g'):format(d))
      end
   end)

   gpu_it('NaN counts as the largest magnitude', function()
      local n = 50000
      local v = randv(n)
      local p = ptr(v)
      local nans = {}
      for j = 1, 20 do
         local i = math.random(n)
         p[i - 1] = j % 2 == 0 and 0 / 0 or -(0 / 0)
         nans[i] = true
      end
      for _, m in ipairs({ 'exact', 'trimmed' }) do
         local ci, cv, gi, gv = both(v, 0.001, { method = m })
         assert_bits(gi, ci, m .. ' NaN idx')
         assert_bits(gv, cv, m .. ' NaN val')
         local sel = {}
         for _, i in ipairs(util.flat(gi)) do sel[i] = true end
         for i in pairs(nans) do assert(sel[i], m .. ': NaN at ' .. i .. ' not selected') end
      end
      local _, _, gi, gv = both(v, 0.001, { method = 'threshold', slack = 0.2 })
      assert_threshold(v, 0.001, 0.2, gi, gv, 'threshold NaN')
   end)

   -- mask through the C entry point: idx 0-based, count of them used, base added
   local function mask(v, u, idx, count, base)
      T.check(D.mt_dist_rgc_mask(T.handle(v, 'mask'), u and T.handle(u, 'mask') or nil, T.handle(idx, 'mask'),
         count, base), 'dist.rgc.mask')
   end
   local function scatter(dst, idx, val, block, scale)
      T.check(D.mt_dist_rgc_scatter_add(T.handle(dst, 'scatter'), T.handle(idx, 'scatter'), T.handle(val, 'scatter'),
         block, scale), 'dist.rgc.scatterAdd')
   end

   -- m distinct 0-based indices below n, in random order
   local function distinct(n, m)
      local pool = ffi.new('int32_t[?]', n)
      for i = 0, n - 1 do pool[i] = i end
      local idx = torch.IntTensor(m)
      local pi = ptr(idx, 'int32_t*')
      for j = 0, m - 1 do -- the first m steps of a Fisher-Yates shuffle
         local r = j + math.random(n - j) - 1
         pool[j], pool[r] = pool[r], pool[j]
         pi[j] = pool[j]
      end
      return idx
   end

   gpu_it('accumulate (momentum, Nesterov, weight decay) equals the CPU\'s', function()
      local n = 300001
      for _, case in ipairs({ { m = 0, wd = 0 }, { m = 0.9, wd = 1e-2 }, { m = 0.9, wd = 0, nesterov = true } }) do
         local v, g, p = randv(n), randv(n), randv(n)
         local u = case.m > 0 and randv(n) or nil
         local gv, gu = v:cuda(), u and u:cuda()
         local args = function(x, y, gg, pp)
            return x.h, y and y.h or nil, gg.h, case.wd > 0 and pp.h or nil, case.m, case.nesterov and 1 or 0, case.wd
         end
         T.check(D.mt_dist_rgc_accumulate(args(v, u, g, p)), 'accumulate')
         T.check(D.mt_dist_rgc_accumulate(args(gv, gu, g:cuda(), p:cuda())), 'accumulate')
         -- one float32 rounding per operation on both sides; fused multiply-adds may differ
         assert.is_true(util.maxdiff(gv:cpu(), v) <= 1e-5, 'v differs')
         if u then assert.is_true(util.maxdiff(gu:cpu(), u) <= 1e-5, 'u differs') end
      end
   end)

   gpu_it('1-bit encode and decode equal the CPU\'s (scales to rounding, bits and residuals exactly)', function()
      for _, case in ipairs({ { n = 1, chunk = 8 }, { n = 300001, chunk = 2048 }, { n = 100000, chunk = 64 } }) do
         local n, chunk = case.n, case.chunk
         local nb, nc = math.ceil(n / 8), math.ceil(n / chunk)
         local v, g = randv(n), randv(n)
         local gv = v:cuda()
         local bits, scales = torch.ByteTensor(nb), torch.FloatTensor(nc)
         local gbits, gscales = bits:cuda(), scales:cuda()
         T.check(D.mt_dist_onebit_encode(v.h, g.h, bits.h, scales.h, chunk), 'encode')
         T.check(D.mt_dist_onebit_encode(gv.h, g:cuda().h, gbits.h, gscales.h, chunk), 'encode')
         local what = ('onebit n %d chunk %d'):format(n, chunk)
         assert.equal(0, util.maxdiff(gbits:cpu(), bits), what .. ' bits')
         -- the scale's sum is float64 on both sides, in another order
         assert.is_true(util.maxdiff(gscales:cpu(), scales) <= 1e-6, what .. ' scales')
         assert.is_true(util.maxdiff(gv:cpu(), v) <= 1e-6, what .. ' residual')
         -- three blocks (ranks) of the CPU's code, decoded on both sides
         local b3, s3 = torch.ByteTensor(3 * nb):random(0, 255), torch.FloatTensor(3 * nc):uniform(0.1, 2)
         local out, gout = torch.FloatTensor(n), torch.FloatTensor(n):cuda()
         T.check(D.mt_dist_onebit_decode(out.h, b3.h, s3.h, chunk, 3, 1 / 3), 'decode')
         T.check(D.mt_dist_onebit_decode(gout.h, b3:cuda().h, s3:cuda().h, chunk, 3, 1 / 3), 'decode')
         assert.is_true(util.maxdiff(gout:cpu(), out) <= 1e-6, what .. ' decode')
      end
   end)

   gpu_it('mask clears v and u at the indices and offsets them, as on the CPU', function()
      for _, n in ipairs({ 1, 1000, 200000 }) do
         for _, with_u in ipairs({ true, false }) do
            local m = math.max(1, math.floor(n / 10))
            local v, u, idx = randv(n), with_u and randv(n) or nil, distinct(n, m)
            local count = math.max(1, m - 3) -- the tail of idx is left alone
            local gv, gu, gidx = v:cuda(), u and u:cuda(), idx:cuda()
            mask(v, u, idx, count, 12345)
            mask(gv, gu, gidx, count, 12345)
            local what = ('mask n %d%s'):format(n, with_u and ' with u' or '')
            assert_bits(gv:cpu(), v, what .. ' v')
            if u then assert_bits(gu:cpu(), u, what .. ' u') end
            assert_bits(gidx:cpu(), idx, what .. ' idx')
         end
      end
   end)

   gpu_it('mask: an index outside v is an error and changes nothing', function()
      local n = 1000
      local v, u, idx = randv(n), randv(n), distinct(n, 100)
      ptr(idx, 'int32_t*')[57] = n
      local gv, gu, gidx = v:cuda(), u:cuda(), idx:cuda()
      local ok, err = pcall(mask, gv, gu, gidx, 100, 0)
      assert(not ok, 'an out-of-range index was accepted')
      assert(tostring(err):find('outside', 1, true), 'unexpected message: ' .. tostring(err))
      assert_bits(gv:cpu(), v, 'v after a failed mask')
      assert_bits(gu:cpu(), u, 'u after a failed mask')
      assert_bits(gidx:cpu(), idx, 'idx after a failed mask')
   end)

   -- nblocks blocks of `block` pairs, each block's indices distinct (ranks repeat each other's),
   -- the last few of each block padding (-1)
   local function blocks(n, nblocks, block, ty)
      local idx = torch.IntTensor(nblocks * block)
      local pi = ptr(idx, 'int32_t*')
      for b = 0, nblocks - 1 do
         local one = distinct(n, block)
         local po = ptr(one, 'int32_t*')
         for j = 0, block - 1 do pi[b * block + j] = j >= block - 5 and -1 or po[j] end
      end
      local val = util.rand_tensor({ nblocks * block }, ty, -1, 1)
      return idx, val
   end

   gpu_it('scatter-add of float, half and bfloat16 blocks equals the CPU\'s', function()
      for _, ty in ipairs({ 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }) do
         for _, shape in ipairs({ { 1000, 4, 300 }, { 300000, 8, 20000 } }) do
            local n, nblocks, block = shape[1], shape[2], shape[3]
            local idx, val = blocks(n, nblocks, block, ty)
            local dst = randv(n)
            local gdst = dst:cuda()
            scatter(dst, idx, val, block, 0.25)
            scatter(gdst, idx:cuda(), val:cuda(), block, 0.25)
            util.assert_close(util.flat(gdst), util.flat(dst), { atol = 1e-6, rtol = 1e-6 },
               ('scatter-add %s n %d, %d blocks of %d'):format(ty, n, nblocks, block))
         end
      end
   end)

   gpu_it('scatter-add: an index outside dst is an error and changes nothing', function()
      local n, block = 1000, 50
      local idx, val = blocks(n, 3, block, 'torch.FloatTensor')
      ptr(idx, 'int32_t*')[block + 7] = n + 3
      local dst = randv(n)
      local gdst = dst:cuda()
      local ok, err = pcall(scatter, gdst, idx:cuda(), val:cuda(), block, 1)
      assert(not ok, 'an out-of-range index was accepted')
      local msg = tostring(err)
      assert(msg:find('outside', 1, true) and msg:find('block 1', 1, true), 'unexpected message: ' .. msg)
      assert_bits(gdst:cpu(), dst, 'dst after a failed scatter-add')
   end)
end)
