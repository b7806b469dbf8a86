-- dist.DataParallel in one process: the same gradients and steps as the bare model (size 1,
-- the real dist when it loads, else a fake), the bucket layout (reverse order, size caps), the
-- getParameters idiom, with a fake dist of size 2 that plays the other rank: averaging, launch
-- order and launches during backward; and N ranks simulated by coroutines against one process
-- on the whole batch. The check over real ranks (mpirun) is spec/dist/dp_worker.lua.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local DataParallel = require 'moontorch.dist.DataParallel'

local function maxdiff(a, b) return a:clone():add(-1, b):abs():max() end

-- A fake dist: size and rank as given; allreduceAsync snapshots the tensor at launch (so a
-- bucket sent before its gradients are final gives a wrong result) and, at wait, writes the
-- average with o.other (the other rank's flat gradient) if given. log records every call.
local function fakeDist(o)
   o = o or {}
   local n = o.size or 1
   local d = { log = {} }
   function d.initialized() return true end
   function d.size() return n end
   function d.rank() return o.rank or 0 end
   function d.broadcast(t, root)
      d.log[#d.log + 1] = { op = 'broadcast', n = t:nElement(), root = root }
      if o.rank0 then t:fill(o.rank0) end
      return t
   end
   function d.allgather(out, t)
      local k = t:nElement()
      for r = 0, n - 1 do out:narrow(1, r * k + 1, k):copy(t) end
      if o.tamper then o.tamper(out, k) end
      return out
   end
   function d.allreduceAsync(t, op, opts)
      local rec = { op = op, opts = opts, n = t:nElement(), offset = t:storageOffset(), at = o.clock and o.clock() }
      d.log[#d.log + 1] = rec
      local snap = t:clone()
      return {
         test = function() return true end,
         wait = function()
            if o.other then snap:add(o.other:narrow(1, rec.offset, rec.n)) end
            if op == 'avg' then snap:div(n) end
            t:copy(snap)
            return t
         end,
      }
   end
   return d
end

-- N ranks as coroutines in this process: fn(rank, dist) runs on each; a collective waits
-- (yields) until every rank has reached it and checks they all issued the same one. An async
-- allreduce takes its data at launch, as the real one may.
local function simulate(N, fn)
   local slots, ranks = {}, {}
   local function dist(rank)
      local seq, d = 0, {}
      local function post(op, data)
         seq = seq + 1
         local s = slots[seq] or { op = op, c = {}, n = 0 }
         slots[seq] = s
         assert(s.op == op, ('rank %d: collective %d is %s here but %s on another rank'):format(rank, seq, op, s.op))
         s.c[rank], s.n = data, s.n + 1
         return s
      end
      local function await(s) while s.n < N do coroutine.yield() end end
      local function reduce(s, t, op)
         local acc = s.c[0]:clone()
         for r = 1, N - 1 do
            if op == 'max' then acc:cmax(s.c[r]) elseif op == 'min' then acc:cmin(s.c[r]) else acc:add(s.c[r]) end
         end
         if op == 'avg' then acc:div(N) end
         return t:copy(acc)
      end
      function d.initialized() return true end
      function d.rank() return rank end
      function d.size() return N end
      function d.broadcast(t, root)
         local s = post('broadcast', rank == root and t:clone() or false)
         await(s)
         return t:copy(s.c[root])
      end
      function d.allgather(out, t)
         local s, k = post('allgather', t:clone()), t:nElement()
         await(s)
         for r = 0, N - 1 do out:narrow(1, r * k + 1, k):copy(s.c[r]) end
         return out
      end
      function d.allreduce(t, op)
         local s = post('allreduce', t:clone())
         await(s)
         return reduce(s, t, op or 'sum')
      end
      function d.allreduceAsync(t, op)
         local s = post('allreduce', t:clone())
         return { wait = function() await(s); return reduce(s, t, op or 'sum') end,
            test = function() return s.n == N end }
      end
      return d
   end
   for r = 0, N - 1 do ranks[r] = coroutine.create(function() fn(r, dist(r)) end) end
   local alive = N
   while alive > 0 do
      alive = 0
      for r = 0, N - 1 do
         if coroutine.status(ranks[r]) ~= 'dead' then
            local ok, err = coroutine.resume(ranks[r])
            if not ok then error(('rank %d: %s'):format(r, tostring(err)), 0) end
            if coroutine.status(ranks[r]) ~= 'dead' then alive = alive + 1 end
         end
      end
   end
end

local function launches(d)
   local l = {}
   for _, r in ipairs(d.log) do if r.op ~= 'broadcast' then l[#l + 1] = r end end
   return l
end

-- size 1: the real dist when this build has it
local function size1()
   local ok, dist = pcall(require, 'moontorch.dist')
   if ok and type(dist) == 'table' and dist.allreduceAsync and pcall(dist.init, {}) and dist.size() == 1 then
      return dist
   end
   return fakeDist()
end

local function mlp()
   return nn.Sequential():add(nn.Linear(10, 20)):add(nn.Tanh()):add(nn.Linear(20, 30)):add(nn.Tanh())
      :add(nn.Linear(30, 5)):double()
end

local function convnet()
   return nn.Sequential():add(nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(4))
      :add(nn.ReLU()):add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(nn.View(4 * 4 * 4)):add(nn.Linear(64, 6)):double()
end

local function step(m, x, dy)
   m:zeroGradParameters()
   m:forward(x)
   m:backward(x, dy)
end

describe('dist.DataParallel, one process', function()
   it('gives the bare model gradients and updates', function()
      for _, build in ipairs({ mlp, convnet }) do
         local model = build()
         local ref = model:clone()
         local dp = DataParallel(model, { dist = size1(), bucketMB = 1e-3 })
         assert.equal(model, dp.module)
         local x = build == mlp and torch.randn(8, 10):double() or torch.randn(8, 3, 8, 8):double()
         local dy = torch.randn(8, build == mlp and 5 or 6):double()
         for _ = 1, 3 do
            step(dp, x, dy)
            step(ref, x, dy)
            assert.is_true(maxdiff(dp.output, ref.output) < 1e-12)
            assert.is_true(maxdiff(dp.gradInput, ref.gradInput) < 1e-12)
            local _, g1 = dp:parameters()
            local _, g2 = ref:parameters()
            for i = 1, #g1 do assert.is_true(maxdiff(g1[i], g2[i]) < 1e-12) end
            dp:updateParameters(0.1)
            ref:updateParameters(0.1)
         end
         local p1 = dp:parameters()
         local p2 = ref:parameters()
         for i = 1, #p1 do assert.is_true(maxdiff(p1[i], p2[i]) < 1e-12) end
      end
   end)

   it('lays buckets out in reverse parameter order within bucketMB', function()
      -- gradients, last first: b3 5, w3 150, b2 30, w2 600, b1 20, w1 200 (floats: 4 bytes)
      local function layout(mb)
         local m = nn.Sequential():add(nn.Linear(10, 20)):add(nn.Linear(20, 30)):add(nn.Linear(30, 5))
         local dp = DataParallel(m, { dist = fakeDist(), bucketMB = mb })
         local out = {}
         for b, bk in ipairs(dp.buckets) do
            out[b] = {}
            for _, u in ipairs(bk.units) do out[b][#out[b] + 1] = dp.units[u].params[1] end
            assert.equal(bk.hi - bk.lo, bk.grad:nElement())
            assert.is_true(bk.grad:isContiguous())
         end
         return out, dp, m
      end
      -- cap 1000 bytes: smaller than w2's 2400, which gets a bucket of its own
      local l, dp, m = layout(1000 / 2 ^ 20)
      assert.same({ { 6, 5, 4 }, { 3 }, { 2, 1 } }, l)
      -- each bucket is the flat gradient's slice over its modules' gradients (no copies)
      assert.equal(m.modules[2].gradBias:storageOffset(), dp.buckets[1].grad:storageOffset())
      assert.equal(m.modules[2].gradWeight:storageOffset(), dp.buckets[2].grad:storageOffset())
      assert.equal(m.modules[1].gradWeight:storageOffset(), dp.buckets[3].grad:storageOffset())
      dp.buckets[2].grad:fill(3)
      assert.equal(3, m.modules[2].gradWeight:min())
      assert.same({ { 6, 5, 4, 3, 2, 1 } }, (layout(25)))
      assert.same({ { 6 }, { 5 }, { 4 }, { 3 }, { 2 }, { 1 } }, (layout(1e-9)))
      assert.truthy(tostring(dp):find('3 buckets', 1, true))
   end)

   it('keeps the getParameters idiom working with optim', function()
      local model, x, y = mlp(), torch.randn(6, 10):double(), torch.randn(6, 5):double()
      local early, earlyG = model:getParameters()   -- taken before wrapping: stays valid
      local ref = model:clone()
      local dp = DataParallel(model, { dist = size1(), bucketMB = 1e-3 })
      local crit = nn.MSECriterion():double()
      local function train(m)
         local p, gp = m:getParameters()
         local cfg, st = { learningRate = 0.1, momentum = 0.9 }, {}
         for _ = 1, 4 do
            optim.sgd(function()
               gp:zero()
               local out = m:forward(x)
               local loss = crit:forward(out, y)
               m:backward(x, crit:backward(out, y))
               return loss, gp
            end, p, cfg, st)
         end
         return p, gp
      end
      local p, gp = train(dp)
      local pr = train(ref)
      assert.is_true(maxdiff(p, pr) < 1e-12)
      assert.is_true(maxdiff(early, p) == 0 and maxdiff(earlyG, gp) == 0)
      -- the buckets are views of that gp
      gp:fill(2)
      for _, bk in ipairs(dp.buckets) do assert.equal(2, bk.grad:min()) end
   end)

   it('broadcasts the parameters and the BatchNormalization statistics from rank 0', function()
      local model = convnet()
      local d = fakeDist({ size = 2, rank = 1, rank0 = 7 })
      DataParallel(model, { dist = d })
      for _, p in ipairs(model:parameters()) do assert.equal(7, p:min()); assert.equal(7, p:max()) end
      local bn = model.modules[2]
      assert.equal(7, bn.running_mean:min())
      assert.equal(7, bn.running_var:max())
      for _, r in ipairs(d.log) do assert.equal(0, r.root) end
   end)

   it('names both ranks when the layouts differ', function()
      local d = fakeDist({ size = 2, tamper = function(out, k) out[k + 3] = 99 end })
      local ok, err = pcall(DataParallel, mlp(), { dist = d })
      assert.is_false(ok)
      assert.truthy(err:find('rank 0 has parameters 6, elements 1005, buckets 1', 1, true), err)
      assert.truthy(err:find('rank 1 has parameters 6, elements 1005, buckets 99', 1, true), err)
   end)

   it('averages with the other rank and sends buckets during backward, in order', function()
      for _, overlap in ipairs({ true, false }) do
         local model = mlp()
         local other = model:clone()
         local x1, x2, dy = torch.randn(4, 10):double(), torch.randn(4, 10):double(), torch.randn(4, 5):double()
         -- the other rank's gradient on its own data
         local _, otherG = other:getParameters()
         step(other, x2, dy)
         local ref = model:clone()
         step(ref, x1, dy)
         local _, refG = ref:getParameters()
         -- the first layer flags when its backward starts
         local first = model.modules[1]
         local firstRan = false
         first.updateGradInput = function(self, ...)
            firstRan = true
            return nn.Linear.updateGradInput(self, ...)
         end
         local d = fakeDist({ size = 2, other = otherG, clock = function() return firstRan end })
         local dp = DataParallel(model, { dist = d, bucketMB = 1e-9, overlap = overlap, algorithm = 'ring' })
         step(dp, x1, dy)
         local _, g = dp:getParameters()
         assert.is_true(maxdiff(g, refG:clone():add(otherG):div(2)) < 1e-12)
         local l = launches(d)
         assert.equal(#dp.buckets, #l)
         local before = 0
         for b, r in ipairs(l) do
            assert.equal('avg', r.op)
            assert.equal('ring', r.opts.algorithm)
            assert.equal(dp.buckets[b].grad:storageOffset(), r.offset)
            if not r.at then before = before + 1 end
         end
         if overlap then
            -- the buckets of layers 3 and 2 (4 of 6) left before layer 1's backward began
            assert.equal(4, before)
         else
            assert.equal(0, before)
         end
      end
   end)

   -- (one module instance placed twice in a model is beyond getParameters, hence beyond dp)
   it('supports shared parameters', function()
      local l = nn.Linear(4, 4)
      local model = nn.Sequential():add(l):add(nn.Tanh()):add(nn.Linear(4, 4)):add(nn.Tanh())
         :add(l:clone('weight', 'bias', 'gradWeight', 'gradBias')):double()
      local ref = model:clone()
      local x, dy = torch.randn(3, 4):double(), torch.randn(3, 4):double()
      local d = fakeDist({ size = 2, other = torch.zeros(40):double() })
      local dp = DataParallel(model, { dist = d, bucketMB = 1e-9 })
      assert.equal(4, #dp.buckets)   -- the shared weight and bias are one unit each
      step(dp, x, dy)
      step(ref, x, dy)
      local _, g1 = dp:getParameters()
      local _, g2 = ref:getParameters()
      assert.is_true(maxdiff(g1, g2:clone():div(2)) < 1e-12)
      assert.equal(#dp.buckets, #launches(d))
   end)

   it('skips and forces synchronisation on request', function()
      local d = fakeDist()
      local model = mlp()
      local dp = DataParallel(model, { dist = d, bucketMB = 1e-9 })
      local x, dy = torch.randn(2, 10):double(), torch.randn(2, 5):double()
      dp:noSync()
      step(dp, x, dy)
      assert.equal(0, #launches(d))
      dp:noSync(false)
      dp:allreduceGradients()
      assert.equal(#dp.buckets, #launches(d))
   end)

   it('passes errors through and can go on afterwards', function()
      local model = mlp()
      local dp = DataParallel(model, { dist = fakeDist(), bucketMB = 1e-9 })
      dp:forward(torch.randn(2, 10):double())
      local ok, err = pcall(dp.backward, dp, torch.randn(2, 10):double(), torch.randn(2, 7):double())
      assert.is_false(ok)
      assert.is_string(err)
      step(dp, torch.randn(2, 10):double(), torch.randn(2, 5):double())
   end)

   it('trains in train.Trainer like the bare model', function()
      local data = require 'moontorch.data'
      local train = require 'moontorch.train'
      local function run(wrap)
         torch.manualSeed(3)
         local model = nn.Sequential():add(nn.Linear(4, 8)):add(nn.ReLU()):add(nn.Linear(8, 3))
         if wrap then model = DataParallel(model, { dist = fakeDist(), bucketMB = 1e-9 }) end
         local src = data.Synthetic{ n = 32, batchSize = 8, shape = { 4 }, nClasses = 3, seed = 4 }
         train.Trainer{ model = model, criterion = nn.CrossEntropyCriterion(), optimizer = optim.sgd,
            config = { learningRate = 0.1, momentum = 0.9 }, schedule = function() return 0.1 end, train = src,
            val = src, nEpochs = 2, quiet = true }:fit()
         return (model:getParameters())
      end
      assert.equal(0, maxdiff(run(true), run(false)))
   end)

   it('Trainer accumulate = K allreduces once per step, after the last micro-batch, '
      .. 'with the one-batch result', function()
      local train = require 'moontorch.train'
      local src = { nbatches = function() return 1 end, errors = function() return {} end }
      local x, y = torch.randn(12, 10):double(), torch.LongTensor(12):random(1, 5)
      local function run(k, wrap)
         torch.manualSeed(5)
         local model, d = mlp(), nil
         if wrap then
            d = fakeDist({ size = 2, other = torch.randn(10000):double() })
            model = DataParallel(model, { dist = d, bucketMB = 1e-9 })
         end
         local t = train.Trainer{ model = model, criterion = nn.CrossEntropyCriterion():double(), optimizer = optim.sgd,
            config = { learningRate = 0.1 }, train = src, val = src, quiet = true, accumulate = k }
         local before = d and #launches(d) or 0
         t:step(x, y)
         return t.params:clone(), d and #launches(d) - before, model
      end
      local p3, n3, dp = run(3, true)
      assert.equal(#dp.buckets, n3) -- not 3 times as many
      assert.is_false(dp.skipSync) -- the next step synchronises again
      local p1, n1 = run(1, true)
      assert.equal(n1, n3)
      assert.is_true(maxdiff(p3, p1) < 1e-12)
   end)

   it('trains N simulated ranks x b like one process x N*b', function()
      local N, b, steps = 3, 2, 3
      torch.manualSeed(11)
      local init = convnet()
      init:evaluate()   -- BN in evaluate mode: the slices' batch statistics would differ
      local X, dY = torch.randn(steps, N * b, 3, 8, 8):double(), torch.randn(steps, N * b, 6):double()
      local final = {}
      simulate(N, function(rank, d)
         local model = init:clone()
         -- replicas start apart: the broadcast makes them rank 0's
         if rank > 0 then for _, t in ipairs(model:parameters()) do t:add(rank) end end
         model.modules[2].running_mean:add(rank)
         local dp = DataParallel(model, { dist = d, bucketMB = 1e-4 })
         for s = 1, steps do
            local x, dy = X[s]:narrow(1, rank * b + 1, b), dY[s]:narrow(1, rank * b + 1, b)
            step(dp, x, dy:clone():mul(N))   -- a mean over b: N times the gradient of one over N*b
            dp:updateParameters(0.1)
         end
         final[rank] = dp:getParameters():clone()
         assert.equal(0, model.modules[2].running_mean:abs():max())
      end)
      local ref = init:clone()
      for s = 1, steps do
         step(ref, X[s], dY[s])
         ref:updateParameters(0.1)
      end
      local pr = ref:getParameters()
      for r = 0, N - 1 do assert.is_true(maxdiff(final[r], pr) < 1e-10, 'rank ' .. r) end
   end)

   it('converts types and stays a transparent wrapper', function()
      local model = convnet()
      local dp = DataParallel(model, { dist = fakeDist(), bucketMB = 1e-9 })
      local ref = model:clone():float()
      dp:float()
      assert.equal('torch.FloatTensor', dp:type())
      local x, dy = torch.randn(2, 3, 8, 8), torch.randn(2, 6)
      step(dp, x, dy)
      step(ref, x, dy)
      local _, g1 = dp:getParameters()
      local _, g2 = ref:getParameters()
      assert.equal('torch.FloatTensor', g1:type())
      assert.is_true(maxdiff(g1, g2) < 1e-6)
      assert.equal(#model:listModules(), #dp:listModules())
      dp:evaluate()
      assert.is_false(model.modules[2].train)
      dp:training()
      assert.is_true(model.modules[2].train)
      local ok, err = pcall(DataParallel, model, { dist = fakeDist(), bucketSize = 3 })
      assert.is_false(ok)
      assert.truthy(err:find("unknown option 'bucketSize'", 1, true), err)
      ok, err = pcall(dp.clone, dp)
      assert.is_false(ok)
      assert.truthy(err:find('clone dp.module', 1, true), err)
   end)
end)
