-- collectives_spec.lua: run by ctest under `mpirun -np N` for N = 1..4 (CMakeLists.txt): every
-- collective and every allreduce algorithm, every dtype, sizes 0, 1, primes and MBs, against a
-- reference that every rank computes in float64 from every rank's seed. Every rank runs the
-- same `it`s in the same order, so their collectives line up.
-- ctest: ranks 1 2 3 4
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local dist = require 'moontorch.dist'

-- "nodes" of 2 ranks, so that hierarchical has more than one node on this one host
local R, N, seed = require('spec.util').distStart(dist, 'collectives')

local ALGS = { 'mpi', 'ring', 'multicolor', 'hierarchical', 'auto' }
local OPS = { 'sum', 'avg', 'max', 'min' }
local SIZES = { 0, 1, 2, 7, 13, 1009, 65537 }

local function typename(d) return T.typename(d.id, -1) end

-- rank r's input: random values that every rank can regenerate. Sums of N ranks stay exact
-- for integers; bytes stay under 256, chars (int8) within +-127; bools are 0/1.
local function input(d, n, r, salt)
   torch.manualSeed(seed + 7919 * r + 104729 * (salt or 0))
   local x = n > 0 and torch.rand(n):double() or torch.DoubleTensor(0)
   if d.name == 'Byte' then x = x:mul(60):floor()
   elseif d.name == 'Char' then x = x:mul(60):add(-30):floor()
   elseif d.name == 'Bool' then x = x:gt(0.5):double()
   elseif not d.is_float then x = x:mul(2000):add(-1000):floor()
   else x = x:mul(4):add(-2) end
   return x:type(typename(d))
end

-- float64 reference of op over every rank's input (as stored, so half rounding is included)
local function reference(d, n, op, salt)
   local acc
   for r = 0, N - 1 do
      local t = input(d, n, r, salt):double()
      if not acc then acc = t:clone()
      elseif op == 'sum' or op == 'avg' then acc:add(t)
      elseif op == 'max' then acc:cmax(t)
      else acc:cmin(t) end
   end
   if d.name == 'Bool' and (op == 'sum' or op == 'avg') then acc = acc:gt(0):double() end
   if op == 'avg' and d.name ~= 'Bool' then
      acc:div(N)
      if not d.is_float then
         acc = acc:double()
         acc:apply(function(v) return v >= 0 and math.floor(v) or math.ceil(v) end)
      end
   end
   return acc
end

local TOL = { Float = 1e-5, Double = 1e-12, Half = 4e-3, BFloat16 = 3e-2 }

local function same(got, ref, d, what)
   local g = got:double()
   assert.equal(ref:nElement(), g:nElement(), what .. ': size')
   if ref:nElement() == 0 then return end
   assert.is_false(g:ne(g):any(), what .. ': NaN in the result')
   local err = (g - ref):abs():max()
   local tol = d.is_float and TOL[d.name] * math.max(1, (ref:clone():abs():max())) or 0
   assert(err <= tol, ('%s: max error %g > %g'):format(what, err, tol))
end

describe(('dist on %d ranks'):format(N), function()
   -- a rank that ends without finalize is taken by its peers as gone
   teardown(function() dist.finalize() end)

   it('knows its place', function()
      assert.is_true(R >= 0 and R < N)
      assert.is_true(dist.localRank() < dist.localSize())
      if N >= 2 then
         assert.equal(R % 2, dist.localRank())
         assert.equal(math.floor(R / 2), dist.node())
         assert.equal(math.ceil(N / 2), dist.nodes())
      end
      local ranks = torch.LongTensor(N)
      dist.allgather(ranks, torch.LongTensor(1):fill(R))
      for r = 0, N - 1 do assert.equal(r, ranks[r + 1]) end
   end)

   for _, alg in ipairs(ALGS) do
      it('allreduce with ' .. alg .. ': every dtype, op and small size', function()
         for _, d in ipairs(T.dtypes) do
            for _, op in ipairs(OPS) do
               for _, n in ipairs(SIZES) do
                  local t = input(d, n, R)
                  dist.allreduce(t, op, { algorithm = alg })
                  same(t, reference(d, n, op), d, ('%s %s %s[%d]'):format(alg, op, d.name, n))
               end
            end
         end
      end)

      it('allreduce with ' .. alg .. ': several MB', function()
         -- one dtype per kind of reduction (float, half in float, integer): the small sizes
         -- above cover every dtype; these cover the chunking and threading of large messages
         for _, d in ipairs({ T.dtypes[T.FLOAT + 1], T.dtypes[T.HALF + 1], T.dtypes[T.LONG + 1] }) do
            local n = math.floor(3 * 2 ^ 20 / tonumber(require('ffi').sizeof(d.ctype))) + 3
            local t = input(d, n, R, 1)
            dist.allreduce(t, 'sum', { algorithm = alg })
            same(t, reference(d, n, 'sum', 1), d, ('%s sum %s[%d]'):format(alg, d.name, n))
         end
      end)
   end

   -- what the README promises of half and bfloat16 sums: each hop adds in float32 and rounds the
   -- partial sum to the type once, so an element carries at most N-1 roundings, each at most half
   -- a unit in the last place of a number no larger than the sum of the magnitudes
   it('half and bfloat16 sums are within N-1 roundings of the exact sum, with every algorithm', function()
      for _, d in ipairs({ T.dtypes[T.HALF + 1], T.dtypes[T.BFLOAT16 + 1] }) do
         local mantissa = d.name == 'Half' and 10 or 7
         local n = 4099
         local mag = torch.DoubleTensor(n):zero()
         for r = 0, N - 1 do mag:add(input(d, n, r, 11):double():abs()) end
         local bound = mag:clone():apply(function(v)
            return v > 0 and (N - 1) * 0.5 * 2 ^ (math.floor(math.log(v) / math.log(2)) - mantissa) or 0
         end)
         for _, alg in ipairs(ALGS) do
            local t = input(d, n, R, 11)
            dist.allreduce(t, 'sum', { algorithm = alg })
            local err = (t:double() - reference(d, n, 'sum', 11)):abs()
            assert.is_false(t:double():ne(t:double()):any(), alg .. ': NaN')
            local over = err:gt(bound):sum()
            assert(over == 0, ('%s %s: %d of %d elements beyond N-1 roundings (largest error %g)'):format(alg,
               d.name, over, n, err:max()))
         end
      end
   end)

   it('broadcast, allgather and reduceScatter on every dtype', function()
      for _, d in ipairs(T.dtypes) do
         for _, n in ipairs({ 0, 1, 13, 65537 }) do
            local root = (n + 1) % N
            local t = input(d, n, R, 2)
            dist.broadcast(t, root)
            same(t, input(d, n, root, 2):double(), d, 'broadcast ' .. d.name)

            local out = T.new_tensor(d.id, -1, { N * n })
            dist.allgather(out, input(d, n, R, 3))
            for r = 0, N - 1 do
               if n > 0 then
                  same(out:narrow(1, r * n + 1, n), input(d, n, r, 3):double(), d, 'allgather ' .. d.name)
               end
            end

            for _, op in ipairs(OPS) do
               local o = input(d, n, R, 9):clone()
               dist.reduceScatter(o, input(d, N * n, R, 4), op)
               local ref = reference(d, N * n, op, 4)
               if n > 0 then same(o, ref:narrow(1, R * n + 1, n), d, 'reduceScatter ' .. op .. ' ' .. d.name) end
            end
         end
      end
   end)

   it('runs async work in issue order and hands results back on wait', function()
      local hs, ts = {}, {}
      for i = 1, 6 do
         ts[i] = input(T.dtypes[1], 5000 * i, R, 10 + i)
         hs[i] = dist.allreduceAsync(ts[i], 'sum', { algorithm = ALGS[(i - 1) % 4 + 1] })
      end
      local b = dist.broadcastAsync(torch.FloatTensor(3):fill(R + 1), N - 1)
      for i = 6, 1, -1 do
         assert.equal(ts[i], hs[i]:wait())
         assert.is_true(hs[i]:test())
         same(ts[i], reference(T.dtypes[1], 5000 * i, 'sum', 10 + i), T.dtypes[1], 'async ' .. i)
      end
      assert.equal(N, b:wait()[1])
      dist.barrierAsync():wait()
   end)

   it('reduces a non-contiguous tensor in place', function()
      local base = input(T.dtypes[2], 60, R, 20):view(6, 10)
      local t = base:t()
      dist.allreduce(t, 'max', { algorithm = 'ring' })
      same(base:view(60), reference(T.dtypes[2], 60, 'max', 20), T.dtypes[2], 'transposed')
   end)

   it('auto gives the result of the algorithm it picks', function()
      dist.tune(1 * 2 ^ 20, 1)
      for _, n in ipairs({ 3, 1009, 65537, 300000 }) do
         local choice = dist.autoChoice(4 * n)
         assert.truthy(({ mpi = 1, ring = 1, multicolor = 1, hierarchical = 1 })[choice], choice)
         local a, b = input(T.dtypes[1], n, R, 30), input(T.dtypes[1], n, R, 30)
         dist.allreduce(a, 'sum', { algorithm = 'auto' })
         dist.allreduce(b, 'sum', { algorithm = choice })
         assert.is_true(a:eq(b):all(), 'auto differs from ' .. choice)
         same(a, reference(T.dtypes[1], n, 'sum', 30), T.dtypes[1], 'auto')
      end
      local path = os.tmpname()
      dist.saveModel(path)
      dist.loadModel(path) -- rank 0 wrote it; every rank gets rank 0's table
      os.remove(path)
   end)

   if N > 1 then
      it('names both ranks when their calls disagree', function()
         local t = torch.FloatTensor(R == N - 1 and 11 or 10):fill(1)
         local ok, err = pcall(dist.allreduce, t, 'sum')
         assert.is_false(ok)
         assert.truthy(tostring(err):match('ranks disagree'), err)
         assert.truthy(tostring(err):match('float32%[10%]'), err)
         assert.truthy(tostring(err):match('rank ' .. (N - 1) .. ' called allreduce #%d+ of float32%[11%]'), err)
         -- the communicator still works
         local u = torch.FloatTensor(4):fill(1)
         dist.allreduce(u, 'sum')
         assert.equal(N, u[1])
      end)
   end

   it('rejects bad arguments with their names', function()
      assert.error_matches(function() dist.allreduce(torch.FloatTensor(3), 'prod') end, "unknown reduction op 'prod'")
      assert.error_matches(function() dist.allreduce(torch.FloatTensor(3), 'sum', { algorithm = 'tree' }) end,
         "unknown algorithm 'tree'")
      assert.error_matches(function() dist.broadcast(torch.FloatTensor(3), N) end, 'root ' .. N .. ' is not a rank')
      assert.error_matches(function() dist.allgather(torch.FloatTensor(N * 3 + 1), torch.FloatTensor(3)) end,
         'must hold size')
      assert.error_matches(function() dist.allgather(torch.DoubleTensor(N * 3), torch.FloatTensor(3)) end,
         'out is float64 but input is float32')
      assert.error_matches(function() dist.allreduce(torch.FloatTensor(3), 'sum', { algorithm = 'nccl' }) end, 'nccl')
   end)

   it('rejects unknown options at the caller, naming the key and the known ones', function()
      -- the whole message, with the caller's position (assert.error_matches drops that)
      local function message(fn, ...)
         local ok, err = pcall(fn, ...)
         assert.is_false(ok)
         return tostring(err)
      end
      -- dist.init checks its options before it sees that it already ran
      assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.init: unknown option 'timout' %(timeout, groupSize, "
         .. 'algorithm, check, chunkBytes, model, tuneMaxBytes, tuneReps%)$',
         message(function() dist.init{ timeout = 120, timout = 5 } end))
      assert.matches('dist%.init: options must be a table, got string', message(function() dist.init('ring') end))
      for _, name in ipairs { 'allreduce', 'allreduceAsync' } do
         assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.allreduce: unknown option 'algo' %(algorithm%)$",
            message(function() dist[name](torch.FloatTensor(3), 'sum', { algo = 'ring' }) end))
         assert.matches('dist%.allreduce: options must be a table, got string',
            message(function() dist[name](torch.FloatTensor(3), 'sum', 'ring') end))
      end
      -- collectives without options say so rather than drop the table
      local x = torch.FloatTensor(3)
      for _, name in ipairs { 'broadcast', 'broadcastAsync' } do
         assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.broadcast: unknown option 'grupSize' "
            .. '%(dist%.broadcast takes none; its root is a plain argument%)$',
            message(function() dist[name](x, 0, { grupSize = 2 }) end))
         assert.matches("dist%.broadcast: unknown option 'root' %(dist%.broadcast takes none; its root is a plain ",
            message(function() dist[name](x, { root = 0 }) end))
         assert.matches('dist%.broadcast: root must be a rank number, got 0%.5',
            message(function() dist[name](x, 0.5) end))
      end
      for _, name in ipairs { 'allgather', 'allgatherAsync' } do
         assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.allgather: unknown option 'algoritm' %(dist%.allgather "
            .. 'takes none%)$', message(function() dist[name](torch.FloatTensor(N * 3), x, { algoritm = 'x' }) end))
         assert.matches('dist%.allgather: too many arguments: a string after the last one, the tensors',
            message(function() dist[name](torch.FloatTensor(N * 3), x, 'ring') end))
      end
      assert.matches("dist%.reduceScatter: unknown option 'algorithm' %(dist%.reduceScatter takes none; its op",
         message(function() dist.reduceScatter(x, torch.FloatTensor(N * 3), 'sum', { algorithm = 'ring' }) end))
      assert.matches("dist%.reduceScatter: unknown option 'op' %(dist%.reduceScatter takes none; its op",
         message(function() dist.reduceScatterAsync(x, torch.FloatTensor(N * 3), { op = 'sum' }) end))
      assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.barrier: unknown option 'timeout' %(dist%.barrier takes "
         .. 'none%)$', message(function() dist.barrier { timeout = 5 } end))
      assert.matches("dist%.barrier: unknown option 'timeout'",
         message(function() dist.barrierAsync { timeout = 5 } end))
      for _, name in ipairs { 'sparseAllreduce', 'sparseAllreduceAsync' } do
         assert.matches("^[^:]*collectives_spec%.lua:%d+: dist%.sparseAllreduce: unknown option 'algoritm' %(op, "
            .. 'algorithm%)$', message(function()
               dist[name](x, torch.IntTensor(1):fill(0), torch.FloatTensor(1), { algoritm = 'x' })
            end))
      end
      -- nothing was issued: the ranks still agree
      dist.barrier {}
      local t = torch.FloatTensor(4):fill(1)
      dist.allreduce(t, 'sum', { algorithm = 'ring' })
      assert.equal(N, t[1])
   end)
end)
