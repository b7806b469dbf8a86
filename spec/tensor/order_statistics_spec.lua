-- order_statistics_spec.lua: kthvalue, median, mode, nonzero, histc, bhistc and maskedCopy against
-- references computed here in Lua doubles, on fresh random odd-sized inputs (with ties, and
-- transposed), checking values and 1-based indices, result-first forms and errors.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local function sizes_of(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

-- values from a small set (ties) of a typename, optionally as a transposed (non-contiguous) view
local function rand_ties(shape, tn, transposed, nvals)
   local s = {}
   for i = 1, #shape do s[i] = shape[i] end
   if transposed then s[1], s[#s] = s[#s], s[1] end
   local flat = {}
   for i = 1, util.numel(s) do flat[i] = math.random(0, (nvals or 5) - 1) end
   local t = T.from_flat(flat, s, T.parse_typename(tn), T.CPU_DEVICE)
   if transposed then
      t = t:transpose(1, #s)
      assert(not t:isContiguous())
   end
   return t, util.flat(t)
end

-- the lines along dim d of a row-major flat array of a shape: list of { values, flat positions }
local function lines(flat, shape, d)
   local inner = 1
   for i = d + 1, #shape do inner = inner * shape[i] end
   local n, outer = shape[d], util.numel(shape) / (shape[d] * inner)
   local out = {}
   for o = 0, outer - 1 do
      for i = 0, inner - 1 do
         local vals = {}
         for j = 0, n - 1 do vals[j + 1] = flat[(o * n + j) * inner + i + 1] end
         out[#out + 1] = vals
      end
   end
   return out
end

-- stable ascending order of a line: positions
local function order(line)
   local pos = {}
   for i = 1, #line do pos[i] = i end
   table.sort(pos, function(i, j) if line[i] ~= line[j] then return line[i] < line[j] end return i < j end)
   return pos
end

local function reduced(shape, d)
   local s = {}
   for i = 1, #shape do s[i] = i == d and 1 or shape[i] end
   return s
end

describe('kthvalue and median', function()
   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.IntTensor', 'torch.LongTensor' } do
      it('give the k-th smallest value and its index along every dim (' .. tn .. ')', function()
         local shape = { 5, 4, 7 }
         local x, fx = rand_ties(shape, tn, true)
         for d = 1, 3 do
            for _, k in ipairs { 1, 2, shape[d] } do
               local ev, ei = {}, {}
               for _, line in ipairs(lines(fx, shape, d)) do
                  local p = order(line)[k]
                  ev[#ev + 1], ei[#ei + 1] = line[p], p
               end
               local v, i = torch.kthvalue(x, k, d)
               assert.are.same(reduced(shape, d), sizes_of(v))
               assert.are.equal('torch.LongTensor', i:type())
               util.assert_close(v, ev, nil, ('kthvalue k=%d dim=%d'):format(k, d))
               util.assert_close(i, ei, nil, ('kthvalue indices k=%d dim=%d'):format(k, d))
               -- median: the lower one for even sizes
               local m = math.floor((shape[d] + 1) / 2)
               local mv, mi = x:median(d)
               local emv, emi = {}, {}
               for _, line in ipairs(lines(fx, shape, d)) do
                  local p = order(line)[m]
                  emv[#emv + 1], emi[#emi + 1] = line[p], p
               end
               util.assert_close(mv, emv, nil, 'median dim ' .. d)
               util.assert_close(mi, emi, nil, 'median indices dim ' .. d)
            end
         end
      end)
   end

   it('default to the last dim and fill given results', function()
      local shape = { 3, 6 }
      local x, fx = util.rand_tensor(shape, 'torch.DoubleTensor')
      local ev, ei, mv, mi = {}, {}, {}, {}
      for _, line in ipairs(lines(fx, shape, 2)) do
         local o = order(line)
         ev[#ev + 1], ei[#ei + 1] = line[o[4]], o[4]
         mv[#mv + 1], mi[#mi + 1] = line[o[3]], o[3] -- 6 elements: the 3rd is the lower median
      end
      local rv, ri = torch.DoubleTensor(), torch.LongTensor()
      local v, i = torch.kthvalue(rv, ri, x, 4)
      assert.is_true(v == rv and i == ri)
      util.assert_close(rv, ev, nil, 'kthvalue into results')
      util.assert_close(ri, ei, nil, 'kthvalue indices into results')
      torch.median(rv, ri, x)
      assert.are.same({ 3, 1 }, sizes_of(rv))
      util.assert_close(rv, mv, nil, 'median into results')
      util.assert_close(ri, mi, nil, 'median indices into results')
   end)

   it('reject bad k and dim', function()
      local x = torch.randn(3, 5)
      util.assert_error(function() torch.kthvalue(x, 0) end, 'kthvalue:', 'k = 0 out of range', 'size 5')
      util.assert_error(function() x:kthvalue(6) end, 'kthvalue:', 'k = 6')
      util.assert_error(function() x:kthvalue(4, 1) end, 'kthvalue:', 'k = 4', 'dimension 1 of size 3')
      util.assert_error(function() x:kthvalue(1, 3) end, 'kthvalue:', 'dimension 3 out of range', '3x5')
      util.assert_error(function() x:median(0) end, 'median:', 'dimension 0 out of range')
      util.assert_error(function() torch.median(torch.randn(3, 0)) end, 'median:', 'empty')
   end)
end)

describe('mode', function()
   -- most frequent value, smallest among ties, index of its last occurrence
   local function ref_mode(line)
      local count, last = {}, {}
      for i, v in ipairs(line) do
         local key = v ~= v and 'nan' or v
         count[key] = (count[key] or 0) + 1
         last[key] = i
      end
      local best, bestc
      for key, c in pairs(count) do
         local better = bestc == nil or c > bestc
         if not better and c == bestc then
            better = key ~= 'nan' and (best == 'nan' or key < best)
         end
         if better then best, bestc = key, c end
      end
      return best == 'nan' and 0 / 0 or best, last[best]
   end

   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.IntTensor', 'torch.ByteTensor' } do
      it('finds the most frequent value along every dim (' .. tn .. ')', function()
         local shape = { 7, 5, 9 }
         local x, fx = rand_ties(shape, tn, true, 4)
         for d = 1, 3 do
            local ev, ei = {}, {}
            for _, line in ipairs(lines(fx, shape, d)) do
               ev[#ev + 1], ei[#ei + 1] = ref_mode(line)
            end
            local v, i = torch.mode(x, d)
            assert.are.same(reduced(shape, d), sizes_of(v))
            util.assert_close(v, ev, nil, 'mode dim ' .. d)
            util.assert_close(i, ei, nil, 'mode indices dim ' .. d)
         end
      end)
   end

   it('counts NaNs as one value, defaults to the last dim and fills given results', function()
      local nan = 0 / 0
      local x = torch.DoubleTensor { { nan, 1, nan, 2 }, { 3, nan, 3, 1 }, { 2, 2, 1, 1 } }
      local rv, ri = torch.DoubleTensor(), torch.LongTensor()
      local v, i = torch.mode(rv, ri, x)
      assert.is_true(v == rv and i == ri)
      util.assert_close(rv, { nan, 3, 1 }, nil, 'mode with NaN', true)
      util.assert_close(ri, { 3, 3, 4 }, nil, 'mode indices with NaN')
   end)

   it('rejects a bad dim', function()
      util.assert_error(function() torch.mode(torch.randn(3, 4), 3) end, 'mode:', 'dimension 3 out of range')
      util.assert_error(function() torch.mode(torch.randn(3, 0)) end, 'mode:', 'empty')
   end)
end)

describe('nonzero', function()
   local function ref_nonzero(flat, shape)
      local out = {}
      for lin = 0, #flat - 1 do
         local v = flat[lin + 1]
         if v ~= 0 then
            local idx, r = {}, lin
            for d = #shape, 1, -1 do idx[d] = r % shape[d] + 1; r = math.floor(r / shape[d]) end
            for d = 1, #shape do out[#out + 1] = idx[d] end
         end
      end
      return out
   end

   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.IntTensor', 'torch.ByteTensor' } do
      it('lists the 1-based subscripts of the nonzero elements in row-major order (' .. tn .. ')', function()
         for _, shape in ipairs { { 11 }, { 5, 7 }, { 3, 5, 4 } } do
            local x, fx = rand_ties(shape, tn, #shape > 1, 3)
            local expect = ref_nonzero(fx, shape)
            local r = torch.nonzero(x)
            assert.are.equal('torch.LongTensor', r:type())
            assert.are.same({ #expect / #shape, #shape }, sizes_of(r))
            util.assert_close(r, expect, nil, 'nonzero ' .. table.concat(shape, 'x'))
            local res = torch.LongTensor()
            assert.is_true(x.nonzero(res, x) == res)
            util.assert_close(res, expect, nil, 'nonzero into res')
         end
      end)
   end

   it('counts NaN as nonzero, gives no rows for all zeros and wants a LongTensor result', function()
      local r = torch.nonzero(torch.DoubleTensor { 0, 0 / 0, 0, -2 })
      util.assert_close(r, { 2, 4 }, nil, 'nonzero with NaN')
      assert.are.equal(0, torch.nonzero(torch.zeros(3, 4)):nElement())
      util.assert_error(function() torch.nonzero(torch.IntTensor(), torch.randn(3)) end, 'nonzero:', 'LongTensor')
   end)
end)

describe('histc and bhistc', function()
   local function ref_hist(vals, nbins, lo, hi)
      if lo == hi then
         lo, hi = math.huge, -math.huge
         for _, v in ipairs(vals) do lo, hi = math.min(lo, v), math.max(hi, v) end
      end
      if lo == hi then lo, hi = lo - 1, hi + 1 end
      local h = {}
      for b = 1, nbins do h[b] = 0 end
      for _, v in ipairs(vals) do
         if v >= lo and v <= hi then
            local b = math.min(math.floor((v - lo) / (hi - lo) * nbins), nbins - 1)
            h[b + 1] = h[b + 1] + 1
         end
      end
      return h
   end

   it('histc counts every element into equal bins (Double, random values)', function()
      local shape = { 7, 13 }
      local x = util.rand_tensor({ 13, 7 }, 'torch.DoubleTensor', -4, 4):t()
      local fx = util.flat(x)
      util.assert_close(torch.histc(x), ref_hist(fx, 100, 0, 0), nil, 'histc default')
      util.assert_close(x:histc(17), ref_hist(fx, 17, 0, 0), nil, 'histc 17 bins')
      local h = torch.histc(x, 9, -2.5, 3)
      util.assert_close(h, ref_hist(fx, 9, -2.5, 3), nil, 'histc in a range')
      assert.is_true(h:sum() < #fx) -- the range left some out
      local res = torch.DoubleTensor()
      assert.is_true(torch.histc(res, x, 5, -1, 1) == res)
      util.assert_close(res, ref_hist(fx, 5, -1, 1), nil, 'histc into res')
      assert.are.same({ 7, 13 }, shape)
   end)

   it('histc on integer-valued floats, with a flat input widened by 1', function()
      local x, fx = rand_ties({ 9, 5 }, 'torch.FloatTensor', true, 7)
      util.assert_close(torch.histc(x, 7, 0, 7), ref_hist(fx, 7, 0, 7), nil, 'histc float')
      util.assert_close(torch.histc(torch.FloatTensor(5):fill(3), 4), { 0, 0, 5, 0 }, nil, 'histc of a constant')
   end)

   it('bhistc gives one histogram per row over the common range', function()
      local x = util.rand_tensor({ 5, 11 }, 'torch.DoubleTensor', -3, 3)
      local fx = util.flat(x)
      local lo, hi = math.huge, -math.huge
      for _, v in ipairs(fx) do lo, hi = math.min(lo, v), math.max(hi, v) end
      for _, args in ipairs { { 7 }, { 6, -1, 2 } } do
         local expect = {}
         for r = 0, 4 do
            local row = {}
            for c = 1, 11 do row[c] = fx[r * 11 + c] end
            local h = ref_hist(row, args[1], args[2] or lo, args[3] or hi)
            for _, v in ipairs(h) do expect[#expect + 1] = v end
         end
         local h = torch.bhistc(x, unpack(args))
         assert.are.same({ 5, args[1] }, sizes_of(h))
         util.assert_close(h, expect, nil, 'bhistc ' .. table.concat(args, ','))
      end
      -- maths.md's example
      local y = torch.Tensor { { 2, 4, 2, 2, 5, 4 }, { 3, 5, 1, 5, 3, 5 }, { 3, 4, 2, 5, 5, 1 } }
      util.assert_close(torch.bhistc(y, 5, 1, 5), { 0, 3, 0, 2, 1, 1, 0, 2, 0, 3, 1, 1, 1, 1, 2 }, nil, 'bhistc doc')
   end)

   it('reject bad arguments', function()
      util.assert_error(function() torch.histc(torch.LongTensor(3)) end, 'histc:', 'floating point')
      util.assert_error(function() torch.histc(torch.randn(3), 0) end, 'histc:', 'nbins must be a positive integer')
      util.assert_error(function() torch.histc(torch.randn(3), 5, 2, 1) end, 'histc:', 'below max')
      util.assert_error(function() torch.bhistc(torch.randn(2, 3, 4)) end, 'bhistc:', 'expected a matrix', '2x3x4')
   end)
end)

describe('maskedCopy', function()
   it('copies the source, in order, into the masked elements', function()
      local x = util.rand_tensor({ 7, 5 }, 'torch.DoubleTensor')
      x = x:t() -- 5x7, not contiguous
      local fx = util.flat(x)
      local mask, fm = rand_ties({ 35 }, 'torch.ByteTensor', false, 2)
      local src, fs = util.rand_tensor({ 6, 7 }, 'torch.DoubleTensor')
      local expect, j = {}, 0
      for i = 1, 35 do
         if fm[i] == 1 then j = j + 1; expect[i] = fs[j] else expect[i] = fx[i] end
      end
      assert.is_true(x:maskedCopy(mask, src) == x)
      util.assert_close(x, expect, nil, 'maskedCopy')
      -- t[mask] = tensor goes through it
      local y = torch.zeros(4)
      y[torch.ByteTensor { 0, 1, 0, 1 }] = torch.Tensor { 10, 20 }
      util.assert_close(y, { 0, 10, 0, 20 }, nil, 't[mask] = src')
   end)

   it('rejects bad masks and sources', function()
      local x = torch.zeros(2, 3)
      util.assert_error(function() x:maskedCopy(torch.ByteTensor(5):fill(1), torch.zeros(6)) end, 'maskedCopy:',
         '5 elements', '2x3')
      util.assert_error(function() x:maskedCopy(torch.ByteTensor(6):fill(1), torch.zeros(4)) end, 'maskedCopy:',
         'selects 6', 'only 4')
      util.assert_error(function() x:maskedCopy(torch.LongTensor(6):fill(1), torch.zeros(6)) end, 'maskedCopy:',
         'ByteTensor')
      util.assert_error(function() x:maskedCopy(torch.ByteTensor(6):fill(1), torch.zeros(6):double()) end,
         'maskedCopy:', 'DoubleTensor')
   end)
end)

describe('order ops on CUDA', function()
   util.gpu_it('match the CPU', function()
      local x = rand_ties({ 5, 4, 7 }, 'torch.FloatTensor', true)
      local g = x:cuda()
      for d = 1, 3 do
         for _, f in ipairs { function(t) return t:kthvalue(2, d) end, function(t) return t:median(d) end,
            function(t) return t:mode(d) end } do
            local v, i = f(x)
            local gv, gi = f(g)
            util.assert_close(gv:float(), v, nil, 'values dim ' .. d)
            util.assert_close(gi:long(), i, nil, 'indices dim ' .. d)
         end
      end
      util.assert_close(torch.nonzero(g):long(), torch.nonzero(x), nil, 'nonzero')
      local r = torch.randn(6, 9)
      util.assert_close(torch.histc(r:cuda(), 7):float(), torch.histc(r, 7), nil, 'histc')
      util.assert_close(torch.bhistc(r:cuda(), 5, -1, 1):float(), torch.bhistc(r, 5, -1, 1), nil, 'bhistc')
      local m = torch.ByteTensor(6, 9):bernoulli(0.5)
      local y, gy = r:clone(), r:cuda()
      y:maskedCopy(m, torch.randn(60):fill(7))
      gy:maskedCopy(m:cuda(), torch.CudaTensor(60):fill(7))
      util.assert_close(gy:float(), y, nil, 'maskedCopy')
   end)
end)
