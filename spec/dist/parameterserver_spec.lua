-- parameterserver_spec.lua: dist.ParameterServer on one process and under `mpirun -np 3` and
-- `-np 4` (every rank runs the same `it`s in the same order). An observer checks the staleness
-- bound on every read, with and without a straggler, for s = 0, 1, 3: no read sees a clock gap
-- over s, and the values hold every clock the servers say they applied (with s = 0 exactly
-- those: the previous clock's state; with s > 0 perhaps pushes since); s = 0 trains as dist.DataParallel
-- does; the servers' state gathered and restored is the same state and training goes on as it
-- would have; bad options and calls are refused by name.
-- ctest: ranks 3 4
local ffi = require 'ffi'
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local dist = require 'moontorch.dist'

dist.init{ timeout = 120, model = false }
local R, N = dist.rank(), dist.size()
local seed = dist.broadcastNumber(tonumber(os.getenv('MT_TEST_SEED')) or (os.time() % 100000))
if R == 0 then io.stderr:write(('[ps spec seed %d, %d ranks]\n'):format(seed, N)) end
-- a rank that ends without finalize is taken by its peers as gone
teardown(function() dist.finalize() end)

pcall(ffi.cdef, 'int usleep(unsigned int usec);')

local maxdiff = require('spec.util').maxdiff
local function allmax(x) return dist.allreduce(torch.DoubleTensor(1):fill(x), 'max')[1] end

-- a small net whose layers are many shards' worth: 10x33+33, 33x7+7 = 570 parameters
local function net()
   torch.manualSeed(seed)
   return nn.Sequential():add(nn.Linear(10, 33)):add(nn.Tanh()):add(nn.Linear(33, 7))
end

describe('dist.ParameterServer', function()
   local servers = math.min(2, N)

   for _, s in ipairs({ 0, 1, 3 }) do
      for _, straggler in ipairs({ false, true }) do
         it(('keeps the staleness bound on every pull (s = %d%s)'):format(s, straggler and ', a straggler' or ''),
            function()
            -- worker w pushes (w+1)(k+1) everywhere at clock k; with lr 1 and no momentum the
            -- state after v whole clocks is p0 - (N+1)/2 * v(v+1)/2, which tells v apart from
            -- v +- 1 and from any part of a clock
            local ps = dist.ParameterServer(net(), { staleness = s, servers = servers })
            local p, g = ps:getParameters()
            local p0 = p:clone():double()
            local pulls, gap, worst, wrong = 0, 0, 0, nil
            local lo = {}
            for k = 1, servers do lo[k] = math.floor(p:nElement() * (k - 1) / servers) end
            lo[servers + 1] = p:nElement()
            ps.observer = function(info)
               pulls = pulls + 1
               for k, v in ipairs(info.versions) do
                  gap = math.max(gap, info.clock - v)
                  if s == 0 and v ~= info.clock then
                     wrong = wrong or ('s = 0 pulled version %d at clock %d'):format(v, info.clock)
                  end
                  -- what the server took off each element of this shard: with s = 0 the same for
                  -- all (whole clocks only); with s > 0 layers pushed apart may differ
                  local n = lo[k + 1] - lo[k]
                  local took = p0:narrow(1, lo[k] + 1, n) - p:narrow(1, lo[k] + 1, n):double()
                  local least, most = took:min(), took:max()
                  if s == 0 and most - least > 1e-3 then
                     wrong = wrong or ('server %d sent part of a clock'):format(k - 1)
                  end
                  -- every whole clock before its version; with s = 0 nothing more, else at most the
                  -- pushes of the clocks that may be open (s > 0 shows pushes as they come)
                  local function F(x) return (N + 1) / 2 * x * (x + 1) / 2 end
                  local hi = s == 0 and F(v) or F(info.clock + s + 1)
                  if least < F(v) - 1e-3 or most > hi + 1e-3 then
                     wrong = wrong or ('server %d at version %d (clock %d): took %g, expected %g..%g'):format(k - 1, v,
                        info.clock, least, F(v), hi)
                  end
               end
               worst = math.max(worst, info.clock - math.min(unpack(info.versions)))
            end
            for k = 0, 11 do
               ps:forward(torch.randn(2, 10))
               g:fill((R + 1) * (k + 1))
               ps:allreduceGradients()
               if straggler and R == 1 then ffi.C.usleep(15000) end
               ps:clock(1)
            end
            ps:sync()
            -- every clock is whole now, and the eager parts were taken back exactly
            local final = maxdiff(p, p0 - (N + 1) / 2 * 12 * 13 / 2)
            ps:close()
            assert.is_nil(wrong)
            assert.is_true(final < 1e-3, 'the state after 12 clocks is off by ' .. final)
            assert.equal(12, pulls)
            assert.is_true(worst <= s, ('a pull saw clock gap %d over the bound %d'):format(worst, s))
            -- the counters agree with the observer
            local c = ps:counters()
            assert.equal(12, c.clocks)
            assert.equal(pulls, c.reads)
            assert.is_true(c.pulls >= 13, 'pulls: ' .. c.pulls) -- one per clock and the construction's
            if straggler and N >= 3 and s > 0 then
               -- the fast workers did run ahead of the straggler (else the bound went untested)
               assert.is_true(allmax(gap) >= 1, 'no worker ever ran ahead of the straggler')
            end
         end)
      end
   end

   local function convnet()
      torch.manualSeed(seed + 1)
      return nn.Sequential():add(nn.SpatialConvolution(2, 4, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(4))
         :add(nn.ReLU()):add(nn.View(-1):setNumInputDims(3)):add(nn.Linear(4 * 5 * 5, 3))
   end

   -- k steps on this rank's slice of fixed global batches; returns the final parameters
   local function trainSteps(model, step, k)
      local crit = nn.CrossEntropyCriterion()
      local p, g = model:getParameters()
      for i = 1, k do
         torch.manualSeed(seed + 100 + i)
         local x, y = torch.randn(2 * N, 2, 5, 5), torch.LongTensor(2 * N):random(1, 3)
         x, y = x:narrow(1, 2 * R + 1, 2), y:narrow(1, 2 * R + 1, 2)
         step(function()
            g:zero()
            local out = model:forward(x)
            local loss = crit:forward(out, y)
            model:backward(x, crit:backward(out, y))
            return loss, g
         end, p)
      end
      return p
   end

   for _, case in ipairs({ { momentum = 0 }, { momentum = 0.9, nesterov = true, weightDecay = 1e-3 },
      { momentum = 0.5, weightDecay = 1e-2, pushEvery = 'step' } }) do
      it(('with s = 0 trains as DataParallel does (momentum %g%s, push every %s)'):format(case.momentum,
         case.nesterov and ', Nesterov' or '', case.pushEvery or 'layer'), function()
         local cfg = { learningRate = 0.1, momentum = case.momentum, weightDecay = case.weightDecay or 0,
            nesterov = case.nesterov, dampening = case.nesterov and 0 or nil }
         local dp, state = dist.DataParallel(convnet()), {}
         local want = trainSteps(dp, function(f, p) optim.sgd(f, p, cfg, state) end, 5):clone()
         local ps = dist.ParameterServer(convnet(), { servers = servers, momentum = cfg.momentum,
            dampening = cfg.dampening, nesterov = cfg.nesterov, weightDecay = cfg.weightDecay,
            pushEvery = case.pushEvery })
         local got = trainSteps(ps, function(f) ps:serverStep(f, cfg) end, 5)
         ps:sync()
         local d = maxdiff(got, want)
         ps:close()
         assert.is_true(d < 1e-5, 'ParameterServer and DataParallel differ by ' .. d)
         assert.is_true(maxdiff(got, convnet():getParameters()) > 1e-3, 'the parameters did not move')
      end)
   end

   -- Rank 0 runs two clocks ahead while the others wait at a barrier, so the servers stay at
   -- version 1 and rank 0's read at clock 3 is exact: the state after clock 0, less rank 0's
   -- eager pushes of clocks 1 and 2, less (with lookahead) the momentum part of the two steps
   -- it has not seen, lr (m^2 + m^3) v for Nesterov, lr (m + m^2) v for heavy ball.
   for _, case in ipairs(N < 2 and {} or { { lookahead = true, nesterov = true },
      { lookahead = true, nesterov = false }, { lookahead = false, nesterov = true } }) do
      it(('reads %s the momentum part of the steps not yet taken (%s)'):format(
         case.lookahead and 'ahead by' or 'without', case.nesterov and 'Nesterov' or 'heavy ball'), function()
         local lr, m = 0.1, 0.9
         local ps = dist.ParameterServer(net(), { staleness = 3, servers = servers, momentum = m,
            nesterov = case.nesterov, dampening = 0, lookahead = case.lookahead })
         local p, g = ps:getParameters()
         local function clock()
            g:fill(R + 1) -- worker w pushes w + 1 everywhere
            ps:allreduceGradients()
            ps:clock(lr)
         end
         local p0 = p:clone():double()
         ps:forward(torch.randn(2, 10))
         clock()
         ps:sync() -- version 1: the first step, v = the mean gradient
         local mean = (N + 1) / 2
         local after1 = p0 - lr * (case.nesterov and (1 + m) or 1) * mean
         local read
         if R == 0 then
            for _ = 1, 2 do
               ps:forward(torch.randn(2, 10))
               clock()
            end
            ps:_land() -- the pull of clock 3 in hand (the read takes it only once it is)
            ps:forward(torch.randn(2, 10))
            read = p:clone():double()
            assert.same({ 1 }, { math.min(unpack(ps:lastPull().versions)) })
         end
         dist.barrier()
         if R ~= 0 then
            for _ = 1, 2 do
               ps:forward(torch.randn(2, 10))
               clock()
            end
         end
         ps:sync()
         ps:close()
         if R == 0 then
            local eager = 2 * lr * (case.nesterov and 1 + m or 1) / N
            local ahead = case.lookahead and lr * (case.nesterov and m ^ 2 + m ^ 3 or m + m ^ 2) * mean or 0
            local d = maxdiff(read, after1 - eager - ahead)
            assert.is_true(d < 1e-5, ('the read at clock 3 is off by %g'):format(d))
         end
      end)
   end

   if N < 2 then pending('the look-ahead of a stale read: one rank is never stale (runs on 3 and 4 ranks)') end

   it('gives back the state it was given (checkpoint and resume), and goes on as before', function()
      local cfg = { learningRate = 0.05, momentum = 0.9, weightDecay = 1e-3 }
      local ps = dist.ParameterServer(convnet(), { servers = servers, momentum = 0.9, weightDecay = 1e-3 })
      local function step(f) ps:serverStep(f, cfg) end
      trainSteps(ps, step, 3)
      local saved -- rank 0: the servers' state at clock 3
      if R == 0 then
         ps:withServerState(function(st)
            saved = { params = ps.params:clone(), momentum = st.ps_momentum:clone(), clock = st.ps_clock,
               started = st.ps_started }
         end)
         assert.equal(3, saved.clock)
         assert.equal(1, saved.started)
         assert.is_true(saved.momentum:norm() > 0)
      end
      local later = trainSteps(ps, step, 2)
      ps:sync()
      later = later:clone()
      -- back to clock 3 from rank 0's copy: the shards equal what was gathered, bit for bit
      if R == 0 then ps.params:copy(saved.params) end
      ps:restoreServers(R == 0 and saved.momentum or nil, 3)
      if R == 0 then
         ps:withServerState(function(st)
            assert.equal(0, maxdiff(ps.params, saved.params))
            assert.equal(0, maxdiff(st.ps_momentum, saved.momentum))
            assert.equal(3, st.ps_clock)
         end)
      end
      -- every worker pulled the restored parameters, and the same two steps give the same state
      assert.equal(0, allmax(maxdiff(ps.params, dist.broadcast(ps.params:clone(), 0))))
      local again = trainSteps(ps, step, 2)
      ps:sync()
      assert.equal(0, allmax(maxdiff(again, later)))
      ps:close()
   end)

   it('refuses bad options and calls by name', function()
      assert.error_matches(function() dist.ParameterServer(net(), { stalenes = 1 }) end, "unknown option 'stalenes'")
      assert.error_matches(function() dist.ParameterServer(net(), { staleness = -1 }) end,
         'staleness must be a whole number >= 0')
      assert.error_matches(function() dist.ParameterServer(net(), { optimizer = 'adam' }) end,
         "optimizer must be 'sgd'")
      assert.error_matches(function() dist.ParameterServer(net(), { pushEvery = 'epoch' }) end,
         "pushEvery must be 'layer' or 'step'")
      assert.error_matches(function() dist.ParameterServer(net(), { servers = N + 1 }) end,
         ('servers must be 1..%d'):format(N))
      assert.error_matches(function() dist.ParameterServer(net():double()) end, 'must be float32 on the CPU')
      assert.error_matches(function() dist.ParameterServer(net(), { momentum = 0, nesterov = true }) end,
         'Nesterov momentum needs momentum > 0')
      local ps = dist.ParameterServer(net(), { servers = servers })
      assert.error_matches(function() ps:clock(0 / 0) end, 'learning rate must be finite')
      ps:close()
      assert.error_matches(function() ps:clock(0.1) end, 'ParameterServer')
   end)
end)
