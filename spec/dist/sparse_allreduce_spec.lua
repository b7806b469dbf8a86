-- sparse_allreduce_spec.lua: dist.sparseAllreduce on 1 to 4 ranks in nodes of 2 (groupSize 2;
-- 3 ranks: a node of 2 and one of 1). Every rank regenerates every rank's pairs from the
-- printed seed, so the sum is checked against a float64 reference, the hierarchical result
-- against the flat allgather's exactly (values on a grid of 1/64, whose sums are exact in
-- float32), both dense switches, and the bytes each rank received to the byte.
-- ctest: ranks 1 2 3 4
local torch = require 'moontorch'
local dist = require 'moontorch.dist'

local R, N, seed = require('spec.util').distStart(dist, 'sparse allreduce')

local G = N >= 2 and 2 or 1 -- ranks per node
local function nodeOf(q) return math.floor(q / G) end
local M = nodeOf(N - 1) + 1

-- rank q's pairs: k of them, some from a pool every rank draws from (so selections overlap),
-- three -1 paddings; values on a grid of 1/64 (grid) or uniform in (-1, 1)
local function pairsOf(q, n, k, grid)
   math.randomseed(seed + 7919 * q)
   local pool = math.max(1, math.floor(n / 8))
   local idx, val = {}, {}
   for i = 1, k do
      idx[i] = (i % 2 == 0) and (math.random(pool) - 1) or (math.random(n) - 1)
      val[i] = grid and (math.random(-512, 512) / 64) or (2 * math.random() - 1)
   end
   for _ = 1, 3 do
      local at = math.random(#idx + 1)
      table.insert(idx, at, -1)
      table.insert(val, at, grid and 1 or 0.5)
   end
   return idx, val
end

local function tensors(idx, val)
   local ti, tv = torch.IntTensor(#idx), torch.FloatTensor(#val)
   for i = 1, #idx do ti[i], tv[i] = idx[i], val[i] end
   return ti, tv
end

local function kOf(q, base) return base + 5 * q end

-- the float64 sum over ranks `from` (default all), by index (0-based), and its nonzero indices
local function reference(n, base, grid, from)
   local sum = {}
   for q = 0, N - 1 do
      if not from or from[q] then
         local idx, val = pairsOf(q, n, kOf(q, base), grid)
         for i = 1, #idx do
            if idx[i] >= 0 then sum[idx[i]] = (sum[idx[i]] or 0) + val[i] end
         end
      end
   end
   local nonzero = 0
   for _, v in pairs(sum) do if v ~= 0 then nonzero = nonzero + 1 end end
   return sum, nonzero
end

local function run(n, base, grid, algorithm, op)
   local ti, tv = tensors(pairsOf(R, n, kOf(R, base), grid))
   local out = torch.FloatTensor(n):fill(42) -- overwritten everywhere
   local _, stats = dist.sparseAllreduce(out, ti, tv, { algorithm = algorithm, op = op })
   return out, stats
end

-- the same bits on every rank
local function sameEverywhere(out)
   local hi, lo = out:clone(), out:clone()
   dist.allreduce(hi, 'max')
   dist.allreduce(lo, 'min')
   for i = 1, out:nElement() do
      if hi[i] ~= lo[i] or out[i] ~= out[i] then return false, i end
   end
   return true
end

local function maxError(out, sum, scale)
   local worst = 0
   for i = 1, out:nElement() do
      worst = math.max(worst, math.abs(out[i] - (sum[i - 1] or 0) * scale))
   end
   return worst
end

-- bytes rank R receives, by the schedules in csrc/dist/sparse.c
local function pairCount(q, n, base)
   local c = 0
   for _, i in ipairs((pairsOf(q, n, kOf(q, base), true))) do if i >= 0 then c = c + 1 end end
   return c
end

local function expectedFlat(n, base)
   if N == 1 then return 0 end
   local total = 0
   for q = 0, N - 1 do total = total + pairCount(q, n, base) end
   return (N - 1) * 4 + (total - pairCount(R, n, base)) * 8
end

local function expectedHierarchical(n, base)
   if N == 1 then return 0, false end
   local node, L = nodeOf(R), 0
   for q = 0, N - 1 do if nodeOf(q) == node then L = L + 1 end end
   local leader = R % G == 0
   local merged, sumMerged = {}, 0 -- merged (nonzero) pairs per node
   for m = 0, M - 1 do
      local from = {}
      for q = 0, N - 1 do from[q] = nodeOf(q) == m end
      local _, nz = reference(n, base, true, from)
      merged[m] = nz
      sumMerged = sumMerged + nz
   end
   local interDense = M > 1 and sumMerged * 8 >= 2 * (M - 1) / M * n * 4
   local _, union = reference(n, base, true)
   if M == 1 then union = merged[0] end
   local bytes = 0
   if leader then
      if L > 1 then
         local nodeTotal = 0
         for q = 0, N - 1 do if nodeOf(q) == node then nodeTotal = nodeTotal + pairCount(q, n, base) end end
         bytes = bytes + (L - 1) * 4 + (nodeTotal - pairCount(R, n, base)) * 8
      end
      if M > 1 then
         bytes = bytes + (M - 1) * 4
            + (interDense and math.floor(2 * (M - 1) / M * n * 4) or (sumMerged - merged[node]) * 8)
      end
      return bytes, interDense
   end
   local denseBack = interDense or union * 8 >= n * 4
   return 16 + (denseBack and n * 4 or union * 8), denseBack
end

describe('dist.sparseAllreduce on ' .. N .. ' ranks', function()
   teardown(function() dist.finalize() end)

   it('sums every rank\'s pairs as a float64 reference does, the same bits on every rank', function()
      for _, alg in ipairs(dist.sparseAlgorithms()) do
         for _, op in ipairs({ 'sum', 'avg' }) do
            local out = run(1000, 30, false, alg, op)
            local sum = reference(1000, 30, false)
            local err = maxError(out, sum, op == 'avg' and 1 / N or 1)
            assert.is_true(err < 1e-5, ('%s %s: max error %g'):format(alg, op, err))
            local same, at = sameEverywhere(out)
            assert.is_true(same, ('%s %s: ranks differ at element %s'):format(alg, op, tostring(at)))
         end
      end
   end)

   it('hierarchical equals the flat allgather exactly on exact sums', function()
      local flat = run(1000, 40, true, 'allgather')
      local hier = run(1000, 40, true, 'hierarchical')
      local sum = reference(1000, 40, true)
      assert.equals(0, maxError(flat, sum, 1))
      for i = 1, 1000 do
         if flat[i] ~= hier[i] then error(('element %d: flat %g, hierarchical %g'):format(i, flat[i], hier[i])) end
      end
   end)

   it('counts the bytes each rank received, to the byte, sparse and through both dense switches', function()
      -- n = 1000, ~40 pairs a rank: sparse throughout; n = 120, ~60 pairs a rank: the leaders
      -- (from 2 nodes on) and the broadcast back go dense
      for _, case in ipairs({ { 1000, 40 }, { 120, 60 } }) do
         local n, base = case[1], case[2]
         local _, flatStats = run(n, base, true, 'allgather')
         assert.equals(expectedFlat(n, base), flatStats.recvBytes)
         local out, stats = run(n, base, true, 'hierarchical')
         local want, dense = expectedHierarchical(n, base)
         assert.equals(want, stats.recvBytes)
         if dense and R % G ~= 0 then assert.equals(-1, stats.pairs) end
         assert.equals(0, maxError(out, reference(n, base, true), 1))
      end
   end)

   it('goes dense among the leaders when their merged sets would move more than a ring', function()
      if M < 2 then
         pending('needs two nodes (3 or 4 ranks in nodes of 2)')
         return
      end
      local _, dense = expectedHierarchical(120, 60)
      assert.is_true(dense)
      local _, stats = run(120, 60, true, 'hierarchical')
      assert.equals(-1, stats.pairs)
   end)

   it('takes ranks with no pairs at all', function()
      local out = torch.FloatTensor(50):fill(3)
      local ti, tv = torch.IntTensor(0), torch.FloatTensor(0)
      if R == 0 then ti, tv = torch.IntTensor({ 7, -1 }), torch.FloatTensor({ 2.5, 9 }) end
      for _, alg in ipairs(dist.sparseAlgorithms()) do
         dist.sparseAllreduce(out, ti, tv, { algorithm = alg })
         assert.equals(2.5, out[8])
         assert.equals(2.5, out:sum())
      end
   end)

   it('names what is wrong', function()
      local out = torch.FloatTensor(10)
      local ok, err = pcall(dist.sparseAllreduce, out, torch.IntTensor({ 3, 10 }), torch.FloatTensor({ 1, 2 }))
      assert.is_false(ok)
      assert.matches("idx%[1%] = 10 is outside out's 10 elements", err)
      ok, err = pcall(dist.sparseAllreduce, out, torch.IntTensor({ 3 }), torch.FloatTensor({ 1, 2 }))
      assert.is_false(ok)
      assert.matches('idx has 1 elements but val 2', err)
      ok, err = pcall(dist.sparseAllreduce, torch.DoubleTensor(10), torch.IntTensor({ 3 }), torch.FloatTensor({ 1 }))
      assert.is_false(ok)
      assert.matches('out must be float32, got float64', err)
      local one, v1 = torch.IntTensor({ 3 }), torch.FloatTensor({ 1 })
      ok, err = pcall(dist.sparseAllreduce, out, one, v1, { algorithm = 'tree' })
      assert.is_false(ok)
      assert.matches("unknown algorithm 'tree' %(allgather, hierarchical%)", err)
      ok, err = pcall(dist.sparseAllreduce, out, torch.IntTensor({ 3 }), torch.FloatTensor({ 1 }), { op = 'max' })
      assert.is_false(ok)
      assert.matches('op must be sum or avg, got max', err)
   end)
end)
