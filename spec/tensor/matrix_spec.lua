-- matrix_spec.lua: cross, diag, tril, triu and renorm against references computed here in
-- Lua doubles, on fresh random odd-sized inputs (contiguous and transposed), with the
-- result-first and method forms, and their errors.
local torch = require 'moontorch'
local util = require 'spec.util'

-- a random tensor of typename and its flat values; transposed = a non-contiguous view with the
-- same sizes (the values are the view's, row-major)
local function rnd(shape, tn, transposed)
   if transposed and #shape >= 2 then
      local s = {}
      for i = 1, #shape do s[i] = shape[i] end
      s[1], s[#shape] = s[#shape], s[1]
      local t = util.rand_tensor(s, tn, -3, 3)
      t = t:transpose(1, #shape)
      assert(not t:isContiguous())
      return t, util.flat(t)
   end
   local t, flat = util.rand_tensor(shape, tn, -3, 3)
   return t, flat
end

local function at(flat, shape, idx) -- row-major 1-based index
   local off = 0
   for i = 1, #shape do off = off * shape[i] + (idx[i] - 1) end
   return flat[off + 1]
end

local function sizes(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

describe('cross', function()
   -- reference: for every index with the cross dim fixed, the 3-vector cross product
   local function ref_cross(fa, fb, shape, dim)
      local out = {}
      local n = util.numel(shape)
      local idx = {}
      for lin = 0, n - 1 do
         local r = lin
         for i = #shape, 1, -1 do idx[i] = r % shape[i] + 1; r = math.floor(r / shape[i]) end
         local c = idx[dim]
         local function g(f, j) idx[dim] = j; local v = at(f, shape, idx); idx[dim] = c; return v end
         local j, k = c % 3 + 1, (c + 1) % 3 + 1
         out[lin + 1] = g(fa, j) * g(fb, k) - g(fa, k) * g(fb, j)
      end
      return out
   end

   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.LongTensor' } do
      it('matches the reference along the default and a given dim (' .. tn .. ')', function()
         local shape = { 5, 3, 3 }
         local a, fa = rnd(shape, tn, true)
         local b, fb = rnd(shape, tn)
         util.assert_close(torch.cross(a, b), ref_cross(fa, fb, shape, 2), util.tol[tn], 'cross default dim')
         util.assert_close(a:cross(b, 3), ref_cross(fa, fb, shape, 3), util.tol[tn], 'cross dim 3')
         local res = torch.Tensor():type(tn)
         local r = torch.cross(res, a, b, -1)
         assert.is_true(r == res)
         util.assert_close(res, ref_cross(fa, fb, shape, 3), util.tol[tn], 'cross into res')
      end)
   end

   it('may write into one of its operands', function()
      local a, fa = rnd({ 3, 7 }, 'torch.DoubleTensor')
      local b, fb = rnd({ 3, 7 }, 'torch.DoubleTensor')
      local expect = ref_cross(fa, fb, { 3, 7 }, 1)
      torch.cross(a, a, b)
      util.assert_close(a, expect, nil, 'cross into a')
   end)

   it('rejects bad operands', function()
      local a = torch.randn(3, 4)
      util.assert_error(function() torch.cross(a, torch.randn(4, 3)) end, 'cross:', 'same size', '3x4', '4x3')
      util.assert_error(function() torch.cross(torch.randn(2, 4), torch.randn(2, 4)) end, 'cross:',
         'no dimension of size 3')
      util.assert_error(function() torch.cross(a, torch.randn(3, 4), 2) end, 'cross:', 'dimension 2 has size 4')
      util.assert_error(function() torch.cross(a, torch.randn(3, 4), 3) end, 'cross:', 'dimension 3 out of range')
      util.assert_error(function() torch.cross(a, torch.randn(3, 4):double()) end, 'cross:', 'dtype')
   end)
end)

describe('diag', function()
   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.IntTensor' } do
      it('builds a matrix from a vector on diagonal k (' .. tn .. ')', function()
         local x, fx = rnd({ 5 }, tn)
         for _, k in ipairs { 0, 2, -3 } do
            local m = #fx + math.abs(k)
            local expect = {}
            for i = 1, m do
               for j = 1, m do
                  local v = 0
                  if j - i == k then v = fx[k >= 0 and i or j] end
                  expect[#expect + 1] = v
               end
            end
            local d = torch.diag(x, k)
            assert.are.same({ m, m }, sizes(d))
            util.assert_close(d, expect, nil, 'diag(vector, ' .. k .. ')')
         end
      end)
   end

   it('reads diagonal k of a (non-contiguous) matrix', function()
      for _, tr in ipairs { false, true } do
         local shape = { 5, 7 }
         local x, fx = rnd(shape, 'torch.DoubleTensor', tr)
         for _, k in ipairs { 0, 1, 4, -2, -5, 7 } do
            local expect = {}
            for i = 1, 5 do
               local j = i + k
               if j >= 1 and j <= 7 then expect[#expect + 1] = at(fx, shape, { i, j }) end
            end
            local d = x:diag(k)
            util.assert_close(d, expect, nil, 'diag(matrix, ' .. k .. ')')
            local res = torch.DoubleTensor(2, 2)
            assert.is_true(torch.diag(res, x, k) == res)
            util.assert_close(res, expect, nil, 'diag into res')
         end
      end
   end)

   it('rejects bad input', function()
      util.assert_error(function() torch.diag(torch.randn(2, 3, 4)) end, 'diag:', 'vector or a matrix', '2x3x4')
      util.assert_error(function() torch.diag(torch.randn(3, 4), 5) end, 'diag:', 'k = 5', '3x4')
      util.assert_error(function() torch.diag(torch.randn(3, 4), -4) end, 'diag:', 'k = -4')
      util.assert_error(function() torch.diag(torch.randn(3), 0.5) end, 'diag:', 'k must be an integer')
   end)
end)

describe('tril and triu', function()
   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.ByteTensor' } do
      it('keep the triangle on and below/above diagonal k (' .. tn .. ')', function()
         local shape = { 7, 5 }
         local x, fx = rnd(shape, tn, true)
         if tn == 'torch.ByteTensor' then x, fx = util.rand_tensor(shape, tn, 1, 200) end
         for _, k in ipairs { 0, 2, -1, -8, 6 } do
            local lo, up = {}, {}
            for i = 1, 7 do
               for j = 1, 5 do
                  local v = at(fx, shape, { i, j })
                  lo[#lo + 1] = (j - i <= k) and v or 0
                  up[#up + 1] = (j - i >= k) and v or 0
               end
            end
            util.assert_close(torch.tril(x, k), lo, util.tol[tn], 'tril ' .. k)
            util.assert_close(x:triu(k), up, util.tol[tn], 'triu ' .. k)
            local res = torch.Tensor():type(tn)
            assert.is_true(torch.triu(res, x, k) == res)
            util.assert_close(res, up, util.tol[tn], 'triu into res')
         end
      end)
   end

   it('reject non-matrices', function()
      util.assert_error(function() torch.tril(torch.randn(3)) end, 'tril:', 'expected a matrix', 'size 3')
      util.assert_error(function() torch.triu(torch.randn(3, 3, 3)) end, 'triu:', 'expected a matrix')
   end)
end)

describe('renorm', function()
   local function ref_renorm(fx, shape, p, dim, maxnorm)
      local norms, n = {}, util.numel(shape)
      local idx = {}
      local function each(fn)
         for lin = 0, n - 1 do
            local r = lin
            for i = #shape, 1, -1 do idx[i] = r % shape[i] + 1; r = math.floor(r / shape[i]) end
            fn(lin + 1, idx[dim])
         end
      end
      each(function(l, s) norms[s] = (norms[s] or 0) + math.abs(fx[l]) ^ p end)
      local out = {}
      each(function(l, s)
         local nm = norms[s] ^ (1 / p)
         out[l] = nm > maxnorm and fx[l] * (maxnorm / (nm + 1e-7)) or fx[l]
      end)
      return out
   end

   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
      it('scales the slices whose p-norm exceeds maxnorm (' .. tn .. ')', function()
         local shape = { 5, 3, 7 }
         for _, p in ipairs { 1, 2, 3.5 } do
            for dim = 1, 3 do
               local x, fx = rnd(shape, tn, dim == 2)
               local maxnorm = p == 1 and 10 or 4 -- some slices above, some below
               local expect = ref_renorm(fx, shape, p, dim, maxnorm)
               util.assert_close(torch.renorm(x, p, dim, maxnorm), expect, util.tol[tn],
                  ('renorm p=%g dim=%d'):format(p, dim))
               local res = torch.Tensor():type(tn)
               assert.is_true(torch.renorm(res, x, p, dim, maxnorm) == res)
               util.assert_close(res, expect, util.tol[tn], 'renorm into res')
               assert.is_true(x:renorm(p, dim, maxnorm) == x)
               util.assert_close(x, expect, util.tol[tn], 'renorm in place')
            end
         end
      end)
   end

   it('rejects bad arguments', function()
      local x = torch.randn(3, 4)
      util.assert_error(function() torch.renorm(torch.randn(5), 2, 1, 1) end, 'renorm:', 'at least 2 dimensions')
      util.assert_error(function() torch.renorm(x, 0, 1, 1) end, 'renorm:', 'p must be a positive number')
      util.assert_error(function() torch.renorm(x, 2, 3, 1) end, 'renorm:', 'dimension 3 out of range', '3x4')
      util.assert_error(function() torch.renorm(torch.LongTensor(3, 4), 2, 1, 1) end, 'renorm:', 'floating point')
   end)
end)

describe('matrix ops on CUDA', function()
   util.gpu_it('match the CPU', function()
      local a, b = torch.randn(5, 3, 7), torch.randn(5, 3, 7)
      util.assert_close(torch.cross(a:cuda(), b:cuda()):float(), torch.cross(a, b), util.tol['torch.FloatTensor'],
         'cross')
      local m = torch.randn(7, 5)
      util.assert_close(torch.diag(m:cuda(), -1):float(), torch.diag(m, -1), nil, 'diag matrix')
      util.assert_close(torch.diag(m[1]:cuda(), 2):float(), torch.diag(m[1], 2), nil, 'diag vector')
      util.assert_close(torch.tril(m:cuda(), 1):float(), torch.tril(m, 1), nil, 'tril')
      util.assert_close(torch.triu(m:cuda(), -1):float(), torch.triu(m, -1), nil, 'triu')
      util.assert_close(torch.renorm(a:cuda(), 2, 2, 3):float(), torch.renorm(a, 2, 2, 3),
         util.tol['torch.FloatTensor'], 'renorm')
   end)
end)
