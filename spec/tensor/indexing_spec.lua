-- indexing_spec.lua: t[i], t[i][j], Torch7 slice tables t[{...}], their assignments, masks
-- and index tensors, and the errors for indices out of range.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local function rand(shape, ty, lo, hi)
   local t = util.rand_tensor(shape, ty, lo, hi)
   return t, util.flat(t)
end

local function gpu_it(name, fn)
   if util.has_gpu() then it(name, fn) else pending('[no GPU] ' .. name) end
end

local TYPES = {
   { 'torch.DoubleTensor', -1, 1 }, { 'torch.FloatTensor', -1, 1 }, { 'torch.HalfTensor', -4, 4 },
   { 'torch.BFloat16Tensor', -4, 4 }, { 'torch.IntTensor', -1000, 1000 }, { 'torch.LongTensor', -1e6, 1e6 },
   { 'torch.ByteTensor', 0, 250 },
}

-- value of element (i, j, ...) (1-based) of a row-major flat array
local function at(flat, shape, ...)
   local idx, p, s = { ... }, 0, 1
   for d = #shape, 1, -1 do
      p = p + (idx[d] - 1) * s
      s = s * shape[d]
   end
   return flat[p + 1]
end

-- a value that survives storage in the type unchanged
local function representable(ty)
   if ty == 'torch.ByteTensor' then return math.random(0, 255) end
   if ty == 'torch.IntTensor' or ty == 'torch.LongTensor' then return math.random(-10000, 10000) end
   return math.random(-255, 255) / 8 -- 8 significant bits: exact in half and bfloat16 too
end

describe('t[i]', function()
   it('reads numbers from 1-d tensors of every type, negatives from the end', function()
      for _, ty in ipairs(TYPES) do
         local n = math.random(3, 9)
         local t, flat = rand({ n }, ty[1], ty[2], ty[3])
         for i = 1, n do
            assert.are.equal('number', type(t[i]))
            assert.are.equal(flat[i], t[i])
            assert.are.equal(flat[n - i + 1], t[-i])
         end
         -- a strided 1-d view: every other element of a column
         local m, mf = rand({ 6, 3 }, ty[1], ty[2], ty[3])
         local col = m:select(2, 2)
         for i = 1, 6 do assert.are.equal(at(mf, { 6, 3 }, i, 2), col[i]) end
      end
   end)

   it('returns select views of n-d tensors, so t[i][j] reads and writes', function()
      for _, ty in ipairs(TYPES) do
         local shape = { math.random(2, 4), math.random(2, 5), math.random(2, 3) }
         local t, flat = rand(shape, ty[1], ty[2], ty[3])
         local i, j, k = math.random(shape[1]), math.random(shape[2]), math.random(shape[3])
         local row = t[i]
         assert.is_true(torch.isTensor(row))
         assert.are.same({ shape[2], shape[3] }, row:size():totable())
         assert.are.equal(at(flat, shape, i, j, k), t[i][j][k])
         assert.are.equal(at(flat, shape, shape[1] - i + 1, j, k), t[-i][j][k])
         -- transposed: element (k, j, i) of the permuted view is (i, j, k) of the source
         assert.are.equal(at(flat, shape, i, j, k), t:transpose(1, 3)[k][j][i])
         local v = representable(ty[1])
         t[i][j][k] = v
         assert.are.equal(v, t[i][j][k])
         assert.are.equal(v, util.flat(t)[(i - 1) * shape[2] * shape[3] + (j - 1) * shape[3] + k])
         local w = representable(ty[1])
         t[i]:t()[k][j] = w -- through a non-contiguous 2-d view
         assert.are.equal(w, t[i][j][k])
      end
   end)

   it('rounds and converts on assignment like a copy would', function()
      local h = torch.HalfTensor(3)
      local x = 1 + 2 ^ -12 -- not representable in half: rounds to 1
      h[2] = x
      assert.are.equal(1, h[2])
      local i = torch.IntTensor(2)
      local f = math.random() * 100
      i[1] = f
      i[2] = -f
      assert.are.equal(math.floor(f), i[1])
      assert.are.equal(-math.floor(f), i[2])
      local b = torch.BoolTensor(2)
      b[1] = 5
      b[2] = 0
      assert.are.equal(1, b[1])
      assert.are.equal(0, b[2])
      local d = torch.DoubleTensor(1)
      d[1] = true
      assert.are.equal(1, d[1])
   end)

   it('assigns numbers (fill) and tensors (copy) to t[i] of an n-d tensor', function()
      local t = rand({ 3, 4 })
      local v = math.random()
      t[2] = v
      for j = 1, 4 do assert.are.equal(v, t[2][j]) end
      local r, rf = rand({ 4 })
      t[-1] = r
      for j = 1, 4 do assert.are.equal(rf[j], t[3][j]) end
      local one = torch.DoubleTensor(3)
      local s = rand({})
      one[2] = s -- a 0-d tensor into one element
      assert.are.equal(util.flat(s)[1], one[2])
   end)

   it('gives #t as the size', function()
      local shape = { math.random(1, 4), math.random(1, 4) }
      local t = rand(shape)
      assert.are.same(shape, (#t):totable())
      assert.are.equal(2, (#t):size())
   end)

   it('reports bad indices with the index and the size', function()
      local t = rand({ 4, 6 })
      util.assert_error(function() return t[5] end, 'index 5', 'dimension 1', 'size 4')
      util.assert_error(function() return t[0] end, 'index 0', 'dimension 1', 'size 4')
      util.assert_error(function() return t[-5] end, 'index -5', 'size 4')
      util.assert_error(function() return t[1][7] end, 'index 7', 'size 6')
      util.assert_error(function() t[9] = 1 end, 'index 9', 'size 4')
      util.assert_error(function() t[1][-7] = 1 end, 'index -7', 'size 6')
      util.assert_error(function() return t[1.5] end, '1.5', 'integer')
      util.assert_error(function() return t[true] end, 'boolean')
      util.assert_error(function() t[1][1] = 'x' end, 'string')
      util.assert_error(function() t[1] = 'x' end, 'string')
      util.assert_error(function() return rand({})[1] end, '0-dimensional')
   end)

   gpu_it('reads and writes CUDA elements and rows', function()
      local t, flat = rand({ 3, 4 })
      local g = t:type('torch.CudaDoubleTensor')
      assert.are.equal(at(flat, { 3, 4 }, 2, 3), g[2][3])
      g[2][3] = 7
      assert.are.equal(7, g[2][3])
      g[1] = 2
      assert.are.equal(2, g[1][4])
      local h = t:type('torch.CudaHalfTensor')
      assert.are.equal(util.flat(t:half())[5], h[2][1])
   end)
end)

describe('slice tables', function()
   -- reference for a slice spec on a 3-d tensor: list of kept (dim, lo, hi) and selected indices
   local function resolve(spec, shape)
      local ranges, out = {}, {}
      for d = 1, #shape do
         local e, n = spec[d], shape[d]
         if type(e) == 'number' then
            ranges[d] = { e < 0 and e + n + 1 or e }
         else
            local a, b = 1, n
            if e and #e >= 1 then a = e[1]; b = e[2] or e[1] end
            a = a < 0 and a + n + 1 or a
            b = b < 0 and b + n + 1 or b
            ranges[d] = { a, b }
            out[#out + 1] = b - a + 1
         end
      end
      return ranges, out
   end
   local function expected(flat, shape, ranges)
      local r, sizes, lo = {}, {}, {}
      for d = 1, #shape do
         local rg = ranges[d]
         lo[d], sizes[d] = rg[1], (rg[2] or rg[1]) - rg[1] + 1
      end
      util.each_index(sizes, function(idx) r[#r + 1] = at(flat, shape, (table.unpack or unpack)(idx)) end, lo)
      return r
   end
   local function rand_entry(n)
      local kind = math.random(5)
      if kind == 1 then return math.random(n) end
      if kind == 2 then return -math.random(n) end
      if kind == 3 then return {} end
      if kind == 4 then return { math.random(n) } end
      local a = math.random(n)
      local b = math.random(a, n)
      if math.random(2) == 1 then b = b - n - 1 end -- same bound, counted from the end
      return { a, b }
   end

   it('select, narrow and keep dimensions, on random specs and every type', function()
      for _, ty in ipairs(TYPES) do
         for _ = 1, 8 do
            local shape = { math.random(1, 4), math.random(1, 5), math.random(1, 4) }
            local t, flat = rand(shape, ty[1], ty[2], ty[3])
            local src = t
            if math.random(2) == 1 then -- also from a non-contiguous source
               src = t:transpose(1, 3)
               shape = { shape[3], shape[2], shape[1] }
               flat = util.flat(src)
            end
            local spec = {}
            local ndims = math.random(0, 3)
            for d = 1, ndims do spec[d] = rand_entry(shape[d]) end
            local ranges, out = resolve(spec, shape)
            local r = src[spec]
            local exp = expected(flat, shape, ranges)
            if #out == 0 then
               assert.are.equal('number', type(r))
               assert.are.equal(exp[1], r)
            else
               assert.are.same(out, r:size():totable())
               util.assert_close(r, exp, { atol = 0, rtol = 0 }, ty[1] .. ' slice')
            end
         end
      end
   end)

   it('keeps a single-index range as a dimension: t[{{2}}] vs t[{2}]', function()
      local t, flat = rand({ 4, 3 })
      assert.are.same({ 1, 3 }, t[{ { 2 } }]:size():totable())
      assert.are.same({ 3 }, t[{ 2 }]:size():totable())
      assert.are.same({ 4, 1 }, t[{ {}, { -1 } }]:size():totable())
      util.assert_close(t[{ {}, { -1 } }], { flat[3], flat[6], flat[9], flat[12] }, nil, 'last column')
      assert.are.equal(flat[3 * 3 + 2], t[{ -1, 2 }])
      local whole = t[{}]
      assert.is_true(whole:isSetTo(t))
   end)

   it('assigns numbers and tensors through slices, visible in the base', function()
      for _, ty in ipairs { TYPES[1], TYPES[3], TYPES[5], TYPES[7] } do
         local t, flat = rand({ 4, 5 }, ty[1], ty[2], ty[3])
         local v = representable(ty[1])
         t[{ { 2, 3 }, { -2, -1 } }] = v
         for i = 1, 4 do
            for j = 1, 5 do
               local e = (i >= 2 and i <= 3 and j >= 4) and v or at(flat, { 4, 5 }, i, j)
               assert.are.equal(e, t[i][j])
            end
         end
         local src, sf = rand({ 2, 5 }, ty[1], ty[2], ty[3])
         t[{ { 1, 2 }, {} }] = src
         for j = 1, 5 do
            assert.are.equal(sf[j], t[1][j])
            assert.are.equal(sf[5 + j], t[2][j])
         end
         local w = representable(ty[1])
         t[{ 4, 1 }] = w
         assert.are.equal(w, t[4][1])
         -- into a column of a transposed view
         local tt = t:t()
         local col, cf = rand({ 4 }, ty[1], ty[2], ty[3])
         tt[{ 3, {} }] = col
         for i = 1, 4 do assert.are.equal(cf[i], t[i][3]) end
         -- a broadcast copy of a row into several rows
         local row, rf = rand({ 1, 5 }, ty[1], ty[2], ty[3])
         t[{ { 3, 4 } }] = row:expand(2, 5)
         for j = 1, 5 do assert.are.equal(rf[j], t[4][j]) end
      end
   end)

   it('reports bad slice tables with the index and the size', function()
      local t = rand({ 4, 6 })
      util.assert_error(function() return t[{ 5 }] end, 'index 5', 'dimension 1', 'size 4')
      util.assert_error(function() return t[{ 1, 7 }] end, 'index 7', 'dimension 2', 'size 6')
      util.assert_error(function() return t[{ {}, { 2, 9 } }] end, 'index 9', 'dimension 2', 'size 6')
      util.assert_error(function() return t[{ { 0, 2 } }] end, 'index 0', 'dimension 1', 'size 4')
      util.assert_error(function() return t[{ { 3, 2 } }] end, 'reversed', '{3, 2}', 'size 4')
      util.assert_error(function() return t[{ 1, 2, 3 }] end, '3 indices', '2 dimensions')
      util.assert_error(function() return t[{ { 1, 2, 3 } }] end, '3 entries')
      util.assert_error(function() return t[{ 'a' }] end, 'string')
      util.assert_error(function() t[{ 1, { 1, 10 } }] = 0 end, 'index 10', 'size 6')
      util.assert_error(function() t[{ 1 }] = {} end, 'table')
   end)
end)

describe('masks and index tensors', function()
   local M = T.tensor_methods
   local mask_it = (M.maskedSelect and M.maskedFill) and it
      or function(name) pending('[maskedSelect missing] ' .. name) end
   local index_it = (M.index and M.indexFill) and it or function(name) pending('[index missing] ' .. name) end

   mask_it('t[mask] selects and t[mask] = v fills', function()
      local t, flat = rand({ 3, 4 })
      local mask = torch.ByteTensor(3, 4)
      local sel = {}
      for i = 1, 12 do
         local m = math.random(0, 1)
         mask[math.floor((i - 1) / 4) + 1][(i - 1) % 4 + 1] = m
         if m == 1 then sel[#sel + 1] = flat[i] end
      end
      local r = t[mask]
      assert.are.equal(1, r:dim())
      util.assert_close(r, sel, nil, 't[mask]')
      util.assert_close(t[mask:bool()], sel, nil, 't[boolMask]')
      local v = math.random()
      t[mask] = v
      local f = util.flat(t)
      local mf = util.flat(mask)
      for i = 1, 12 do assert.are.equal(mf[i] == 1 and v or flat[i], f[i]) end
   end)

   index_it('t[longTensor] indexes dimension 1', function()
      local t, flat = rand({ 5, 3 })
      local idx = torch.LongTensor { math.random(5), math.random(5), math.random(5) }
      local r = t[idx]
      assert.are.same({ 3, 3 }, r:size():totable())
      for k = 1, 3 do
         for j = 1, 3 do assert.are.equal(at(flat, { 5, 3 }, idx[k], j), r[k][j]) end
      end
      local v = math.random()
      t[idx] = v
      for k = 1, 3 do assert.are.equal(v, t[idx[k]][2]) end
   end)

   it('rejects index tensors of other types', function()
      local t = rand({ 3 })
      util.assert_error(function() return t[torch.FloatTensor { 1 }] end, 'torch.FloatTensor', 'LongTensor', 'mask')
      util.assert_error(function() t[torch.IntTensor { 1 }] = 1 end, 'torch.IntTensor')
   end)
end)
