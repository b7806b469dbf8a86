-- rgc_resume_spec.lua: the Fashion-MNIST recipe on 4 ranks (mpirun) with residual
-- gradient compression, interrupted mid-epoch and resumed, ends bit for bit where the
-- uninterrupted run ends: the shared checkpoint and every rank's residual file; a float16 model
-- trains through the loss scaler with compression; the per-bucket compressors (powersgd,
-- onebit: error-feedback residuals, PowerSGD's warm-start factors, the step count that ends
-- their plain warm-up) resume exactly too. Needs Open MPI and Debian's dataset-fashion-mnist
-- (pending, visibly, without them).
require 'moontorch'
local ck = require 'moontorch.checkpoint'

local RUN = 'OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root --oversubscribe -np 4 '
   .. 'luajit recipes/fashion_mnist.lua -dist -allreduce ring -threads 2 -compress rgc -density 0.01 '
   .. '-densityWarmup 0.5 -nEpochs 2 -limitBatches 20 -limitTestBatches 2 -batchSize 128 -seed 3 -quiet '
   .. '-checkpointEvery 10'

local util = require 'spec.util'
local sh = util.sh

local maxdiff = require('spec.util').maxdiff

-- the run, the interrupted run and its resume, each from a fresh folder; every file of the
-- two last checkpoints compared bit for bit (the shared one and each rank's local state)
local function resumesExactly(run, ranks, residualKey)
   local dir = os.tmpname()
   os.remove(dir)
   local whole, interrupted = dir .. '-whole', dir .. '-cut'
   local out, c = sh(run .. ' -save ' .. whole)
   assert.equal(0, c, out)
   out, c = sh(run .. ' -save ' .. interrupted .. ' -stopAfterIter 30')
   assert.equal(0, c, out)
   out, c = sh(run .. ' -save ' .. interrupted .. ' -resume ' .. interrupted)
   assert.equal(0, c, out)
   assert.is_truthy(out:find('resumed from', 1, true), out)
   assert.is_falsy(out:find('starts empty', 1, true), out)
   local a, ma = ck.load(whole .. '/checkpoint.safetensors')
   local b, mb = ck.load(interrupted .. '/checkpoint.safetensors')
   -- the epoch's mean loss too: every rank's sums up to the cut come back to that rank
   assert.equal(ma.train_loss, mb.train_loss)
   local n = 0
   for k, t in pairs(a) do
      n = n + 1
      assert.is_truthy(b[k], k)
      assert.equal(0, maxdiff(t, b[k]), k)
   end
   assert.is_true(n > 0)
   for r = 0, ranks - 1 do
      local name = ('/local-rank%d-of-%d.safetensors'):format(r, ranks)
      local la, lma = ck.load(whole .. name)
      local lb, lmb = ck.load(interrupted .. name)
      assert.equal(lma.iteration, lmb.iteration)
      assert.equal(lma.steps, lmb.steps)
      for k, t in pairs(la) do assert.equal(0, maxdiff(t, lb[k]), ('rank %d %s'):format(r, k)) end
      assert.is_true(la[residualKey]:double():abs():sum() > 0, residualKey) -- something was held back
   end
   os.execute('rm -rf ' .. whole .. ' ' .. interrupted)
end

describe('Fashion-MNIST with -compress rgc on 4 ranks', function()
   local missing = util.mpi_fashion_missing()
   if missing then
      pending(missing)
      return
   end

   for _, case in ipairs {
      { name = 'powersgd', ranks = 4, key = 'e1.1' }, { name = 'onebit', ranks = 2, key = 'e1' },
   } do
      it(('resumes mid-epoch exactly with -compress %s on %d ranks'):format(case.name, case.ranks), function()
         resumesExactly(RUN:gsub('%-np 4', '-np ' .. case.ranks):gsub('%-compress rgc %-density 0.01 '
            .. '%-densityWarmup 0.5', '-compress ' .. case.name .. ' -compressStart 5'), case.ranks, case.key)
      end)
   end

   it('resumes mid-epoch exactly: parameters, optimizer state and every rank\'s residuals', function()
      resumesExactly(RUN, 4, 'v.1')
   end)

   -- a float16 model: the compressor works in float32 on the unscaled gradient, and an initial
   -- loss scale of 2^30 overflows until the ranks, agreeing on every skip, have halved it enough
   it('trains a float16 model through the loss scaler, skipping the overflowing steps on every rank', function()
      local dir = os.tmpname()
      os.remove(dir)
      local out, c = sh(RUN:gsub('%-np 4', '-np 2'):gsub('%-nEpochs 2', '-nEpochs 1')
         .. ' -precision fp16 -lossScale 1073741824 -save ' .. dir)
      assert.equal(0, c, out)
      local ckpt, meta = ck.load(dir .. '/checkpoint.safetensors')
      local skipped, scale = meta.optim.skippedSteps, meta.optim.lossScale
      assert.is_true(skipped >= 1 and skipped < 20, out)
      assert.equal(2 ^ 30 / 2 ^ skipped, scale) -- halved once per skip, no growth within 2000 steps
      local acc = tonumber(out:match('final test accuracy: ([%d.]+)%%'))
      assert.is_true(acc and acc > 40, out) -- the steps taken train well past chance (10%)
      for k, t in pairs(ckpt) do
         if t:type():find('Float') or t:type():find('Half') then
            assert.is_true(t:double():ne(t:double()):sum() == 0, 'NaN in ' .. k)
         end
      end
      os.execute('rm -rf ' .. dir)
   end)
end)
