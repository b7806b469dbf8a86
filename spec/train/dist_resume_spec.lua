-- dist_resume_spec.lua: train.Trainer under dist.DataParallel resumed from inside an epoch
-- gives the unbroken run bit for bit on 2 and 4 ranks (and alone). The ranks' slices of each batch differ
-- in size (7 rows: 3 and 4 on 2 ranks, 1, 2, 2, 2 on 4) and the model has dropout, so each
-- rank's generator draws its own amount and the checkpoint must keep every rank's state.
-- ctest: ranks 2 4
local torch = require 'moontorch'
local dist = require 'moontorch.dist'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local data = require 'moontorch.data'
local train = require 'moontorch.train'
local ck = require 'moontorch.checkpoint'
local util = require 'spec.util'

local R, N, seed = util.distStart(dist, 'trainer resume')

-- every rank's folder is rank 0's (the checkpoint) plus its own local files
local dir = dist.broadcastNumber(R == 0 and math.random(1, 1e9) or 0)
local root = ('/tmp/mt-dist-resume-%d-%d'):format(seed, dir)
teardown(function()
   dist.barrier()
   if R == 0 then os.execute(('rm -rf %q'):format(root)) end
   dist.finalize() -- a rank that ends without it is taken by its peers as gone
end)

local BATCH, NB = 7, 5
-- each epoch's batches from the generator seeded by (seed, epoch); this rank's rows of each
local function stream()
   return { nbatches = function() return NB end, errors = function() return {} end,
      run = function(_, epoch, first)
         torch.manualSeed(seed % 100000 + 17 * epoch)
         local xs, ys = torch.FloatTensor(NB, BATCH, 5):normal(), torch.LongTensor(NB, BATCH):random(1, 3)
         local lo, hi = math.floor(BATCH * R / N), math.floor(BATCH * (R + 1) / N)
         local b = (first or 1) - 1
         return function()
            b = b + 1
            if b > NB then return nil end
            return xs[b]:narrow(1, lo + 1, hi - lo), ys[b]:narrow(1, lo + 1, hi - lo), { count = hi - lo }
         end
      end }
end

local function trainer(save, extra)
   torch.manualSeed(seed % 1000 + 3)
   local net = nn.Sequential():add(nn.Linear(5, 8)):add(nn.Tanh()):add(nn.Dropout(0.3)):add(nn.Linear(8, 3))
   local o = { model = dist.DataParallel(net), criterion = nn.CrossEntropyCriterion(), optimizer = optim.sgd,
      config = { learningRate = 0.2, momentum = 0.9 }, schedule = optim.schedule.constant(0.2), train = stream(),
      val = data.Synthetic{ n = 8, batchSize = 4, shape = { 5 }, nClasses = 3, seed = 4 }, nEpochs = 2,
      save = save, checkpointEvery = 2, quiet = true, format = 'dist resume spec 1', dist = dist }
   for k, v in pairs(extra or {}) do o[k] = v end
   return train.Trainer(o)
end

describe('train.Trainer on ' .. N .. ' ranks', function()
   it('resumes from inside an epoch to the unbroken run bit for bit (every rank its own generator)', function()
      local a, b = root .. '/a', root .. '/b'
      local A = trainer(a)
      A:fit()
      trainer(b, { stopAfterIter = 8 }):fit() -- 5 batches an epoch: stops at epoch 2 batch 3, saved at batch 2
      -- the mid-epoch checkpoint keeps each rank's generator, and they have drifted apart: the
      -- resume has something to get wrong
      local _, m = ck.load(b .. '/checkpoint.safetensors')
      if N > 1 then -- (run alone, the single process's state is the checkpoint's rng)
         assert.are.equal(N, #m.partial.ranks)
         assert.are_not.same(m.partial.ranks[1].rng, m.partial.ranks[2].rng)
      end
      local B = trainer(b)
      local meta = B:resume(b)
      assert.are.same({ 1, 2 }, { meta.epoch, meta.batch })
      B:fit()
      -- every rank's parameters (DataParallel keeps them equal) and its losses of the epoch resumed
      util.assert_close(B.params, A.params, { atol = 0, rtol = 0 }, 'parameters on rank ' .. R)
      for it = 8, 2 * NB do
         assert.are.equal(A.losses[it], B.losses[it], ('rank %d iteration %d'):format(R, it))
      end
      dist.barrier()
      if R == 0 then
         local sa, sb = ck.load(a .. '/checkpoint.safetensors'), ck.load(b .. '/checkpoint.safetensors')
         for name, t in pairs(sa) do util.assert_close(sb[name], t, { atol = 0, rtol = 0 }, name) end
      end
   end)
end)
