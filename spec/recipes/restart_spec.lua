-- restart_spec.lua: bin/moontorch-run restarts a 3-rank job whose rank 1 fails at step 5 from
-- the newest checkpoint in -save (-resume auto), says why, and the run ends with the parameters
-- of an unbroken one, bit for bit; with --max-restarts 0 the failure is the job's end.
local util = require 'spec.util'
local runs = require 'spec.recipes.runs'
local ck = require 'moontorch.checkpoint'

local tmp = util.tmpdir()
teardown(function() os.execute(('rm -rf %q'):format(tmp)) end)

local ARGS = '-nEpochs 1 -limitBatches 8 -limitTestBatches 1 -batchSize 48 -threads 3 -checkpointEvery 2 -quiet '
   .. '-bucketMB 1 -allreduce ring -seed 3'
local ENV = 'OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 '
   .. 'MOONTORCH_RUN_LAUNCHER_ARGS="--allow-run-as-root --oversubscribe"'

local run = util.sh

describe('bin/moontorch-run', function()
   it('restarts a failed job from its checkpoint, saying why, to the unbroken run\'s parameters', function()
      local whole, broken = tmp .. '/whole', tmp .. '/broken'
      local out0, code0 = runs.run('fashion_mnist', ARGS .. ' -dist -save ' .. whole, runs.mpirun(3))
      assert.are.equal(0, code0, out0)
      local out, code = run(('%s MT_FAIL_ONCE=%s/failed bin/moontorch-run -np 3 --max-restarts 2 '
         .. 'spec/recipes/fail_once.lua %s -save %s'):format(ENV, tmp, ARGS, broken))
      assert.are.equal(0, code, out)
      assert.truthy(out:find('moontorch%-run: restart 1 of 2: the job ended with exit status %d+: '
         .. '[^\n]*planted failure at step 5'), out)
      assert.truthy(out:find('resumed from ' .. broken .. '/checkpoint.safetensors after epoch 0 and batch 4', 1, true),
         out)
      assert.falsy(out:find('restart 2 of', 1, true), out)
      local a, b = ck.load(whole .. '/checkpoint.safetensors'), ck.load(broken .. '/checkpoint.safetensors')
      local n = 0
      for name, t in pairs(a) do
         n = n + 1
         util.assert_close(b[name], t, { atol = 0, rtol = 0 }, name)
      end
      assert.is_true(n > 5, 'tensors compared: ' .. n)
   end)

   it('with --max-restarts 0 a failure ends the job, and bad arguments are named', function()
      local out, code = run(('%s MT_FAIL_ONCE=%s/failed0 bin/moontorch-run -np 3 spec/recipes/fail_once.lua %s '
         .. '-save %s'):format(ENV, tmp, ARGS, tmp .. '/once'))
      assert.is_true(code ~= 0, out)
      assert.truthy(out:find('moontorch-run: the job failed (exit status', 1, true), out)
      local out2, code2 = run('bin/moontorch-run -np x recipes/fashion_mnist.lua')
      assert.are.equal(2, code2, out2)
      assert.truthy(out2:find("-np must be a number of ranks >= 1, got 'x'", 1, true), out2)
   end)
end)
