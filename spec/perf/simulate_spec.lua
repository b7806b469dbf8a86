-- simulate_spec.lua: the performance model (moontorch.perf) on hand-made steps whose answer is
-- known in closed form, its network terms against their formulas, the calibration-table reader,
-- the profile of a real model, and compress = 'auto''s choices on networks where the answer is
-- clear. Sizes and times are drawn at random each run (the seed is printed).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local perf = require 'moontorch.perf'
local buckets = require 'moontorch.dist.buckets' -- DataParallel's own

local seed = tonumber(os.getenv('MT_TEST_SEED')) or (os.time() % 100000)
io.stderr:write(('[perf spec seed %d]\n'):format(seed))
math.randomseed(seed)

local function rand(lo, hi) return lo + (hi - lo) * math.random() end
local function close(got, want, rel)
   assert(got == got, 'NaN')
   assert(math.abs(got - want) <= (rel or 1e-9) * math.max(math.abs(want), 1e-12),
      ('expected %.12g, got %.12g'):format(want, got))
end

-- a profile by hand: layers {forward, backward, grads}
local function prof(layers, update)
   local p = { name = 'hand', elementBytes = 4, update = update or 0, layers = {} }
   for i, l in ipairs(layers) do p.layers[i] = { name = 'l' .. i, forward = l[1], backward = l[2], grads = l[3] } end
   return p
end

describe('perf.network', function()
   it('a bandwidth-bound ring costs 2(n-1)/n S / B; latency 2(n-1) alpha', function()
      local B = rand(1e8, 1e10)
      local net = perf.network { alpha = 0, beta = 1 / B }
      for _, n in ipairs({ 2, 3, 4, 8, 64 }) do
         local S = math.floor(rand(1e5, 1e8))
         close(net:allreduce('ring', S, n), 2 * (n - 1) / n * S / B)
      end
      local a = rand(1e-6, 1e-4)
      local lat = perf.network { alpha = a, beta = 0 }
      close(lat:allreduce('ring', 1000, 8), 14 * a)
      assert.are.equal(0, lat:allreduce('ring', 1000, 1))
      -- recursive doubling for tiny messages (mpi takes the cheaper)
      close(lat:allreduce('mpi', 1000, 8), 3 * a)
   end)

   it('hierarchical: inside the node at the intra figures, across nodes on one NIC', function()
      local bi, bo, p, m = rand(1e10, 1e11), rand(1e9, 1e10), 4, 8
      local net = perf.network { alpha = 0, beta = 1 / bo, intra = { alpha = 0, beta = 1 / bi }, ranksPerNode = p }
      local S = math.floor(rand(1e6, 1e8))
      local want = 2 * (p - 1) / p * S / bi + 2 * (m - 1) / m * S / bo
      close(net:allreduce('hierarchical', S, p * m), want)
      -- within one node the flat ring runs on the intra link
      close(net:allreduce('ring', S, p), 2 * (p - 1) / p * S / bi)
   end)

   it('presets are line rate times an efficiency; unknown names are listed', function()
      local net = perf.network('10gbit')
      local pr = perf.PRESETS['10gbit']
      close(1 / net.inter.beta, 10e9 / 8 * pr.efficiency)
      local ok, err = pcall(perf.network, { preset = '7gbit' })
      assert.is_false(ok)
      assert.truthy(err:find("unknown preset '7gbit'", 1, true) and err:find('100gbit', 1, true))
      ok, err = pcall(perf.network, { preset = '1gbit', colour = 1 })
      assert.is_false(ok)
      assert.truthy(err:find("unknown option 'colour'", 1, true))
   end)

   it('reads a calibration table, interpolates log-log between its sizes and fits alpha, beta', function()
      local a, b, n = rand(5e-6, 5e-5), 1 / rand(1e8, 1e9), 4
      local path = os.tmpname()
      local f = assert(io.open(path, 'w'))
      f:write(('moontorch-dist-model 1\nranks %d nodes 1 rows 6\n'):format(n))
      for _, alg in ipairs({ 'mpi', 'ring', 'multicolor', 'hierarchical' }) do
         f:write(alg)
         for i = 0, 5 do
            local S = 4096 * 4 ^ i
            f:write((' %.12g'):format(2 * (n - 1) * a + 2 * (n - 1) / n * S * b * (alg == 'ring' and 1 or 1.5)))
         end
         f:write('\n')
      end
      f:close()
      local net = perf.network { table = path }
      close(net:allreduce('ring', 4096 * 16, n), 2 * (n - 1) * a + 2 * (n - 1) / n * 4096 * 16 * b, 1e-7)
      -- between two sizes: log-log interpolation
      local lo, hi = net:allreduce('ring', 4096 * 4, n), net:allreduce('ring', 4096 * 16, n)
      close(net:allreduce('ring', 4096 * 8, n), math.sqrt(lo * hi), 1e-9)
      assert.truthy(net:allreduce('auto', 2 ^ 20, n) <= net:allreduce('mpi', 2 ^ 20, n))
      -- beyond the largest size: the marginal cost of the last two, exact for a straight line
      local big = 4096 * 4 ^ 5 * 37
      close(net:allreduce('ring', big, n), 2 * (n - 1) * a + 2 * (n - 1) / n * big * b, 1e-7)
      -- the fit recovers the line the ring row was made from
      close(net.inter.alpha, a, 1e-6)
      close(net.inter.beta, b, 1e-6)
      -- other rank counts: the fitted alpha-beta formulas, flagged
      close(net:allreduce('ring', 1e7, 8), 14 * a + 2 * 7 / 8 * 1e7 * b, 1e-6)
      assert.is_true(net.extrapolated)
      -- a broken file names itself and the line
      f = assert(io.open(path, 'w'))
      f:write('moontorch-dist-model 1\nranks 2 nodes 1 rows 2\nring 0.1 x\n')
      f:close()
      local ok, err = pcall(perf.network, { table = path })
      os.remove(path)
      assert.is_false(ok)
      assert.truthy(err:find(path, 1, true) and err:find('line 3', 1, true), err)
   end)
end)

describe('perf.predict on steps with a closed-form answer', function()
   local B = 1e9
   local net = perf.network { alpha = 0, beta = 1 / B }

   it('no overlap: the sum of compute and communication', function()
      local layers, F, Bw, elems = {}, 0, 0, 0
      for i = 1, 6 do
         local f, b, g = rand(1e-3, 1e-2), rand(1e-3, 2e-2), math.floor(rand(1e3, 1e6))
         layers[i] = { f, b, { g } }
         F, Bw, elems = F + f, Bw + b, elems + g
      end
      local upd = rand(1e-4, 1e-3)
      local n = 4
      local r = perf.predict { profile = prof(layers, upd), network = net, workers = n, overlap = false,
         bucketMB = 1e6, algorithm = 'ring' }
      assert.are.equal(1, #r.buckets)
      close(r.step, F + Bw + 2 * (n - 1) / n * elems * 4 / B + upd)
      close(r.compute, F + Bw + upd)
      close(r.efficiency, (F + Bw + upd) / r.step)
      close(r.bytes, 2 * (n - 1) / n * elems * 4)
   end)

   it('perfect overlap: the larger of backward and communication', function()
      -- the last layer owns a big gradient and takes no backward time: its bucket leaves at once;
      -- the first layer owns one element (its bucket costs 8 bytes' worth)
      local F, b1, g = rand(1e-3, 1e-2), rand(1e-3, 5e-2), math.floor(rand(1e5, 1e7))
      local n = 2
      local comm = 2 * (n - 1) / n * g * 4 / B
      local tail = 2 * (n - 1) / n * 4 / B
      local r = perf.predict { profile = prof({ { F, b1, { 1 } }, { 0, 0, { g } } }), network = net, workers = n,
         bucketMB = 1e-6, algorithm = 'ring' }
      assert.are.equal(2, #r.buckets)
      close(r.step, F + math.max(b1, comm) + tail)
      -- buckets go in order on one stream: the second starts when both it is ready and the first is done
      assert.truthy(r.buckets[2].start >= r.buckets[1].finish - 1e-15)
   end)

   it('one bucket: the exchange starts when the last gradient is ready', function()
      local layers, Fsum, Bsum, elems = {}, 0, 0, 0
      for i = 1, 5 do
         local f, b, g = rand(1e-4, 1e-3), rand(1e-4, 1e-3), math.floor(rand(1e3, 1e5))
         layers[i] = { f, b, { g, 7 } }
         Fsum, Bsum, elems = Fsum + f, Bsum + b, elems + g + 7
      end
      local n = 3
      local r = perf.predict { profile = prof(layers), network = net, workers = n, bucketMB = 1e6, algorithm = 'ring' }
      close(r.buckets[1].ready, Fsum + Bsum)
      close(r.step, Fsum + Bsum + 2 * (n - 1) / n * elems * 4 / B)
   end)

   it('lays out buckets exactly as DataParallel does', function()
      local layers, tensors = {}, {}
      for i = 1, 12 do
         local g = { math.floor(rand(1, 3e5)), math.floor(rand(1, 100)) }
         layers[i] = { 1e-4, 1e-4, g }
      end
      local p = prof(layers)
      local mb = rand(0.1, 1)
      local r = perf.predict { profile = p, network = net, workers = 2, bucketMB = mb }
      -- the same units through dist/buckets.lua's layout (last first)
      local at = 0
      for _, l in ipairs(p.layers) do
         for _, n in ipairs(l.grads) do tensors[#tensors + 1] = { lo = at, hi = at + n }; at = at + n end
      end
      local units = {}
      for i = #tensors, 1, -1 do units[#units + 1] = tensors[i] end
      local list = buckets.layout(units, 4, mb * 2 ^ 20)
      assert.are.equal(#list, #r.buckets)
      for b = 1, #list do assert.are.equal(list[b].bytes, r.buckets[b].bytes) end
   end)

   it('jitter: the slowest of n workers, mean + sd sqrt(2 ln n)', function()
      local f, b, g, j, n = rand(1e-3, 1e-2), rand(1e-3, 1e-2), math.floor(rand(1e3, 1e6)), rand(0.01, 0.1), 16
      local r = perf.predict { profile = prof({ { f, b, { g } } }), network = net, workers = n, overlap = false,
         bucketMB = 1e6, algorithm = 'ring', jitter = j }
      close(r.step, (f + b) * (1 + j * math.sqrt(2 * math.log(n))) + 2 * (n - 1) / n * g * 4 / B)
      close(r.compute, f + b)
   end)

   it('one worker: no communication, efficiency 1', function()
      local r = perf.predict { profile = prof({ { 1e-3, 2e-3, { 1000 } } }), network = net, workers = 1 }
      close(r.step, 3e-3)
      close(r.efficiency, 1)
   end)

   it('rejects bad options by name', function()
      local ok, err = pcall(perf.predict, { profile = prof({ { 1, 1, { 1 } } }), network = net, workers = 0 })
      assert.is_false(ok)
      assert.truthy(err:find('workers', 1, true))
      ok, err = pcall(perf.predict, { profile = prof({ { 1, 1, { 1 } } }), network = net, compress = 'zip' })
      assert.is_false(ok)
      assert.truthy(err:find("compress must be 'none', 'rgc', 'auto'", 1, true))
   end)
end)

describe("compress = 'auto' in the model", function()
   local p = perf.fromLayers(perf.models.layers('resnet50'), 165)

   it('compresses on a slow network and not on a fast one, never worse than either mode', function()
      for _, case in ipairs({ { '1gbit', true }, { '100gbit', false } }) do
         local q = { profile = p, network = case[1], workers = 8 }
         q.compress = 'auto'
         local auto = perf.predict(q)
         q.compress = 'none'
         local none = perf.predict(q)
         q.compress = 'rgc'
         local rgc = perf.predict(q)
         local sparse = 0
         for _ in pairs(auto.sparse) do sparse = sparse + 1 end
         assert.are.equal(case[2], sparse > 0, case[1])
         assert.truthy(auto.step <= math.min(none.step, rgc.step) * (1 + 1e-9), case[1])
      end
   end)

   it('keeps the smallest tensors dense when only the large ones pay', function()
      local r = perf.predict { profile = p, network = '10gbit', workers = 64, compress = 'auto' }
      local small, large = math.huge, 0
      for i, u in ipairs(r.units) do
         local len = u.hi - u.lo
         if r.sparse[i] then small = math.min(small, len) else large = math.max(large, len) end
      end
      assert.truthy(small < math.huge, 'something compressed at 10 Gbit/s on 64 workers')
      -- the biases and batch-norm vectors (at most 2048 elements) stay dense
      for i, u in ipairs(r.units) do
         if u.hi - u.lo <= 2048 then assert.is_nil(r.sparse[i]) end
      end
   end)

   it('perf.best finds no configuration better than the ones it was given', function()
      local b = perf.best { profile = p, network = '25gbit', workers = 16, compress = { 'none', 'rgc' } }
      for _, c in ipairs({ 'none', 'rgc' }) do
         for _, a in ipairs({ 'mpi', 'ring' }) do
            for _, mb in ipairs({ 1, 25, 100 }) do
               local r = perf.predict { profile = p, network = '25gbit', workers = 16, compress = c, algorithm = a,
                  bucketMB = mb }
               assert.truthy(b.result.step <= r.step * (1 + 1e-12))
            end
         end
      end
   end)
end)

describe('perf.profile', function()
   it('measures a model: gradient sizes, backward order, positive times; JSON round trip', function()
      torch.setnumthreads(1)
      local model = nn.Sequential():add(nn.SpatialConvolution(1, 4, 3, 3, 1, 1, 1, 1)):add(nn.ReLU())
         :add(nn.View(4 * 8 * 8)):add(nn.Linear(4 * 8 * 8, 10))
      local p = perf.profile(model, { 4, 1, 8, 8 }, { reps = 2, name = 'tiny' })
      assert.are.equal(2, #p.layers)
      assert.are.same({ 4 * 9, 4 }, p.layers[1].grads)
      assert.are.same({ 10 * 256, 10 }, p.layers[2].grads)
      assert.are.same({ 2, 1 }, p.order) -- backward finishes the linear layer first
      for _, l in ipairs(p.layers) do assert.truthy(l.forward > 0 and l.backward > 0) end
      local path = os.tmpname()
      perf.save(p, path)
      local q = perf.load(path)
      os.remove(path)
      assert.are.same(p, q)
      local ok, err = pcall(perf.profile, model, 'big')
      assert.is_false(ok)
      assert.truthy(err:find('inputShape', 1, true))
   end)

   it('fromLayers spreads a step by FLOPs, backward twice the forward', function()
      local layers = perf.models.layers('vgg16')
      local ms = rand(50, 500)
      local p = perf.fromLayers(layers, ms)
      close(perf.compute(p), ms / 1000, 1e-12)
      local _, flops = perf.models.summary(layers)
      close(p.layers[3].backward, 2 * p.layers[3].forward, 1e-12)
      close(p.layers[3].forward + p.layers[3].backward, layers[3].flops / flops * ms / 1000, 1e-12)
   end)
end)
