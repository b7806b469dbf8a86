-- bench/perf_recipe.lua: one rank's side of bench/perf_recipe.sh. Under `mpirun -np N`, every
-- rank profiles the Fashion-MNIST recipe's model (moontorch.models.small_cnn, with its criterion)
-- at its local batch at the same time as the others, so the profile sees the cores shared as a
-- training run does; rank 0 writes the profile, and with N > 1 perf.calibrate's cost table.
--   mpirun -np N luajit bench/perf_recipe.lua -batchSize 64 -profile P.json [-calibrate T.model]
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local perf = require 'moontorch.perf'
local int = require('moontorch.train.flags').int

local cli = torch.CmdLine()
cli:option('-batchSize', 64, 'the global batch (the recipe\'s -batchSize)', int '[1, inf)')
cli:option('-threads', 1, 'threads per rank (the recipe\'s -threads)', int '[1, inf)')
cli:option('-profile', 'profile.json', 'where rank 0 writes the profile')
cli:option('-calibrate', '', 'where rank 0 writes perf.calibrate\'s table (N > 1)')
cli:option('-reps', 20, 'timed passes (the median per layer)', int '[1, inf)')
local opt = cli:parse(arg)

local world = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or '1')
local dist
if world > 1 then
   dist = require 'moontorch.dist'
   dist.init { model = false }
end
torch.setnumthreads(opt.threads)
local n = dist and dist.size() or 1
local rank = dist and dist.rank() or 0
local localBatch = math.floor(opt.batchSize / n)
local model = require('moontorch.models.small_cnn') {}
local target = torch.LongTensor(localBatch):random(1, 10)
if dist then dist.barrier() end
local p = perf.profile(model, { localBatch, 1, 28, 28 }, { reps = opt.reps,
   name = ('small_cnn batch %d'):format(localBatch), criterion = nn.CrossEntropyCriterion(), target = target })
if rank == 0 then perf.save(p, opt.profile) end
if dist and opt.calibrate ~= '' then
   local t = perf.calibrate(dist, { maxBytes = 4 * 2 ^ 20 })
   if rank == 0 then perf.saveTable(t, opt.calibrate) end
end
if rank == 0 then
   io.write(('profile: %d layers, one-worker step %.2f ms at local batch %d -> %s\n'):format(#p.layers,
      perf.compute(p) * 1000, localBatch, opt.profile))
end
if dist then dist.finalize() end
