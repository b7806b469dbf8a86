-- torch7_compat_spec.lua: behaviours Torch7's own test/test.lua relies on (issue 37), checked on
-- fresh random values against Lua float64 references: range/linspace/logspace into existing
-- (non-contiguous) tensors, the result-first forms of view and expand, t:real(), lerp on
-- numbers, select on 1-d tensors, squeeze to a number, fractional sizes, gels' n rows and
-- uniform draws on Torch7's 2^-32 grid.
local torch = require 'moontorch'
local util = require 'spec.util'

local function ints(lo, hi) return math.random(lo, hi) end

describe('range, linspace and logspace into an existing tensor', function()
   it('fill a view of as many elements along its strides, writing nothing outside it', function()
      local rows, cols = ints(2, 5), ints(3, 6)
      local base, bf = util.rand_tensor({ rows, cols }, 'torch.DoubleTensor')
      local w = cols - 1
      local view = base:narrow(2, 2, w) -- rows x w, not contiguous
      local a = math.random(-5, 5)
      view:range(a, a + rows * w - 1)
      for i = 1, rows do
         assert.equal(bf[(i - 1) * cols + 1], base[i][1]) -- outside the view: untouched
         for j = 1, w do assert.equal(a + (i - 1) * w + (j - 1), base[i][j + 1]) end
      end
      assert.same({ rows, w }, view:size():totable())
      -- linspace / logspace: same rule, values a + k (b - a) / (n - 1) in row-major order
      local lo, hi = math.random() * 2 - 1, math.random() * 2 + 1
      local n = rows * w
      torch.linspace(view, lo, hi, n)
      local lin, k = {}, 0
      for i = 1, rows do for j = 1, w do lin[k + 1] = view[i][j]; k = k + 1 end end
      for q = 1, n do util.assert_close({ lin[q] }, { lo + (q - 1) * (hi - lo) / (n - 1) }, nil, 'linspace') end
      view:logspace(lo, hi, n)
      for q = 1, n do
         local i, j = math.floor((q - 1) / w) + 1, (q - 1) % w + 1
         util.assert_close({ view[i][j] }, { 10 ^ (lo + (q - 1) * (hi - lo) / (n - 1)) }, { rtol = 1e-12 }, 'logspace')
      end
      for i = 1, rows do assert.equal(bf[(i - 1) * cols + 1], base[i][1]) end
      -- the documented example
      local x = torch.zeros(2, 3)
      x:narrow(2, 2, 2):range(0, 3)
      assert.same({ { 0, 0, 1 }, { 0, 2, 3 } }, x:totable())
   end)

   it('resize to a vector only when the element count differs', function()
      local t = torch.DoubleTensor(2, 2)
      t:range(1, 7)
      assert.same({ 7 }, t:size():totable())
      t:linspace(0, 1, 3)
      assert.same({ 0, 0.5, 1 }, t:totable())
   end)

   it('take one point only between equal ends, as Torch7', function()
      local a = math.random() + 0.5
      assert.same({ a }, torch.linspace(torch.DoubleTensor(), a, a, 1):totable())
      util.assert_close(torch.logspace(torch.DoubleTensor(3), a, a, 1), { 10 ^ a })
      util.assert_error(function() return torch.linspace(0, a, 1) end, 'linspace', 'number of points')
      util.assert_error(function() return torch.logspace(0, a, 1) end, 'logspace', 'number of points')
      util.assert_error(function() return torch.linspace(0, a, 0) end, 'linspace', 'number of points')
      util.assert_error(function() return torch.linspace(0, 'x', 4) end, 'linspace', 'expected numbers')
   end)
end)

describe('masks of as many elements as the tensor', function()
   it('pair with it in element order whatever their shapes (maskedFill, maskedSelect)', function()
      local r, c = ints(2, 4), ints(2, 4)
      local x, xv = util.rand_tensor({ r, c }, 'torch.DoubleTensor')
      local bits = {}
      for i = 1, r * c do bits[i] = math.random(0, 1) end
      bits[1] = 1
      local m = torch.ByteTensor(bits):view(c, r) -- transposed shape, same count
      local want = {}
      for i = 1, r * c do if bits[i] == 1 then want[#want + 1] = xv[i] end end
      assert.same(want, torch.maskedSelect(x, m):totable())
      local v = math.random() + 2
      local y = x:clone():maskedFill(m, v)
      local yv = util.flat(y)
      for i = 1, r * c do assert.equal(bits[i] == 1 and v or xv[i], yv[i]) end
      -- a mask of another count still broadcasts, or is refused
      local row = torch.ByteTensor(1, c):fill(1)
      assert.equal(r * c, x:clone():maskedFill(row, v):eq(v):sum())
      util.assert_error(function() return x:clone():maskedFill(torch.ByteTensor(r * c + 1):fill(1), v) end,
         'maskedFill', 'mask')
   end)
end)

describe('Torch7 API forms', function()
   it('res:view(src, sizes), res:viewAs(src, t), res:expand(src, sizes), res:expandAs(src, t)', function()
      local a, b = ints(2, 4), ints(2, 4)
      local src = util.rand_tensor({ a * b }, 'torch.DoubleTensor')
      local res = torch.DoubleTensor()
      assert.equal(res, res:view(src, a, b))
      assert.same({ a, b }, res:size():totable())
      assert.is_true(res:isSetTo(src:view(a, b)))
      res = torch.DoubleTensor()
      res:view(src, torch.LongStorage { b, -1 })
      assert.same({ b, a }, res:size():totable())
      res:viewAs(src, torch.DoubleTensor(a, b))
      assert.same({ a, b }, res:size():totable())
      res[1][1] = 42
      assert.equal(42, src[1])
      local col = util.rand_tensor({ a, 1 }, 'torch.DoubleTensor')
      local e = torch.DoubleTensor()
      assert.equal(e, e:expand(col, a, b))
      assert.same({ a, b }, e:size():totable())
      for i = 1, a do for j = 1, b do assert.equal(col[i][1], e[i][j]) end end
      e = torch.DoubleTensor()
      e:expandAs(col, torch.DoubleTensor(a, b + 1))
      assert.same({ a, b + 1 }, e:size():totable())
      assert.equal(0, e:stride(2))
      -- the plain forms still give new views
      assert.same({ b, a }, src:view(b, a):size():totable())
      assert.same({ a, b }, col:expandAs(torch.DoubleTensor(a, b)):size():totable())
   end)

   it('t:real() converts to the default tensor type; torch.Tensor.isTensor', function()
      local old = torch.getdefaulttensortype()
      local f, ff = util.rand_tensor({ 3, 2 }, 'torch.FloatTensor')
      torch.setdefaulttensortype('torch.DoubleTensor')
      local r = f:real()
      assert.equal('torch.DoubleTensor', r:type())
      util.assert_close(r, ff, { atol = 0 })
      torch.setdefaulttensortype(old)
      assert.equal(old, f:double():real():type())
      assert.is_true(torch.Tensor.isTensor(f))
      assert.is_false(torch.Tensor.isTensor(3))
   end)

   it('res:index(src, dim, index) and res:gather(src, dim, index) write res', function()
      local r, c = ints(3, 5), ints(3, 5)
      local src = util.rand_tensor({ r, c }, 'torch.DoubleTensor')
      local idx = torch.LongTensor { ints(1, r), ints(1, r) }
      local res = torch.DoubleTensor(7)
      assert.equal(res, res:index(src, 1, idx))
      assert.same({ 2, c }, res:size():totable())
      for i = 1, 2 do for j = 1, c do assert.equal(src[idx[i]][j], res[i][j]) end end
      local g = torch.LongTensor(r, 1)
      for i = 1, r do g[i][1] = ints(1, c) end
      local gr = torch.DoubleTensor()
      assert.equal(gr, gr:gather(src, 2, g))
      for i = 1, r do assert.equal(src[i][g[i][1]], gr[i][1]) end
      assert.same({ 2, c }, src:index(1, idx):size():totable())
   end)

   it('torch.lerp of numbers is a number', function()
      local a, b, w = math.random() * 200 - 100, math.random() * 200 - 100, math.random()
      util.assert_close({ torch.lerp(a, b, w) }, { a + w * (b - a) })
      local ta, av = util.rand_tensor({ 4 }, 'torch.DoubleTensor')
      local tb, bv = util.rand_tensor({ 4 }, 'torch.DoubleTensor')
      local r = torch.lerp(ta, tb, w)
      for i = 1, 4 do util.assert_close({ r[i] }, { av[i] + w * (bv[i] - av[i]) }) end
      util.assert_error(function() return torch.lerp(a, b, 'x') end, 'lerp', 'weight')
   end)

   it('select on a 1-d tensor reads the element whatever the dimension', function()
      local t, tv = util.rand_tensor({ 6 }, 'torch.DoubleTensor')
      local i = ints(1, 6)
      assert.equal(tv[i], t:select(1, i))
      assert.equal(tv[i], t:select(2, i))
      util.assert_error(function() return t:select(2, 7) end, 'select', 'out of range')
      local m = util.rand_tensor({ 2, 3 }, 'torch.DoubleTensor')
      util.assert_error(function() return m:select(3, 1) end, 'select', 'dimension 3')
   end)

   it('squeeze of one element gives the number', function()
      local t, tv = util.rand_tensor({ 1, 1, 1 }, 'torch.DoubleTensor')
      assert.equal(tv[1], t:squeeze())
      assert.equal(tv[1], torch.DoubleTensor({ tv[1] }):squeeze(1))
      assert.same({ 1, 1 }, t:squeeze(2):size():totable())
      local u = util.rand_tensor({ 1, 3, 1 }, 'torch.DoubleTensor')
      assert.same({ 3 }, u:squeeze():size():totable())
   end)

   it('fractional sizes truncate, as Torch7 reads them', function()
      local a, b = ints(1, 4), ints(1, 4)
      assert.same({ a, b }, torch.rand(a + 0.75, b + 0.5):size():totable())
      assert.same({ a, b }, torch.DoubleTensor(a + 0.2, b + 0.9):size():totable())
      assert.same({ a }, torch.zeros(a + 0.5):size():totable())
      util.assert_error(function() return torch.rand(a, 0 / 0) end, 'size 2')
   end)

   it('t:new() is a tensor on t\'s storage; t.new() an empty one', function()
      local t, tv = util.rand_tensor({ 3, 4 }, 'torch.DoubleTensor')
      local v = t:t()
      local n = v:new()
      assert.is_true(n:isSetTo(v))
      assert.same(v:stride():totable(), n:stride():totable())
      assert.equal(tv[2], n[2][1])
      assert.equal(0, v.new():nElement())
   end)
end)

describe('gels', function()
   it('gives n rows for an m x n A, m > n (Torch7\'s code), the least-squares solution', function()
      local m, n, k = ints(6, 9), ints(2, 5), ints(1, 3)
      local a = util.rand_tensor({ m, n }, 'torch.DoubleTensor')
      local b = util.rand_tensor({ m, k }, 'torch.DoubleTensor')
      local x = torch.gels(b, a)
      assert.same({ n, k }, x:size():totable())
      -- normal equations: A'(A x - b) = 0
      local g = a:t() * (a * x - b)
      assert(g:abs():max() < 1e-10, 'A\'(Ax - b) is not 0')
      -- result-first, then in place on b: the same values
      local tb, ta = torch.DoubleTensor(), torch.DoubleTensor()
      torch.gels(tb, ta, b, a)
      assert.same({ n, k }, tb:size():totable())
      assert.equal(0, (tb - x):abs():max())
      local b2, a2 = b:clone(), a:clone()
      torch.gels(b2, a2, b2, a2)
      assert.same({ n, k }, b2:size():totable())
      assert.equal(0, (b2 - x):abs():max())
      -- m < n: n rows already (the least-norm solution)
      local w = util.rand_tensor({ n, m }, 'torch.DoubleTensor')
      local bw = util.rand_tensor({ n, k }, 'torch.DoubleTensor')
      local xw = torch.gels(bw, w)
      assert.same({ m, k }, xw:size():totable())
      assert((w * xw - bw):abs():max() < 1e-10)
   end)
end)

describe('uniform draws', function()
   it('lie on Torch7\'s 2^-32 grid', function()
      torch.manualSeed(util.seed)
      for _, ty in ipairs { 'torch.DoubleTensor' } do
         local t = torch.rand(torch.DoubleTensor(), 1000):type(ty)
         local scaled = t * 4294967296
         assert.equal(0, (scaled - torch.floor(scaled)):abs():max())
         -- and use the 32 bits: some draw has a low bit set
         assert(torch.fmod(scaled, 2):sum() > 0)
         -- the mean of k copies of a draw is the draw itself (Torch7's test of expand relies on it)
         local x = torch.rand(torch.DoubleTensor(), 16, 1)
         local e = x:expand(16, 5)
         assert.equal(0, (e:mean(2) - x):abs():max())
      end
      local u = torch.DoubleTensor(1000):uniform(-2, 3)
      assert(u:min() >= -2 and u:max() < 3)
   end)
end)
