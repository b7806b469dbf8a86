-- index_ops_spec.lua: cat, index/indexSelect, indexAdd, indexFill, indexCopy, gather and scatter on
-- fresh random data and random 1-based indices, against references computed in plain Lua.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
if not T.tensor_methods.gather then require('moontorch.tensor.index_ops')(torch, T) end

local EXACT = { atol = 0, rtol = 0 }
local DTYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' }

local function range_for(ty)
   if ty == 'torch.ByteTensor' then return 0, 256 end
   if ty == 'torch.IntTensor' or ty == 'torch.LongTensor' then return -1000, 1000 end
   return -10, 10
end

---------------------------------------------------------------------------------------------
-- shape arithmetic for the references

local function numel(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return n
end

-- 1-based flat position of 1-based multi-index p in a row-major shape
local function pos(shape, p)
   local at = 0
   for i = 1, #shape do at = at * shape[i] + (p[i] - 1) end
   return at + 1
end

-- call fn(p) for every multi-index of shape in row-major order (p is reused: copy to keep)
local function each(shape, fn)
   if numel(shape) == 0 then return end
   local p = {}
   for i = 1, #shape do p[i] = 1 end
   while true do
      fn(p)
      local i = #shape
      while i >= 1 do
         p[i] = p[i] + 1
         if p[i] <= shape[i] then break end
         p[i] = 1
         i = i - 1
      end
      if i < 1 then return end
   end
end

local function copy(t)
   local r = {}
   for i, v in ipairs(t) do r[i] = v end
   return r
end

local function ones(n)
   local r = {}
   for i = 1, n do r[i] = 1 end
   return r
end

local function zeros(shape, ty)
   local r = {}
   for i = 1, numel(shape) do r[i] = 0 end
   return T.from_flat(r, shape, T.parse_typename(ty or 'torch.DoubleTensor'), T.CPU_DEVICE)
end

local function with(p, d, v)
   local q = copy(p)
   q[d] = v
   return q
end

-- random shapes with odd sizes, 1 to 3 dims
local function rand_shape(nd)
   local s = {}
   for i = 1, nd do s[i] = math.random(1, 6) end
   return s
end

-- a random tensor of shape, laid out contiguous, transposed (stored with its first and last
-- dims swapped) or narrowed out of a larger one; returns t and its flat values
local function rand_layout(shape, layout, ty, lo, hi)
   local nd = #shape
   if layout == 'transposed' and nd >= 2 then
      local s = copy(shape)
      s[1], s[nd] = shape[nd], shape[1]
      local t = util.rand_tensor(s, ty, lo, hi):transpose(1, nd)
      return t, util.flat(t)
   elseif layout == 'narrowed' then
      local s = copy(shape)
      s[nd] = s[nd] + 3
      local t = util.rand_tensor(s, ty, lo, hi):narrow(nd, 2, shape[nd])
      return t, util.flat(t)
   end
   local t = util.rand_tensor(shape, ty, lo, hi)
   return t, util.flat(t)
end

-- a random contiguous tensor with its exact stored values (float32 rounds the draws)
local function rand(shape, ty, lo, hi)
   local t = util.rand_tensor(shape, ty, lo, hi)
   return t, util.flat(t)
end

-- n random 1-based indices in [1, size] (repeats likely), as a LongTensor and a Lua table
local function rand_index(n, size, ty)
   local v = {}
   for i = 1, n do v[i] = math.random(1, size) end
   return T.from_flat(v, { n }, T.parse_typename(ty or 'torch.LongTensor'), T.CPU_DEVICE), v
end

---------------------------------------------------------------------------------------------

describe('cat', function()
   local function ref_cat(parts, dim)
      -- parts: list of {shape, flat}; returns the expected shape and flat values
      local shape = copy(parts[1][1])
      shape[dim] = 0
      for _, p in ipairs(parts) do shape[dim] = shape[dim] + p[1][dim] end
      local out = {}
      each(shape, function(p)
         local at, k = p[dim], 1
         while at > parts[k][1][dim] do
            at = at - parts[k][1][dim]
            k = k + 1
         end
         out[pos(shape, p)] = parts[k][2][pos(parts[k][1], with(p, dim, at))]
      end)
      return shape, out
   end

   for _, ty in ipairs(DTYPES) do
      it('concatenates along every dim with mixed sizes, for ' .. ty, function()
         local lo, hi = range_for(ty)
         for nd = 1, 3 do
            for dim = 1, nd do
               local base = rand_shape(nd)
               local parts, tensors = {}, {}
               for k = 1, math.random(2, 4) do
                  local s = copy(base)
                  s[dim] = math.random(1, 5)
                  local layout = ({ 'contiguous', 'transposed', 'narrowed' })[math.random(1, 3)]
                  local t, f = rand_layout(s, layout, ty, lo, hi)
                  parts[k], tensors[k] = { s, f }, t
               end
               local shape, want = ref_cat(parts, dim)
               local r = torch.cat(tensors, dim)
               assert.are.same(shape, T.sizes(r))
               assert.are.equal(ty, r:type())
               util.assert_close(r, want, EXACT, ('%s cat of %d inputs along %d'):format(ty, #tensors, dim))
            end
         end
      end)
   end

   it('accepts Torch7 argument forms and defaults to the last dimension', function()
      local a, fa = rand({ 3, 2 })
      local b, fb = rand({ 3, 4 })
      local shape, want = ref_cat({ { { 3, 2 }, fa }, { { 3, 4 }, fb } }, 2)
      util.assert_close(torch.cat(a, b), want, EXACT, 'cat(a, b)')
      util.assert_close(torch.cat({ a, b }), want, EXACT, 'cat({a, b})')
      util.assert_close(torch.cat(a, b, 2), want, EXACT, 'cat(a, b, 2)')
      util.assert_close(torch.cat(a, b, -1), want, EXACT, 'cat(a, b, -1)')
      local res = torch.DoubleTensor(7)
      assert.are.equal(res, torch.cat(res, a, b, 2))
      assert.are.same(shape, T.sizes(res))
      util.assert_close(res, want, EXACT, 'cat(res, a, b, 2)')
      local res2 = torch.DoubleTensor()
      assert.are.equal(res2, torch.cat(res2, { a, b }))
      util.assert_close(res2, want, EXACT, 'cat(res, {a, b})')
      util.assert_close(a:cat(b), want, EXACT, 'a:cat(b)')
      local c, fc = rand({ 2, 2 })
      local _, want1 = ref_cat({ { { 3, 2 }, fa }, { { 2, 2 }, fc } }, 1)
      util.assert_close(torch.cat(a, c, 1), want1, EXACT, 'cat(a, c, 1)')
   end)

   it('skips empty 1-d tensors (legacy rule)', function()
      local a, fa = rand({ 2, 3 })
      local b, fb = rand({ 1, 3 })
      local r = torch.cat({ torch.DoubleTensor(), a, torch.DoubleTensor(0), b }, 1)
      local _, want = ref_cat({ { { 2, 3 }, fa }, { { 1, 3 }, fb } }, 1)
      assert.are.same({ 3, 3 }, T.sizes(r))
      util.assert_close(r, want, EXACT)
      assert.are.same({ 0 }, T.sizes(torch.cat(torch.DoubleTensor(), torch.DoubleTensor())))
   end)

   it('is right when the result is one of the inputs', function()
      local a, fa = rand({ 2, 3 })
      local b, fb = rand({ 2, 3 })
      local _, want = ref_cat({ { { 2, 3 }, fa }, { { 2, 3 }, fb } }, 1)
      torch.cat(a, a, b, 1)
      util.assert_close(a, want, EXACT)
   end)

   it('copies large inputs (parallel path)', function()
      local a, fa = rand_layout({ 300, 70 }, 'transposed', 'torch.FloatTensor')
      local b, fb = rand({ 300, 90 }, 'torch.FloatTensor')
      local _, want = ref_cat({ { { 300, 70 }, fa }, { { 300, 90 }, fb } }, 2)
      util.assert_close(torch.cat(a, b, 2), want, EXACT)
   end)

   it('reports mismatched sizes, dtypes and dimensions', function()
      local a, b = torch.DoubleTensor(2, 3), torch.DoubleTensor(2, 4)
      util.assert_error(function() torch.cat(a, b, 1) end, 'cat', 'dimension 1', 'input 1 has size 2x3',
         'input 2 has size 2x4')
      util.assert_error(function() torch.cat(a, torch.FloatTensor(2, 3), 1) end, 'cat', 'input 2', 'float32', 'float64')
      util.assert_error(function() torch.cat(a, a, 3) end, 'cat', 'dimension 3 out of range', '2x3')
      util.assert_error(function() torch.cat(a, torch.DoubleTensor(2, 3, 1), 1) end, 'cat', '2x3x1')
      util.assert_error(function() torch.cat({ a, 5 }) end, 'cat', 'input 2', 'number')
      util.assert_error(function() torch.cat({}) end, 'cat', 'non-empty')
   end)
end)

describe('index / indexSelect', function()
   local function ref_select(shape, flat, dim, idx)
      local out_shape = copy(shape)
      out_shape[dim] = #idx
      local out = {}
      each(out_shape, function(p) out[pos(out_shape, p)] = flat[pos(shape, with(p, dim, idx[p[dim]]))] end)
      return out_shape, out
   end

   for _, ty in ipairs(DTYPES) do
      it('selects random slices (with repeats) along each dim for ' .. ty, function()
         local lo, hi = range_for(ty)
         for nd = 1, 3 do
            for dim = 1, nd do
               local shape = rand_shape(nd)
               for _, layout in ipairs { 'contiguous', 'transposed', 'narrowed' } do
                  local src, flat = rand_layout(shape, layout, ty, lo, hi)
                  local index, idx = rand_index(math.random(1, 7), shape[dim])
                  local oshape, want = ref_select(shape, flat, dim, idx)
                  local r = src:index(dim, index)
                  assert.are.same(oshape, T.sizes(r))
                  util.assert_close(r, want, EXACT, ('%s index dim %d of %s'):format(ty, dim, layout))
                  util.assert_close(src:indexSelect(dim, index), want, EXACT, 'indexSelect')
               end
            end
         end
      end)
   end

   it('takes int32 and non-contiguous index tensors, a result tensor and Lua tables', function()
      local src, flat = rand({ 5, 4 })
      local index, idx = rand_index(6, 5, 'torch.IntTensor')
      local _, want = ref_select({ 5, 4 }, flat, 1, idx)
      util.assert_close(src:index(1, index), want, EXACT, 'int32 index')
      local wide = rand({ 6, 2 }, 'torch.LongTensor', 1, 5)
      local col = wide:select(2, 2)
      local _, want2 = ref_select({ 5, 4 }, flat, 2, util.flat(col))
      util.assert_close(src:index(2, col), want2, EXACT, 'strided index')
      local res = torch.DoubleTensor()
      assert.are.equal(res, torch.index(res, src, 2, col))
      util.assert_close(res, want2, EXACT, 'torch.index(res, ...)')
      local _, want3 = ref_select({ 5, 4 }, flat, 1, { 5, 1, 5 })
      util.assert_close(src:index(1, { 5, 1, 5 }), want3, EXACT, 'table index')
   end)

   it('selects rows of a large matrix (embedding lookup, parallel path)', function()
      local src, flat = rand({ 500, 70 }, 'torch.FloatTensor')
      local index, idx = rand_index(800, 500)
      local _, want = ref_select({ 500, 70 }, flat, 1, idx)
      util.assert_close(src:index(1, index), want, EXACT)
      local _, want2 = ref_select({ 500, 70 }, flat, 2, { 70, 1, 35 })
      util.assert_close(src:index(2, torch.LongTensor { 70, 1, 35 }), want2, EXACT)
   end)

   it('reports out-of-range indices naming index, dimension and size', function()
      local src = torch.DoubleTensor(5, 4)
      util.assert_error(function() src:index(2, torch.LongTensor { 1, 7 }) end,
         'index_select: index 7 out of range for dimension 2 of size 4')
      util.assert_error(function() src:index(1, torch.LongTensor { 0 }) end,
         'index 0 out of range for dimension 1 of size 5')
      util.assert_error(function() src:index(1, torch.LongTensor { -2 }) end, 'index -2 out of range')
      util.assert_error(function() src:index(3, torch.LongTensor { 1 }) end, 'dimension 3 out of range', '5x4')
      util.assert_error(function() src:index(1, torch.DoubleTensor { 1 }) end, 'index_select', 'int64', 'float64')
      util.assert_error(function() src:index(1, torch.LongTensor { { 1, 1 }, { 1, 1 } }) end, 'index_select', '1-d',
         '2x2')
   end)
end)

describe('indexAdd / indexFill / indexCopy', function()
   for _, ty in ipairs(DTYPES) do
      it('indexAdd accumulates repeated indices for ' .. ty, function()
         local lo, hi = range_for(ty)
         if ty == 'torch.ByteTensor' then lo, hi = 0, 30 end
         local float = T.dtypes[T.parse_typename(ty) + 1].is_float
         local tol = util.tol[ty] or EXACT
         if ty == 'torch.HalfTensor' then tol = { atol = 0.05, rtol = 1e-2 } end
         if ty == 'torch.BFloat16Tensor' then tol = { atol = 0.3, rtol = 3e-2 } end
         for nd = 1, 3 do
            for dim = 1, nd do
               local shape = rand_shape(nd)
               local t, ft = rand_layout(shape, 'transposed', ty, lo, hi)
               local n = math.random(1, 8)
               local index, idx = rand_index(n, shape[dim])
               local sshape = copy(shape)
               sshape[dim] = n
               local src, fs = rand_layout(sshape, 'narrowed', ty, lo, hi)
               local alpha = float and 1.5 or 2
               local want = copy(ft)
               each(sshape, function(p)
                  local q = pos(shape, with(p, dim, idx[p[dim]]))
                  want[q] = want[q] + alpha * fs[pos(sshape, p)]
               end)
               if ty == 'torch.ByteTensor' then for i = 1, #want do want[i] = want[i] % 256 end end
               assert.are.equal(t, t:indexAdd(dim, index, src, alpha))
               util.assert_close(t, want, tol, ('%s indexAdd dim %d'):format(ty, dim))
            end
         end
      end)
   end

   it('indexAdd defaults to alpha 1 and is deterministic on large inputs (parallel path)', function()
      local t, ft = rand({ 50, 3000 })
      local index, idx = rand_index(40, 50)
      local src, fs = rand({ 40, 3000 })
      local want = copy(ft)
      each({ 40, 3000 }, function(p)
         local q = pos({ 50, 3000 }, with(p, 1, idx[p[1]]))
         want[q] = want[q] + fs[pos({ 40, 3000 }, p)]
      end)
      t:indexAdd(1, index, src)
      util.assert_close(t, want, util.tol['torch.DoubleTensor'])
   end)

   for _, ty in ipairs(DTYPES) do
      it('indexFill sets the chosen slices for ' .. ty, function()
         local lo, hi = range_for(ty)
         for nd = 1, 3 do
            for dim = 1, nd do
               local shape = rand_shape(nd)
               local t, ft = rand_layout(shape, 'narrowed', ty, lo, hi)
               local index, idx = rand_index(math.random(1, 4), shape[dim])
               local v = ty == 'torch.ByteTensor' and math.random(0, 255) or math.random(-100, 100)
               local chosen = {}
               for _, i in ipairs(idx) do chosen[i] = true end
               local want = copy(ft)
               each(shape, function(p) if chosen[p[dim]] then want[pos(shape, p)] = v end end)
               assert.are.equal(t, t:indexFill(dim, index, v))
               util.assert_close(t, want, EXACT, ('%s indexFill dim %d'):format(ty, dim))
            end
         end
      end)
   end

   it('indexCopy copies slices, the last repeat winning', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.HalfTensor', 'torch.IntTensor' } do
         for dim = 1, 3 do
            local shape = { 4, 5, 3 }
            local t, ft = rand_layout(shape, 'transposed', ty, -50, 50)
            local n = math.random(1, 6)
            local index, idx = rand_index(n, shape[dim])
            local sshape = copy(shape)
            sshape[dim] = n
            local src, fs = rand_layout(sshape, 'contiguous', ty, -50, 50)
            local want = copy(ft)
            for i = 1, n do -- in index order, so a later repeat overwrites
               each(sshape, function(p)
                  if p[dim] == i then want[pos(shape, with(p, dim, idx[i]))] = fs[pos(sshape, p)] end
               end)
            end
            assert.are.equal(t, t:indexCopy(dim, index, src))
            util.assert_close(t, want, EXACT, ('%s indexCopy dim %d'):format(ty, dim))
         end
      end
   end)

   it('reports bad indices and mismatched sources', function()
      local t = zeros({ 4, 3 })
      util.assert_error(function() t:indexAdd(2, torch.LongTensor { 4 }, torch.DoubleTensor(4, 1)) end,
         'index_add: index 4 out of range for dimension 2 of size 3')
      util.assert_error(function() t:indexAdd(1, torch.LongTensor { 1, 2 }, torch.DoubleTensor(3, 3)) end,
         'index_add', '3x3', '4x3', '2 indices')
      util.assert_error(function() t:indexAdd(1, torch.LongTensor { 1 }, torch.FloatTensor(1, 3)) end,
         'index_add', 'float32', 'float64')
      util.assert_error(function() t:indexFill(1, torch.LongTensor { 2, 5 }, 1) end,
         'index_fill: index 5 out of range for dimension 1 of size 4')
      util.assert_error(function() t:indexCopy(1, torch.LongTensor { 9 }, torch.DoubleTensor(1, 3)) end,
         'indexCopy', 'index 9 out of range for dimension 1 of size 4')
      util.assert_error(function() t:indexCopy(2, torch.LongTensor { 1 }, torch.DoubleTensor(4, 2)) end,
         'indexCopy', '4x2', '4x3')
      util.assert_error(function() torch.DoubleTensor(1, 3):expand(4, 3):indexFill(1, torch.LongTensor { 1 }, 0) end,
         'index_fill', 'expanded')
   end)
end)

describe('gather / scatter', function()
   -- index of ishape with values in [1, size]
   local function rand_index_nd(ishape, size, layout)
      local t = rand_layout(ishape, layout or 'contiguous', 'torch.LongTensor', 1, size + 1)
      return t, util.flat(t)
   end

   local function shrink(shape, dim, dimsize)
      -- an index shape no larger than shape (dim may be any size)
      local s = {}
      for i = 1, #shape do s[i] = math.random(1, shape[i]) end
      s[dim] = dimsize
      return s
   end

   for _, ty in ipairs(DTYPES) do
      it('gather picks src[..index..] along each dim for ' .. ty, function()
         local lo, hi = range_for(ty)
         for nd = 1, 3 do
            for dim = 1, nd do
               local shape = rand_shape(nd)
               local ishape = shrink(shape, dim, math.random(1, 5))
               local src, fs = rand_layout(shape, ({ 'contiguous', 'transposed', 'narrowed' })[math.random(1, 3)], ty,
                  lo, hi)
               local index, fi = rand_index_nd(ishape, shape[dim], ({ 'contiguous', 'transposed' })[math.random(1, 2)])
               local want = {}
               each(ishape, function(p) want[pos(ishape, p)] = fs[pos(shape, with(p, dim, fi[pos(ishape, p)]))] end)
               local r = src:gather(dim, index)
               assert.are.same(ishape, T.sizes(r))
               util.assert_close(r, want, EXACT, ('%s gather dim %d'):format(ty, dim))
               local res = T.empty_tensor(T.parse_typename(ty), T.CPU_DEVICE)
               assert.are.equal(res, torch.gather(res, src, dim, index))
               util.assert_close(res, want, EXACT, 'torch.gather(res, ...)')
            end
         end
      end)

      it('scatter writes src (or a value) at index along each dim for ' .. ty, function()
         local lo, hi = range_for(ty)
         for nd = 1, 3 do
            for dim = 1, nd do
               local shape = rand_shape(nd)
               local ishape = shrink(shape, dim, math.random(1, 5))
               local t, ft = rand_layout(shape, 'transposed', ty, lo, hi)
               local sshape = copy(ishape)
               for i = 1, nd do sshape[i] = sshape[i] + math.random(0, 1) end -- src may be larger
               local src, fs = rand_layout(sshape, 'narrowed', ty, lo, hi)
               local index, fi = rand_index_nd(ishape, shape[dim])
               -- row-major order: a repeated target keeps the last write along dim
               local want = copy(ft)
               each(ishape, function(p) want[pos(shape, with(p, dim, fi[pos(ishape, p)]))] = fs[pos(sshape, p)] end)
               assert.are.equal(t, t:scatter(dim, index, src))
               util.assert_close(t, want, EXACT, ('%s scatter dim %d'):format(ty, dim))
               local v = math.random(0, 100)
               each(ishape, function(p) want[pos(shape, with(p, dim, fi[pos(ishape, p)]))] = v end)
               t:scatter(dim, index, v)
               util.assert_close(t, want, EXACT, ('%s scatter value dim %d'):format(ty, dim))
            end
         end
      end)
   end

   it('gather and scatter are inverse on a large permutation (parallel paths)', function()
      local n, m = 400, 120
      local src, fs = rand({ n, m }, 'torch.FloatTensor')
      -- each row a random permutation of 1..m
      local perm = {}
      for i = 1, n do
         local row = {}
         for j = 1, m do row[j] = j end
         for j = m, 2, -1 do
            local k = math.random(1, j)
            row[j], row[k] = row[k], row[j]
         end
         for j = 1, m do perm[(i - 1) * m + j] = row[j] end
      end
      local index = T.from_flat(perm, { n, m }, T.LONG, T.CPU_DEVICE)
      local g = src:gather(2, index)
      local want = {}
      for i = 0, n - 1 do
         for j = 1, m do want[i * m + j] = fs[i * m + perm[i * m + j]] end
      end
      util.assert_close(g, want, EXACT, 'gather')
      local back = zeros({ n, m }, 'torch.FloatTensor'):scatter(2, index, g)
      util.assert_close(back, fs, EXACT, 'scatter back')
   end)

   it('scatter along dim 1 of a large tensor keeps the last repeat', function()
      local n, m = 30, 2000
      local t = zeros({ 5, m })
      local index, fi = rand_index_nd({ n, m }, 5)
      local src, fs = rand({ n, m })
      local want = {}
      for i = 1, 5 * m do want[i] = 0 end
      each({ n, m }, function(p) want[(fi[pos({ n, m }, p)] - 1) * m + p[2]] = fs[pos({ n, m }, p)] end)
      t:scatter(1, index, src)
      util.assert_close(t, want, EXACT)
   end)

   it('reports out-of-range indices and mismatched shapes', function()
      local src = zeros({ 3, 5 })
      util.assert_error(function() src:gather(2, torch.LongTensor { { 1, 7 } }) end,
         'gather: index 7 out of range for dimension 2 of size 5')
      util.assert_error(function() src:gather(1, torch.LongTensor { { 0, 1 } }) end,
         'gather: index 0 out of range for dimension 1 of size 3')
      util.assert_error(function() src:scatter(1, torch.LongTensor { { 4 } }, torch.DoubleTensor(1, 1)) end,
         'scatter: index 4 out of range for dimension 1 of size 3')
      util.assert_error(function() src:scatter(2, torch.LongTensor { { 6 } }, 1) end,
         'scatter: index 6 out of range for dimension 2 of size 5')
      util.assert_error(function() src:gather(1, torch.LongTensor { 1, 2 }) end, 'gather', 'same number of dimensions')
      util.assert_error(function() src:gather(1, T.from_flat(ones(12), { 2, 6 }, T.LONG, T.CPU_DEVICE)) end, 'gather',
         '2x6', '3x5', 'dimension 2')
      util.assert_error(function() src:gather(1, torch.FloatTensor(1, 1)) end, 'gather', 'int64', 'float32')
      util.assert_error(function()
         src:scatter(1, torch.LongTensor { { 1, 1 }, { 1, 1 } }, torch.DoubleTensor(1, 2))
      end, 'scatter', '2x2', '1x2')
      util.assert_error(function() src:scatter(1, torch.LongTensor { { 1 } }, torch.FloatTensor(1, 1)) end,
         'scatter', 'float32', 'float64')
   end)
end)

describe('on CUDA', function()
   -- the CPU results are checked against references above; the GPU must agree exactly
   util.gpu_it('cat, index, indexAdd, indexFill, indexCopy, gather and scatter match the CPU', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor', 'torch.LongTensor', 'torch.HalfTensor' } do
         local src = rand_layout({ 6, 5, 4 }, 'transposed', ty, -50, 50)
         local g = src:cuda()
         local other = rand({ 6, 2, 4 }, ty, -50, 50)
         util.assert_close(torch.cat({ g, other:cuda(), g }, 2), torch.cat({ src, other, src }, 2), EXACT, ty .. ' cat')
         local index = rand_index(7, 5)
         local gi = index:cuda()
         util.assert_close(g:index(2, gi), src:index(2, index), EXACT, ty .. ' index')
         local add = rand({ 6, 7, 4 }, ty, -5, 5)
         local t1, t2 = src:clone(), g:clone()
         t1:indexAdd(2, index, add)
         t2:indexAdd(2, gi, add:cuda())
         util.assert_close(t2, t1, util.tol[ty] or EXACT, ty .. ' indexAdd')
         util.assert_close(g:clone():indexFill(3, torch.LongTensor { 4, 1 }:cuda(), 7),
            src:clone():indexFill(3, torch.LongTensor { 4, 1 }, 7), EXACT, ty .. ' indexFill')
         local one = torch.LongTensor { 3 }
         local slice = rand({ 1, 5, 4 }, ty, -50, 50)
         util.assert_close(g:clone():indexCopy(1, one:cuda(), slice:cuda()), src:clone():indexCopy(1, one, slice),
            EXACT, ty .. ' indexCopy')
         local gidx = rand_layout({ 6, 3, 4 }, 'contiguous', 'torch.LongTensor', 1, 6)
         util.assert_close(g:gather(2, gidx:cuda()), src:gather(2, gidx), EXACT, ty .. ' gather')
         local ssrc = rand({ 2, 5, 4 }, ty, -50, 50)
         -- distinct targets along dim 1 so the result does not depend on write order
         local perm = {}
         for j = 1, 20 do
            local a = math.random(1, 6)
            local b
            repeat b = math.random(1, 6) until b ~= a
            perm[j], perm[20 + j] = a, b
         end
         local sidx = T.from_flat(perm, { 2, 5, 4 }, T.LONG, T.CPU_DEVICE)
         util.assert_close(g:clone():scatter(1, sidx:cuda(), ssrc:cuda()), src:clone():scatter(1, sidx, ssrc), EXACT,
            ty .. ' scatter')
         util.assert_close(g:clone():scatter(1, sidx:cuda(), -3), src:clone():scatter(1, sidx, -3), EXACT,
            ty .. ' scatter value')
      end
   end)

   util.gpu_it('reports out-of-range indices on the GPU', function()
      local g = rand({ 3, 5 }):cuda()
      util.assert_error(function() g:gather(2, torch.LongTensor { { 1, 7 } }:cuda()) end,
         'gather: index 7 out of range for dimension 2 of size 5')
      util.assert_error(function() g:index(1, torch.LongTensor { 4 }:cuda()) end,
         'index_select: index 4 out of range for dimension 1 of size 3')
      util.assert_error(function() g:index(1, torch.LongTensor { 1 }) end, 'index_select', 'cpu', 'cuda:0')
   end)
end)
