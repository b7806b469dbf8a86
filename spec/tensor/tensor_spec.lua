-- tensor_spec.lua: construction, metadata, views, copies, resize/set, storages and type
-- conversion. Every view is checked element by element against indices computed in Lua
-- from the random source values.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'

-- random tensor and its exact values as stored (float32/half/bf16 rounding included)
local function rand(shape, ty, lo, hi)
   local t = util.rand_tensor(shape, ty, lo, hi)
   return t, util.flat(t)
end

-- busted's it/pending live in the spec's environment, not util's
local function gpu_it(name, fn)
   if util.has_gpu() then it(name, fn) else pending('[no GPU] ' .. name) end
end

-- all tensor types with the value range their random data is drawn from
local TYPES = {
   { 'torch.DoubleTensor', -1, 1 }, { 'torch.FloatTensor', -1, 1 }, { 'torch.HalfTensor', -4, 4 },
   { 'torch.BFloat16Tensor', -4, 4 }, { 'torch.IntTensor', -1000, 1000 }, { 'torch.LongTensor', -1e6, 1e6 },
   { 'torch.ByteTensor', 0, 250 },
}

-- row-major helpers over Lua arrays
local function numel(shape) return util.numel(shape) end
local function flat_pos(shape, idx)
   local p, s = 0, 1
   for d = #shape, 1, -1 do
      p = p + (idx[d] - 1) * s
      s = s * shape[d]
   end
   return p + 1
end
local function each_index(shape, fn)
   local n = numel(shape)
   if n == 0 then return end
   local idx = {}
   for d = 1, #shape do idx[d] = 1 end
   for _ = 1, n do
      fn(idx)
      for d = #shape, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= shape[d] then break end
         idx[d] = 1
      end
   end
end
local function copy_idx(idx)
   local r = {}
   for i, v in ipairs(idx) do r[i] = v end
   return r
end

-- expected values of a view with shape `out_shape` whose element idx is source element map(idx)
local function expect_view(view, out_shape, src_flat, src_shape, map, what)
   assert.are.same(out_shape, view:size():totable(), (what or 'view') .. ' sizes')
   local expected = {}
   each_index(out_shape, function(idx)
      expected[#expected + 1] = src_flat[flat_pos(src_shape, map(copy_idx(idx)))]
   end)
   util.assert_close(util.flat(view), expected, { atol = 0, rtol = 0 }, what)
end

local function shares_storage(a, b)
   return T.clib.mt_tensor_storage_key(a.h) == T.clib.mt_tensor_storage_key(b.h)
end

local function rand_perm(n)
   local p = {}
   for i = 1, n do p[i] = i end
   for i = n, 2, -1 do
      local j = math.random(i)
      p[i], p[j] = p[j], p[i]
   end
   return p
end

describe('construction', function()
   it('makes uninitialised tensors from sizes, a LongStorage or nothing', function()
      local a = torch.Tensor(2, 3)
      assert.are.equal('torch.FloatTensor', a:type())
      assert.are.same({ 2, 3 }, a:size():totable())
      assert.are.same({ 3, 1 }, a:stride():totable())
      assert.are.equal(6, a:nElement())
      assert.is_true(a:isContiguous())
      local sz = { math.random(1, 5), math.random(1, 5), math.random(1, 5) }
      local b = torch.DoubleTensor(torch.LongStorage(sz))
      assert.are.same(sz, b:size():totable())
      assert.are.equal(sz[1] * sz[2] * sz[3], b:nElement())
      local e = torch.IntTensor()
      assert.are.equal(0, e:nElement())
      assert.are.equal('torch.IntTensor', e:type())
   end)

   it('builds tensors from nested tables of every type', function()
      for _, ty in ipairs(TYPES) do
         local rows, cols = math.random(1, 4), math.random(1, 5)
         local tab, flat = {}, {}
         for i = 1, rows do
            tab[i] = {}
            for j = 1, cols do
               local v = ty[2] + (ty[3] - ty[2]) * math.random()
               if not T.dtypes[T.parse_typename(ty[1]) + 1].is_float then v = math.floor(v) end
               tab[i][j] = v
               flat[#flat + 1] = v
            end
         end
         local t = T.tensor_types[ty[1]](tab)
         assert.are.same({ rows, cols }, t:size():totable())
         assert.are.equal(ty[1], t:type())
         util.assert_close(util.flat(t), flat, util.tol[ty[1]] or { atol = 0, rtol = 0 }, ty[1])
      end
      local flat = util.rand_flat(7)
      util.assert_close(util.flat(torch.DoubleTensor(flat)), flat, nil, '1-d table')
   end)

   it('rejects ragged and non-numeric tables', function()
      util.assert_error(function() return torch.Tensor { { 1, 2 }, { 3 } } end, 'ragged', 'dimension 2', '2 entries')
      util.assert_error(function() return torch.Tensor { { 1, 2 }, 3 } end, 'ragged')
      util.assert_error(function() return torch.Tensor { 1, 'x' } end, 'string')
      util.assert_error(function() return torch.Tensor(2, -3) end, 'negative', '-3')
      -- the message points at the caller's line at every depth of the table (not tail calls:
      -- those leave no frame of their own to point at)
      util.assert_error(function() local t = torch.Tensor { { { 1 }, { 2 } }, { { 3 }, { 4, 5 } } }; return t end,
         'tensor/tensor_spec.lua:', 'dimension 3', '1 entries')
      util.assert_error(function() local t = torch.FloatTensor { { 1, 2 }, { 3, {} } }; return t end,
         'tensor/tensor_spec.lua:', 'table where')
      util.assert_error(function() local t = torch.Tensor { 1, 'x' }; return t end, 'tensor/tensor_spec.lua:')
      -- booleans are 1 and 0, empty tables give empty tensors, at any depth
      assert.are.same({ 1, 0, 1 }, torch.ByteTensor({ true, false, true }):totable())
      assert.are.same({ 2, 0 }, torch.Tensor({ {}, {} }):size():totable())
      assert.are.same({ 2, 3, 1 },
         torch.DoubleTensor({ { { 1 }, { 2 }, { 3 } }, { { 4 }, { 5 }, { 6 } } }):size():totable())
   end)

   it('shares storage with the sharing constructor', function()
      local a, flat = rand({ 3, 4 })
      local v = a:t()
      local b = torch.DoubleTensor(v)
      assert.are.same(v:size():totable(), b:size():totable())
      assert.are.same(v:stride():totable(), b:stride():totable())
      expect_view(b, { 4, 3 }, flat, { 3, 4 }, function(i) return { i[2], i[1] } end, 'shared')
      local x = math.random()
      b[2][3] = x
      assert.are.equal(x, a[3][2])
      util.assert_error(function() return torch.FloatTensor(a) end, 'cannot share storage', 'torch.DoubleTensor',
         'torch.FloatTensor')
      -- from a storage, with a 1-based offset, sizes and strides
      flat = util.flat(a)
      local s = torch.DoubleTensor(a:storage(), 3, torch.LongStorage { 2, 2 }, torch.LongStorage { 1, 4 })
      expect_view(s, { 2, 2 }, flat, { 3, 4 }, function(i) return { i[2], i[1] + 2 } end, 'from storage')
      assert.are.equal(12, torch.DoubleTensor(a:storage()):nElement())
      util.assert_error(function() return torch.IntTensor(a:storage()) end, 'torch.IntTensor', 'torch.DoubleTensor')
   end)

   it('names every type and parses type names', function()
      for _, ty in ipairs(TYPES) do
         assert.are.equal(ty[1], T.tensor_types[ty[1]](2):type())
         assert.are.equal(ty[1], torch.typename(T.tensor_types[ty[1]](1)))
      end
      assert.are.equal('torch.BoolTensor', torch.BoolTensor(3):type())
      assert.are.equal('torch.LongStorage', torch.typename(torch.LongStorage { 1 }))
      assert.is_true(torch.isTensor(torch.Tensor(1)))
      assert.is_false(torch.isTensor({}))
   end)
end)

describe('metadata', function()
   it('reports sizes, strides, offsets and #t', function()
      local shape = { math.random(2, 4), math.random(2, 5), math.random(2, 6) }
      local t = rand(shape)
      assert.are.equal(3, t:dim())
      assert.are.equal(3, t:nDimension())
      for d = 1, 3 do
         assert.are.equal(shape[d], t:size(d))
         assert.are.equal(shape[d], t:size(d - 4))
      end
      assert.are.equal(shape[2] * shape[3], t:stride(1))
      assert.are.equal(1, t:stride(-1))
      assert.are.same(shape, (#t):totable())
      assert.is_true(#t == t:size())
      local n = t:narrow(1, 2, 1)
      assert.are.equal(1 + shape[2] * shape[3], n:storageOffset())
      util.assert_error(function() return t:size(4) end, 'size', 'dimension 4', '3-dimensional')
      util.assert_error(function() return t:stride(0) end, 'stride', 'dimension 0')
   end)
end)

describe('views', function()
   it('view/viewAs keep row-major order for every type, with -1 inferred', function()
      for _, ty in ipairs(TYPES) do
         local shape = { math.random(1, 3) * 2, 3, math.random(1, 4) }
         local t, flat = rand(shape, ty[1], ty[2], ty[3])
         local n = numel(shape)
         local function flat_map(out_shape)
            return function(idx) -- the k-th element of the view is the k-th of the source
               local k = flat_pos(out_shape, idx)
               local src, rem = {}, k - 1
               for d = #shape, 1, -1 do
                  src[d] = rem % shape[d] + 1
                  rem = math.floor(rem / shape[d])
               end
               return src
            end
         end
         expect_view(t:view(n), { n }, flat, shape, flat_map { n }, ty[1] .. ' view(n)')
         expect_view(t:view(-1), { n }, flat, shape, flat_map { n }, ty[1] .. ' view(-1)')
         expect_view(t:view(2, -1), { 2, n / 2 }, flat, shape, flat_map { 2, n / 2 }, ty[1] .. ' view(2,-1)')
         local s = { shape[3], 1, shape[1] * shape[2] }
         expect_view(t:view(torch.LongStorage(s)), s, flat, shape, flat_map(s), ty[1] .. ' view(LongStorage)')
         expect_view(t:view(s), s, flat, shape, flat_map(s), ty[1] .. ' view(table)')
         -- view of a view
         local vv = t:view(n):view(shape[1], -1):view(torch.LongStorage(shape))
         expect_view(vv, shape, flat, shape, function(i) return i end, ty[1] .. ' view of view')
         local other = torch.FloatTensor(n, 1)
         expect_view(t:viewAs(other), { n, 1 }, flat, shape, flat_map { n, 1 }, ty[1] .. ' viewAs')
         assert.is_true(shares_storage(t, t:view(-1)))
      end
   end)

   it('writes through views reach the base tensor', function()
      local t = rand({ 3, 4, 5 })
      local v = t:view(12, 5)
      local x = math.random()
      v[7][2] = x -- row 7 of 12 = (2, 3) in the base
      assert.are.equal(x, t[2][3][2])
      local tr = t:transpose(1, 3)
      local y = math.random()
      tr[5][4][3] = y
      assert.are.equal(y, t[3][4][5])
      local n = t:narrow(2, 2, 2):select(3, 4)
      local z = math.random()
      n[3][2] = z
      assert.are.equal(z, t[3][3][4])
   end)

   it('view works on compatible non-contiguous layouts and names the sizes otherwise', function()
      local t, flat = rand({ 6, 4 })
      -- rows 2..4 of a contiguous tensor: still viewable as one flat run
      local n = t:narrow(1, 2, 3)
      expect_view(n:view(12), { 12 }, flat, { 6, 4 },
         function(i) return { 2 + math.floor((i[1] - 1) / 4), (i[1] - 1) % 4 + 1 } end, 'narrowed view')
      local tr = t:t()
      expect_view(tr:view(4, 6, 1), { 4, 6, 1 }, flat, { 6, 4 }, function(i) return { i[2], i[1] } end,
         'transposed view with a unit dim')
      util.assert_error(function() return tr:view(24) end, 'view', 'size 24', '4x6', 'contiguous')
      util.assert_error(function() return t:view(5, 5) end, 'view', '6x4', '5x5', '24', '25')
      util.assert_error(function() return t:view(-1, -1) end, 'view', '-1')
      util.assert_error(function() return t:view(7, -1) end, 'view', '6x4', '7x-1')
      -- fractional sizes truncate, as Torch7's C reads them; a non-number is an error
      assert.are.same({ 6, 4 }, t:view(6.9, 4):size():totable())
      util.assert_error(function() return t:view(0 / 0, 2) end, 'view', 'size 1', 'nan')
   end)

   it('reshape views when it can and copies otherwise', function()
      for _, ty in ipairs { TYPES[1], TYPES[3], TYPES[5] } do
         local t, flat = rand({ 3, 5 }, ty[1], ty[2], ty[3])
         local r = t:reshape(5, 3)
         assert.is_true(shares_storage(r, t))
         expect_view(r, { 5, 3 }, flat, { 3, 5 },
            function(i) local k = (i[1] - 1) * 3 + i[2] - 1 return { math.floor(k / 5) + 1, k % 5 + 1 } end, 'reshape')
         local tr = t:t() -- 5x3, elements (j, i)
         local c = tr:reshape(15)
         assert.is_false(shares_storage(c, t))
         assert.are.equal(ty[1], c:type())
         expect_view(c, { 15 }, flat, { 3, 5 },
            function(i) local k = i[1] - 1 return { k % 3 + 1, math.floor(k / 3) + 1 } end, 'reshape copy')
         local res = T.tensor_types[ty[1]]()
         assert.are.equal(res, torch.reshape(res, tr, 3, -1))
         expect_view(res, { 3, 5 }, flat, { 3, 5 },
            function(i) local k = (i[1] - 1) * 5 + i[2] - 1 return { k % 3 + 1, math.floor(k / 3) + 1 } end,
            'torch.reshape(res, ...)')
         util.assert_error(function() return tr:reshape(4, 4) end, 'reshape', '16')
      end
   end)

   it('narrow, select and sub pick the right elements (negative positions from the end)', function()
      for _, ty in ipairs(TYPES) do
         local shape = { math.random(2, 5), math.random(2, 5), math.random(2, 5) }
         local t, flat = rand(shape, ty[1], ty[2], ty[3])
         for d = 1, 3 do
            local start = math.random(1, shape[d])
            local len = math.random(0, shape[d] - start + 1)
            local out = copy_idx(shape)
            out[d] = len
            expect_view(t:narrow(d, start, len), out, flat, shape,
               function(i) i[d] = i[d] + start - 1 return i end, ty[1] .. ' narrow ' .. d)
            expect_view(t:narrow(d - 4, -1, 1), (function() local o = copy_idx(shape) o[d] = 1 return o end)(), flat,
               shape, function(i) i[d] = shape[d] return i end, ty[1] .. ' narrow(-1)')
            local k = math.random(1, shape[d])
            local sel = {}
            for e = 1, 3 do if e ~= d then sel[#sel + 1] = shape[e] end end
            local function selmap(kk) return function(i) table.insert(i, d, kk) return i end end
            expect_view(t:select(d, k), sel, flat, shape, selmap(k), ty[1] .. ' select ' .. d)
            expect_view(t:select(d, -k), sel, flat, shape, selmap(shape[d] - k + 1), ty[1] .. ' select -k')
         end
         local a1, b1 = math.random(1, shape[1]), -1
         local a2, b2 = -shape[2], math.random(1, shape[2])
         local sub = t:sub(a1, b1, a2, b2)
         expect_view(sub, { shape[1] - a1 + 1, b2, shape[3] }, flat, shape,
            function(i) i[1] = i[1] + a1 - 1 return i end, ty[1] .. ' sub')
      end
      -- select on a 1-d tensor gives the number (Torch7)
      local v, flat = rand({ 5 })
      local k = math.random(1, 5)
      assert.are.equal(flat[k], v:select(1, k))
      assert.are.equal(flat[6 - k], v:select(1, -k))
   end)

   it('transpose, t and permute reorder dimensions', function()
      for _, ty in ipairs(TYPES) do
         local shape = { math.random(1, 4), math.random(2, 4), math.random(1, 3), math.random(2, 3) }
         local t, flat = rand(shape, ty[1], ty[2], ty[3])
         local d1, d2 = math.random(1, 4), math.random(1, 4)
         local out = copy_idx(shape)
         out[d1], out[d2] = shape[d2], shape[d1]
         expect_view(t:transpose(d1, d2), out, flat, shape, function(i) i[d1], i[d2] = i[d2], i[d1] return i end,
            ty[1] .. ' transpose')
         expect_view(t:transpose(-1, 1), { shape[4], shape[2], shape[3], shape[1] }, flat, shape,
            function(i) i[1], i[4] = i[4], i[1] return i end, ty[1] .. ' transpose(-1,1)')
         local p = rand_perm(4)
         local pout = {}
         for i = 1, 4 do pout[i] = shape[p[i]] end
         local function pmap(i)
            local s = {}
            for k = 1, 4 do s[p[k]] = i[k] end
            return s
         end
         expect_view(t:permute(p[1], p[2], p[3], p[4]), pout, flat, shape, pmap, ty[1] .. ' permute')
         expect_view(t:permute(p), pout, flat, shape, pmap, ty[1] .. ' permute(table)')
         local m, mf = rand({ 3, 5 }, ty[1], ty[2], ty[3])
         expect_view(m:t(), { 5, 3 }, mf, { 3, 5 }, function(i) return { i[2], i[1] } end, ty[1] .. ' t()')
         expect_view(m:t():t(), { 3, 5 }, mf, { 3, 5 }, function(i) return i end, ty[1] .. ' t():t()')
      end
   end)

   it('expand repeats size-1 dimensions with stride 0', function()
      for _, ty in ipairs(TYPES) do
         local t, flat = rand({ 3, 1 }, ty[1], ty[2], ty[3])
         local n = math.random(2, 6)
         local e = t:expand(3, n)
         assert.are.same({ 1, 0 }, e:stride():totable())
         expect_view(e, { 3, n }, flat, { 3, 1 }, function(i) return { i[1], 1 } end, ty[1] .. ' expand')
         local e2 = t:expand(2, 3, n)
         assert.are.equal(0, e2:stride(1))
         expect_view(e2, { 2, 3, n }, flat, { 3, 1 }, function(i) return { i[2], 1 } end, ty[1] .. ' expand lead')
         expect_view(t:expand(torch.LongStorage { 3, n }), { 3, n }, flat, { 3, 1 },
            function(i) return { i[1], 1 } end, 'expand(LongStorage)')
         expect_view(t:expandAs(torch.FloatTensor(4, 3, n)), { 4, 3, n }, flat, { 3, 1 },
            function(i) return { i[2], 1 } end, 'expandAs')
         -- a copy of an expanded tensor is materialised
         local c = e:clone()
         assert.is_true(c:isContiguous())
         expect_view(c, { 3, n }, flat, { 3, 1 }, function(i) return { i[1], 1 } end, ty[1] .. ' clone of expand')
      end
      local t = rand({ 3, 2 })
      util.assert_error(function() return t:expand(3, 4) end, 'expand', '3x2', '3x4')
      util.assert_error(function() return t:expand(2) end, 'expand', '3x2')
   end)

   it('squeeze, unsqueeze and unfold', function()
      for _, ty in ipairs(TYPES) do
         local shape = { 1, math.random(2, 4), 1, math.random(2, 5) }
         local t, flat = rand(shape, ty[1], ty[2], ty[3])
         expect_view(t:squeeze(), { shape[2], shape[4] }, flat, shape, function(i) return { 1, i[1], 1, i[2] } end,
            ty[1] .. ' squeeze')
         expect_view(t:squeeze(3), { 1, shape[2], shape[4] }, flat, shape,
            function(i) return { 1, i[2], 1, i[3] } end, ty[1] .. ' squeeze(3)')
         expect_view(t:squeeze(2), shape, flat, shape, function(i) return i end, ty[1] .. ' squeeze(2) keeps')
         expect_view(t:squeeze(-4), { shape[2], 1, shape[4] }, flat, shape,
            function(i) return { 1, i[1], 1, i[3] } end, ty[1] .. ' squeeze(-4)')
         local m, mf = rand({ 3, 4 }, ty[1], ty[2], ty[3])
         expect_view(m:unsqueeze(1), { 1, 3, 4 }, mf, { 3, 4 }, function(i) return { i[2], i[3] } end, 'unsqueeze(1)')
         expect_view(m:unsqueeze(2), { 3, 1, 4 }, mf, { 3, 4 }, function(i) return { i[1], i[3] } end, 'unsqueeze(2)')
         expect_view(m:unsqueeze(3), { 3, 4, 1 }, mf, { 3, 4 }, function(i) return { i[1], i[2] } end, 'unsqueeze(3)')
         expect_view(m:unsqueeze(-1), { 3, 4, 1 }, mf, { 3, 4 }, function(i) return { i[1], i[2] } end,
            'unsqueeze(-1)')
         local v, vf = rand({ math.random(5, 9) }, ty[1], ty[2], ty[3])
         local size, step = math.random(1, 3), math.random(1, 3)
         local n = v:size(1)
         local cnt = math.floor((n - size) / step) + 1
         expect_view(v:unfold(1, size, step), { cnt, size }, vf, { n },
            function(i) return { (i[1] - 1) * step + i[2] } end, ty[1] .. ' unfold')
         local m2, mf2 = rand({ 3, 6 }, ty[1], ty[2], ty[3])
         expect_view(m2:unfold(2, 2, 2), { 3, 3, 2 }, mf2, { 3, 6 },
            function(i) return { i[1], (i[2] - 1) * 2 + i[3] } end, ty[1] .. ' unfold dim 2')
      end
      -- Torch7: a one-element squeeze() gives the number; squeeze(dim) does only on a 1-d tensor
      local one, of = rand({ 1, 1 })
      assert.are.equal(of[1], one:squeeze())
      assert.are.same({ 1 }, one:squeeze(1):size():totable())
      assert.are.equal(of[1], one:view(1):squeeze(1))
   end)

   it('is also reachable as torch.* functions, with an optional result first', function()
      local t, flat = rand({ 3, 4 })
      expect_view(torch.transpose(t, 1, 2), { 4, 3 }, flat, { 3, 4 }, function(i) return { i[2], i[1] } end,
         'torch.transpose')
      expect_view(torch.narrow(t, 2, 2, 2), { 3, 2 }, flat, { 3, 4 }, function(i) return { i[1], i[2] + 1 } end,
         'torch.narrow')
      local res = torch.DoubleTensor()
      assert.are.equal(res, torch.squeeze(res, t:view(3, 1, 4)))
      expect_view(res, { 3, 4 }, flat, { 3, 4 }, function(i) return i end, 'torch.squeeze(res, x)')
      assert.is_true(shares_storage(res, t))
      util.assert_error(function() return torch.t(torch.FloatTensor(), t) end, 't', 'torch.FloatTensor',
         'torch.DoubleTensor')
   end)

   it('rejects bad dimensions and arguments with messages naming them', function()
      local t = rand({ 4, 6 })
      util.assert_error(function() return t:narrow(3, 1, 2) end, 'narrow', 'dimension 3', '4x6')
      util.assert_error(function() return t:narrow(2, 5, 3) end, 'narrow', '[5, 7]', 'dimension 2', '4x6')
      util.assert_error(function() return t:select(1, 5) end, 'select', 'index 5', 'dimension 1', 'size 4')
      util.assert_error(function() return t:select(1, -5) end, 'select', 'index -5', 'size 4')
      util.assert_error(function() return t:select(0, 1) end, 'select', 'dimension 0')
      util.assert_error(function() return t:transpose(1, 3) end, 'transpose', 'dimension 3', '4x6')
      util.assert_error(function() return t:permute(1, 1) end, 'permute', 'repeated')
      util.assert_error(function() return t:permute(1) end, 'permute', '1 dimensions', '2')
      util.assert_error(function() return t:unfold(2, 7, 1) end, 'unfold', 'size 7', 'dimension 2', 'size 6')
      util.assert_error(function() return t:unsqueeze(4) end, 'unsqueeze', 'dimension 4', '4x6')
      util.assert_error(function() return t:sub(1, 5) end, 'sub', '[1, 5]', 'dimension 1', 'size 4')
      util.assert_error(function() return t:sub(1, 2, 3) end, 'sub', '3 numbers')
      util.assert_error(function() return rand({ 2, 3, 4 }):t() end, 't', '2-dimensional', '2x3x4')
      util.assert_error(function() return t:squeeze(1.5) end, 'squeeze', 'integer')
      util.assert_error(function() return t:view(1, 2, 3, 4, 5, 6, 7, 8, 9) end, 'view', 'at most 8')
   end)
end)

describe('copies', function()
   it('contiguous returns self when contiguous and a packed copy otherwise', function()
      local t, flat = rand({ 4, 5 })
      assert.is_true(rawequal(t, t:contiguous()))
      local tr = t:t()
      local c = tr:contiguous()
      assert.is_true(c:isContiguous())
      assert.is_false(shares_storage(c, t))
      expect_view(c, { 5, 4 }, flat, { 4, 5 }, function(i) return { i[2], i[1] } end, 'contiguous')
   end)

   it('clone is an independent contiguous copy of the same type', function()
      for _, ty in ipairs(TYPES) do
         local t, flat = rand({ 3, 4 }, ty[1], ty[2], ty[3])
         local c = t:narrow(2, 2, 3):clone()
         assert.are.equal(ty[1], c:type())
         assert.is_true(c:isContiguous())
         expect_view(c, { 3, 3 }, flat, { 3, 4 }, function(i) return { i[1], i[2] + 1 } end, ty[1] .. ' clone')
         c[1][1] = 1
         assert.are.equal(flat[2], util.flat(t)[2])
      end
   end)

   it('copy converts across types and layouts in place', function()
      for _, src_ty in ipairs(TYPES) do
         local s, sf = rand({ 3, 4 }, src_ty[1], 0, 100)
         local d = torch.DoubleTensor(4, 3)
         assert.are.equal(d, d:copy(s:t()))
         expect_view(d, { 4, 3 }, sf, { 3, 4 }, function(i) return { i[2], i[1] } end, src_ty[1] .. ' copy')
         -- Torch7: same number of elements, different shape
         local d2 = torch.DoubleTensor(12)
         d2:copy(s)
         util.assert_close(util.flat(d2), sf, nil, 'copy flat')
      end
      util.assert_error(function() torch.DoubleTensor(3):copy(torch.DoubleTensor(4)) end, 'copy')
      util.assert_error(function() torch.DoubleTensor(3):copy(5) end, 'copy', 'number')
   end)
end)

describe('resize and set', function()
   it('resize keeps the leading elements when the storage is big enough', function()
      local t, flat = rand({ 3, 4 })
      assert.are.equal(t, t:resize(2, 5))
      assert.are.same({ 2, 5 }, t:size():totable())
      local f = util.flat(t)
      for i = 1, 10 do assert.are.equal(flat[i], f[i]) end
      t:resize(torch.LongStorage { 6 })
      assert.are.same({ 6 }, t:size():totable())
      t:resizeAs(torch.FloatTensor(7, 3))
      assert.are.same({ 7, 3 }, t:size():totable())
      assert.are.equal(21, t:nElement())
      util.assert_error(function() t:resize(2, -1) end, 'resize', 'negative')
   end)

   it('set shares storage and isSetTo/isSameSizeAs/isSize compare layouts', function()
      local a, flat = rand({ 3, 4 })
      local b = torch.DoubleTensor()
      assert.are.equal(b, b:set(a:t()))
      assert.is_true(b:isSetTo(a:t()))
      assert.is_false(b:isSetTo(a))
      assert.is_true(b:isSameSizeAs(torch.FloatTensor(4, 3)))
      assert.is_false(b:isSameSizeAs(a))
      assert.is_true(b:isSize(torch.LongStorage { 4, 3 }))
      assert.is_false(b:isSize(torch.LongStorage { 3, 4 }))
      expect_view(b, { 4, 3 }, flat, { 3, 4 }, function(i) return { i[2], i[1] } end, 'set')
      local x = math.random()
      b[1][3] = x
      assert.are.equal(x, a[3][1])
      -- from a storage with offset, sizes and strides (Torch7's set(storage, offset, size, stride))
      flat = util.flat(a)
      local c = torch.DoubleTensor():set(a:storage(), 2, torch.LongStorage { 2, 3 }, torch.LongStorage { 4, 1 })
      expect_view(c, { 2, 3 }, flat, { 3, 4 }, function(i) return { i[1], i[2] + 1 } end, 'set(storage)')
      local d = torch.DoubleTensor():set(a:storage(), 5, { 8 })
      expect_view(d, { 8 }, flat, { 3, 4 },
         function(i) return { math.floor((i[1] + 3) / 4) + 1, (i[1] + 3) % 4 + 1 } end, 'set(storage, offset, sizes)')
      b:set()
      assert.are.equal(0, b:nElement())
      util.assert_error(function() torch.FloatTensor():set(a) end, 'set', 'torch.FloatTensor', 'torch.DoubleTensor')
      util.assert_error(function() torch.DoubleTensor():set(a:storage(), 1, { 13 }) end, 'as_strided', '12')
   end)
end)

describe('storage', function()
   it('exposes the flat storage with 1-based access, fill, totable and tostring', function()
      for _, ty in ipairs(TYPES) do
         local t, flat = rand({ 3, 4 }, ty[1], ty[2], ty[3])
         local s = t:narrow(1, 2, 1):storage()
         assert.are.equal(12, s:size())
         assert.are.equal((ty[1]:gsub('Tensor', 'Storage')), s:type())
         for i = 1, 12 do assert.are.equal(flat[i], s[i]) end
         util.assert_close(s:totable(), flat, { atol = 0, rtol = 0 }, 'storage totable')
         local k = math.random(1, 12)
         s[k] = 3
         assert.are.equal(3, util.flat(t)[k])
         s:fill(2)
         local twos = {}
         for i = 1, 12 do twos[i] = 2 end
         util.assert_close(util.flat(t), twos, { atol = 0, rtol = 0 }, 'storage fill')
         assert.truthy(tostring(s):find('[' .. s:type() .. ' of size 12]', 1, true))
         util.assert_error(function() return s[13] end, 'storage', 'index 13', 'size 12')
      end
      local t, flat = rand({ 5 })
      local p = t:storage():data()
      for i = 1, 5 do assert.are.equal(flat[i], p[i - 1]) end
      assert.is_true(t:storage() == t:view(5, 1):storage())
   end)
end)

describe('type conversion', function()
   local ALL = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
      'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.BoolTensor' }
   local METHOD = { ['torch.DoubleTensor'] = 'double', ['torch.FloatTensor'] = 'float', ['torch.HalfTensor'] = 'half',
      ['torch.BFloat16Tensor'] = 'bfloat16', ['torch.IntTensor'] = 'int', ['torch.LongTensor'] = 'long',
      ['torch.ByteTensor'] = 'byte', ['torch.BoolTensor'] = 'bool' }
   local float32 = require('ffi').new('float[1]')
   -- the value a conversion to `ty` should give, within tolerance
   local function convert(v, ty)
      if ty == 'torch.BoolTensor' then return v ~= 0 and 1 or 0 end
      if ty == 'torch.FloatTensor' then float32[0] = v return float32[0] end
      if ty == 'torch.IntTensor' or ty == 'torch.LongTensor' or ty == 'torch.ByteTensor' then
         return v >= 0 and math.floor(v) or math.ceil(v) -- truncation toward zero
      end
      return v
   end
   local TOL = { ['torch.HalfTensor'] = { atol = 1e-3, rtol = 1e-3 },
      ['torch.BFloat16Tensor'] = { atol = 1e-2, rtol = 8e-3 } }

   it('converts between every pair of types on random data', function()
      for _, from in ipairs(ALL) do
         -- values representable in every target's range; some exact zeros for bool
         local shape = { 3, math.random(2, 5) }
         local t
         if from == 'torch.BoolTensor' then
            t = rand(shape, 'torch.LongTensor', 0, 2)
            t = t:bool()
         else
            local _, flat = rand(shape, from, 0, 200)
            for i = 1, #flat, 4 do flat[i] = 0 end
            t = T.from_flat(flat, shape, T.parse_typename(from), T.CPU_DEVICE)
         end
         local src = t:t() -- non-contiguous source
         local sflat = util.flat(src)
         for _, to in ipairs(ALL) do
            local r = src:type(to)
            assert.are.equal(to, r:type())
            local r2 = src[METHOD[to]](src)
            assert.are.equal(to, r2:type())
            local expected = {}
            for i, v in ipairs(sflat) do expected[i] = convert(v, to) end
            local tol = TOL[to] or { atol = 0, rtol = 0 }
            util.assert_close(r, expected, tol, from .. ' -> ' .. to)
            util.assert_close(r2, expected, tol, from .. ' -> ' .. to .. ' (method)')
            if to == from then assert.is_true(rawequal(src, r)) end
            util.assert_close(src:typeAs(T.tensor_types[to](1)), expected, tol, 'typeAs')
         end
      end
   end)

   it('truncates floats toward zero when converting to integers', function()
      local t, flat = rand({ 50 }, 'torch.DoubleTensor', -100, 100)
      for _, to in ipairs { 'torch.IntTensor', 'torch.LongTensor' } do
         local expected = {}
         for i, v in ipairs(flat) do expected[i] = v >= 0 and math.floor(v) or math.ceil(v) end
         util.assert_close(t:type(to), expected, { atol = 0, rtol = 0 }, to)
      end
   end)

   it('rounds to half and bfloat16 within their precision', function()
      local t, flat = rand({ 200 }, 'torch.DoubleTensor', -1000, 1000)
      util.assert_close(t:half(), flat, { atol = 1e-4, rtol = 2 ^ -11 }, 'half rounding')
      util.assert_close(t:bfloat16(), flat, { atol = 1e-4, rtol = 2 ^ -8 }, 'bf16 rounding')
      util.assert_close(t:float(), flat, { atol = 0, rtol = 2 ^ -24 }, 'float rounding')
   end)

   it('rejects unknown type names', function()
      util.assert_error(function() return torch.Tensor(2):type('torch.FooTensor') end, 'type', 'torch.FooTensor')
   end)

   gpu_it('keeps data across devices and keeps the device in conversions', function()
      local t, flat = rand({ 3, 5 })
      local g = t:type('torch.CudaDoubleTensor')
      assert.are.equal('torch.CudaDoubleTensor', g:type())
      local f = g:float()
      assert.are.equal('torch.CudaTensor', f:type())
      util.assert_close(f, flat, util.tol['torch.FloatTensor'], 'cuda float()')
      expect_view(g:t():contiguous(), { 5, 3 }, flat, { 3, 5 }, function(i) return { i[2], i[1] } end, 'cuda t()')
      expect_view(g:narrow(2, 2, 3):clone(), { 3, 3 }, flat, { 3, 5 }, function(i) return { i[1], i[2] + 1 } end,
         'cuda narrow clone')
      expect_view(g:t():reshape(15), { 15 }, flat, { 3, 5 },
         function(i) local k = i[1] - 1 return { k % 3 + 1, math.floor(k / 3) + 1 } end, 'cuda reshape')
      local back = torch.DoubleTensor(3, 5):copy(g)
      util.assert_close(back, flat, nil, 'cuda -> cpu copy')
   end)
end)

describe('Lua callbacks', function()
   it('apply, map and map2 visit elements in row-major order', function()
      for _, ty in ipairs { TYPES[1], TYPES[2], TYPES[3], TYPES[5] } do
         local t, flat = rand({ 4, 3 }, ty[1], ty[2], ty[3])
         local tr = t:t()
         local seen = {}
         tr:apply(function(x) seen[#seen + 1] = x end)
         util.assert_close(seen, util.flat(tr), { atol = 0, rtol = 0 }, 'apply order')
         tr:apply(function(x) return x * 2 end)
         local expected = {}
         for i, v in ipairs(flat) do expected[i] = v * 2 end
         util.assert_close(t, expected, util.tol[ty[1]] or { atol = 0, rtol = 0 }, ty[1] .. ' apply')
         local u, uf = rand({ 12 }, ty[1], ty[2], ty[3])
         t:map(u, function(x, y) return y end)
         util.assert_close(t, uf, { atol = 0, rtol = 0 }, ty[1] .. ' map')
         local w, wf = rand({ 2, 6 }, ty[1], ty[2], ty[3])
         local sum = {}
         for i = 1, 12 do sum[i] = uf[i] - wf[i] end
         t:map2(u, w, function(_, y, z) return y - z end)
         util.assert_close(t, sum, util.tol[ty[1]] or { atol = 0, rtol = 0 }, ty[1] .. ' map2')
      end
      util.assert_error(function() torch.DoubleTensor(3):map(torch.DoubleTensor(4), function() end) end, 'map', '3',
         '4', 'number')
      util.assert_error(function() torch.DoubleTensor(3):apply(5) end, 'apply', 'function')
   end)
end)
