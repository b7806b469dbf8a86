-- topk_spec.lua: the selection step of residual gradient compression
-- (moontorch.dist.topk, csrc/cpu/dist_topk.c). References are built in Lua from the same float32
-- values: a full sort of |v| with ties to the lower index. Inputs are fresh random numbers each
-- run (spec/util.lua prints the seed), never zero.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'

describe('dist.topk', function()
   local topk = require 'moontorch.dist.topk'
   local T = require 'moontorch.internal'
   local C = T.clib
   local D = require('moontorch.dist.lib').C

   local function ptr(t, ct) return ffi.cast(ct or 'float*', C.mt_tensor_data(t.h)) end

   -- n nonzero float32 values: random sign times a magnitude in [1e-3, 1)
   local function randv(n)
      local v = torch.FloatTensor(n)
      local p = ptr(v)
      for i = 0, n - 1 do
         p[i] = (math.random() < 0.5 and -1 or 1) * (1e-3 + (1 - 1e-3) * math.random())
      end
      return v
   end

   local function kof(n, d) return math.max(1, math.ceil(d * n)) end

   -- the top k of v (1-based indices, ascending) by a full sort; ties to the lower index
   local function reference(v, k)
      local n, p = v:nElement(), ptr(v)
      local order = {}
      for i = 1, n do order[i] = i end
      table.sort(order, function(a, b)
         local x, y = math.abs(p[a - 1]), math.abs(p[b - 1])
         if x ~= y then return x > y end
         return a < b
      end)
      local top = {}
      for i = 1, k do top[i] = order[i] end
      table.sort(top)
      return top, math.abs(p[order[k] - 1])
   end

   local function flat(t) return t:nElement() == 0 and {} or util.flat(t) end

   local function assert_ascending(idx)
      local ii = flat(idx)
      for j = 2, #ii do assert(ii[j] > ii[j - 1], 'indices not ascending at ' .. j) end
   end

   -- idx/val scattered into zeros, plus v with the selected entries zeroed, is v bit for bit
   local function assert_invariant(v, idx, val)
      local n, p = v:nElement(), ptr(v)
      local back, rest = torch.FloatTensor(n):zero(), v:clone()
      local pb, pr = ptr(back), ptr(rest)
      local ii, vv = flat(idx), flat(val)
      for j = 1, #ii do
         assert(ii[j] >= 1 and ii[j] <= n, 'index out of range')
         pb[ii[j] - 1] = vv[j]
         pr[ii[j] - 1] = 0
      end
      for i = 0, n - 1 do
         local s = ffi.new('float[1]', pb[i] + pr[i])
         assert(s[0] == p[i], ('element %d: %.9g + %.9g ~= %.9g'):format(i + 1, pb[i], pr[i], p[i]))
      end
   end

   local sizes = { 1, 2, 17, 1000, 100000 }
   local densities = { 0.001, 0.01, 0.25, 1.0 }

   it('exact equals a full sort\'s top k', function()
      for _, n in ipairs(sizes) do
         local v = randv(n)
         for _, d in ipairs(densities) do
            local k = kof(n, d)
            local idx, val = topk(v, d, { method = 'exact' })
            local ref = reference(v, k)
            assert.equal(k, idx:nElement())
            assert.same(ref, flat(idx))
            local p, vv = ptr(v), flat(val)
            for j, i in ipairs(ref) do assert.equal(p[i - 1], vv[j]) end
            assert_invariant(v, idx, val)
         end
      end
   end)

   -- threshold's contract: k..kmax elements, ascending, every unselected |v| below every selected
   local function assert_range(v, d, slack, idx, val, what)
      local n = v:nElement()
      local k = kof(n, d)
      local kmax = math.min(n, math.floor(k * (1 + slack)))
      local c = idx:nElement()
      assert(c >= k and c <= kmax, ('%s n %d d %g: %d selected, expected %d..%d'):format(what, n, d, c, k, kmax))
      assert_ascending(idx)
      local sel, lo = {}, math.huge
      for _, x in ipairs(flat(val)) do lo = math.min(lo, math.abs(x)) end
      for _, i in ipairs(flat(idx)) do sel[i] = true end
      local p = ptr(v)
      for i = 1, n do
         if not sel[i] then
            assert(math.abs(p[i - 1]) < lo,
               ('%s: unselected %d has |v| %.9g >= threshold %.9g'):format(what, i, math.abs(p[i - 1]), lo))
         end
      end
      assert_invariant(v, idx, val)
      return c
   end

   it('threshold and sampled return k to floor(k*(1+slack)) elements, all above the rest', function()
      for _, m in ipairs({ 'threshold', 'sampled' }) do
         for _, n in ipairs(sizes) do
            local v = randv(n)
            for _, d in ipairs(densities) do
               for _, slack in ipairs({ 0.2, 0.05 }) do
                  local idx, val = topk(v, d, { method = m, slack = slack })
                  assert_range(v, d, slack, idx, val, m)
               end
            end
         end
      end
   end)

   it('sampled answers from its one gathering pass on long vectors', function()
      -- long enough for the sample (256 hits in about n / 8): the count then lands between k
      -- and kmax, almost never on k itself, which is what exact (its fallback) would return
      local n, d, past = 300007, 0.01, 0
      for _ = 1, 3 do
         local v = randv(n)
         local idx, val = topk(v, d, { method = 'sampled', slack = 0.2 })
         if assert_range(v, d, 0.2, idx, val, 'sampled') > kof(n, d) then past = past + 1 end
      end
      assert.is_true(past >= 1, 'every draw returned exactly k: the gathering pass never answered')
   end)

   it('trimmed returns exactly exact\'s k elements', function()
      for _, n in ipairs(sizes) do
         local v = randv(n)
         for _, d in ipairs(densities) do
            local ei, ev = topk(v, d, { method = 'exact' })
            local ti, tv = topk(v, d, { method = 'trimmed' })
            assert.equal(kof(n, d), ti:nElement())
            assert.same(flat(ei), flat(ti))
            assert.same(flat(ev), flat(tv))
            assert_invariant(v, ti, tv)
         end
      end
   end)

   it('ties: exact takes the lower indices, threshold trims to k when ties overflow', function()
      local v = torch.FloatTensor(100):fill(0.5)
      ptr(v)[70] = -2
      local idx = topk(v, 0.05, { method = 'exact' })
      assert.same({ 1, 2, 3, 4, 71 }, flat(idx))
      local ti = topk(v, 0.05, { method = 'threshold' })
      assert.same({ 1, 2, 3, 4, 71 }, flat(ti))
      local tr = topk(v, 0.05, { method = 'trimmed' })
      assert.same({ 1, 2, 3, 4, 71 }, flat(tr))
      assert.same({ 1, 2, 3, 4, 71 }, flat((topk(v, 0.05, { method = 'sampled' }))))
      -- long: the sample's keys all tie, no threshold reaches k..kmax, and exact's k comes back
      local long = torch.FloatTensor(3000000):fill(0.5)
      ptr(long)[123456] = 3
      local want = {}
      for i = 1, 2999 do want[i] = i end
      want[3000] = 123457
      assert.same(want, flat((topk(long, 0.001, { method = 'sampled' }))))
   end)

   it('gives the same result on 1 and 2 OpenMP threads', function()
      local saved = torch.getnumthreads()
      for _, n in ipairs({ 100000, 1000003 }) do
         local v = randv(n)
         for _, m in ipairs({ 'exact', 'threshold', 'trimmed', 'sampled' }) do
            local out = {}
            for _, nt in ipairs({ 1, 2 }) do
               torch.setnumthreads(nt)
               local idx, val = topk(v, 0.01, { method = m })
               out[nt] = { flat(idx), flat(val) }
            end
            assert.same(out[1], out[2])
            if m == 'exact' or m == 'trimmed' then -- the k largest, ties to the lower index, checked in one pass
               local k, sel, lo = kof(n, 0.01), {}, math.huge
               assert.equal(k, #out[1][1])
               for j, i in ipairs(out[1][1]) do
                  sel[i] = true
                  lo = math.min(lo, math.abs(out[1][2][j]))
               end
               local p, lastTie = ptr(v), 0
               for i = 1, n do
                  local a = math.abs(p[i - 1])
                  if sel[i] then
                     if a == lo then assert(lastTie == 0, 'a tie above a skipped lower index') end
                  else
                     assert(a <= lo, ('unselected %d has |v| %.9g > %.9g'):format(i, a, lo))
                     if a == lo then lastTie = i end
                  end
               end
            end
         end
      end
      torch.setnumthreads(saved)
   end)

   it('selects NaN and inf (the largest magnitudes), never hides them', function()
      for _, n in ipairs({ 17, 100000 }) do
         local v = randv(n)
         local inan = math.random(1, n)
         local iinf
         repeat iinf = math.random(1, n) until iinf ~= inan
         ptr(v)[inan - 1] = 0 / 0
         ptr(v)[iinf - 1] = -math.huge
         local d = n < 1000 and 0.1 or 0.001 -- k >= 2: room for both
         for _, m in ipairs({ 'exact', 'threshold', 'trimmed', 'sampled' }) do
            local idx, val = topk(v, d, { method = m })
            local has = {}
            for j, i in ipairs(flat(idx)) do has[i] = flat(val)[j] end
            assert(has[inan] and has[inan] ~= has[inan], m .. ': NaN not selected')
            assert(has[iinf] == -math.huge, m .. ': -inf not selected')
         end
      end
   end)

   it('names the problem with bad inputs', function()
      local v = randv(100)
      local function err(pat, ...)
         local ok, msg = pcall(topk, ...)
         assert.is_false(ok)
         assert(tostring(msg):match(pat), ('expected /%s/, got: %s'):format(pat, tostring(msg)))
      end
      err('float32', torch.DoubleTensor(10):fill(1), 0.1)
      err('density', v, 0)
      err('density', v, 1.5)
      err('density', v, 0 / 0)
      err('unknown method', v, 0.1, { method = 'sorted' })
      err('slack', v, 0.1, { method = 'threshold', slack = -1 })
      err("unknown option 'methd' %(method, slack%)", v, 0.1, { methd = 'threshold' })
      err('contiguous', torch.FloatTensor(10, 10):fill(1):t(), 0.1)
      err('expected a tensor', 'v', 0.1)
      -- cap too small, straight at the C entry point
      local count = ffi.new('int64_t[1]')
      local i4, v4 = torch.IntTensor(4), torch.FloatTensor(4)
      assert.equal(C.MT_ERR_SHAPE, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_EXACT, 0.2, i4.h, v4.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('hold 4 elements, the exact method may return 5'))
      local i5, v5 = torch.IntTensor(5), torch.FloatTensor(5)
      assert.equal(0, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_EXACT, 0.2, i5.h, v5.h, count))
      assert.equal(C.MT_ERR_SHAPE, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_THRESHOLD, 0.2, i5.h, v5.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('threshold method may return 6'))
      assert.equal(C.MT_ERR_SHAPE, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_SAMPLED, 0.2, i5.h, v5.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('sampled method may return 6'))
      assert.equal(C.MT_ERR_ARG, D.mt_dist_topk(v.h, 0.05, 4, 0.2, i5.h, v5.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('unknown method 4'))
      assert.equal(C.MT_ERR_SHAPE, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_EXACT, 0.2, i5.h, v4.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('same number of elements'))
      assert.equal(C.MT_ERR_DTYPE, D.mt_dist_topk(v.h, 0.05, C.MT_TOPK_EXACT, 0.2, v5.h, v5.h, count))
      assert.truthy(ffi.string(C.mt_last_error()):match('idx must be a int32'))
   end)
end)
