-- split_spec.lua: split, chunk, repeatTensor, trace and dist against references computed
-- here element by element in Lua doubles, on fresh random odd-sized inputs (contiguous and
-- transposed), with their result-first and method forms and their errors.
local torch = require 'moontorch'
local util = require 'spec.util'

local function sizes(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

-- every element of t as {index table, value}, row-major
local function each(t, f)
   local s, idx = sizes(t), {}
   local n = t:nElement()
   for i = 1, #s do idx[i] = 1 end
   for _ = 1, n do
      f(idx, t[idx])
      for d = #s, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= s[d] then break end
         idx[d] = 1
      end
   end
end

local function copy_idx(idx) local c = {}; for i = 1, #idx do c[i] = idx[i] end; return c end

describe('split and chunk', function()
   it('cut along dim into narrows that share memory, the last one shorter', function()
      local x = util.rand_tensor({ 7, 5, 3 }, 'torch.DoubleTensor', -2, 2)
      for dim = 1, 3 do
         for size = 1, x:size(dim) + 1 do
            local parts = torch.split(x, size, dim)
            local len, at = x:size(dim), 1
            assert.are.equal(math.ceil(len / size), #parts)
            for _, p in ipairs(parts) do
               local want = math.min(size, len - at + 1)
               assert.are.equal(want, p:size(dim))
               assert.are.equal(0, (p - x:narrow(dim, at, want)):abs():max())
               at = at + want
            end
            assert.are.equal(len + 1, at)
         end
      end
      local parts = x:split(2)
      parts[1]:fill(42) -- views: x sees it
      assert.are.equal(42, x[1][1][1])
      assert.are.equal(42, x[2][5][3])
   end)

   it('reuses a result table and takes a transposed input', function()
      local x = util.rand_tensor({ 5, 9 }, 'torch.FloatTensor', -2, 2):t()
      local res = { 'stale', 'stale', 'stale', 'stale', 'stale', 'stale' }
      local out = torch.split(res, x, 4, 1)
      assert.are.equal(res, out)
      assert.are.equal(3, #res)
      assert.are.same({ 4, 5 }, sizes(res[1]))
      assert.are.same({ 1, 5 }, sizes(res[3]))
      assert.are.equal(0, (res[3] - x:narrow(1, 9, 1)):abs():max())
   end)

   it('chunk gives n pieces of ceil(len / n) (fewer when they run out)', function()
      local x = util.rand_tensor({ 3, 10 }, 'torch.DoubleTensor', -2, 2)
      for n = 1, 12 do
         local parts = x:chunk(n, 2)
         local size = math.ceil(10 / n)
         assert.are.equal(math.ceil(10 / size), #parts)
         local total = 0
         for _, p in ipairs(parts) do total = total + p:size(2) end
         assert.are.equal(10, total)
      end
      local cat = torch.cat(torch.chunk(x, 3, 2), 2)
      assert.are.equal(0, (cat - x):abs():max())
   end)

   it('names what was wrong', function()
      local x = torch.randn(3, 4)
      util.assert_error(function() torch.split(x, 0) end, 'split', 'positive integer')
      util.assert_error(function() torch.split(x, 2, 3) end, 'split', 'dim 3 out of range')
      util.assert_error(function() torch.chunk(x, -1) end, 'chunk', 'positive integer')
      util.assert_error(function() torch.split(42, 2) end, 'split', 'expected a tensor')
   end)
end)

describe('repeatTensor', function()
   local function check(x, reps)
      local out = torch.repeatTensor(x, table.unpack(reps))
      local pad = #reps - x:dim()
      assert.are.equal(#reps, out:dim())
      for i = 1, #reps do
         assert.are.equal(reps[i] * (i <= pad and 1 or x:size(i - pad)), out:size(i))
      end
      each(out, function(idx, v) -- out[idx] = x[idx mod x's sizes]
         local src = {}
         for i = pad + 1, #reps do src[i - pad] = (idx[i] - 1) % x:size(i - pad) + 1 end
         local want = x:dim() == 0 and nil or x[src]
         assert(v == want, 'repeatTensor: wrong value at ' .. table.concat(copy_idx(idx), ','))
      end)
      return out
   end

   it('tiles like Torch7 (extra leading dims, LongStorage sizes, transposed input)', function()
      local x = util.rand_tensor({ 5 }, 'torch.DoubleTensor', -2, 2)
      check(x, { 3, 2 })
      check(x, { 3, 2, 1 })
      local y = util.rand_tensor({ 3, 5 }, 'torch.FloatTensor', -2, 2):t()
      check(y, { 2, 3 })
      check(y, { 1, 1 })
      check(y, { 2, 1, 3 })
      local r = x:repeatTensor(torch.LongStorage { 2, 3 })
      assert.are.same({ 2, 15 }, sizes(r))
   end)

   it('handles more dims than an interleaved view can hold', function()
      local x = util.rand_tensor({ 2, 3, 1, 2, 3 }, 'torch.DoubleTensor', -2, 2)
      check(x, { 2, 1, 3, 2, 1 })
   end)

   it('fills a result, also a non-contiguous one', function()
      local x = util.rand_tensor({ 2, 3 }, 'torch.IntTensor', -9, 9)
      local res = torch.IntTensor()
      assert.are.equal(res, torch.repeatTensor(res, x, 2, 2))
      assert.are.same({ 4, 6 }, sizes(res))
      local nc = torch.IntTensor(6, 4):t()
      torch.repeatTensor(nc, x, 2, 2)
      assert.are.equal(0, (nc - res):abs():max())
   end)

   it('names what was wrong', function()
      local x = torch.randn(3, 4)
      util.assert_error(function() x:repeatTensor(2) end, 'repeatTensor', '1 repeat counts given for a 2-d tensor')
      util.assert_error(function() x:repeatTensor(2, -1) end, 'repeatTensor', 'repeat count 2')
   end)
end)

describe('trace and dist', function()
   it('trace sums the diagonal of any matrix, a number', function()
      for _, shape in ipairs { { 5, 5 }, { 3, 7 }, { 7, 3 } } do
         local x = util.rand_tensor(shape, 'torch.DoubleTensor', -3, 3)
         local want = 0
         for i = 1, math.min(shape[1], shape[2]) do want = want + x[i][i] end
         assert.are.equal('number', type(torch.trace(x)))
         assert(math.abs(x:trace() - want) < 1e-12)
         assert(math.abs(torch.trace(x:t()) - want) < 1e-12)
      end
      util.assert_error(function() torch.trace(torch.randn(3)) end, 'trace', 'expected a matrix')
   end)

   it('dist is the p-norm of x - y for any shapes with as many elements', function()
      local x = util.rand_tensor({ 3, 5 }, 'torch.DoubleTensor', -3, 3)
      local y = util.rand_tensor({ 5, 3 }, 'torch.DoubleTensor', -3, 3):t()
      for _, p in ipairs { 1, 2, 3, 0.5 } do
         local s, xf, yf = 0, x:contiguous():view(15), y:contiguous():view(15)
         for i = 1, 15 do s = s + math.abs(xf[i] - yf[i]) ^ p end
         local want = s ^ (1 / p)
         local got = p == 2 and torch.dist(x, y) or x:dist(y, p)
         assert(math.abs(got - want) < 1e-9 * want, ('dist p=%g: %g vs %g'):format(p, got, want))
      end
      util.assert_error(function() torch.dist(x, torch.randn(4)) end, 'dist', 'number of elements')
   end)
end)
