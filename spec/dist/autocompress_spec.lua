-- autocompress_spec.lua: DataParallel{compress = 'auto'} on the Fashion-MNIST recipe's model.
-- Given a slow network (1 Gbit/s preset x 4) it compresses the large tensors and keeps the small ones dense; given
-- this machine's own cost table (unshaped shared memory, measured by dist.init) it stays dense;
-- either way its steps equal those of the mode it chose (compress = 'rgc' with the same tensors
-- compressed, or a dense allreduce with optim.sgd's momentum); when the choice changes nothing
-- is lost (every gradient is applied or still in a residual). Run alone (one rank) it checks
-- that one rank stays dense and equals momentum SGD. Fresh random data each run.
-- ctest: ranks 2
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local dist = require 'moontorch.dist'

dist.init { timeout = 120 }
local R, N = dist.rank(), dist.size()
local seed = dist.broadcastNumber(tonumber(os.getenv('MT_TEST_SEED')) or (os.time() % 100000))
if R == 0 then io.stderr:write(('[autocompress spec seed %d, %d ranks]\n'):format(seed, N)) end
torch.setnumthreads(1)

local small_cnn = require 'moontorch.models.small_cnn'
local MOM, WD, LR = 0.9, 1e-4, 0.05

local function fresh()
   torch.manualSeed(seed)
   return small_cnn { dropout = 0 }
end

-- batches differ per rank and per step, the same for every model
local function batch(step)
   torch.manualSeed(seed * 100 + step * 10 + R)
   return torch.randn(16, 1, 28, 28), torch.LongTensor(16):random(1, 10)
end

local crit = nn.CrossEntropyCriterion()
local function backward(dp, step)
   local x, y = batch(step)
   dp:zeroGradParameters()
   local out = dp:forward(x)
   crit:forward(out, y)
   dp:backward(x, crit:backward(out, y))
end

local maxdiff = require('spec.util').maxdiff

-- one rank exchanges nothing: whatever the network, auto stays dense and steps as momentum SGD
-- (the multi-rank checks below run under mpirun -np 2)
local function oneRank()
   local dp = dist.DataParallel(fresh(), { compress = 'auto', network = '1gbit', momentum = MOM, weightDecay = WD })
   assert.is_nil(dp.compressor)
   local ref = fresh()
   local p, g = ref:getParameters()
   local state = {}
   for s = 1, 3 do
      backward(dp, s)
      dp:updateParameters(LR)
      local x, y = batch(s)
      ref:zeroGradParameters()
      local out = ref:forward(x)
      crit:forward(out, y)
      ref:backward(x, crit:backward(out, y))
      optim.sgd(function() return 0, g end, p, { learningRate = LR, momentum = MOM, dampening = 0, weightDecay = WD },
         state)
   end
   local d = maxdiff(dp.params, p)
   assert.truthy(d == d and d <= 1e-5, ('one rank: auto and momentum SGD differ by %g'):format(d))
end

-- a module whose gradients are given: each rank injects its own random ones per step
local Injector, parent = torch.class('nn.AutoSpecInjector', 'nn.Module')
function Injector:__init(n1, n2)
   parent.__init(self)
   self.weight, self.gradWeight = torch.FloatTensor(n1):uniform(-1, 1), torch.FloatTensor(n1):zero()
   self.bias, self.gradBias = torch.FloatTensor(n2):uniform(-1, 1), torch.FloatTensor(n2):zero()
end
function Injector:updateOutput(input) self.output = input; return input end
function Injector:updateGradInput(input, gradOutput) self.gradInput = gradOutput; return gradOutput end
function Injector:accGradParameters()
   self.gradWeight:add(self.inject[1])
   self.gradBias:add(self.inject[2])
end

local function sparseSizes(dp)
   local sizes = {}
   for i, u in ipairs(dp.units) do sizes[#sizes + 1] = { len = u.hi - u.lo, sparse = dp.auto.sparse[i] == true } end
   table.sort(sizes, function(a, b) return a.len > b.len end)
   return sizes
end

describe("DataParallel{compress = 'auto'}", function()
   -- a rank that ends without finalize is taken by its peers as gone
   teardown(function() dist.finalize() end)
   it('on 250 Mbit/s compresses the large tensors, keeps the small dense, and steps as the mode it chose', function()
      if N < 2 then return oneRank() end
      -- 1 Gbit/s's times x 4: the first choice must not hang on how fast this build selects
      -- (ASan's, two ranks beside another test on 2 cores, measured up to 35 ns/element)
      local slow = require('moontorch.perf').network { preset = '1gbit', scale = 4, name = '250 Mbit/s' }
      local dp = dist.DataParallel(fresh(), { compress = 'auto', network = slow, momentum = MOM, weightDecay = WD })
      -- the first choice (selection timed on a random vector, no compute known yet)
      local function check(sizes, what)
         local minSparse = math.huge
         for _, s in ipairs(sizes) do if s.sparse then minSparse = math.min(minSparse, s.len) end end
         for _, s in ipairs(sizes) do
            if not s.sparse then
               assert.truthy(s.len < minSparse, what .. ': a dense tensor larger than a compressed one')
            end
            if s.len <= 256 then assert.is_false(s.sparse, what .. ': biases and batch-norm vectors stay dense') end
         end
         return minSparse
      end
      local sizes = sparseSizes(dp)
      assert.is_true(sizes[1].sparse, 'the largest tensor (the first linear layer) is compressed')
      check(sizes, 'start')
      for s = 1, 3 do
         backward(dp, s)
         dp:updateParameters(LR)
      end
      -- after the first step the choice is made again on measured times (selection cost and
      -- backward on this loaded CPU): whatever it is, it is the model's best and it is by size
      local minSparse = check(sparseSizes(dp), 'measured')
      local pa, pn, pr = dp.auto:predict('auto'), dp.auto:predict('none'), dp.auto:predict('rgc')
      assert.truthy(pa.step <= math.min(pn.step, pr.step) * (1 + 1e-9))
      -- the same steps through the mode it chose, from auto's state on
      local other, state
      if minSparse < math.huge then
         assert.truthy(dp.stats.bytes > 0 and dp.stats.bytes < dp.gradParams:nElement())
         other = dist.DataParallel(fresh(), { compress = 'rgc', minSize = minSparse, momentum = MOM, weightDecay = WD })
         local t, meta = dp:localState()
         other:setLocalState(t, meta)
      else
         other = dist.DataParallel(fresh())
         state = { dfdx = dp.auto.vel:clone() }
      end
      other.params:copy(dp.params)
      for s = 4, 6 do
         backward(dp, s)
         dp:updateParameters(LR)
         backward(other, s)
         if state then
            optim.sgd(function() return 0, other.gradParams end, other.params,
               { learningRate = LR, momentum = MOM, dampening = 0, weightDecay = WD }, state)
         else
            other:updateParameters(LR)
         end
      end
      local d = maxdiff(dp.params, other.params)
      assert.truthy(d == d and d <= 1e-5, ('auto and the mode it chose differ by %g'):format(d))
   end)

   it("on this machine's unshaped table stays dense and steps as a dense allreduce with momentum SGD", function()
      if N < 2 then return oneRank() end
      local dp = dist.DataParallel(fresh(), { compress = 'auto', momentum = MOM, weightDecay = WD })
      local ref = dist.DataParallel(fresh())
      local p, g = ref:getParameters()
      local state = {}
      for s = 1, 4 do
         backward(dp, s)
         dp:updateParameters(LR)
         backward(ref, s)
         optim.sgd(function() return 0, g end, p,
            { learningRate = LR, momentum = MOM, dampening = 0, weightDecay = WD }, state)
      end
      for i in ipairs(dp.units) do assert.is_nil(dp.auto.sparse[i], 'unit ' .. i .. ' compressed') end
      assert.is_nil(dp.compressor)
      local d = maxdiff(dp.params, p)
      assert.truthy(d == d and d <= 1e-5, ('auto and dense SGD differ by %g'):format(d))
      assert.truthy(tostring(dp):find('compress auto: bucket 1', 1, true))
   end)

   it('compresses only for a predicted gain above 5%: a tie stays dense, a clear gain compresses', function()
      if N < 2 then return oneRank() end
      local dp = dist.DataParallel(fresh(), { compress = 'auto', network = '1gbit', momentum = MOM, weightDecay = WD })
      local auto, predict = dp.auto, dp.auto.predict
      local gain
      -- the model's own choice of tensors, its step scaled to the gain asked for
      auto.predict = function(self, compress)
         local r = predict(self, compress)
         if compress == 'auto' then r.step = predict(self, 'none').step * (1 - gain) end
         return r
      end
      for _, case in ipairs { { 0.04, false }, { 0.06, true }, { 0.01, false }, { 0.5, true } } do
         gain = case[1]
         auto:decide('test')
         local any = false
         for i in ipairs(dp.units) do any = any or auto.sparse[i] == true end
         assert.are.equal(case[2], any, ('predicted gain %g'):format(gain))
      end
   end)

   it('loses nothing when the choice changes: a residual leaving compression is sent, then all is applied', function()
      if N < 2 then return oneRank() end
      local m = nn.AutoSpecInjector(60000, 300)
      -- 100 Mbit/s: compressing the large tensor pays by a wide margin whatever the CPU's load
      local slow = { alpha = 50e-6, beta = 8 / 100e6 }
      local dp = dist.DataParallel(m, { compress = 'auto', network = slow, density = 0.01 })
      local p0 = dp.params:double()
      local sum = torch.DoubleTensor(dp.params:nElement()):zero() -- the sum over steps of the rank average
      local x = torch.FloatTensor(1):fill(1)
      local function step(k)
         torch.manualSeed(seed * 1000 + k * 10 + R)
         m.inject = { torch.randn(60000):float(), torch.randn(300):float() }
         local flat = torch.cat(m.inject[1], m.inject[2]):double()
         dist.allreduce(flat, 'avg')
         sum:add(flat)
         dp:zeroGradParameters()
         dp:forward(x)
         dp:backward(x, x)
         dp:updateParameters(1)
      end
      for k = 1, 3 do step(k) end
      assert.truthy(dp.compressor ~= nil, 'the large tensor is compressed at 100 Mbit/s')
      -- what was not sent yet: every rank's residual, averaged
      local function residualAvg()
         local r = torch.DoubleTensor(dp.params:nElement()):zero()
         if dp.compressor then
            for _, u in ipairs(dp.compressor:residuals()) do r:narrow(1, u.lo + 1, u.hi - u.lo):copy(u.v:double()) end
         end
         dist.allreduce(r, 'avg')
         return r
      end
      local function check(what)
         local applied = p0 - dp.params:double()
         local d = (applied + residualAvg() - sum):abs():max()
         assert.truthy(d == d and d <= 1e-3, ('%s: applied + residual differs from the sum of gradients by %g'):format(
            what, d))
      end
      check('compressed')
      -- a fast network: the choice changes to dense; the residual goes out with the next gradient
      dp.auto.net = require('moontorch.perf').network('400gbit')
      dp.auto:decide('test')
      assert.is_nil(dp.compressor)
      step(4)
      check('after the switch to dense')
      local applied = p0 - dp.params:double()
      local d = (applied - sum):abs():max()
      assert.truthy(d <= 1e-3, ('dense again: every gradient applied, off by %g'):format(d))
      -- and back: compression starts with empty residuals
      dp.auto.net = require('moontorch.perf').network(slow)
      dp.auto:decide('test')
      assert.truthy(dp.compressor ~= nil)
      step(5)
      check('compressed again')
   end)

   it('with a dense bucket and a compressed one, steps as rgc with the same tensors compressed', function()
      if N < 2 then return oneRank() end
      local function build()
         torch.manualSeed(seed)
         return nn.Sequential():add(nn.AutoSpecInjector(200000, 50)):add(nn.AutoSpecInjector(5000, 30))
      end
      local function inject(model, k)
         torch.manualSeed(seed * 1000 + k * 10 + R)
         for i, sizes in ipairs({ { 200000, 50 }, { 5000, 30 } }) do
            model:get(i).inject = { torch.randn(sizes[1]):float(), torch.randn(sizes[2]):float() }
         end
      end
      local opts = { momentum = MOM, weightDecay = 0.01, density = 0.01 }
      local a = build()
      local dp = dist.DataParallel(a, { compress = 'auto', network = '1gbit', bucketMB = 0.5, momentum = opts.momentum,
         weightDecay = opts.weightDecay, density = opts.density })
      -- pin the choice: the large weight compressed, all else dense (no re-decision in this test)
      local sparse = {}
      for i, u in ipairs(dp.units) do if u.hi - u.lo == 200000 then sparse[i] = true end end
      dp.auto:apply(sparse)
      dp.auto.steps, dp.auto.every = 10, math.huge
      local compressed, dense = 0, 0
      for _, bk in ipairs(dp.buckets) do
         if bk.compressed then compressed = compressed + 1 else dense = dense + 1 end
      end
      assert.are.equal(1, compressed)
      assert.truthy(dense >= 1)
      local b = build()
      local ref = dist.DataParallel(b, { compress = 'rgc', minSize = 100000, momentum = opts.momentum,
         weightDecay = opts.weightDecay, density = opts.density })
      local x = torch.FloatTensor(1):fill(1)
      for k = 1, 4 do
         for _, pair in ipairs({ { dp, a }, { ref, b } }) do
            inject(pair[2], k)
            pair[1]:zeroGradParameters()
            pair[1]:forward(x)
            pair[1]:backward(x, x)
            pair[1]:updateParameters(LR)
         end
      end
      local d = maxdiff(dp.params, ref.params)
      assert.truthy(d == d and d <= 1e-5, ('auto (one dense bucket) and rgc differ by %g'):format(d))
   end)

   it('without bucketMB, sizes the buckets by perf.best after the first step and still averages alike', function()
      if N < 2 then return oneRank() end
      local dp = dist.DataParallel(fresh()) -- dist.init measured this job's cost table
      local ref = dist.DataParallel(fresh(), { bucketMB = 25 })
      assert.are.equal(25, dp.bucketMB)
      for s = 1, 3 do
         for _, m in ipairs({ dp, ref }) do
            backward(m, s)
            m:updateParameters(LR)
         end
      end
      local choice = dp.bucketChoice
      assert.truthy(choice, 'a choice after the first step')
      assert.are.equal(choice.bucketMB, dp.bucketMB)
      -- no other size predicts a shorter step for what was measured
      for _, mb in ipairs(require('moontorch.perf').BUCKETS_MB) do
         assert.truthy(choice.result.step <= require('moontorch.perf').predict { profile = choice.profile,
            network = choice.network, workers = N, algorithm = 'auto', bucketMB = mb }.step * (1 + 1e-12))
      end
      local d = maxdiff(dp.params, ref.params)
      assert.truthy(d == d and d <= 1e-5, ('re-bucketed and 25 MB DataParallel differ by %g'):format(d))
   end)

   it('refuses what it cannot do, by name', function()
      local ok, err = pcall(dist.DataParallel, fresh(), { compress = 'none', network = '1gbit' })
      assert.is_false(ok)
      assert.truthy(err:find("option 'network' needs compress = 'auto'", 1, true), err)
      ok, err = pcall(dist.DataParallel, fresh(), { compress = 'zip' })
      assert.is_false(ok)
      assert.truthy(err:find("compress must be one of none, rgc, powersgd, onebit, fp16, auto, got 'zip'", 1, true),
         err)
      if N >= 2 then
         ok, err = pcall(dist.DataParallel, fresh(), { compress = 'auto', network = '3gbit' })
         assert.is_false(ok)
         assert.truthy(err:find("'3gbit'", 1, true), err)
      end
   end)
end)

