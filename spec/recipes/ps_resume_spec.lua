-- ps_resume_spec.lua: the Fashion-MNIST recipe with -ps (3 workers, 2 servers, mpirun),
-- interrupted mid-epoch and resumed, ends bit for bit where the uninterrupted run ends: the
-- servers' parameters and momentum in the checkpoint, and their clock; an SSP run logs its
-- counters (staleness histogram, wait, bytes) in log.csv and prints them; -ps's options that do
-- not go together are refused by name. Needs Open MPI and Debian's dataset-fashion-mnist
-- (pending, visibly, without them).
require 'moontorch'
local ck = require 'moontorch.checkpoint'

local RUN = 'OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root --oversubscribe -np 3 '
   .. 'luajit recipes/fashion_mnist.lua -ps -servers 2 -threads 2 -nEpochs 2 -limitBatches 20 -limitTestBatches 2 '
   .. '-batchSize 96 -seed 3 -quiet -checkpointEvery 10'

local util = require 'spec.util'
local sh = util.sh

local maxdiff = require('spec.util').maxdiff

describe('Fashion-MNIST with -ps on 3 workers and 2 servers', function()
   local missing = util.mpi_fashion_missing()
   if missing then
      pending(missing)
      return
   end

   it('resumes mid-epoch exactly: the servers\' parameters, momentum and clock', function()
      local dir = util.tmpdir()
      local whole, cut = dir .. '/whole', dir .. '/cut'
      local out, c = sh(RUN .. ' -save ' .. whole)
      assert.equal(0, c, out)
      out, c = sh(RUN .. ' -save ' .. cut .. ' -stopAfterIter 30')
      assert.equal(0, c, out)
      local mid, mm = ck.load(cut .. '/checkpoint.safetensors')
      assert.equal(30, mm.optim.ps_clock) -- the mid-epoch checkpoint at batch 10 of epoch 2
      assert.equal(1, mm.optim.ps_started)
      out, c = sh(RUN .. ' -save ' .. cut .. ' -resume ' .. cut)
      assert.equal(0, c, out)
      assert.is_truthy(out:find('resumed from .* after epoch 1 and batch 10 of epoch 2'), out)
      local a, ma = ck.load(whole .. '/checkpoint.safetensors')
      local b, mb = ck.load(cut .. '/checkpoint.safetensors')
      assert.equal(40, ma.optim.ps_clock)
      assert.equal(40, mb.optim.ps_clock)
      assert.equal(ma.train_loss, mb.train_loss)
      local n = 0
      for k, t in pairs(a) do
         n = n + 1
         assert.is_truthy(b[k], k)
         assert.equal(0, maxdiff(t, b[k]), k)
      end
      -- the servers' momentum is in the checkpoint, and it moved on after the cut
      assert.is_truthy(a['optim.ps_momentum'])
      assert.is_true(a['optim.ps_momentum']:norm() > 0)
      assert.is_true(maxdiff(a['optim.ps_momentum'], mid['optim.ps_momentum']) > 0)
      assert.is_true(n > 4)
      os.execute('rm -rf ' .. dir)
   end)

   it('logs and prints the staleness, wait and bytes of an SSP run', function()
      local dir = util.tmpdir()
      local out, c = sh(RUN:gsub(' %-quiet', '') .. ' -staleness 2 -straggler 2:2 -save ' .. dir)
      assert.equal(0, c, out)
      local banner = 'parameter server: 3 workers, 2 servers (beside ranks 0..1), staleness 2'
      assert.is_truthy(out:find(banner, 1, true), out)
      local line = out:match('\n  ps: staleness mean ([^\n]+)')
      assert.is_truthy(line, out)
      local f = assert(io.open(dir .. '/log.csv'))
      local head, row = f:read('*l'), f:read('*l')
      f:close()
      local cols, vals = {}, {}
      for x in head:gmatch('[^,]+') do cols[#cols + 1] = x end
      for x in row:gmatch('[^,]+') do vals[#vals + 1] = x end
      local v = {}
      for i, name in ipairs(cols) do v[name] = vals[i] end
      -- 20 steps of 3 workers: 60 reads, none over the bound, and the fast workers ran ahead
      local pulls, top = 0, 0
      for k, n in v.ps_hist:gmatch('(%d+)%+?:(%d+)') do
         pulls, top = pulls + tonumber(n), math.max(top, tonumber(k))
      end
      assert.equal(60, pulls, row)
      assert.is_true(top <= 2 and tonumber(v.ps_stale_max) == top, row)
      assert.is_true(tonumber(v.ps_staleness) > 0, row)
      -- a push and a pull of the whole CNN per step (its float32 parameters)
      assert.is_true(math.abs(tonumber(v.ps_push_MB) - tonumber(v.ps_pull_MB)) < 1e-6, row)
      assert.is_true(tonumber(v.ps_push_MB) > 0.5, row)
      -- the fast workers waited for the straggler, worker 2 hardly at all
      local waits = {}
      for w in v.ps_wait_ms_by_worker:gmatch('[^|]+') do waits[#waits + 1] = tonumber(w) end
      assert.equal(3, #waits, row)
      assert.is_true(waits[3] < waits[1] and waits[3] < waits[2], row)
      os.execute('rm -rf ' .. dir)
   end)

   it('refuses -ps options that do not go together, by name', function()
      local base = 'luajit recipes/fashion_mnist.lua -nEpochs 1 -limitBatches 1 -save "" '
      for args, msg in pairs {
         ['-staleness 2'] = '-staleness needs -ps',
         ['-ps -optimizer adam'] = 'the servers run sgd',
         ['-ps -precision bf16'] = 'the servers hold float32 parameters',
         ['-ps -compress rgc'] = '-ps does not compress',
         ['-ps -straggler 1x2'] = '-straggler must be RANK:FACTOR',
      } do
         local out, c = sh(base .. args)
         assert.is_true(c ~= 0, out)
         assert.is_truthy(out:find(msg, 1, true), args .. ': ' .. out)
      end
   end)
end)
