-- sort_spec.lua: sort and topk on fresh random data (with many ties), checked against a stable
-- reference sort done here in Lua.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local C = T.clib

local function shape_of(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

-- Random values from a small set (so there are ties) as a tensor of typename, with the exact
-- values it holds.
local function rand_ties(shape, tn, nvals)
   local flat = {}
   for i = 1, util.numel(shape) do flat[i] = math.random(0, (nvals or 5) - 1) - 2 end
   local dtype = T.parse_typename(tn)
   if tn == 'torch.ByteTensor' then
      for i = 1, #flat do flat[i] = flat[i] + 2 end
   elseif T.dtypes[dtype + 1].is_float then
      for i = 1, #flat do flat[i] = flat[i] + (math.random() < 0.5 and 0.25 or 0) end
   end
   local t = T.from_flat(flat, shape, dtype, T.CPU_DEVICE)
   return t, util.flat(t)
end

local function rand_distinct(shape, tn)
   local t = util.rand_tensor(shape, tn, -10, 10)
   return t, util.flat(t)
end

-- greater-than with NaN as the largest value
local function gt(a, b)
   if a ~= a then return b == b end
   if b ~= b then return false end
   return a > b
end

-- Stable order of a list: positions (1-based) sorted by value, equal values by position.
local function ref_order(line, desc)
   local pos = {}
   for i = 1, #line do pos[i] = i end
   table.sort(pos, function(i, j)
      local a, b = line[i], line[j]
      if desc then a, b = b, a end
      if gt(b, a) then return true end
      if gt(a, b) then return false end
      return i < j
   end)
   return pos
end

-- For each line along dim d of a row-major flat array: the reference order; returns the
-- expected (values, indices) flat arrays for the first m of each line, in the layout of the
-- result (dim d of size m).
local function ref_sorted(flat, shape, d, desc, m)
   local outer, n, inner = 1, shape[d], 1
   for i = 1, d - 1 do outer = outer * shape[i] end
   for i = d + 1, #shape do inner = inner * shape[i] end
   m = m or n
   local vals, idxs = {}, {}
   for o = 0, outer - 1 do
      for j = 0, inner - 1 do
         local line = {}
         for r = 0, n - 1 do line[r + 1] = flat[(o * n + r) * inner + j + 1] end
         local order = ref_order(line, desc)
         for r = 0, m - 1 do
            local at = (o * m + r) * inner + j + 1
            vals[at], idxs[at] = line[order[r + 1]], order[r + 1]
         end
      end
   end
   return vals, idxs
end

local EXACT = { atol = 0, rtol = 0 }
local TYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' }
local SHAPES = { { 1 }, { 9 }, { 4, 7 }, { 3, 5, 6 }, { 2, 3, 1, 5 } }

describe('sort', function()
   it('sorts along every dim, ascending and descending, stable among ties, every dtype', function()
      for _, tn in ipairs(TYPES) do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand_ties(shape, tn)
            for d = 1, #shape do
               for _, desc in ipairs { false, true } do
                  local v, i = t:sort(d, desc)
                  assert.are.equal(t:type(), v:type())
                  assert.are.equal('torch.LongTensor', i:type())
                  assert.are.same(shape, shape_of(v))
                  assert.are.same(shape, shape_of(i))
                  local ev, ei = ref_sorted(flat, shape, d, desc)
                  local what = ('%s %s dim %d desc %s'):format(tn, table.concat(shape, 'x'), d, tostring(desc))
                  util.assert_close(v, ev, EXACT, what .. ' values')
                  util.assert_close(i, ei, EXACT, what .. ' indices')
               end
            end
         end
      end
   end)

   it('defaults to the last dim, ascending; a boolean alone is the direction', function()
      local t, flat = rand_distinct({ 4, 6 }, 'torch.DoubleTensor')
      local v, i = t:sort()
      local ev, ei = ref_sorted(flat, { 4, 6 }, 2, false)
      util.assert_close(v, ev, EXACT)
      util.assert_close(i, ei, EXACT)
      v, i = t:sort(true)
      ev, ei = ref_sorted(flat, { 4, 6 }, 2, true)
      util.assert_close(v, ev, EXACT)
      util.assert_close(i, ei, EXACT)
      v, i = torch.sort(t, 1, true)
      ev, ei = ref_sorted(flat, { 4, 6 }, 1, true)
      util.assert_close(v, ev, EXACT)
      util.assert_close(i, ei, EXACT)
      i = select(2, t:sort(-2))
      ei = select(2, ref_sorted(flat, { 4, 6 }, 1, false))
      util.assert_close(i, ei, EXACT, 'negative dim counts from the end')
   end)

   it('indices reproduce the values from the input', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.IntTensor' } do
         local t, flat = rand_ties({ 6, 11 }, tn, 7)
         local v, i = t:sort(2, true)
         local vf, idf = util.flat(v), util.flat(i)
         for k = 1, #vf do
            local row = math.floor((k - 1) / 11)
            assert.are.equal(flat[row * 11 + idf[k]], vf[k])
            if (k - 1) % 11 > 0 then
               assert.is_true(vf[k - 1] >= vf[k])
               if vf[k - 1] == vf[k] then assert.is_true(idf[k - 1] < idf[k], 'stable') end
            end
         end
      end
   end)

   it('puts NaN last ascending and first descending, in order of position', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local n = 13
         local flat = {}
         for k = 1, n do flat[k] = math.random() < 0.3 and 0 / 0 or math.random(-3, 3) end
         flat[math.random(1, n)] = 0 / 0
         flat[math.random(1, n)] = -0.0
         local t = T.from_flat(flat, { n }, T.parse_typename(tn), T.CPU_DEVICE)
         for _, desc in ipairs { false, true } do
            local v, i = t:sort(1, desc)
            local ev, ei = ref_sorted(flat, { n }, 1, desc)
            util.assert_close(v, ev, EXACT, tn .. ' NaN values', true)
            util.assert_close(i, ei, EXACT, tn .. ' NaN indices')
            local vf = util.flat(v)
            if desc then assert.is_true(vf[1] ~= vf[1]) else assert.is_true(vf[n] ~= vf[n]) end
         end
      end
   end)

   it('handles non-contiguous inputs and results, and results given first', function()
      local base = rand_ties({ 5, 8, 3 }, 'torch.FloatTensor')
      local v = base:transpose(1, 3) -- 3x8x5
      local vflat = util.flat(v)
      for d = 1, 3 do
         local sv, si = v:sort(d)
         local ev, ei = ref_sorted(vflat, { 3, 8, 5 }, d, false)
         util.assert_close(sv, ev, EXACT)
         util.assert_close(si, ei, EXACT)
      end
      local nv = base:narrow(2, 3, 4)
      local nflat = util.flat(nv)
      local sv, si = nv:sort(2, true)
      local ev, ei = ref_sorted(nflat, { 5, 4, 3 }, 2, true)
      util.assert_close(sv, ev, EXACT)
      util.assert_close(si, ei, EXACT)
      -- results given first, one of them a transposed view of the right shape
      local rv = torch.FloatTensor(4, 5):t()
      local ri = torch.LongTensor()
      local t, flat = rand_distinct({ 5, 4 }, 'torch.FloatTensor')
      local a, b = torch.sort(rv, ri, t, 2)
      assert.is_true(rawequal(a, rv) and rawequal(b, ri))
      ev, ei = ref_sorted(flat, { 5, 4 }, 2, false)
      util.assert_close(rv, ev, EXACT)
      util.assert_close(ri, ei, EXACT)
      -- sorting into the input itself
      local u, uflat = rand_distinct({ 3, 7 }, 'torch.DoubleTensor')
      torch.sort(u, torch.LongTensor(), u, 2)
      util.assert_close(u, (ref_sorted(uflat, { 3, 7 }, 2, false)), EXACT)
   end)

   it('sorts long lines and many lines (parallel, merge sort)', function()
      for _, shape in ipairs { { 50001 }, { 300, 200 }, { 2000, 3 } } do
         local t, flat = rand_ties(shape, 'torch.DoubleTensor', 1000)
         local d = #shape
         local v, i = t:sort(d, true)
         local ev, ei = ref_sorted(flat, shape, d, true)
         util.assert_close(v, ev, EXACT, table.concat(shape, 'x'))
         util.assert_close(i, ei, EXACT, table.concat(shape, 'x'))
      end
      local t, flat = rand_ties({ 2000, 3 }, 'torch.LongTensor', 50)
      local v, i = t:sort(1)
      local ev, ei = ref_sorted(flat, { 2000, 3 }, 1, false)
      util.assert_close(v, ev, EXACT)
      util.assert_close(i, ei, EXACT)
   end)

   it('sorts long lines of every dtype with ties, NaN and -0 (radix path)', function()
      for _, tn in ipairs(TYPES) do
         local shape = { 2, 1500 }
         local dtype = T.parse_typename(tn)
         local isf = T.dtypes[dtype + 1].is_float
         local flat = {}
         for k = 1, 3000 do
            local x = math.random(0, 40)
            if isf then
               x = (x - 20) / 4
               if math.random() < 0.02 then x = 0 / 0 elseif x == 0 and math.random() < 0.5 then x = -0.0 end
            elseif tn ~= 'torch.ByteTensor' then
               x = x - 20
            end
            flat[k] = x
         end
         local t = T.from_flat(flat, shape, dtype, T.CPU_DEVICE)
         for _, desc in ipairs { false, true } do
            local v, i = t:sort(2, desc)
            local ev, ei = ref_sorted(flat, shape, 2, desc)
            util.assert_close(v, ev, EXACT, tn .. ' long values', true)
            util.assert_close(i, ei, EXACT, tn .. ' long indices')
            local tv, ti = t:topk(700, 2, desc)
            ev, ei = ref_sorted(flat, shape, 2, desc, 700)
            util.assert_close(tv, ev, EXACT, tn .. ' topk 700 values', true)
            util.assert_close(ti, ei, EXACT, tn .. ' topk 700 indices')
         end
      end
   end)

   it('sorts a 0-d tensor and an empty one', function()
      local s = util.rand_tensor({ 3 }, 'torch.DoubleTensor'):narrow(1, 2, 1):view(torch.LongStorage {})
      local v, i = s:sort()
      assert.are.equal(s:totable(), v:totable())
      assert.are.equal(1, i:totable())
      local e = torch.DoubleTensor(3, 0)
      v, i = e:sort(2)
      assert.are.same({ 3, 0 }, shape_of(v))
      assert.are.same({ 3, 0 }, shape_of(i))
   end)

   it('reports bad arguments', function()
      local t = util.rand_tensor({ 2, 3 }, 'torch.DoubleTensor')
      util.assert_error(function() return t:sort(3) end, 'sort', 'dimension 3', '2x3')
      util.assert_error(function() return torch.sort(torch.FloatTensor(), torch.LongTensor(), t) end, 'sort',
         'float32', 'float64')
      util.assert_error(function() return torch.sort(torch.DoubleTensor(), torch.IntTensor(), t) end, 'sort',
         'int32', 'int64')
      util.assert_error(function() return torch.sort(5) end, 'sort', 'tensor')
      local x = torch.LongTensor(3)
      assert.are.equal(C.MT_ERR_ARG, C.mt_sort(x.h, x.h, x.h, 0, 0, 1))
      assert.are.equal(C.MT_ERR_INDEX, C.mt_sort(torch.DoubleTensor().h, x.h, t.h, -1, 0, 1))
      assert.truthy(ffi.string(C.mt_last_error()):find('dimension 0 out of range', 1, true))
   end)

   util.gpu_it('CUDA sort matches the CPU', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.IntTensor' } do
         for _, shape in ipairs { { 9 }, { 4, 7 }, { 3, 5, 6 }, { 3000 } } do
            local t, flat = rand_ties(shape, tn)
            local g = T.convert(t, t:dtype(), 0)
            for d = 1, #shape do
               for _, desc in ipairs { false, true } do
                  local v, i = g:sort(d, desc)
                  local ev, ei = ref_sorted(flat, shape, d, desc)
                  util.assert_close(v, ev, EXACT)
                  util.assert_close(i, ei, EXACT)
               end
            end
            local v, i = g:topk(math.min(3, shape[#shape]), #shape, true)
            local ev, ei = ref_sorted(flat, shape, #shape, true, math.min(3, shape[#shape]))
            util.assert_close(v, ev, EXACT)
            util.assert_close(i, ei, EXACT)
         end
      end
   end)
end)

describe('topk', function()
   it('k smallest by default (Torch7), k largest with dir = true, sorted, several k', function()
      for _, tn in ipairs(TYPES) do
         for _, shape in ipairs { { 9 }, { 4, 7 }, { 3, 5, 6 } } do
            local t, flat = rand_ties(shape, tn)
            for d = 1, #shape do
               local n = shape[d]
               for _, k in ipairs { 1, 2, math.ceil(n / 2), n } do
                  for _, dir in ipairs { false, true } do
                     local v, i = t:topk(k, d, dir, true)
                     local rshape = {}
                     for q, s in ipairs(shape) do rshape[q] = q == d and k or s end
                     assert.are.same(rshape, shape_of(v))
                     assert.are.same(rshape, shape_of(i))
                     assert.are.equal(t:type(), v:type())
                     local ev, ei = ref_sorted(flat, shape, d, dir, k)
                     local what = ('%s k=%d dim %d dir %s'):format(tn, k, d, tostring(dir))
                     util.assert_close(v, ev, EXACT, what)
                     util.assert_close(i, ei, EXACT, what)
                  end
               end
            end
         end
      end
   end)

   it('without sort returns the same set of values and positions', function()
      local t, flat = rand_ties({ 6, 40 }, 'torch.DoubleTensor', 9)
      for _, k in ipairs { 3, 17 } do
         local v, i = t:topk(k, 2, true, false)
         local _, ei = ref_sorted(flat, { 6, 40 }, 2, true, k)
         local vf, idf = util.flat(v), util.flat(i)
         for row = 0, 5 do
            local got, want = {}, {}
            for c = 1, k do
               got[#got + 1] = idf[row * k + c]
               want[#want + 1] = ei[row * k + c]
               assert.are.equal(flat[row * 40 + idf[row * k + c]], vf[row * k + c])
            end
            table.sort(got)
            table.sort(want)
            assert.are.same(want, got)
         end
      end
   end)

   it('selects from long lines with a small k (heap) and a large k (sort)', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.LongTensor' } do
         local shape = { 3, 5000 }
         local t, flat = rand_ties(shape, tn, 200)
         for _, k in ipairs { 1, 5, 60, 1000, 5000 } do
            for _, dir in ipairs { false, true } do
               local v, i = t:topk(k, 2, dir)
               local ev, ei = ref_sorted(flat, shape, 2, dir, k)
               util.assert_close(v, ev, EXACT, tn .. ' k ' .. k)
               util.assert_close(i, ei, EXACT, tn .. ' k ' .. k)
            end
         end
      end
      -- NaN counts as the largest value
      local flat = { 3, 0 / 0, 1, 7, 0 / 0, 2 }
      local t = T.from_flat(flat, { 6 }, T.DOUBLE, T.CPU_DEVICE)
      local _, i = t:topk(3, 1, true)
      util.assert_close(i, { 2, 5, 4 }, EXACT)
      local v
      v, i = t:topk(2)
      util.assert_close(v, { 1, 2 }, EXACT)
      util.assert_close(i, { 3, 6 }, EXACT)
   end)

   it('torch.topk with result tensors first and non-contiguous input', function()
      local base = rand_distinct({ 7, 9 }, 'torch.DoubleTensor')
      local x = base:t() -- 9x7
      local xflat = util.flat(x)
      local rv, ri = torch.DoubleTensor(), torch.LongTensor()
      local a, b = torch.topk(rv, ri, x, 3, 1, true, true)
      assert.is_true(rawequal(a, rv) and rawequal(b, ri))
      local ev, ei = ref_sorted(xflat, { 9, 7 }, 1, true, 3)
      util.assert_close(rv, ev, EXACT)
      util.assert_close(ri, ei, EXACT)
      -- a boolean in the dim position is the direction; dim defaults to the last
      local v, i = x:topk(2, true)
      ev, ei = ref_sorted(xflat, { 9, 7 }, 2, true, 2)
      util.assert_close(v, ev, EXACT)
      util.assert_close(i, ei, EXACT)
      v = torch.topk(x, 4)
      util.assert_close(v, (ref_sorted(xflat, { 9, 7 }, 2, false, 4)), EXACT)
   end)

   it('reports k out of range and bad dims', function()
      local t = util.rand_tensor({ 3, 5 }, 'torch.DoubleTensor')
      util.assert_error(function() return t:topk(6) end, 'topk', 'k = 6', 'size 5', '3x5')
      util.assert_error(function() return t:topk(4, 1) end, 'topk', 'k = 4', 'dimension 1', 'size 3')
      util.assert_error(function() return t:topk(-1) end, 'topk', 'k = -1')
      util.assert_error(function() return t:topk(2, 3) end, 'topk', 'dimension 3', '3x5')
      util.assert_error(function() return t:topk(1.5) end, 'topk', 'integer')
      local v, i = t:topk(0)
      assert.are.same({ 3, 0 }, shape_of(v))
      assert.are.same({ 3, 0 }, shape_of(i))
   end)
end)
