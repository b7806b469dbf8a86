-- reduce_spec.lua: sum, prod, mean, var, std, norm, max, min, argmax, argmin, any, all, on
-- fresh random inputs against float64 references computed here in plain Lua.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local C = T.clib

local FLOATS = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }
local SHAPES = { { 7 }, { 1 }, { 3, 5 }, { 1, 4 }, { 4, 3, 5 }, { 2, 3, 1, 5 }, { 3, 2, 4, 3 } }
local EXACT = { atol = 0, rtol = 0 }

-- A random tensor and the exact values it holds (float32 rounds the drawn doubles).
local function rand(shape, tn, lo, hi)
   local t, flat = util.rand_tensor(shape, tn, lo, hi)
   if tn == 'torch.FloatTensor' then flat = util.flat(t) end
   return t, flat
end

---------------------------------------------------------------------------------------------
-- references

-- Reduce a row-major flat array of `shape` along dim d (1-based; nil: everything) with
-- fn(list) -> value[, index]. Results come in the row-major order of the keepdim shape.
local function ref_reduce(flat, shape, d, fn)
   if d == nil then
      local v, i = fn(flat)
      return { v }, { i }
   end
   local outer, n, inner = 1, shape[d], 1
   for i = 1, d - 1 do outer = outer * shape[i] end
   for i = d + 1, #shape do inner = inner * shape[i] end
   local vals, idxs = {}, {}
   for o = 0, outer - 1 do
      for j = 0, inner - 1 do
         local line = {}
         for r = 0, n - 1 do line[r + 1] = flat[(o * n + r) * inner + j + 1] end
         local v, i = fn(line)
         vals[#vals + 1], idxs[#idxs + 1] = v, i
      end
   end
   return vals, idxs
end

local function keep_shape(shape, d)
   local s = {}
   for i, v in ipairs(shape) do s[i] = (i == d) and 1 or v end
   return s
end

local R = {}
function R.sum(l)
   local s = 0
   for _, x in ipairs(l) do s = s + x end
   return s
end
function R.prod(l)
   local s = 1
   for _, x in ipairs(l) do s = s * x end
   return s
end
function R.mean(l) return R.sum(l) / #l end
local function variance(l, biased)
   local m, s = R.mean(l), 0
   for _, x in ipairs(l) do s = s + (x - m) ^ 2 end
   return s / (#l - (biased and 0 or 1))
end
-- first position of the largest (or smallest) value; a NaN wins, the first NaN
local function extreme(l, larger)
   local b, bi = l[1], 1
   for i = 2, #l do
      local x = l[i]
      if b == b and (x ~= x or (larger and x > b) or (not larger and x < b)) then b, bi = x, i end
   end
   return b, bi
end
function R.max(l) return extreme(l, true) end
function R.min(l) return extreme(l, false) end
local function pnorm(l, p)
   local s = 0
   if p == math.huge then
      for _, x in ipairs(l) do s = math.max(s, math.abs(x)) end
      return s
   end
   for _, x in ipairs(l) do
      if p == 0 then s = s + (x ~= 0 and 1 or 0) else s = s + math.abs(x) ^ p end
   end
   if p == 0 then return s end
   return s ^ (1 / p)
end

local function shape_of(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

local function assert_shape(t, shape, what)
   assert.are.same(shape, shape_of(t), what)
end

-- flat reference values of a view v of a contiguous base tensor whose values are bflat
local function view_flat(bflat, v)
   local sizes, strides, out = shape_of(v), {}, {}
   for i = 1, #sizes do strides[i] = v:stride(i) end
   local off = v:storageOffset() - 1
   util.each_index(sizes, function(idx)
      local pos = off
      for d = 1, #sizes do pos = pos + (idx[d] - 1) * strides[d] end
      out[#out + 1] = bflat[pos + 1]
   end)
   return out
end

-- set element `pos` (1-based, row-major) of a contiguous CPU tensor
local idxbuf = ffi.new('int64_t[8]')
local function set_flat(t, pos, v)
   local rem = pos - 1
   for d = t:dim(), 1, -1 do
      idxbuf[d - 1] = rem % t:size(d)
      rem = math.floor(rem / t:size(d))
   end
   assert(C.mt_tensor_set_item(t.h, idxbuf, v) == 0)
end

local function tol_for(tn, scale)
   local t = util.tol[tn] or EXACT
   scale = scale or 1
   return { atol = t.atol * scale, rtol = t.rtol * scale }
end

-- check t:op(dim) for every dim and t:op() against the reference fn
local function check_all_dims(t, flat, tn, name, fn, tol, ...)
   local shape = shape_of(t)
   for d = 1, #shape do
      local r = t[name](t, d, ...)
      assert_shape(r, keep_shape(shape, d), name .. ' dim ' .. d)
      assert.are.equal(t:type(), r:type())
      local expect = ref_reduce(flat, shape, d, fn)
      util.assert_close(r, expect, tol, ('%s %s dim %d of %s'):format(tn, name, d, table.concat(shape, 'x')))
   end
   local v = t[name](t, nil, ...)
   assert.are.equal('number', type(v))
   util.assert_close({ v }, { fn(flat) }, tol, ('%s %s of all %s'):format(tn, name, table.concat(shape, 'x')))
end

---------------------------------------------------------------------------------------------

describe('reductions', function()
   it('sum and mean over every dim and over all, 1-d to 4-d, every float dtype', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand(shape, tn)
            check_all_dims(t, flat, tn, 'sum', R.sum, tol_for(tn))
            check_all_dims(t, flat, tn, 'mean', R.mean, tol_for(tn))
         end
      end
   end)

   it('prod over every dim and over all', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand(shape, tn, 0.5, 1.5)
            check_all_dims(t, flat, tn, 'prod', R.prod, tol_for(tn))
         end
      end
   end)

   it('var and std, unbiased by default and biased with the flag', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 4, 3, 5 }, { 3, 2, 4, 3 } } do
            local t, flat = rand(shape, tn, -2, 3)
            local tol = tol_for(tn, 4)
            check_all_dims(t, flat, tn, 'var', function(l) return variance(l) end, tol)
            check_all_dims(t, flat, tn, 'std', function(l) return math.sqrt(variance(l)) end, tol)
            check_all_dims(t, flat, tn, 'var', function(l) return variance(l, true) end, tol, true)
            check_all_dims(t, flat, tn, 'std', function(l) return math.sqrt(variance(l, true)) end, tol, true)
            util.assert_close({ t:var(true) }, { variance(flat, true) }, tol, 'var(true)')
            util.assert_close(torch.std(t, 1, true), ref_reduce(flat, shape, 1, function(l)
               return math.sqrt(variance(l, true))
            end), tol, 'torch.std(t, 1, true)')
         end
      end
   end)

   it('var is accurate for data with a large mean (two-pass, double accumulation)', function()
      local n = 5000
      local t, flat = rand({ n }, 'torch.FloatTensor', 1e4, 1e4 + 1)
      util.assert_close({ t:var() }, { variance(flat) }, { atol = 0, rtol = 1e-5 }, 'float var with mean 1e4')
   end)

   it('norm for p = 0, 1, 2, 3, 0.5 and inf, over all and along each dim', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 4, 3, 5 }, { 2, 3, 1, 5 } } do
            local t, flat = rand(shape, tn, -2, 2)
            -- a few exact zeros so p = 0 counts something other than numel
            for _, p in ipairs { 0, 1, 2, 3, 0.5, math.huge } do
               local tol = tol_for(tn, 2)
               local fn = function(l) return pnorm(l, p) end
               util.assert_close({ t:norm(p) }, { fn(flat) }, tol, tn .. ' norm ' .. p)
               for d = 1, #shape do
                  local r = t:norm(p, d)
                  assert_shape(r, keep_shape(shape, d))
                  util.assert_close(r, ref_reduce(flat, shape, d, fn), tol, ('%s norm %g dim %d'):format(tn, p, d))
               end
            end
            util.assert_close({ t:norm() }, { pnorm(flat, 2) }, tol_for(tn), 'default p = 2')
         end
      end
      local z = torch.DoubleTensor { 0, 3, 0, -4, 0 }
      assert.are.equal(2, z:norm(0))
      assert.are.equal(4, z:norm(math.huge))
   end)

   it('max and min give values and 1-based indices of the first extreme', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand(shape, tn)
            for _, name in ipairs { 'max', 'min' } do
               assert.are.equal(R[name](flat), t[name](t))
               for d = 1, #shape do
                  local v, i = t[name](t, d)
                  local ev, ei = ref_reduce(flat, shape, d, R[name])
                  assert_shape(v, keep_shape(shape, d))
                  assert_shape(i, keep_shape(shape, d))
                  assert.are.equal('torch.LongTensor', i:type())
                  assert.are.equal(t:type(), v:type())
                  util.assert_close(v, ev, EXACT, tn .. ' ' .. name .. ' values')
                  util.assert_close(i, ei, EXACT, tn .. ' ' .. name .. ' indices')
                  -- torch.max(resval, resind, t, dim) fills the given results
                  local rv, ri = torch.DoubleTensor(), torch.LongTensor()
                  if tn ~= 'torch.DoubleTensor' then rv = T.empty_tensor(t:dtype(), -1) end
                  local v2, i2 = torch[name](rv, ri, t, d)
                  assert.is_true(rawequal(rv, v2) and rawequal(ri, i2))
                  util.assert_close(rv, ev, EXACT)
                  util.assert_close(ri, ei, EXACT)
               end
            end
         end
      end
   end)

   it('argmax and argmin: flat 1-based index without a dim, LongTensor with one', function()
      for _, tn in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand(shape, tn)
            local _, ia = R.max(flat)
            local _, ib = R.min(flat)
            assert.are.equal(ia, t:argmax())
            assert.are.equal(ib, torch.argmin(t))
            for d = 1, #shape do
               local r = t:argmax(d)
               assert.are.equal('torch.LongTensor', r:type())
               assert_shape(r, keep_shape(shape, d))
               local _, ei = ref_reduce(flat, shape, d, R.max)
               util.assert_close(r, ei, EXACT, 'argmax dim ' .. d)
               local _, ej = ref_reduce(flat, shape, d, R.min)
               util.assert_close(torch.argmin(t, d), ej, EXACT, 'argmin dim ' .. d)
            end
         end
      end
   end)

   it('ties report the first position (values from a small set)', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.IntTensor', 'torch.HalfTensor' } do
         local shape = { 5, 9, 4 }
         local flat = {}
         for k = 1, util.numel(shape) do flat[k] = math.random(0, 2) end
         local t = T.from_flat(flat, shape, T.parse_typename(tn), T.CPU_DEVICE)
         for d = 1, 3 do
            for _, name in ipairs { 'max', 'min' } do
               local _, i = t[name](t, d)
               local _, ei = ref_reduce(flat, shape, d, R[name])
               util.assert_close(i, ei, EXACT, tn .. ' ' .. name .. ' ties dim ' .. d)
            end
         end
      end
   end)

   it('integer dtypes: sum, prod, max, min exactly, keeping the dtype', function()
      for _, tn in ipairs { 'torch.IntTensor', 'torch.LongTensor' } do
         for _, shape in ipairs(SHAPES) do
            local t, flat = rand(shape, tn, -50, 50)
            check_all_dims(t, flat, tn, 'sum', R.sum, EXACT)
            check_all_dims(t, flat, tn, 'max', function(l) return (R.max(l)) end, EXACT)
            check_all_dims(t, flat, tn, 'min', function(l) return (R.min(l)) end, EXACT)
            local s, sflat = rand(shape, tn, -3, 4) -- small factors: no overflow
            for d = 1, #shape do
               util.assert_close(s:prod(d), ref_reduce(sflat, shape, d, R.prod), EXACT, tn .. ' prod dim ' .. d)
            end
            for d = 1, #shape do
               local v, i = t:max(d)
               local ev, ei = ref_reduce(flat, shape, d, R.max)
               util.assert_close(v, ev, EXACT)
               util.assert_close(i, ei, EXACT)
            end
         end
      end
      -- int64 sums stay exact beyond 2^53
      local big = torch.LongTensor { 2 ^ 53, 1, 1, 1 }
      local s = big:sum(1)
      local p = ffi.cast('int64_t*', C.mt_tensor_data(s.h))
      assert.is_true(p[0] == 2 ^ 53 + 3LL)
   end)

   it('ByteTensor sums wrap modulo 256 like the byte type they keep', function()
      local shape = { 6, 40 }
      local t, flat = rand(shape, 'torch.ByteTensor', 0, 256)
      for d = 1, 2 do
         local r = t:sum(d)
         assert.are.equal('torch.ByteTensor', r:type())
         util.assert_close(r, ref_reduce(flat, shape, d, function(l) return R.sum(l) % 256 end), EXACT)
         local v = t:max(d)
         util.assert_close(v, ref_reduce(flat, shape, d, function(l) return (R.max(l)) end), EXACT)
      end
   end)

   it('any and all on ByteTensors: booleans without a dim, ByteTensors with one', function()
      for _, shape in ipairs { { 9 }, { 4, 7 }, { 3, 5, 6 } } do
         for _, pone in ipairs { 0.03, 0.5, 0.97 } do
            local flat = {}
            for i = 1, util.numel(shape) do flat[i] = math.random() < pone and 1 or 0 end
            local t = T.from_flat(flat, shape, T.BYTE, T.CPU_DEVICE)
            local any = function(l)
               for _, x in ipairs(l) do if x ~= 0 then return 1 end end
               return 0
            end
            local all = function(l)
               for _, x in ipairs(l) do if x == 0 then return 0 end end
               return 1
            end
            assert.are.equal(any(flat) == 1, t:any())
            assert.are.equal(all(flat) == 1, t:all())
            for d = 1, #shape do
               local r = t:any(d)
               assert.are.equal('torch.ByteTensor', r:type())
               util.assert_close(r, ref_reduce(flat, shape, d, any), EXACT)
               util.assert_close(torch.all(t, d), ref_reduce(flat, shape, d, all), EXACT)
            end
         end
      end
      local allones = T.from_flat({ 1, 1, 1, 1, 1 }, { 5 }, T.BYTE, T.CPU_DEVICE)
      assert.is_true(allones:all())
      assert.is_false(T.from_flat({ 0, 0, 0 }, { 3 }, T.BYTE, T.CPU_DEVICE):any())
   end)

   it('non-contiguous inputs: transposed, narrowed, expanded and permuted', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.IntTensor' } do
         local base, bflat = rand({ 6, 5, 7 }, tn, -3, 3)
         local small, sflat = rand({ 1, 5, 1 }, tn, -3, 3)
         local views = {
            base:transpose(1, 3),
            base:narrow(2, 2, 3),
            base:narrow(3, 2, 4):transpose(1, 2),
            base:permute(2, 3, 1),
            base:select(2, 3),
         }
         local expanded = small:expand(4, 5, 3)
         local vflats = {}
         for k, v in ipairs(views) do vflats[k] = view_flat(bflat, v) end
         views[#views + 1] = expanded
         vflats[#vflats + 1] = view_flat(sflat, expanded)
         local isf = T.dtypes[base:dtype() + 1].is_float
         for k, v in ipairs(views) do
            local shape, flat = shape_of(v), vflats[k]
            local tol = isf and tol_for(tn, 2) or EXACT
            for d = 1, #shape do
               util.assert_close(v:sum(d), ref_reduce(flat, shape, d, R.sum), tol, ('view %d sum dim %d'):format(k, d))
               local mv, mi = v:max(d)
               local ev, ei = ref_reduce(flat, shape, d, R.max)
               util.assert_close(mv, ev, EXACT, ('view %d max dim %d'):format(k, d))
               util.assert_close(mi, ei, EXACT, ('view %d max index dim %d'):format(k, d))
               local _, ej = ref_reduce(flat, shape, d, R.min)
               util.assert_close(v:argmin(d), ej, EXACT, ('view %d argmin dim %d'):format(k, d))
               if isf then
                  util.assert_close(v:var(d), ref_reduce(flat, shape, d, variance), tol_for(tn, 4))
               end
            end
            util.assert_close({ v:sum() }, { R.sum(flat) }, tol, 'view ' .. k .. ' sum all')
            local _, ia = R.max(flat)
            assert.are.equal(ia, v:argmax(), 'view ' .. k .. ' flat argmax in logical order')
            local _, ib = R.min(flat)
            assert.are.equal(ib, v:argmin(), 'view ' .. k .. ' flat argmin')
         end
      end
   end)

   it('large inputs through the blocked and parallel paths', function()
      local cases = {
         { { 140001 }, nil }, { { 2, 140001 }, 2 }, { { 140001, 3 }, 1 }, { { 300, 701 }, 1 }, { { 300, 701 }, 2 },
         { { 7, 3001, 5 }, 2 }, { { 5000, 3 }, 2 }, { { 3, 9000 }, 1 }, { { 100, 3000 }, 1 }, { { 2, 50, 2500 }, 2 },
      }
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.LongTensor' } do
         local isf = tn ~= 'torch.LongTensor'
         for _, case in ipairs(cases) do
            local shape, d = case[1], case[2]
            local t, flat = rand(shape, tn, -100, 100)
            local what = ('%s %s dim %s'):format(tn, table.concat(shape, 'x'), tostring(d))
            local tol = isf and tol_for(tn, 10) or EXACT
            if d then
               util.assert_close(t:sum(d), ref_reduce(flat, shape, d, R.sum), tol, what .. ' sum')
               local v, i = t:max(d)
               local ev, ei = ref_reduce(flat, shape, d, R.max)
               util.assert_close(v, ev, EXACT, what .. ' max')
               util.assert_close(i, ei, EXACT, what .. ' max index')
               local _, ej = ref_reduce(flat, shape, d, R.min)
               util.assert_close(t:argmin(d), ej, EXACT, what .. ' argmin')
               if isf then
                  util.assert_close(t:var(d), ref_reduce(flat, shape, d, variance), tol, what .. ' var')
                  util.assert_close(t:norm(1, d), ref_reduce(flat, shape, d, function(l) return pnorm(l, 1) end), tol)
                  util.assert_close(t:norm(math.huge, d), ref_reduce(flat, shape, d, function(l)
                     return pnorm(l, math.huge)
                  end), EXACT)
               end
            else
               util.assert_close({ t:sum() }, { R.sum(flat) }, tol, what .. ' sum')
               assert.are.equal((R.max(flat)), t:max())
               local _, ia = R.max(flat)
               assert.are.equal(ia, t:argmax())
               if isf then
                  util.assert_close({ t:std() }, { math.sqrt(variance(flat)) }, tol, what .. ' std')
                  util.assert_close({ t:mean() }, { R.mean(flat) }, tol, what .. ' mean')
               end
            end
         end
      end
   end)

   it('results do not depend on the thread count', function()
      local t = rand({ 300001 }, 'torch.DoubleTensor')
      local m = rand({ 2, 200001 }, 'torch.FloatTensor')
      local before = torch.getnumthreads()
      local a1, b1 = t:sum(), m:sum(2):totable()
      torch.setnumthreads(1)
      local a2, b2 = t:sum(), m:sum(2):totable()
      torch.setnumthreads(before)
      assert.are.equal(a1, a2)
      assert.are.same(b1, b2)
   end)

   it('keepdim = 0 through the C API drops the reduced dimension', function()
      local t, flat = rand({ 4, 3, 5 }, 'torch.DoubleTensor')
      for d = 1, 3 do
         local out, ind = torch.DoubleTensor(), torch.LongTensor()
         assert.are.equal(0, C.mt_reduce(C.MT_MAX, out.h, ind.h, t.h, d - 1, 0, 0, 1))
         local shape = shape_of(t)
         table.remove(shape, d)
         assert_shape(out, shape)
         assert_shape(ind, shape)
         local ev, ei = ref_reduce(flat, { 4, 3, 5 }, d, R.max)
         util.assert_close(out, ev, EXACT)
         util.assert_close(ind, ei, EXACT)
         -- base 0 gives 0-based indices
         assert.are.equal(0, C.mt_reduce(C.MT_ARGMAX, ind.h, nil, t.h, d - 1, 0, 0, 0))
         local zero = {}
         for k, v in ipairs(ei) do zero[k] = v - 1 end
         util.assert_close(ind, zero, EXACT)
      end
      local out = torch.DoubleTensor()
      assert.are.equal(0, C.mt_reduce(C.MT_SUM, out.h, nil, t.h, -1, 0, 0, 1))
      assert.are.equal(0, out:dim())
      util.assert_close(out, { R.sum(flat) }, tol_for('torch.DoubleTensor'))
   end)

   it('writes into given result tensors: resized, non-contiguous, or aliasing the input', function()
      local t, flat = rand({ 4, 5 }, 'torch.DoubleTensor')
      -- wrong size: resized
      local res = torch.DoubleTensor(7, 7)
      local r = torch.sum(res, t, 2)
      assert.is_true(rawequal(res, r))
      assert_shape(res, { 4, 1 })
      util.assert_close(res, ref_reduce(flat, { 4, 5 }, 2, R.sum), tol_for('torch.DoubleTensor'))
      -- a non-contiguous result of the right shape is written in place
      local holder = torch.DoubleTensor(4, 2)
      assert.are.equal(0, C.mt_fill(holder:select(2, 2).h, 42))
      local col = holder:narrow(2, 1, 1)
      torch.mean(col, t, 2)
      util.assert_close(col, ref_reduce(flat, { 4, 5 }, 2, R.mean), tol_for('torch.DoubleTensor'))
      util.assert_close(holder:select(2, 2), { 42, 42, 42, 42 }, EXACT, 'untouched column')
      -- the input itself as the result
      local u, uflat = rand({ 3, 6 }, 'torch.DoubleTensor')
      torch.sum(u, u, 1)
      assert_shape(u, { 1, 6 })
      util.assert_close(u, ref_reduce(uflat, { 3, 6 }, 1, R.sum), tol_for('torch.DoubleTensor'))
      -- a view of the input as the result
      local w, wflat = rand({ 3, 4 }, 'torch.DoubleTensor')
      local wv = w:narrow(1, 1, 1)
      torch.max(wv, torch.LongTensor(), w, 1)
      util.assert_close(wv, ref_reduce(wflat, { 3, 4 }, 1, function(l) return (R.max(l)) end), EXACT)
   end)

   it('NaN propagates through sum, mean, max, min (first NaN index) and norm', function()
      for _, tn in ipairs(FLOATS) do
         local shape = { 5, 8 }
         local t, flat = rand(shape, tn)
         local p1, p2 = math.random(1, 40), math.random(1, 40)
         for _, pos in ipairs { p1, p2 } do
            flat[pos] = 0 / 0
            set_flat(t, pos, 0 / 0)
         end
         local first = math.min(p1, p2)
         assert.is_true(t:sum() ~= t:sum())
         assert.is_true(t:max() ~= t:max())
         assert.is_true(t:min() ~= t:min())
         assert.is_true(t:norm() ~= t:norm())
         assert.is_true(t:norm(math.huge) ~= t:norm(math.huge))
         assert.are.equal(first, t:argmax())
         assert.are.equal(first, t:argmin())
         for d = 1, 2 do
            local v, i = t:max(d)
            local ev, ei = ref_reduce(flat, shape, d, R.max)
            util.assert_close(v, ev, EXACT, tn .. ' max with NaN', true)
            util.assert_close(i, ei, EXACT, tn .. ' max index with NaN')
            local mv, mi = t:min(d)
            local fv, fi = ref_reduce(flat, shape, d, R.min)
            util.assert_close(mv, fv, EXACT, tn .. ' min with NaN', true)
            util.assert_close(mi, fi, EXACT, tn .. ' min index with NaN')
            util.assert_close(t:sum(d), ref_reduce(flat, shape, d, R.sum), tol_for(tn), tn .. ' sum with NaN', true)
            util.assert_close(t:mean(d), ref_reduce(flat, shape, d, R.mean), tol_for(tn), tn .. ' mean NaN', true)
         end
      end
   end)

   it('empty tensors: sum 0, prod 1, mean NaN, any false, all true; max needs elements', function()
      local e = torch.DoubleTensor(0)
      assert.are.equal(0, e:sum())
      assert.are.equal(1, e:prod())
      assert.is_true(e:mean() ~= e:mean())
      assert.are.equal(0, e:norm())
      local b = T.new_tensor(T.BYTE, T.CPU_DEVICE, { 0 })
      assert.is_false(b:any())
      assert.is_true(b:all())
      local e2 = torch.FloatTensor(3, 0)
      local s = e2:sum(2)
      assert_shape(s, { 3, 1 })
      util.assert_close(s, { 0, 0, 0 }, EXACT)
      util.assert_close(e2:prod(2), { 1, 1, 1 }, EXACT)
      assert_shape(e2:sum(1), { 1, 0 })
      util.assert_error(function() return e:max() end, 'max', 'empty', '0')
      util.assert_error(function() return e2:max(2) end, 'max', 'dimension 2', 'size 0', '3x0')
      util.assert_error(function() return e2:argmin(2) end, 'argmin', 'dimension 2')
      -- a zero-size other dim is fine: nothing to compute
      local v, i = e2:max(1)
      assert_shape(v, { 1, 0 })
      assert_shape(i, { 1, 0 })
   end)

   it('a 0-d tensor reduces to itself', function()
      local t = rand({ 3 }, 'torch.DoubleTensor'):narrow(1, 2, 1):view(torch.LongStorage {})
      assert.are.equal(0, t:dim())
      local x = t:totable()
      assert.are.equal(x, t:sum())
      assert.are.equal(x, t:max())
      assert.are.equal(1, t:argmax())
      local v = t:max(1)
      assert.are.equal(x, v:totable())
   end)

   it('errors name the op, the dimension and the sizes', function()
      local t = rand({ 2, 3, 4 }, 'torch.DoubleTensor')
      util.assert_error(function() return t:sum(4) end, 'sum', 'dimension 4', '2x3x4')
      util.assert_error(function() return t:max(0) end, 'max', 'dimension 0', '2x3x4')
      util.assert_error(function() return t:mean(-4) end, 'mean', 'dimension -4')
      util.assert_error(function() return t:sort(5) end, 'sort', 'dimension 5', '2x3x4')
      util.assert_error(function() return t:sum(1.5) end, 'sum', 'integer')
      local i = rand({ 3 }, 'torch.IntTensor', 0, 5)
      util.assert_error(function() return i:mean() end, 'mean', 'floating-point', 'int32')
      util.assert_error(function() return i:var(1) end, 'var', 'floating-point')
      util.assert_error(function() return i:norm() end, 'norm', 'floating-point')
      util.assert_error(function() return torch.sum(torch.FloatTensor(), t, 1) end, 'sum', 'float32', 'float64')
      util.assert_error(function() return torch.max(torch.DoubleTensor(), torch.IntTensor(), t, 1) end, 'max',
         'int32', 'int64')
      util.assert_error(function() return t:norm(0 / 0) end, 'norm', 'NaN')
      util.assert_error(function() return torch.sum('x', 1) end, 'sum', 'tensor')
      -- the C API reports 1-based dimensions too
      local out = torch.DoubleTensor()
      assert.are.equal(C.MT_ERR_INDEX, C.mt_reduce(C.MT_SUM, out.h, nil, t.h, 3, 1, 0, 1))
      local msg = ffi.string(C.mt_last_error())
      assert.truthy(msg:find('dimension 4 out of range', 1, true) and msg:find('2x3x4', 1, true), msg)
      assert.are.equal(C.MT_ERR_ARG, C.mt_reduce(99, out.h, nil, t.h, 0, 1, 0, 1))
      assert.are.equal(C.MT_ERR_ARG, C.mt_reduce(C.MT_SUM, out.h, out.h, t.h, 0, 1, 0, 1))
      assert.are.equal(C.MT_ERR_ARG, C.mt_reduce(C.MT_SUM, nil, nil, t.h, 0, 1, 0, 1))
      assert.are.equal(C.MT_ERR_ARG, C.mt_reduce(C.MT_VAR, out.h, nil, t.h, 0, 1, -1, 1))
   end)

   util.gpu_it('CUDA reductions match the CPU', function()
      for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.IntTensor' } do
         for _, shape in ipairs { { 7 }, { 4, 3, 5 }, { 33, 1025 }, { 200000 } } do
            local t, flat = rand(shape, tn, -3, 3)
            local isf = T.dtypes[t:dtype() + 1].is_float
            local g = T.convert(t, t:dtype(), 0)
            local tol = isf and tol_for(tn, 10) or EXACT
            util.assert_close({ g:sum() }, { R.sum(flat) }, tol, tn .. ' cuda sum all')
            assert.are.equal((R.max(flat)), g:max())
            for d = 1, #shape do
               util.assert_close(g:sum(d), ref_reduce(flat, shape, d, R.sum), tol, tn .. ' cuda sum')
               local v, i = g:max(d)
               local ev, ei = ref_reduce(flat, shape, d, R.max)
               assert.are.equal(0, v:device())
               util.assert_close(v, ev, EXACT, tn .. ' cuda max')
               util.assert_close(i, ei, EXACT, tn .. ' cuda max index')
               if isf then
                  util.assert_close(g:var(d), ref_reduce(flat, shape, d, variance), tol_for(tn, 20), tn .. ' cuda var')
                  util.assert_close(g:mean(d), ref_reduce(flat, shape, d, R.mean), tol, tn .. ' cuda mean')
               end
            end
            local tt = g:transpose(1, #shape)
            util.assert_close(tt:sum(1), t:transpose(1, #shape):sum(1), tol, tn .. ' cuda transposed sum')
         end
      end
   end)
end)

describe('full integer sums', function()
   it('accumulate in 64 bits like Torch7 (no wrap at the storage type)', function()
      for _, name in ipairs { 'torch.ByteTensor', 'torch.IntTensor', 'torch.BoolTensor' } do
         local n = 300 + math.random(2000)
         local vals, expect = {}, 0
         for i = 1, n do
            vals[i] = name == 'torch.BoolTensor' and math.random(0, 1) or math.random(0, 255)
            expect = expect + vals[i]
         end
         local t = T.from_flat(vals, { n }, T.parse_typename(name), T.CPU_DEVICE)
         assert.are.equal(expect, t:sum(), name)
      end
   end)
end)
