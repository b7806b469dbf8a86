-- data_parallel_accuracy_spec.lua: the default recipe trained data-parallel on 4 ranks (mpirun,
-- dense gradients averaged by dist.DataParallel) reaches the single-process test accuracy,
-- within 0.5 points, at the same global batch, seed and schedule; with each gradient compressor
-- (rgc at 0.1% density, powersgd at rank 2, onebit, fp16), 4 ranks reach the dense 4-rank
-- accuracy within 0.5 points. Six short trainings of the recipe's CNN at half its default width
-- (the comparison is between runs, not against a published accuracy); needs Open MPI and
-- Debian's dataset-fashion-mnist.
-- ctest: train

local ARGS = '-nEpochs 2 -batchSize 128 -LR 0.05 -seed 3 -width 16 -quiet -save ""'

local util = require 'spec.util'
local sh = util.sh

local function accuracy(out)
   local a = out:match('final test accuracy: ([%d.]+)%%')
   return a and tonumber(a)
end

local dense4 -- the dense 4-rank accuracy, for the compressed run

describe('Fashion-MNIST data-parallel', function()
   local missing = util.mpi_fashion_missing()
   if missing then
      pending(missing)
      return
   end

   it('on 4 ranks reaches the 1-process accuracy within 0.5 points', function()
      local one, c1 = sh('OMP_WAIT_POLICY=PASSIVE luajit recipes/fashion_mnist.lua -threads 2 ' .. ARGS)
      assert.equal(0, c1, one)
      local four, c4 = sh('OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root '
         .. '--oversubscribe -np 4 luajit recipes/fashion_mnist.lua -dist -allreduce ring -threads 2 ' .. ARGS)
      assert.equal(0, c4, four)
      local a1, a4 = accuracy(one), accuracy(four)
      assert.is_number(a1, one)
      assert.is_number(a4, four)
      -- rank 0 alone reports
      local _, n = four:gsub('final test accuracy', '')
      assert.equal(1, n, four)
      io.stderr:write(('[fashion-mnist: 1 process %.2f%%, 4 ranks %.2f%%]\n'):format(a1, a4))
      assert.is_true(a1 > 80 and a4 > 80, one .. four)
      assert.is_true(math.abs(a1 - a4) <= 0.5, ('1 process %.2f%%, 4 ranks %.2f%%'):format(a1, a4))
      dense4 = a4
   end)

   -- residual gradient compression: 0.1% of each large gradient per step after a one-epoch
   -- density warm-up, against the dense 4-rank run above
   it('on 4 ranks with -compress rgc at density 0.1% reaches the dense 4-rank accuracy within 0.5 points', function()
      local out, c = sh('OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root '
         .. '--oversubscribe -np 4 luajit recipes/fashion_mnist.lua -dist -allreduce ring -threads 2 '
         .. '-compress rgc -density 0.001 -densityWarmup 1 ' .. ARGS:gsub('-quiet ', ''))
      assert.equal(0, c, out)
      local a = accuracy(out)
      assert.is_number(a, out)
      -- the counters of the last epoch: about 0.1% sent, far fewer bytes than the model
      local density, mb = out:match('rgc: [%d.]+ MB/step sent, density ([%d.]+)'), nil
      for m, d in out:gmatch('rgc: ([%d.]+) MB/step sent, density ([%d.]+)') do
         mb, density = tonumber(m), tonumber(d)
      end
      assert.is_number(density, out)
      assert.is_true(density >= 0.001 and density < 0.0012, out)
      assert.is_true(mb < 0.05, out) -- the dense gradient is 0.83 MB
      assert.is_number(dense4, 'the dense 4-rank run did not finish')
      io.stderr:write(('[fashion-mnist: 4 ranks dense %.2f%%, rgc 0.1%% %.2f%%]\n'):format(dense4, a))
      assert.is_true(math.abs(a - dense4) <= 0.5, ('4 ranks dense %.2f%%, rgc at 0.1%% %.2f%%'):format(dense4, a))
   end)

   -- the per-bucket compressors, after 100 plain steps (-compressStart), with the momentum SGD
   -- of the dense run; the second epoch's mean bytes per step are all compressed steps
   for _, case in ipairs {
      { name = 'powersgd', flags = '-compressRank 2', density = { 0.005, 0.2 } },
      { name = 'onebit', flags = '', density = { 1 / 32, 1 / 32 + 0.002 } }, -- signs and a scale per 2048
      { name = 'fp16', flags = '', density = { 0.5, 0.5 } },
   } do
      it(('on 4 ranks with -compress %s reaches the dense 4-rank accuracy within 0.5 points'):format(case.name),
         function()
         local out, c = sh('OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root '
            .. '--oversubscribe -np 4 luajit recipes/fashion_mnist.lua -dist -allreduce ring -threads 2 '
            .. '-compress ' .. case.name .. ' ' .. case.flags .. ' ' .. ARGS:gsub('-quiet ', ''))
         assert.equal(0, c, out)
         local a = accuracy(out)
         assert.is_number(a, out)
         local density
         for d in out:gmatch(case.name .. ': [%d.]+ MB/step sent, density ([%d.]+)') do density = tonumber(d) end
         assert.is_number(density, out)
         assert.is_true(density >= case.density[1] - 1e-4 and density <= case.density[2] + 1e-4, out)
         assert.is_number(dense4, 'the dense 4-rank run did not finish')
         io.stderr:write(('[fashion-mnist: 4 ranks dense %.2f%%, %s %.2f%% (%.4f of the dense bytes)]\n')
            :format(dense4, case.name, a, density))
         assert.is_true(math.abs(a - dense4) <= 0.5, ('4 ranks dense %.2f%%, %s %.2f%%'):format(dense4, case.name, a))
      end)
   end
end)
