-- linalg_spec.lua: mm, bmm, addmm, baddbmm, addbmm, addmv, mv, dot, addr, ger against float64
-- triple loops in Lua, on fresh random inputs of odd sizes and assorted memory layouts.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local NAN = 0 / 0

-- test dtypes: typename, tolerance, value range (integers draw from [lo, hi) and are floored)
local DTYPES = {
   { 'torch.DoubleTensor', util.tol['torch.DoubleTensor'], -1, 1 },
   { 'torch.FloatTensor', { atol = 2e-5, rtol = 2e-5 }, -1, 1 },
   { 'torch.HalfTensor', util.tol['torch.HalfTensor'], -1, 1 },
   { 'torch.BFloat16Tensor', util.tol['torch.BFloat16Tensor'], -1, 1 },
   { 'torch.IntTensor', { atol = 0, rtol = 0 }, -5, 6 },
   { 'torch.LongTensor', { atol = 0, rtol = 0 }, -50, 50 },
   { 'torch.ByteTensor', { atol = 0, rtol = 0 }, 0, 4 },
}

-- integer results wrap like the dtype does
local function wrap(typename, v)
   if typename == 'torch.ByteTensor' then return v % 256 end
   if typename == 'torch.IntTensor' then
      v = v % 4294967296
      return v >= 2147483648 and v - 4294967296 or v
   end
   return v
end

local function wrap_all(typename, flat)
   for i = 1, #flat do flat[i] = wrap(typename, flat[i]) end
   return flat
end

-- row-major product of flat matrices: A (n x k) times B (k x m)
local function ref_mm(A, B, n, k, m)
   local out = {}
   for i = 0, n - 1 do
      for j = 0, m - 1 do
         local s = 0
         for p = 0, k - 1 do s = s + A[i * k + p + 1] * B[p * m + j + 1] end
         out[i * m + j + 1] = s
      end
   end
   return out
end

-- beta*C + alpha*P elementwise; beta == 0 ignores C entirely (BLAS semantics)
local function axpby(beta, C, alpha, P)
   local out = {}
   for i = 1, #P do out[i] = (beta == 0 and 0 or beta * C[i]) + alpha * P[i] end
   return out
end

-- A random r x c matrix of a dtype in one of several layouts, with its flat row-major values.
local LAYOUTS = { 'contiguous', 'transposed', 'narrowed', 'strided', 'expanded' }
local function rand_matrix(r, c, layout, ty, lo, hi)
   local t
   if layout == 'contiguous' then
      t = util.rand_tensor({ r, c }, ty, lo, hi)
   elseif layout == 'transposed' then -- column-major storage
      t = util.rand_tensor({ c, r }, ty, lo, hi):t()
   elseif layout == 'narrowed' then   -- row stride larger than the row
      t = util.rand_tensor({ r + 2, c + 3 }, ty, lo, hi):narrow(1, 2, r):narrow(2, 3, c)
   elseif layout == 'strided' then    -- no unit stride at all: BLAS cannot take it as is
      t = util.rand_tensor({ r, c, 2 }, ty, lo, hi):select(3, 2)
   elseif layout == 'expanded' then   -- every row the same memory
      t = util.rand_tensor({ 1, c }, ty, lo, hi):expand(r, c)
   end
   return t, util.flat(t)
end

local function rand_vector(n, layout, ty, lo, hi)
   local t
   if layout == 'contiguous' then t = util.rand_tensor({ n }, ty, lo, hi)
   elseif layout == 'strided' then t = util.rand_tensor({ n, 3 }, ty, lo, hi):select(2, 2)
   elseif layout == 'expanded' then t = util.rand_tensor({ 1 }, ty, lo, hi):expand(n)
   end
   return t, util.flat(t)
end

local SHAPES = { { 1, 1, 1 }, { 3, 5, 7 }, { 17, 33, 9 }, { 2, 1, 4 }, { 40, 41, 43 } }

describe('mm', function()
   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('matches a float64 triple loop for ' .. ty .. ' in odd sizes', function()
         for _, s in ipairs(SHAPES) do
            local n, k, m = s[1], s[2], s[3]
            local a, fa = rand_matrix(n, k, 'contiguous', ty, lo, hi)
            local b, fb = rand_matrix(k, m, 'contiguous', ty, lo, hi)
            local r = torch.mm(a, b)
            assert.are.same({ n, m }, T.sizes(r))
            assert.are.equal(ty, r:type())
            util.assert_close(r, wrap_all(ty, ref_mm(fa, fb, n, k, m)), tol, ty .. ' mm ' .. n .. 'x' .. k .. 'x' .. m)
         end
      end)
   end

   for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
      it('handles every operand layout for ' .. ty, function()
         local tol = util.tol[ty] or { atol = 0, rtol = 0 }
         local lo, hi = -1, 1
         if ty == 'torch.LongTensor' then lo, hi = -9, 10 end
         for _, la in ipairs(LAYOUTS) do
            for _, lb in ipairs(LAYOUTS) do
               local n, k, m = 6, 5, 7
               local a, fa = rand_matrix(n, k, la, ty, lo, hi)
               local b, fb = rand_matrix(k, m, lb, ty, lo, hi)
               util.assert_close(torch.mm(a, b), ref_mm(fa, fb, n, k, m), tol, ty .. ' ' .. la .. ' x ' .. lb)
            end
         end
      end)
   end

   it('writes into results of any layout (res:mm(a, b))', function()
      local n, k, m = 7, 4, 5
      for _, lr in ipairs { 'contiguous', 'transposed', 'narrowed', 'strided' } do
         local a, fa = rand_matrix(n, k, 'contiguous', 'torch.FloatTensor')
         local b, fb = rand_matrix(k, m, 'transposed', 'torch.FloatTensor')
         local res = rand_matrix(n, m, lr, 'torch.FloatTensor')
         local r = res:mm(a, b)
         assert.are.equal(res, r)
         util.assert_close(res, ref_mm(fa, fb, n, k, m), util.tol['torch.FloatTensor'], 'result ' .. lr)
      end
   end)

   it('resizes a result of the wrong size and returns it', function()
      local a, fa = rand_matrix(3, 4, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(4, 2, 'contiguous', 'torch.DoubleTensor')
      local res = torch.DoubleTensor(9)
      assert.are.equal(res, torch.mm(res, a, b))
      assert.are.same({ 3, 2 }, T.sizes(res))
      util.assert_close(res, ref_mm(fa, fb, 3, 4, 2))
   end)

   it('gives the right answer when the result is also an operand', function()
      local a, fa = rand_matrix(5, 5, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(5, 5, 'contiguous', 'torch.DoubleTensor')
      torch.mm(a, a, b)
      util.assert_close(a, ref_mm(fa, fb, 5, 5, 5), nil, 'res == m1')
      local c, fc = rand_matrix(5, 5, 'contiguous', 'torch.DoubleTensor')
      c:mm(c:t(), c)
      local ft = {}
      for i = 0, 4 do
         for j = 0, 4 do ft[i * 5 + j + 1] = fc[j * 5 + i + 1] end
      end
      util.assert_close(c, ref_mm(ft, fc, 5, 5, 5), nil, 'res == m1^T == m2')
   end)

   it('supports a:mm(b) returning a new product', function()
      local a, fa = rand_matrix(3, 2, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(2, 4, 'contiguous', 'torch.DoubleTensor')
      util.assert_close(a:mm(b), ref_mm(fa, fb, 3, 2, 4))
      assert.are.same({ 3, 2 }, T.sizes(a))
   end)

   it('runs large float32 products through BLAS correctly', function()
      local n, k, m = 130, 257, 67
      local a, fa = rand_matrix(n, k, 'transposed', 'torch.FloatTensor')
      local b, fb = rand_matrix(k, m, 'contiguous', 'torch.FloatTensor')
      util.assert_close(torch.mm(a, b), ref_mm(fa, fb, n, k, m), { atol = 1e-4, rtol = 1e-4 })
   end)

   it('splits large products over threads correctly (every transpose, beta, 1 to 4 threads)', function()
      -- big enough that csrc/cpu/gemm_par.c cuts the result into row and column blocks, with
      -- sizes that do not divide into its 8-row and 16-column alignment
      local saved = torch.getnumthreads()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         for _, s in ipairs { { 131, 77, 149 }, { 37, 301, 261 }, { 250, 40, 9 } } do
            local n, k, m = s[1], s[2], s[3]
            for _, la in ipairs { 'contiguous', 'transposed' } do
               for _, lb in ipairs { 'contiguous', 'transposed' } do
                  local a, fa = rand_matrix(n, k, la, ty)
                  local b, fb = rand_matrix(k, m, lb, ty)
                  local c, fc = rand_matrix(n, m, 'contiguous', ty)
                  local want = axpby(0.5, fc, -1.5, ref_mm(fa, fb, n, k, m))
                  for _, nth in ipairs { 1, 2, 3, 4 } do
                     torch.setnumthreads(nth)
                     local r = torch.addmm(0.5, c, -1.5, a, b)
                     util.assert_close(r, want, { atol = 1e-4, rtol = 1e-4 },
                        ('%s %dx%dx%d %s x %s, %d threads'):format(ty, n, k, m, la, lb, nth))
                  end
               end
            end
         end
      end
      torch.setnumthreads(saved)
   end)

   it('runs a batch of products large enough to split matrix by matrix when it divides over the threads', function()
      -- 2 threads: 4 matrices go two per thread, with the one-thread bits; 3 split each product,
      -- whose column blocks OpenBLAS may sum in another order (csrc/cpu/blas.c)
      local saved = torch.getnumthreads()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         for _, nb in ipairs { 4, 3 } do
            local a = torch.DoubleTensor(nb, 96, 64):uniform(-2, 2):type(ty)
            local b = torch.DoubleTensor(nb, 64, 104):uniform(-2, 2):type(ty)
            torch.setnumthreads(1)
            local want = torch.bmm(a, b)
            local ad, bd = a:double(), b:double()
            for i = 1, nb do
               util.assert_close(want[i]:double(), torch.mm(ad[i], bd[i]), { atol = 1e-3, rtol = 1e-5 },
                  ('%s bmm matrix %d against float64'):format(ty, i))
            end
            torch.setnumthreads(2)
            local tol = nb % 2 == 0 and { atol = 0, rtol = 0 } or { atol = 1e-4, rtol = 1e-5 }
            util.assert_close(torch.bmm(a, b), want, tol, ('%s bmm of %d, 2 threads vs 1'):format(ty, nb))
         end
      end
      torch.setnumthreads(saved)
   end)

   it('runs a batch of small products over the threads with the one-thread bits', function()
      -- products too small to split go matrix by matrix over the threads (csrc/cpu/blas.c),
      -- each with its own scratch for operands BLAS cannot read in place (a strided batch)
      local saved = torch.getnumthreads()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor', 'torch.HalfTensor', 'torch.IntTensor' } do
         local nb, n, k, m = 37, 5, 9, 7
         local a = torch.DoubleTensor(nb, n, k):uniform(-2, 2)
         local bw = torch.DoubleTensor(nb, m, 2 * k):uniform(-2, 2)
         if ty == 'torch.IntTensor' then a:mul(3):floor(); bw:mul(3):floor() end
         a = a:type(ty)
         local b = bw:type(ty):narrow(3, 1, 2 * k - 1):narrow(3, 1, k):transpose(2, 3) -- strided, not BLAS-readable
         local c0 = torch.DoubleTensor(nb, n, m):uniform(-1, 1):type(ty)
         local want
         for _, nth in ipairs { 1, 2, 3 } do
            torch.setnumthreads(nth)
            local r = torch.baddbmm(c0:clone(), 0.5, c0, 2, a, b):double()
            if not want then
               -- float64 reference from the same (dtype-rounded) operands
               local ad, bd, cd = a:double(), b:double(), c0:double()
               want = cd:clone():mul(0.5)
               for i = 1, nb do want[i]:add(2, torch.mm(ad[i], bd[i])) end
               local tol = ty == 'torch.HalfTensor' and { atol = 0.1, rtol = 1e-2 } or { atol = 1e-4, rtol = 1e-5 }
               util.assert_close(r, want, tol, ty .. ' baddbmm against float64')
               want = r
            else
               util.assert_close(r, want, { atol = 0, rtol = 0 }, ('%s baddbmm, %d threads vs 1'):format(ty, nth))
            end
         end
      end
      torch.setnumthreads(saved)
   end)

   it('handles an empty inner size (a zero product)', function()
      local a = torch.DoubleTensor(3, 0)
      local b = torch.DoubleTensor(0, 4)
      local r = torch.mm(a, b)
      assert.are.same({ 3, 4 }, T.sizes(r))
      util.assert_close(r, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 })
   end)

   it('reports size, dimension and dtype mismatches', function()
      local a, b = torch.DoubleTensor(3, 4), torch.DoubleTensor(5, 6)
      util.assert_error(function() torch.mm(a, b) end, 'addmm: size mismatch, m1: 3x4, m2: 5x6')
      util.assert_error(function() torch.mm(torch.DoubleTensor(3), b) end, 'addmm', '2-d', 'm1: 3', 'm2: 5x6')
      util.assert_error(function() torch.mm(a, torch.FloatTensor(4, 2)) end, 'addmm', 'float32', 'float64')
      util.assert_error(function() torch.mm(torch.FloatTensor(), a, torch.DoubleTensor(4, 2)) end, 'addmm',
         'result tensor has dtype float32', 'float64')
      util.assert_error(function() torch.mm(a, 3) end, 'mm', 'expected a tensor')
      util.assert_error(function() torch.mm(torch.BoolTensor(2, 2), torch.BoolTensor(2, 2)) end, 'addmm', 'bool')
      util.assert_error(function() torch.mm(torch.DoubleTensor(1, 2):expand(3, 2), a, torch.DoubleTensor(4, 2)) end,
         'addmm', 'expanded', '3x2')
   end)

   it('is reachable through the * operator when tensor/pointwise.lua provides it', function()
      if not T.tensor_metatable.__mul then
         pending('tensor/pointwise.lua has not defined __mul')
         return
      end
      local a, fa = rand_matrix(4, 3, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(3, 5, 'contiguous', 'torch.DoubleTensor')
      util.assert_close(a * b, ref_mm(fa, fb, 4, 3, 5))
   end)
end)

describe('addmm', function()
   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('computes beta*M + alpha*m1*m2 for ' .. ty, function()
         local float = T.dtypes[T.parse_typename(ty) + 1].is_float
         for _, s in ipairs(SHAPES) do
            local n, k, m = s[1], s[2], s[3]
            local a, fa = rand_matrix(n, k, 'transposed', ty, lo, hi)
            local b, fb = rand_matrix(k, m, 'contiguous', ty, lo, hi)
            local c, fc = rand_matrix(n, m, 'contiguous', ty, lo, hi)
            local beta = float and (math.random() * 4 - 2) or math.random(0, 3)
            local alpha = float and (math.random() * 4 - 2) or math.random(0, 3)
            local r = torch.addmm(beta, c, alpha, a, b)
            local want = wrap_all(ty, axpby(beta, fc, alpha, ref_mm(fa, fb, n, k, m)))
            util.assert_close(r, want, tol, ty .. ' addmm')
            util.assert_close(c, fc, nil, 'M unchanged')
         end
      end)
   end

   it('accepts every Torch7 argument form', function()
      local n, k, m = 4, 3, 5
      local a, fa = rand_matrix(n, k, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(k, m, 'contiguous', 'torch.DoubleTensor')
      local P = ref_mm(fa, fb, n, k, m)
      local function fresh() return rand_matrix(n, m, 'contiguous', 'torch.DoubleTensor') end
      local M, fM = fresh()
      util.assert_close(torch.addmm(M, a, b), axpby(1, fM, 1, P), nil, 'torch.addmm(M, a, b)')
      util.assert_close(torch.addmm(0.5, M, a, b), axpby(0.5, fM, 1, P), nil, 'torch.addmm(v1, M, a, b)')
      util.assert_close(torch.addmm(M, 3, a, b), axpby(1, fM, 3, P), nil, 'torch.addmm(M, v2, a, b)')
      util.assert_close(torch.addmm(2, M, -1, a, b), axpby(2, fM, -1, P), nil, 'torch.addmm(v1, M, v2, a, b)')
      local res = torch.DoubleTensor()
      assert.are.equal(res, torch.addmm(res, 2, M, -1, a, b))
      util.assert_close(res, axpby(2, fM, -1, P), nil, 'torch.addmm(res, v1, M, v2, a, b)')
      torch.addmm(res, M, a, b)
      util.assert_close(res, axpby(1, fM, 1, P), nil, 'torch.addmm(res, M, a, b)')
      util.assert_close(M, fM, nil, 'M untouched by the function forms')
      -- method forms work in place; M defaults to self
      M, fM = fresh()
      assert.are.equal(M, M:addmm(a, b))
      util.assert_close(M, axpby(1, fM, 1, P), nil, 'M:addmm(a, b)')
      M, fM = fresh()
      M:addmm(0.25, a, b) -- one number is alpha (nn.Linear's gradWeight:addmm(scale, ...))
      util.assert_close(M, axpby(1, fM, 0.25, P), nil, 'M:addmm(v2, a, b)')
      M, fM = fresh()
      M:addmm(3, -2, a, b)
      util.assert_close(M, axpby(3, fM, -2, P), nil, 'M:addmm(v1, v2, a, b)')
      M = fresh()
      local other, fo = fresh()
      M:addmm(0.5, other, 2, a, b)
      util.assert_close(M, axpby(0.5, fo, 2, P), nil, 'res:addmm(v1, M, v2, a, b)')
      M:addmm(other, a, b)
      util.assert_close(M, axpby(1, fo, 1, P), nil, 'res:addmm(M, a, b)')
   end)

   it('ignores M when beta is 0, even NaN (BLAS semantics)', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         local n, k, m = 5, 6, 3
         local lo, hi = -1, 1
         if ty == 'torch.LongTensor' then lo, hi = -9, 10 end
         local a, fa = rand_matrix(n, k, 'contiguous', ty, lo, hi)
         local b, fb = rand_matrix(k, m, 'transposed', ty, lo, hi)
         local nan = {}
         for i = 1, n * m do nan[i] = NAN end
         local c = ty == 'torch.LongTensor' and util.rand_tensor({ n, m }, ty, -100, 100)
            or T.from_flat(nan, { n, m }, T.parse_typename(ty), T.CPU_DEVICE)
         local alpha = ty == 'torch.LongTensor' and 3 or 1.5
         local r = torch.addmm(0, c, alpha, a, b)
         util.assert_close(r, axpby(0, nil, alpha, ref_mm(fa, fb, n, k, m)), util.tol[ty] or { atol = 0, rtol = 0 },
            ty .. ' beta = 0')
         c:addmm(0, 1, a, b) -- in place: c's own NaNs are ignored too
         util.assert_close(c, ref_mm(fa, fb, n, k, m), util.tol[ty] or { atol = 0, rtol = 0 },
            ty .. ' in place beta = 0')
      end
   end)

   it('broadcasts M (a bias row) and scales by beta', function()
      local n, k, m = 6, 4, 5
      local a, fa = rand_matrix(n, k, 'contiguous', 'torch.DoubleTensor')
      local b, fb = rand_matrix(k, m, 'contiguous', 'torch.DoubleTensor')
      local bias, fbias = util.rand_tensor({ m })
      local P = ref_mm(fa, fb, n, k, m)
      local want = {}
      for i = 0, n - 1 do
         for j = 1, m do want[i * m + j] = 0.5 * fbias[j] + 2 * P[i * m + j] end
      end
      util.assert_close(torch.addmm(0.5, bias, 2, a, b), want)
   end)

   it('reports mismatched M and bad arguments', function()
      local a, b = torch.DoubleTensor(3, 4), torch.DoubleTensor(4, 5)
      util.assert_error(function() torch.addmm(torch.DoubleTensor(3, 4), a, b) end, 'addmm', '3x4', '3x5')
      util.assert_error(function() torch.DoubleTensor(3, 4):addmm(a, b) end, 'addmm', '3x4', '3x5')
      util.assert_error(function() torch.addmm(torch.FloatTensor(3, 5), a, b) end, 'addmm', 'float32', 'float64')
      util.assert_error(function() torch.addmm(a, b) end, 'addmm', 'expected arguments')
      util.assert_error(function() torch.addmm(torch.DoubleTensor(3, 5), 'x', a, b) end, 'addmm', 'string')
   end)
end)

-- batched reference: x (nb x n x k) flat, y (nb x k x m) flat
local function ref_bmm(X, Y, nb, n, k, m)
   local out = {}
   for i = 0, nb - 1 do
      local A, B = {}, {}
      for p = 1, n * k do A[p] = X[i * n * k + p] end
      for p = 1, k * m do B[p] = Y[i * k * m + p] end
      local P = ref_mm(A, B, n, k, m)
      for p = 1, n * m do out[i * n * m + p] = P[p] end
   end
   return out
end

-- a random batch in a layout: contiguous, transposed matrices, or one matrix expanded over the batch
local function rand_batch(nb, r, c, layout, ty, lo, hi)
   local t
   if layout == 'contiguous' then t = util.rand_tensor({ nb, r, c }, ty, lo, hi)
   elseif layout == 'transposed' then t = util.rand_tensor({ nb, c, r }, ty, lo, hi):transpose(2, 3)
   elseif layout == 'batch-last' then t = util.rand_tensor({ r, c, nb }, ty, lo, hi):permute(3, 1, 2)
   elseif layout == 'expanded' then t = util.rand_tensor({ 1, r, c }, ty, lo, hi):expand(nb, r, c)
   end
   return t, util.flat(t)
end

describe('bmm / baddbmm / addbmm', function()
   local BSHAPES = { { 1, 1, 1, 1 }, { 3, 4, 5, 6 }, { 5, 7, 3, 9 } }
   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('bmm matches per-batch products for ' .. ty, function()
         for _, s in ipairs(BSHAPES) do
            local nb, n, k, m = s[1], s[2], s[3], s[4]
            local x, fx = rand_batch(nb, n, k, 'contiguous', ty, lo, hi)
            local y, fy = rand_batch(nb, k, m, 'transposed', ty, lo, hi)
            local r = torch.bmm(x, y)
            assert.are.same({ nb, n, m }, T.sizes(r))
            util.assert_close(r, wrap_all(ty, ref_bmm(fx, fy, nb, n, k, m)), tol, ty .. ' bmm')
         end
      end)
   end

   it('handles batch layouts: permuted batch dim, expanded batches', function()
      local nb, n, k, m = 4, 3, 5, 2
      for _, lx in ipairs { 'contiguous', 'transposed', 'batch-last', 'expanded' } do
         for _, ly in ipairs { 'contiguous', 'transposed', 'batch-last', 'expanded' } do
            local x, fx = rand_batch(nb, n, k, lx, 'torch.FloatTensor')
            local y, fy = rand_batch(nb, k, m, ly, 'torch.FloatTensor')
            util.assert_close(torch.bmm(x, y), ref_bmm(fx, fy, nb, n, k, m), util.tol['torch.FloatTensor'],
               lx .. ' x ' .. ly)
         end
      end
   end)

   it('baddbmm computes beta*M + alpha*bmm, in place and not', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.BFloat16Tensor', 'torch.IntTensor' } do
         local tol = util.tol[ty] or { atol = 0, rtol = 0 }
         local lo, hi = -1, 1
         if ty == 'torch.IntTensor' then lo, hi = -5, 6 end
         local nb, n, k, m = 3, 4, 6, 5
         local x, fx = rand_batch(nb, n, k, 'transposed', ty, lo, hi)
         local y, fy = rand_batch(nb, k, m, 'contiguous', ty, lo, hi)
         local M, fM = rand_batch(nb, n, m, 'contiguous', ty, lo, hi)
         local P = ref_bmm(fx, fy, nb, n, k, m)
         util.assert_close(torch.baddbmm(2, M, 3, x, y), axpby(2, fM, 3, P), tol, ty .. ' baddbmm')
         util.assert_close(torch.baddbmm(M, x, y), axpby(1, fM, 1, P), tol, ty .. ' baddbmm defaults')
         M:baddbmm(-1, x, y)
         util.assert_close(M, axpby(1, fM, -1, P), tol, ty .. ' M:baddbmm(v2, x, y)')
      end
   end)

   it('baddbmm ignores a NaN M when beta is 0', function()
      local x, fx = rand_batch(2, 3, 4, 'contiguous', 'torch.FloatTensor')
      local y, fy = rand_batch(2, 4, 3, 'contiguous', 'torch.FloatTensor')
      local nan = {}
      for i = 1, 18 do nan[i] = NAN end
      local M = T.from_flat(nan, { 2, 3, 3 }, T.FLOAT, T.CPU_DEVICE)
      M:baddbmm(0, 1, x, y)
      util.assert_close(M, ref_bmm(fx, fy, 2, 3, 4, 3), util.tol['torch.FloatTensor'])
   end)

   it('addbmm sums the batch products into a matrix', function()
      for _, nb in ipairs { 1, 4 } do
         local n, k, m = 3, 5, 4
         local x, fx = rand_batch(nb, n, k, 'contiguous', 'torch.DoubleTensor')
         local y, fy = rand_batch(nb, k, m, 'transposed', 'torch.DoubleTensor')
         local M, fM = rand_matrix(n, m, 'contiguous', 'torch.DoubleTensor')
         local P = ref_bmm(fx, fy, nb, n, k, m)
         local S = {}
         for p = 1, n * m do
            S[p] = 0
            for i = 0, nb - 1 do S[p] = S[p] + P[i * n * m + p] end
         end
         util.assert_close(torch.addbmm(0.5, M, 2, x, y), axpby(0.5, fM, 2, S), nil, 'addbmm')
         M:addbmm(x, y)
         util.assert_close(M, axpby(1, fM, 1, S), nil, 'M:addbmm(x, y)')
      end
   end)

   it('reports batch and size mismatches', function()
      util.assert_error(function() torch.bmm(torch.FloatTensor(2, 3, 4), torch.FloatTensor(3, 4, 5)) end,
         'bmm: size mismatch, batch1: 2x3x4, batch2: 3x4x5')
      util.assert_error(function() torch.bmm(torch.FloatTensor(2, 3, 4), torch.FloatTensor(2, 5, 5)) end,
         'bmm: size mismatch, batch1: 2x3x4, batch2: 2x5x5')
      util.assert_error(function() torch.bmm(torch.FloatTensor(3, 4), torch.FloatTensor(4, 5)) end, 'bmm', '3-d')
      util.assert_error(function() torch.baddbmm(torch.FloatTensor(2, 3, 3), torch.FloatTensor(2, 3, 4),
         torch.FloatTensor(2, 4, 5)) end, 'baddbmm', '2x3x3', '2x3x5')
      util.assert_error(function() torch.addbmm(torch.FloatTensor(3, 5), torch.FloatTensor(2, 3, 4),
         torch.FloatTensor(2, 5, 5)) end, 'addbmm: size mismatch, batch1: 2x3x4, batch2: 2x5x5')
   end)
end)

describe('addmv / mv', function()
   local function ref_mv(M, V, n, k)
      local out = {}
      for i = 0, n - 1 do
         local s = 0
         for j = 1, k do s = s + M[i * k + j] * V[j] end
         out[i + 1] = s
      end
      return out
   end

   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('mv and addmv match a float64 loop for ' .. ty .. ' over layouts', function()
         local float = T.dtypes[T.parse_typename(ty) + 1].is_float
         for _, s in ipairs { { 1, 1 }, { 5, 7 }, { 33, 17 }, { 1, 9 }, { 8, 1 } } do
            local n, k = s[1], s[2]
            for _, lm in ipairs { 'contiguous', 'transposed', 'strided', 'expanded' } do
               for _, lv in ipairs { 'contiguous', 'strided', 'expanded' } do
                  local m, fm = rand_matrix(n, k, lm, ty, lo, hi)
                  local v, fv = rand_vector(k, lv, ty, lo, hi)
                  local what = ('%s %dx%d %s * %s'):format(ty, n, k, lm, lv)
                  util.assert_close(torch.mv(m, v), wrap_all(ty, ref_mv(fm, fv, n, k)), tol, what)
                  local c, fc = rand_vector(n, 'contiguous', ty, lo, hi)
                  local beta = float and (math.random() * 2 - 1) or math.random(0, 3)
                  local alpha = float and (math.random() * 2 - 1) or math.random(0, 3)
                  util.assert_close(torch.addmv(beta, c, alpha, m, v),
                     wrap_all(ty, axpby(beta, fc, alpha, ref_mv(fm, fv, n, k))), tol, 'addmv ' .. what)
               end
            end
         end
      end)
   end

   it('splits large products over threads correctly (both layouts, strided results)', function()
      local saved = torch.getnumthreads()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         for _, s in ipairs { { 300, 501 }, { 1030, 131 } } do
            local n, k = s[1], s[2]
            for _, lm in ipairs { 'contiguous', 'transposed' } do
               local m, fm = rand_matrix(n, k, lm, ty)
               local v, fv = rand_vector(k, 'strided', ty)
               local want = ref_mv(fm, fv, n, k)
               for _, nth in ipairs { 1, 2, 3 } do
                  torch.setnumthreads(nth)
                  local what = ('%s %dx%d %s, %d threads'):format(ty, n, k, lm, nth)
                  util.assert_close(torch.mv(m, v), want, { atol = 1e-4, rtol = 1e-4 }, what)
                  local c, fc = rand_vector(n, 'strided', ty)
                  c:addmv(-0.5, c, 2, m, v)
                  util.assert_close(c, axpby(-0.5, fc, 2, want), { atol = 1e-4, rtol = 1e-4 }, 'in place ' .. what)
               end
            end
         end
      end
      torch.setnumthreads(saved)
   end)

   it('works in place, writes strided results and ignores NaN when beta is 0', function()
      local n, k = 9, 6
      local m, fm = rand_matrix(n, k, 'contiguous', 'torch.DoubleTensor')
      local v, fv = rand_vector(k, 'contiguous', 'torch.DoubleTensor')
      local c, fc = rand_vector(n, 'strided', 'torch.DoubleTensor')
      assert.are.equal(c, c:addmv(2, m, v))
      util.assert_close(c, axpby(1, fc, 2, ref_mv(fm, fv, n, k)), nil, 'strided c in place')
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local mm, fmm = rand_matrix(n, k, 'transposed', ty)
         local vv, fvv = rand_vector(k, 'contiguous', ty)
         local nan = {}
         for i = 1, n do nan[i] = NAN end
         local y = T.from_flat(nan, { n }, T.parse_typename(ty), T.CPU_DEVICE)
         y:addmv(0, 1, mm, vv)
         util.assert_close(y, ref_mv(fmm, fvv, n, k), util.tol[ty], ty .. ' beta = 0 over NaN')
      end
      local res = torch.DoubleTensor(2, 2)
      assert.are.equal(res, res:mv(m, v))
      util.assert_close(res, ref_mv(fm, fv, n, k), nil, 'res:mv')
   end)

   it('reports size mismatches', function()
      util.assert_error(function() torch.mv(torch.DoubleTensor(3, 4), torch.DoubleTensor(5)) end,
         'mv: size mismatch, mat: 3x4, vec: 5')
      util.assert_error(function()
         torch.addmv(torch.DoubleTensor(4), torch.DoubleTensor(3, 4), torch.DoubleTensor(4))
      end, 'addmv', 'size 4', 'size 3')
      util.assert_error(function() torch.mv(torch.DoubleTensor(3, 4), torch.DoubleTensor(4, 1)) end, 'mv', '1-d')
      util.assert_error(function() torch.mv(torch.DoubleTensor(3, 4), torch.FloatTensor(4)) end, 'mv', 'float32')
   end)
end)

describe('dot', function()
   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('returns the sum of products for ' .. ty, function()
         for _, n in ipairs { 1, 7, 100, 40000 } do
            local a, fa = util.rand_tensor({ n }, ty, lo, hi)
            local b, fb = util.rand_tensor({ n }, ty, lo, hi)
            local s, mag = 0, 0
            for i = 1, n do
               s = s + fa[i] * fb[i]
               mag = mag + math.abs(fa[i] * fb[i])
            end
            local r = torch.dot(a, b)
            assert.are.equal('number', type(r))
            -- relative to the summed magnitudes: the exact sum may cancel to near zero
            util.assert_close({ r }, { s }, { atol = (tol.atol + tol.rtol) * mag + 1e-300, rtol = 0 },
               ty .. ' dot ' .. n)
            assert.are.equal(r, a:dot(b))
         end
      end)
   end

   it('handles non-contiguous operands and shapes that differ but hold as many elements', function()
      local a, fa = rand_matrix(4, 6, 'transposed', 'torch.DoubleTensor')
      local b, fb = rand_matrix(4, 6, 'strided', 'torch.DoubleTensor')
      local s = 0
      for i = 1, 24 do s = s + fa[i] * fb[i] end
      util.assert_close({ torch.dot(a, b) }, { s }, nil, 'strided')
      local c, fc = util.rand_tensor({ 6, 4 })
      s = 0
      for i = 1, 24 do s = s + fa[i] * fc[i] end
      util.assert_close({ torch.dot(a, c) }, { s }, nil, 'transposed 4x6 . 6x4')
      local e, fe = rand_vector(24, 'expanded', 'torch.DoubleTensor')
      s = 0
      for i = 1, 24 do s = s + fb[i] * fe[i] end
      util.assert_close({ torch.dot(b, e) }, { s }, nil, 'expanded')
   end)

   it('reports mismatched sizes and dtypes', function()
      util.assert_error(function() torch.dot(torch.DoubleTensor(3), torch.DoubleTensor(4)) end, 'dot', 'size', '3', '4')
      util.assert_error(function() torch.dot(torch.DoubleTensor(3), torch.FloatTensor(3)) end, 'dot', 'float32',
         'float64')
   end)
end)

describe('addr / ger', function()
   local function ref_outer(X, Y)
      local out = {}
      for i = 1, #X do
         for j = 1, #Y do out[(i - 1) * #Y + j] = X[i] * Y[j] end
      end
      return out
   end

   for _, d in ipairs(DTYPES) do
      local ty, tol, lo, hi = d[1], d[2], d[3], d[4]
      it('ger and addr match outer products for ' .. ty, function()
         for _, s in ipairs { { 1, 1 }, { 5, 3 }, { 17, 9 } } do
            local x, fx = rand_vector(s[1], 'strided', ty, lo, hi)
            local y, fy = rand_vector(s[2], 'contiguous', ty, lo, hi)
            util.assert_close(torch.ger(x, y), wrap_all(ty, ref_outer(fx, fy)), tol, ty .. ' ger')
            local M, fM = rand_matrix(s[1], s[2], 'transposed', ty, lo, hi)
            util.assert_close(torch.addr(2, M, 3, x, y), wrap_all(ty, axpby(2, fM, 3, ref_outer(fx, fy))), tol,
               ty .. ' addr')
            assert.are.equal(M, M:addr(x, y))
            util.assert_close(M, wrap_all(ty, axpby(1, fM, 1, ref_outer(fx, fy))), tol, ty .. ' M:addr')
         end
      end)
   end

   it('supports the in-place t:addr(v1, t, v2, a, b) form and reports bad sizes', function()
      local x, fx = util.rand_tensor({ 4 })
      local y, fy = util.rand_tensor({ 3 })
      local t, ft = util.rand_tensor({ 4, 3 })
      t:addr(0.5, t, -2, x, y)
      util.assert_close(t, axpby(0.5, ft, -2, ref_outer(fx, fy)))
      util.assert_error(function() t:addr(torch.DoubleTensor(5), y) end, 'addr', '4x3', '5x3')
      util.assert_error(function() torch.ger(torch.DoubleTensor(2, 2), y) end, 'ger', '1-d', '2x2')
   end)
end)

describe('on CUDA', function()
   util.gpu_it('mm, bmm, addmm, addmv, mv, dot, addr and ger match float64 references', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor', 'torch.HalfTensor' } do
         local tol = ty == 'torch.DoubleTensor' and util.tol[ty] or { atol = 2e-2, rtol = 2e-2 }
         local n, k, m = 17, 33, 9
         local a, fa = rand_matrix(n, k, 'transposed', ty)
         local b, fb = rand_matrix(k, m, 'narrowed', ty)
         local ga, gb = a:cuda(), b:cuda()
         local r = torch.mm(ga, gb)
         assert.is_true(r:isCuda())
         util.assert_close(r, ref_mm(fa, fb, n, k, m), tol, ty .. ' cuda mm')
         local nan = {}
         for i = 1, n * m do nan[i] = NAN end
         local c = T.from_flat(nan, { n, m }, T.parse_typename(ty), T.CPU_DEVICE):cuda()
         c:addmm(0, 2, ga, gb)
         util.assert_close(c, axpby(0, nil, 2, ref_mm(fa, fb, n, k, m)), tol, ty .. ' cuda addmm beta = 0')
         local M, fM = rand_matrix(n, m, 'contiguous', ty)
         util.assert_close(torch.addmm(0.5, M:cuda(), -1, ga, gb), axpby(0.5, fM, -1, ref_mm(fa, fb, n, k, m)), tol,
            ty .. ' cuda addmm')
         local x, fx = rand_batch(3, 4, 5, 'transposed', ty)
         local y, fy = rand_batch(3, 5, 6, 'expanded', ty)
         util.assert_close(torch.bmm(x:cuda(), y:cuda()), ref_bmm(fx, fy, 3, 4, 5, 6), tol, ty .. ' cuda bmm')
         local v, fv = rand_vector(k, 'strided', ty)
         local mv = {}
         for i = 0, n - 1 do
            local s = 0
            for j = 1, k do s = s + fa[i * k + j] * fv[j] end
            mv[i + 1] = s
         end
         util.assert_close(torch.mv(ga, v:cuda()), mv, tol, ty .. ' cuda mv')
         local w, fw = rand_vector(k, 'contiguous', ty)
         local dot, mag = 0, 0
         for j = 1, k do dot, mag = dot + fv[j] * fw[j], mag + math.abs(fv[j] * fw[j]) end
         util.assert_close({ torch.dot(v:cuda(), w:cuda()) }, { dot }, { atol = tol.atol * mag + tol.atol, rtol = 0 },
            ty .. ' cuda dot')
         local outer = {}
         for i = 1, k do
            for j = 1, k do outer[(i - 1) * k + j] = fv[i] * fw[j] end
         end
         util.assert_close(torch.ger(v:cuda(), w:cuda()), outer, tol, ty .. ' cuda ger')
      end
   end)

   util.gpu_it('reports operands on different devices', function()
      local a = torch.FloatTensor(2, 2)
      util.assert_error(function() torch.mm(a:cuda(), a) end, 'addmm', 'cpu', 'cuda:0')
      util.assert_error(function() torch.dot(a:cuda(), a) end, 'dot', 'cpu', 'cuda:0')
   end)
end)
