-- tensor_ops_spec.lua: every tensor op computed on the GPU and on the CPU from the same fresh
-- random inputs (contiguous, transposed, narrowed and expanded layouts) and compared with dtype
-- tolerances: pointwise, reductions, sort/topk, matrix products, indexing.
-- GPU tests show as pending on machines without one.
local torch = require 'moontorch'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'
local unpack = unpack or table.unpack
local gpu_it = cu.gpu_it
local same, on_both, on_layouts, layouts, rand_pair = cu.same, cu.on_both, cu.on_layouts, cu.layouts, cu.rand_pair
local copy_shape, check_indices = cu.copy_shape, cu.check_indices
local FLOATS, SHAPES = cu.FLOATS, cu.SHAPES

---------------------------------------------------------------------------------------------
describe('CUDA pointwise ops match the CPU', function()
   local unary_float = {
      exp = { -2, 2 }, log = { 0.1, 5 }, sqrt = { 0, 4 }, rsqrt = { 0.1, 4 }, abs = { -3, 3 }, sign = { -3, 3 },
      neg = { -3, 3 }, tanh = { -3, 3 }, sigmoid = { -5, 5 }, floor = { -5, 5 }, ceil = { -5, 5 },
      round = { -5, 5 }, log1p = { -0.5, 3 }, expm1 = { -2, 2 }, sin = { -4, 4 }, cos = { -4, 4 },
      square = { -3, 3 }, cinv = { 0.5, 3 },
   }
   gpu_it('unary math on every float dtype and layout', function()
      for name, r in pairs(unary_float) do
         for _, ty in ipairs(FLOATS) do
            for _, shape in ipairs(SHAPES) do
               on_layouts(name, ty, shape, function(a) return torch[name](a) end, { { r[1], r[2] } }, nil, true)
            end
            -- the in-place method form
            on_layouts(name .. ' in place', ty, { 5, 6 }, function(a)
               local x = a:clone()
               return x[name](x)
            end, { { r[1], r[2] } })
         end
      end
   end)

   gpu_it('scalar ops: pow, clamp, add/mul/div by a scalar', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            on_layouts('pow', ty, shape, function(a) return torch.pow(a, 2.5) end, { { 0, 3 } }, nil, true)
            on_layouts('clamp', ty, shape, function(a) return torch.clamp(a, -0.4, 0.6) end, { { -1, 1 } }, nil, true)
            on_layouts('mul', ty, shape, function(a) return torch.mul(a, -1.75) end, { { -1, 1 } }, nil, true)
            on_layouts('div', ty, shape, function(a) return torch.div(a, 3) end, { { -1, 1 } }, nil, true)
            on_layouts('add scalar', ty, shape, function(a) return torch.add(a, 0.25) end, { { -1, 1 } }, nil, true)
         end
      end
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor' } do
         on_layouts('int abs/neg/sign/clamp', ty, { 4, 9 }, function(a)
            return torch.abs(a), torch.neg(a), torch.sign(a), torch.clamp(a, -20, 30), torch.mul(a, 3), torch.pow(a, 2)
         end, { { -100, 100 } }, nil, true)
      end
   end)

   gpu_it('binary ops with broadcasting and comparisons', function()
      local ops = {
         add = function(a, b) return torch.add(a, b), torch.add(a, 0.5, b) end,
         sub = function(a, b) return torch.sub(a, b) end,
         cmul = function(a, b) return torch.cmul(a, b) end,
         cdiv = function(a, b) return torch.cdiv(a, b) end,
         cmax = function(a, b) return torch.cmax(a, b), torch.cmin(a, b) end,
         compare = function(a, b)
            return torch.eq(a, b), torch.ne(a, b), torch.lt(a, b), torch.le(a, b), torch.gt(a, b), torch.ge(a, b),
               torch.lt(a, 0.25), torch.ge(a, -0.5)
         end,
      }
      for name, fn in pairs(ops) do
         for _, ty in ipairs(FLOATS) do
            for _, shape in ipairs(SHAPES) do
               -- b away from 0 so cdiv is well conditioned on both devices
               on_layouts(name, ty, shape, fn, { { -1, 1 }, { 0.5, 2 } }, nil, true)
            end
            -- numpy-style broadcasting: 4x1x6 with 3x1
            local a, b = util.rand_tensor({ 4, 1, 6 }, ty), util.rand_tensor({ 3, 1 }, ty, 0.5, 2)
            on_both(name .. ' broadcast ' .. ty, ty, fn, { a, b })
         end
      end
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor' } do
         on_layouts('int binary', ty, { 5, 7 }, function(a, b)
            return torch.add(a, b), torch.sub(a, b), torch.cmul(a, b), torch.cdiv(a, b), torch.eq(a, b), torch.gt(a, b)
         end, { { -50, 50 }, { 1, 9 } })
      end
   end)

   gpu_it('in-place forms and operators', function()
      for _, ty in ipairs(FLOATS) do
         on_layouts('in place', ty, { 6, 5 }, function(a, b)
            local x = a:clone()
            x:add(b):mul(2):cmul(b):add(-0.5, b):clamp(-2, 2)
            return x, a + b, a - b, a * 2, a / 4, -a
         end, { { -1, 1 }, { -1, 1 } })
      end
   end)

   gpu_it('addcmul, addcdiv, fill, zero', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            on_layouts('addcmul/addcdiv', ty, shape, function(a, b, c)
               return torch.addcmul(a, 0.75, b, c), torch.addcdiv(a, -1.5, b, c), a:clone():addcmul(2, b, c)
            end, { { -1, 1 }, { -1, 1 }, { 0.5, 2 } }, nil, true)
         end
         on_both('fill ' .. ty, ty, function(a) return a:clone():fill(3.25), a:clone():zero() end,
            { util.rand_tensor({ 9, 4 }, ty) })
      end
   end)

   gpu_it('masked fill and masked select', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         for _, shape in ipairs(SHAPES) do
            on_layouts('masked', ty, shape, function(a, m)
               local mask = torch.gt(m, 0.3)
               return a:clone():maskedFill(mask, -7), a:maskedSelect(mask)
            end, { { -10, 10 }, { 0, 1, ty = 'torch.DoubleTensor' } })
         end
      end
   end)

   gpu_it('big contiguous and strided inputs', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.HalfTensor' } do
         on_layouts('big', ty, { 513, 1031 }, function(a, b)
            return torch.add(a, 2, b), torch.exp(a), torch.lt(a, b)
         end, { { -1, 1 }, { -1, 1 } })
      end
   end)
end)

---------------------------------------------------------------------------------------------
describe('CUDA reductions match the CPU', function()
   local function dims_of(shape)
      local d = {}
      for i = 1, #shape do d[i] = i end
      return d
   end

   gpu_it('sum, prod, mean with and without a dimension', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 4, 1, 6 }, { 2, 3, 33 }, { 300, 41 } } do
            local n = util.numel(shape)
            on_layouts('sum/mean', ty, shape, function(a)
               local r = { a:sum(), a:mean() }
               for _, d in ipairs(dims_of(shape)) do
                  r[#r + 1] = a:sum(d)
                  r[#r + 1] = a:mean(d)
               end
               return unpack(r)
            end, { { -1, 1 } }, math.max(1, n / 100), true)
            on_layouts('prod', ty, shape, function(a)
               local r = { }
               for _, d in ipairs(dims_of(shape)) do r[#r + 1] = a:prod(d) end
               if n <= 100 then r[#r + 1] = a:prod() end
               return unpack(r)
            end, { { 0.9, 1.1 } }, 10)
         end
      end
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor' } do
         on_layouts('int sum', ty, { 6, 7 }, function(a) return a:sum(), a:sum(1), a:sum(2), a:max(), a:min() end,
            { { -1000, 1000 } })
      end
   end)

   gpu_it('a full reduction over many blocks', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local a = util.rand_tensor({ 1000003 }, ty)
         on_both('big sum', ty, function(x) return x:sum(), x:mean(), x:max(), x:min(), x:norm() end, { a }, 1000)
      end
   end)

   gpu_it('max, min, argmax with and without a dimension', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 4, 1, 6 }, { 2, 3, 33 }, { 200, 37 } } do
            for _, L in ipairs(layouts(shape, true)) do
               local a, g = rand_pair(L, ty)
               same(a:max(), g:max(), ty, 'max')
               same(a:min(), g:min(), ty, 'min')
               -- the argmax of all elements, as a value
               local flat_c = util.flat(a)
               local flat_i = g:argmax()
               assert.are.equal(a:max(), flat_c[flat_i], 'argmax() points at the max')
               for _, d in ipairs(dims_of(shape)) do
                  for _, name in ipairs { 'max', 'min' } do
                     local cv = a[name](a, d)
                     local gv, gi = g[name](g, d)
                     same(cv, gv, ty, ('%s(%d) %s %s'):format(name, d, ty, L[1]))
                     check_indices(name, a, d, cv, gi)
                  end
                  local gi = g:argmax(d)
                  assert.are.equal('torch.CudaLongTensor', gi:type())
                  check_indices('argmax', a, d, a:max(d), gi)
               end
            end
         end
      end
   end)

   gpu_it('var, std and norm', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 4, 1, 6 }, { 2, 3, 33 }, { 100, 23 } } do
            local n = util.numel(shape)
            on_layouts('var/std', ty, shape, function(a)
               local r = { a:var(), a:std(), a:var(true), a:std(true) }
               for _, d in ipairs(dims_of(shape)) do
                  if shape[d] > 1 then
                     r[#r + 1] = a:var(d)
                     r[#r + 1] = a:std(d, true)
                  end
               end
               return unpack(r)
            end, { { -1, 1 } }, math.max(1, n / 100), true)
            on_layouts('norm', ty, shape, function(a)
               local r = { a:norm(), a:norm(1), a:norm(3), a:norm(0), a:norm(math.huge) }
               for _, d in ipairs(dims_of(shape)) do
                  r[#r + 1] = a:norm(2, d)
                  r[#r + 1] = a:norm(1, d)
               end
               return unpack(r)
            end, { { -1, 1 } }, math.max(1, n / 100), true)
         end
      end
   end)

   gpu_it('any and all', function()
      for _, shape in ipairs(SHAPES) do
         on_layouts('any/all', 'torch.DoubleTensor', shape, function(a)
            local m = torch.gt(a, 0.9)
            return m:any(), m:all(), torch.gt(a, -2):all(), m:any(1), m:all(#shape)
         end, { { -1, 1 } })
      end
   end)
end)

---------------------------------------------------------------------------------------------
describe('CUDA sort and topk match the CPU', function()
   gpu_it('sort along each dimension, both directions, with ties (stable)', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         -- integers in a small range make ties; stability fixes their order on both devices
         local lo, hi = -1, 1
         if ty == 'torch.LongTensor' then lo, hi = 0, 6 end
         for _, shape in ipairs { { 9 }, { 4, 17 }, { 3, 5, 6 }, { 2, 5000 } } do
            for d = 1, #shape do
               for _, desc in ipairs { false, true } do
                  on_layouts('sort', ty, shape, function(a) return a:sort(d, desc) end, { { lo, hi } })
               end
            end
         end
      end
   end)

   gpu_it('topk: k smallest and largest, sorted', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         for _, shape in ipairs { { 9 }, { 4, 17 }, { 3, 5, 6 }, { 3, 3000 } } do
            for d = 1, #shape do
               for _, k in ipairs { 1, 3, shape[d] } do
                  if k <= shape[d] then
                     for _, dir in ipairs { false, true } do
                        for _, L in ipairs(layouts(shape)) do
                           local a, g = rand_pair(L, ty)
                           local cv = a:topk(k, d, dir, true)
                           local gv, gi = g:topk(k, d, dir, true)
                           same(cv, gv, ty, ('topk k=%d dim=%d dir=%s %s'):format(k, d, tostring(dir), L[1]))
                           check_indices('topk', a, d, cv, gi)
                        end
                     end
                  end
               end
            end
         end
      end
   end)

   gpu_it('topk beyond the size fails clearly', function()
      local g = torch.CudaTensor(5):fill(1)
      util.assert_error(function() return g:topk(6) end, 'topk')
   end)
end)

---------------------------------------------------------------------------------------------
describe('CUDA matrix products match the CPU', function()
   local MM_SHAPES = { { 1, 1, 1 }, { 3, 5, 7 }, { 17, 33, 9 }, { 64, 128, 96 } }

   gpu_it('mm with contiguous and transposed operands', function()
      for _, ty in ipairs(FLOATS) do
         for _, s in ipairs(MM_SHAPES) do
            local n, k, m = s[1], s[2], s[3]
            local A = util.rand_tensor({ n, k }, ty)
            local B = util.rand_tensor({ k, m }, ty)
            local At = util.rand_tensor({ k, n }, ty)
            local Bt = util.rand_tensor({ m, k }, ty)
            local Bg = util.rand_tensor({ k, m + 4 }, ty)
            local scale = math.max(1, k / 4)
            on_both('mm ' .. ty, ty, function(a, b) return torch.mm(a, b) end, { A, B }, scale)
            on_both('mm transposed ' .. ty, ty, function(a, b, at, bt)
               return torch.mm(at:t(), b), torch.mm(a, bt:t()), torch.mm(at:t(), bt:t())
            end, { A, B, At, Bt }, scale)
            on_both('mm gapped rows ' .. ty, ty, function(a, bg) return torch.mm(a, bg:narrow(2, 3, m)) end, { A, Bg },
               scale)
            -- a result tensor that is itself transposed
            on_both('mm into transposed ' .. ty, ty, function(a, b)
               local r = T.tensor_types[a:type()](m, n):t()
               torch.mm(r, a, b)
               return r
            end, { A, B }, scale)
         end
      end
   end)

   gpu_it('mm with strides cuBLAS cannot take goes through a copy', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local big = util.rand_tensor({ 10, 12 }, ty)
         on_both('mm strided', ty, function(x)
            local a = x:narrow(1, 1, 5):unfold(2, 3, 2):select(3, 1) -- 5 x 5 with column stride 2
            return torch.mm(a, a)
         end, { big }, 2)
      end
   end)

   gpu_it('addmm with alpha and beta, including beta = 0 ignoring NaN', function()
      for _, ty in ipairs(FLOATS) do
         for _, s in ipairs(MM_SHAPES) do
            local n, k, m = s[1], s[2], s[3]
            local A, B, Cm = util.rand_tensor({ n, k }, ty), util.rand_tensor({ k, m }, ty),
               util.rand_tensor({ n, m }, ty)
            local scale = math.max(1, k / 4)
            on_both('addmm ' .. ty, ty, function(c, a, b)
               return torch.addmm(0.5, c, -2, a, b), c:clone():addmm(a, b)
            end, { Cm, A, B }, scale)
            on_both('addmm beta 0 ' .. ty, ty, function(c, a, b)
               local nan = c:clone():fill(0 / 0)
               return torch.addmm(0, nan, 1.5, a, b)
            end, { Cm, A, B }, scale)
         end
      end
   end)

   gpu_it('bmm and baddbmm', function()
      for _, ty in ipairs(FLOATS) do
         for _, s in ipairs { { 1, 2, 3, 4 }, { 5, 7, 3, 9 }, { 3, 16, 32, 8 } } do
            local b, n, k, m = s[1], s[2], s[3], s[4]
            local A, B = util.rand_tensor({ b, n, k }, ty), util.rand_tensor({ b, k, m }, ty)
            local Bt = util.rand_tensor({ b, m, k }, ty)
            local Cm = util.rand_tensor({ b, n, m }, ty)
            local scale = math.max(1, k / 4)
            on_both('bmm ' .. ty, ty, function(x, y, yt, c)
               return torch.bmm(x, y), torch.bmm(x, yt:transpose(2, 3)), torch.baddbmm(0.25, c, 2, x, y)
            end, { A, B, Bt, Cm }, scale)
         end
      end
   end)

   gpu_it('addmv, mv and dot', function()
      for _, ty in ipairs(FLOATS) do
         for _, s in ipairs { { 1, 1 }, { 5, 3 }, { 33, 17 }, { 200, 300 } } do
            local n, k = s[1], s[2]
            local M, Mt = util.rand_tensor({ n, k }, ty), util.rand_tensor({ k, n }, ty)
            local v, y = util.rand_tensor({ k }, ty), util.rand_tensor({ n }, ty)
            local v2 = util.rand_tensor({ 2 * k }, ty)
            local scale = math.max(1, k / 4)
            on_both('mv ' .. ty, ty, function(m, mt, x, yy, x2)
               return torch.mv(m, x), torch.mv(mt:t(), x), torch.addmv(0.5, yy, 3, m, x),
                  torch.mv(m, x2:view(k, 2):select(2, 1))
            end, { M, Mt, v, y, v2 }, scale)
            on_both('dot ' .. ty, ty, function(x, x2)
               local strided = x2:view(k, 2):select(2, 1)
               return torch.dot(x, x), torch.dot(x, strided)
            end, { v, v2 }, scale)
         end
      end
   end)
end)

---------------------------------------------------------------------------------------------
describe('CUDA indexing ops match the CPU', function()
   -- random 1-based indices into a dimension of size n
   local function rand_index(count, n)
      local t = torch.LongTensor(count)
      for i = 1, count do t[i] = math.random(1, n) end
      return t
   end

   gpu_it('cat along each dimension', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         for d = 1, 3 do
            local sa, sb, sc = { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 }
            sb[d], sc[d] = 1, 5
            local a, b, c = util.rand_tensor(sa, ty, -9, 9), util.rand_tensor(sb, ty, -9, 9),
               util.rand_tensor(sc, ty, -9, 9)
            on_both('cat dim ' .. d, ty, function(x, y, z) return torch.cat({ x, y, z }, d), torch.cat(x, y, d) end,
               { a, b, c })
            on_both('cat transposed ' .. d, ty, function(x, y)
               return torch.cat({ x:transpose(1, 3), y:transpose(1, 3) }, 4 - d)
            end, { a, b })
         end
      end
   end)

   gpu_it('index, indexAdd, indexFill along each dimension (with duplicate indices)', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         for _, shape in ipairs { { 9 }, { 4, 7 }, { 3, 5, 6 } } do
            for d = 1, #shape do
               local idx = rand_index(6, shape[d])
               for _, L in ipairs(layouts(shape)) do
                  local a, g = rand_pair(L, ty, -9, 9)
                  local gidx = idx:cuda()
                  same(a:index(d, idx), g:index(d, gidx), ty, 'index ' .. L[1])
                  local ssz = copy_shape(shape)
                  ssz[d] = 6
                  local src = util.rand_tensor(ssz, ty, -9, 9)
                  same(a:clone():indexAdd(d, idx, src), g:clone():indexAdd(d, gidx, src:cuda()), ty,
                     'indexAdd ' .. L[1], 4)
                  same(a:clone():indexFill(d, idx, -3), g:clone():indexFill(d, gidx, -3), ty, 'indexFill ' .. L[1])
               end
            end
         end
      end
   end)

   gpu_it('gather and scatter along each dimension', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         for _, shape in ipairs { { 4, 7 }, { 3, 5, 6 } } do
            for d = 1, #shape do
               -- gather: any indices; scatter: a permutation along d, so no position is written twice
               local isz = copy_shape(shape)
               local n = shape[d]
               local gather_idx = torch.LongTensor(unpack(isz))
               gather_idx:copy(torch.DoubleTensor(unpack(isz)):uniform(1, n + 1):floor())
               local perm = torch.LongTensor(unpack(isz))
               local sizes_before = 1
               for i = 1, d - 1 do sizes_before = sizes_before * shape[i] end
               local sizes_after = 1
               for i = d + 1, #shape do sizes_after = sizes_after * shape[i] end
               local pv = perm:view(sizes_before, n, sizes_after)
               for i = 1, sizes_before do
                  for j = 1, sizes_after do
                     local p = torch.randperm(n)
                     for r = 1, n do pv[i][r][j] = p[r] end
                  end
               end
               for _, L in ipairs(layouts(shape)) do
                  local a, g = rand_pair(L, ty, -9, 9)
                  same(a:gather(d, gather_idx), g:gather(d, gather_idx:cuda()), ty, 'gather ' .. L[1])
                  local src = util.rand_tensor(shape, ty, -9, 9)
                  same(a:clone():scatter(d, perm, src), g:clone():scatter(d, perm:cuda(), src:cuda()), ty,
                     'scatter ' .. L[1])
                  same(a:clone():scatter(d, perm:narrow(d, 1, 1), 2.5),
                     g:clone():scatter(d, perm:narrow(d, 1, 1):cuda(), 2.5), ty, 'scatter value ' .. L[1])
               end
            end
         end
      end
   end)

   gpu_it('out-of-range indices fail without corrupting memory', function()
      local g = torch.CudaTensor(4, 5):fill(1)
      local bad = torch.LongTensor({ { 1, 6 } }):cuda()
      util.assert_error(function() return g:gather(2, bad) end, 'gather', 'out of range')
      local badi = torch.LongTensor({ 2, 9 }):cuda()
      util.assert_error(function() return g:index(1, badi) end, 'out of range')
      assert.are.equal(20, g:sum())
   end)
end)

