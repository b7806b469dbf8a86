-- rgc_spec.lua: residual gradient compression (dist/rgc.lua, DataParallel compress = 'rgc'),
-- run by ctest solo and under `mpirun -np N` for N = 1..4 like every spec here. Fresh random
-- gradients each run (the seed is printed); every rank checks its own invariant and the
-- exchanged sum against float64 references built from every rank's sent pairs.
-- ctest: ranks 1 2 3 4
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local dist = require 'moontorch.dist'
local rgc = require 'moontorch.dist.rgc'

local R, N, seed = require('spec.util').distStart(dist, 'rgc')

-- a flat gradient of several "parameters": two small (dense) and three large (compressed)
local SIZES = { 37, 20011, 5, 70001, 16384 }
local function layout()
   local units, lo = {}, 0
   for _, n in ipairs(SIZES) do
      units[#units + 1] = { lo = lo, hi = lo + n }
      lo = lo + n
   end
   return units, lo
end

-- what this rank sent in its last step, as a dense float64 vector of the flat size
local function sentDense(c, stats, n)
   local s = torch.DoubleTensor(n):zero()
   if stats.dense then return s end
   for i = 1, stats.sent do
      local j = c.sidx[i]
      if c.o.exchange == 'hierarchical' then -- indexed into the compressed parameters, in order
         for _, u in ipairs(c.sparse) do
            if j >= u.sp and j < u.sp + (u.hi - u.lo) then j = u.lo + j - u.sp; break end
         end
      end
      s[j + 1] = s[j + 1] + c.sval[i]
   end
   return s
end

local maxdiff = require('spec.util').maxdiff
-- largest magnitude (x:abs() is in place in Torch7, so on a copy)
local function amax(x) return x:double():clone():abs():max() end

describe('dist.rgc', function()
-- a rank that ends without finalize is taken by its peers as gone
teardown(function() dist.finalize() end)

describe('compressor', function()

   for _, case in ipairs {
      { method = 'exact', momentum = 0 }, { method = 'threshold', momentum = 0.9 },
      { method = 'trimmed', momentum = 0.9, nesterov = true },
      { method = 'trimmed', momentum = 0.5, maskMomentum = false },
      { method = 'exact', momentum = 0.9, wire = 'half' }, { method = 'threshold', momentum = 0, wire = 'bfloat16' },
      { method = 'sampled', momentum = 0.9, nesterov = true }, { method = 'sampled', momentum = 0, wire = 'half' },
      { method = 'sampled', momentum = 0.9, exchange = 'hierarchical' },
      { method = 'exact', momentum = 0, exchange = 'hierarchical' },
   } do
      it(('keeps sent + residual == accumulated and sums every rank\'s pairs (%s, momentum %g%s%s, %s wire)')
         :format(case.method, case.momentum, case.nesterov and ', nesterov' or '',
         case.maskMomentum == false and ', no masking' or '', case.wire or 'float')
         .. (case.exchange and ', ' .. case.exchange .. ' exchange' or ''), function()
         local units, n = layout()
         local grad = torch.FloatTensor(n)
         local c = rgc.Compressor(units, grad, { density = 0.01, method = case.method, momentum = case.momentum,
            nesterov = case.nesterov, maskMomentum = case.maskMomentum, wire = case.wire, denseFallback = false,
            exchange = case.exchange }, dist)
         assert.equal(2, #c.dense)
         assert.equal(3, #c.sparse)
         local acc, sent = torch.DoubleTensor(n):zero(), torch.DoubleTensor(n):zero()
         local vel = torch.DoubleTensor(n):zero()
         for step = 1, 12 do
            torch.manualSeed(seed + 1000 * step + R)
            local g = torch.randn(n):float():mul(step % 3 == 0 and 10 or 1)
            grad:copy(g)
            -- float64 model of the accumulation (before the step, with the velocity the
            -- compressor holds, masking included: read it back after)
            local stats = c:step(grad)
            local mine = sentDense(c, stats, n)
            -- every rank's sent vectors: the result must be their average
            local all = dist.allgather(torch.DoubleTensor(N * n), mine)
            local want = torch.DoubleTensor(n):zero()
            for r = 0, N - 1 do want:add(all:narrow(1, r * n + 1, n)) end
            want:div(N)
            for _, u in ipairs(c.sparse) do
               local got = grad:narrow(1, u.lo + 1, u.hi - u.lo)
               local d = maxdiff(got, want:narrow(1, u.lo + 1, u.hi - u.lo))
               assert(d <= 1e-5 * (1 + amax(want)), ('step %d: exchanged sum off by %g'):format(step, d))
            end
            -- the invariant, per compressed parameter: what went into the residual so far
            -- (u's values summed, or g's without momentum) == what was sent + what remains
            sent:add(mine)
            for _, u in ipairs(c.sparse) do
               local len = u.hi - u.lo
               local gi = g:narrow(1, u.lo + 1, len):double()
               local vi = vel:narrow(1, u.lo + 1, len)
               if case.momentum > 0 then
                  vi:mul(case.momentum):add(gi)
                  local add = case.nesterov and (gi + vi * case.momentum) or vi
                  acc:narrow(1, u.lo + 1, len):add(add)
                  -- masking: the model's velocity follows the compressor's (what it cleared)
                  vi:copy(u.u:double())
               else
                  acc:narrow(1, u.lo + 1, len):add(gi)
               end
               local lhs = sent:narrow(1, u.lo + 1, len) + u.v:double()
               local d = maxdiff(lhs, acc:narrow(1, u.lo + 1, len))
               assert(d == d, 'NaN in the residual')
               assert(d <= 2e-4 * (1 + amax(acc:narrow(1, u.lo + 1, len))),
                  ('step %d, parameter at %d: sent + residual differs from accumulated by %g'):format(step, u.lo, d))
            end
            -- small parameters: plain average (momentum from the dense velocity)
            assert.is_true(stats.bytes > 0)
            assert.is_false(stats.dense)
         end
      end)
   end

   -- a half model's gradient is loss-scaled by a power of two, so unscaling it into float32 is
   -- exact: the half path must then do bit for bit what the float32 path does on that gradient
   for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
      it(('compresses %s gradients in float32, unscaled, the same bits as a float32 compressor'):format(ty), function()
         local units, n = layout()
         local opts = { density = 0.01, momentum = 0.9, weightDecay = 1e-3, denseFallback = false }
         local hgrad, fgrad = torch.Tensor(n):type(ty), torch.FloatTensor(n)
         local hc, fc = rgc.Compressor(units, hgrad, opts, dist), rgc.Compressor(units, fgrad, opts, dist)
         assert.equal('torch.FloatTensor', hc.work:type())
         torch.manualSeed(seed + 7 + R)
         local params = torch.randn(n):type(ty)
         local S = 2 ^ 12
         for step = 1, 5 do
            torch.manualSeed(seed + 100 * step + R)
            hgrad:copy(torch.randn(n):mul(S))
            fgrad:copy(hgrad):div(S)
            local hs = hc:step(hgrad, params, S)
            local fs = fc:step(fgrad, params:float())
            assert.is_nil(hs.overflow)
            assert.equal(fs.sent, hs.sent)
            assert.equal(0, maxdiff(hc.work, fgrad:clone():mul(S)), ('step %d: update differs'):format(step))
            for i, u in ipairs(hc.sparse) do
               assert.equal(0, maxdiff(u.v, fc.sparse[i].v), ('step %d: residual %d differs'):format(step, i))
            end
         end
         -- an inf on one rank: every rank skips (update inf, residuals and step count untouched)
         local before = {}
         for i, u in ipairs(hc.sparse) do before[i] = u.v:clone() end
         local steps = hc.steps
         hgrad:copy(torch.randn(n))
         if R == N - 1 then hgrad[7] = math.huge end
         local st = hc:step(hgrad, params, S)
         assert.is_true(st.overflow)
         assert.is_true(require('moontorch.optim').GradScaler.check(hc.work) > 0)
         assert.equal(steps, hc.steps)
         for i, u in ipairs(hc.sparse) do assert.equal(0, maxdiff(u.v, before[i])) end
         assert.error_matches(function() hc:step(hgrad, params, 0) end, 'loss scale')
      end)
   end

   it('selects about density of each compressed parameter and counts its bytes', function()
      local units, n = layout()
      local grad = torch.FloatTensor(n)
      local c = rgc.Compressor(units, grad, { density = 0.001, method = 'exact' }, dist)
      torch.manualSeed(seed + R)
      grad:copy(torch.randn(n))
      local s = c:step(grad)
      local k = 0
      for _, u in ipairs(c.sparse) do k = k + math.max(1, math.ceil(0.001 * (u.hi - u.lo))) end
      assert.equal(k, s.sent)
      assert.near(k / c.sparseElements, s.density, 1e-12)
      assert.equal((37 + 5) * 4 + 8 + k * 8, s.bytes)
      assert.equal(n * 4, s.denseBytes)
      assert.is_true(s.selectTime >= 0 and s.exchangeTime >= 0)
   end)

   it('warms the density up over warmupSteps, then holds it', function()
      local units, n = layout()
      local c = rgc.Compressor(units, torch.FloatTensor(n),
         { density = 0.001, warmup = { 0.25, 0.0625 }, warmupSteps = 4 }, dist)
      local seen = {}
      for i = 1, 6 do
         seen[i] = c:density()
         c.steps = c.steps + 1
      end
      assert.same({ 0.25, 0.25, 0.0625, 0.0625, 0.001, 0.001 }, seen)
   end)

   it('sends half and bfloat16 values on the wire, within their rounding', function()
      for _, wire in ipairs { 'half', 'bfloat16' } do
         local units, n = layout()
         local g1, g2 = torch.FloatTensor(n), torch.FloatTensor(n)
         local a = rgc.Compressor(units, g1, { density = 0.01, method = 'exact' }, dist)
         local b = rgc.Compressor(units, g2, { density = 0.01, method = 'exact', wire = wire }, dist)
         torch.manualSeed(seed + 77 + R)
         g1:copy(torch.randn(n))
         g2:copy(g1)
         a:step(g1)
         local s = b:step(g2)
         local tol = wire == 'half' and 2e-3 or 1.6e-2
         local d = maxdiff(g1, g2) / (amax(g1) + 1e-30)
         assert(d <= tol, ('%s wire: relative difference %g'):format(wire, d))
         assert.equal((37 + 5) * 4 + 8 + s.sent * 6, s.bytes)
      end
   end)

   it('goes dense when sparse traffic would be larger (density 1) and says so', function()
      local units, n = layout()
      local grad = torch.FloatTensor(n)
      local c = rgc.Compressor(units, grad, { density = 1 }, dist)
      torch.manualSeed(seed + 5 + R)
      grad:copy(torch.randn(n))
      local want = dist.allreduce(grad:clone(), 'avg')
      local s = c:step(grad)
      assert.is_true(s.dense)
      assert(maxdiff(grad, want) <= 1e-6, 'dense fallback is not the average')
      for _, u in ipairs(c.sparse) do assert.equal(0, amax(u.v)) end
   end)

   it('rejects bad options with their names', function()
      local units, n = layout()
      local g = torch.FloatTensor(n)
      assert.error_matches(function() rgc.Compressor(units, g, { density = 0 }, dist) end, 'density must be')
      assert.error_matches(function() rgc.Compressor(units, g, { method = 'sort' }, dist) end,
         "method must be exact, threshold, trimmed or sampled, got 'sort'")
      assert.error_matches(function() rgc.Compressor(units, g, { wire = 'int8' }, dist) end, 'wire must be')
      assert.error_matches(function() rgc.Compressor(units, g, { dense = true }, dist) end,
         "unknown option 'dense' %(algorithm, clip, denseFallback, density, exchange, maskMomentum, method, minSize, "
         .. 'momentum, nesterov, slack, sparseUnits, warmup, warmupSteps, weightDecay, wire%)')
      assert.error_matches(function() rgc.Compressor(units, torch.DoubleTensor(n), {}, dist) end, 'float32')
      assert.error_matches(function() rgc.Compressor(units, g, { warmup = { 0.5, 2 } }, dist) end, 'warmup%[2%]')
      assert.error_matches(function() rgc.Compressor(units, g, { exchange = 'ring' }, dist) end,
         "exchange must be allgather or hierarchical, got 'ring'")
      assert.error_matches(function() rgc.Compressor(units, g, { exchange = 'hierarchical', wire = 'half' }, dist) end,
         "wire must be float, got 'half'")
   end)
end)

describe('DataParallel compress = rgc', function()
   -- a small model with small (dense) and large (compressed) parameters
   local function model()
      torch.manualSeed(seed)
      return nn.Sequential():add(nn.Linear(64, 400)):add(nn.Tanh()):add(nn.Linear(400, 10))
   end
   local function batch(step)
      torch.manualSeed(seed + 31 * step + R)
      return torch.randn(8, 64):float(), torch.LongTensor(8):random(1, 10)
   end
   -- steps first..last of dp with optimizer config
   local function run(dp, config, first, last)
      local crit = nn.CrossEntropyCriterion():float()
      local p, gp = dp:getParameters()
      local state = {}
      for step = first, last do
         local x, y = batch(step)
         optim.sgd(function()
            gp:zero()
            local out = dp:forward(x)
            local loss = crit:forward(out, y)
            dp:backward(x, crit:backward(out, y))
            return loss, gp
         end, p, config, state)
      end
      return p
   end
   -- a few steps of a fresh dp; the final parameters
   local function train(dpopts, config, steps)
      local dp = dist.DataParallel(model():float(), dpopts)
      return run(dp, config, 1, steps):clone(), dp
   end

   it('at density 1 equals dense DataParallel with momentum SGD (weight decay, Nesterov)', function()
      local dense = train({},
         { learningRate = 0.1, momentum = 0.9, weightDecay = 1e-3, nesterov = true, dampening = 0 }, 5)
      local plain = { learningRate = 0.1, momentum = 0, weightDecay = 0 }
      local r1 = train({ compress = 'rgc', density = 1, momentum = 0.9, weightDecay = 1e-3, nesterov = true,
         minSize = 1000 }, plain, 5)
      local r2 = train({ compress = 'rgc', density = 1, momentum = 0.9, weightDecay = 1e-3, nesterov = true,
         minSize = 1000, denseFallback = false, maskMomentum = false }, plain, 5)
      assert(maxdiff(r1, dense) <= 2e-5, 'dense fallback differs from dense DataParallel by ' .. maxdiff(r1, dense))
      assert(maxdiff(r2, dense) <= 2e-5,
         'the sparse path at density 1 differs from dense DataParallel by ' .. maxdiff(r2, dense))
   end)

   it('trains at density 0.01 with every rank holding the same parameters, and reports counters', function()
      local p, dp = train({ compress = 'rgc', density = 0.01, momentum = 0.9, minSize = 1000 },
         { learningRate = 0.05 }, 4)
      local all = dist.allgather(torch.FloatTensor(N * p:nElement()), p)
      for r = 0, N - 1 do assert.equal(0, maxdiff(all:narrow(1, r * p:nElement() + 1, p:nElement()), p)) end
      assert.is_table(dp.stats)
      assert.is_true(dp.stats.bytes < dp.stats.denseBytes)
      assert.is_true(tostring(dp):find('rgc density 0.01') ~= nil)
   end)

   it('sends each bucket as backward finishes it, with the result of one exchange after backward', function()
      -- bucketMB small: the two linear layers' weights and biases fall into several buckets
      local plain = { learningRate = 0.05 }
      for _, exchange in ipairs { 'allgather', 'hierarchical' } do
         local opts = { compress = 'rgc', density = 0.02, momentum = 0.9, weightDecay = 1e-3, minSize = 1000,
            bucketMB = 0.01, exchange = exchange }
         local p1, dp = train(opts, plain, 4)
         assert.is_true(#dp.buckets >= 3, 'expected several buckets, got ' .. #dp.buckets)
         assert.equal(#dp.buckets, dp.stats.buckets) -- the per-bucket path ran, one launch per bucket
         assert.is_true(dp.stats.sent > 0 and dp.stats.bytes > 0 and dp.stats.recvBytes >= 0)
         opts.overlap = false
         local p2, dp2 = train(opts, plain, 4)
         assert.is_nil(dp2.stats.buckets) -- one exchange after backward
         assert(maxdiff(p1, p2) <= 1e-5, exchange .. ': per bucket differs from one exchange by ' .. maxdiff(p1, p2))
         for i, u in ipairs(dp.compressor:residuals()) do
            local d = maxdiff(u.v, dp2.compressor:residuals()[i].v)
            assert(d <= 1e-5, ('%s: residual %d differs by %g'):format(exchange, i, d))
         end
      end
   end)

   it('resumes exactly from its local state (residuals, velocities, step count) through a file', function()
      local opts = { compress = 'rgc', density = 0.01, momentum = 0.9, nesterov = true, weightDecay = 1e-3,
         minSize = 1000, warmup = { 0.1, 0.03 }, warmupSteps = 4 }
      local config = { learningRate = 0.05 }
      local whole = train(opts, config, 7)
      local p3, dp3 = train(opts, config, 3)
      local path = os.tmpname()
      local tensors, meta = dp3:localState()
      require('moontorch.checkpoint').save(path, tensors, meta)
      -- a fresh replica, the parameters of step 3 and the saved state, then 4 more steps
      local dp = dist.DataParallel(model():float(), opts)
      dp:getParameters():copy(p3)
      local t, m = require('moontorch.checkpoint').load(path)
      os.remove(path)
      dp:setLocalState(t, m)
      assert.equal(3, dp.compressor.steps)
      assert.equal(0, maxdiff(run(dp, config, 4, 7), whole), 'the resumed run differs from the uninterrupted one')
      -- a state of another layout is refused with what differs
      local other = dist.DataParallel(model():float(), { compress = 'rgc', minSize = 100 })
      assert.error_matches(function() other:setLocalState(t, m) end, 'another layout')
      assert.error_matches(function() dist.DataParallel(model():float()):setLocalState(t, m) end, 'does not compress')
   end)

   it('trains a float16 model through a loss scaler: an overflow on one rank skips the step on all', function()
      local dp = dist.DataParallel(model():type('torch.HalfTensor'), { compress = 'rgc', density = 0.01, momentum = 0.9,
         minSize = 1000 })
      local crit = nn.CrossEntropyCriterion():type('torch.HalfTensor')
      local p, gp = dp:getParameters()
      assert.equal('torch.FloatTensor', dp:updates():type())
      local scaler = optim.GradScaler { initScale = 2 ^ 8 }
      local config, state = { learningRate = 0.05 }, {}
      for step = 1, 4 do
         local x, y = batch(step)
         dp.lossScale = scaler:getScale(state)
         local _, _, stepped = scaler:step(optim.sgd, function()
            gp:zero()
            local out = dp:forward(x:half())
            local loss = crit:forward(out, y)
            if step == 3 and R == 0 then dp.module:get(1).gradWeight[1][1] = math.huge end
            dp:backward(x:half(), scaler:scale(crit:backward(out, y)))
            return loss, dp:updates()
         end, p, config, state)
         assert.equal(step ~= 3, stepped, 'step ' .. step)
      end
      assert.equal(1, state.skippedSteps)
      assert.equal(2 ^ 7, scaler:getScale(state))
      local all = dist.allgather(torch.FloatTensor(N * p:nElement()), p:float())
      for r = 0, N - 1 do assert.equal(0, maxdiff(all:narrow(1, r * p:nElement() + 1, p:nElement()), p)) end
      assert.is_true(p:float():abs():max() < math.huge)
   end)

   it('rejects compression options without compress = rgc, and unknown ones', function()
      assert.error_matches(function() dist.DataParallel(model(), { density = 0.1 }) end,
         "option 'density' needs compress = 'rgc'")
      assert.error_matches(function() dist.DataParallel(model(), { compress = 'zip' }) end,
         "compress must be one of none, rgc, powersgd, onebit, fp16, auto, got 'zip'")
      assert.error_matches(function() dist.DataParallel(model(), { compress = 'rgc', densty = 0.1 }) end,
         "unknown option 'densty'")
   end)
end)
end)
