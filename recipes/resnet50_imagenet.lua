-- resnet50_imagenet.lua: ResNet-18/34/50/101/152 on ImageNet (ILSVRC2012) as fb.resnet.torch
-- trains them: SGD with Nesterov momentum 0.9, weight decay 1e-4, LR 0.1 per 256 images divided
-- by 10 every 30 epochs, 90 epochs, random-resized crops with flips, colour jitter and PCA
-- lighting; validation on centre crops (top-1 and top-5).
--   luajit recipes/resnet50_imagenet.lua -data /data/imagenet [-depth 50] [-batchSize 256]
--         [-device cuda] [-save runs/resnet50_imagenet] [-resume runs/resnet50_imagenet]
--         [-checkpointEvery 1000]
--   luajit recipes/resnet50_imagenet.lua -synthetic -limitBatches 50    (throughput only)
--   mpirun -np 8 luajit recipes/resnet50_imagenet.lua -dist -data DIR [-allreduce auto] [-bucketMB 25]
--         [-compress rgc -density 0.001 -densityWarmup 4 -rgcMethod exact -wire float]
-- (`-h` lists every option.) With -dist, -batchSize is the global batch: each rank trains on
-- its slice of every batch, dist.DataParallel averages the gradients, the ranks of a host share
-- its cores (-threads, -nThreads) and memory, a cached split holds only each rank's block of
-- its images on that rank (which then draws its share of every batch from its block, in the
-- order of the epoch's global permutation), and rank 0 alone prints and writes files; an
-- error on any rank stops them all, naming it. -data DIR holds train/ and val/ as ImageFolders (one sub-folder of
-- images per class), or packed shards (train/*.mts, val/*.mts and classes.txt).
--
-- The parts, as in fb.resnet.torch: recipes/imagenet/opts.lua (command line), data.lua
-- (loaders), model.lua (ResNet, optimizer), train.lua (schedule, harness set-up),
-- checkpoints.lua (what -resume accepts); the epoch loop, metering, logs and checkpoints are
-- the library's moontorch.train.
-- Each epoch writes log.csv, plot.svg, a TensorBoard event file and checkpoint.safetensors
-- (atomically) into -save, and -checkpointEvery N also every N batches. Reproducibility: the
-- loader draws epoch e's order and augmentation from (seed, e) only, synthetic batches come
-- from (seed, e, batch), and checkpoints keep the generator's state, so `-resume` gives the
-- numbers of the uninterrupted run (same thread counts), also from inside an epoch.
local modname = ...
local torch = require 'moontorch' -- the repository root's loader: lua/ and recipes/ on the path
local progress = require 'moontorch.util.progress'
local opts = require 'recipes.imagenet.opts'
local imagenet = {
   data = require 'recipes.imagenet.data', model = require 'recipes.imagenet.model',
   train = require 'recipes.imagenet.train', checkpoints = require 'recipes.imagenet.checkpoints',
}

local M = {}
M.instructions = opts.instructions
M.open_data = imagenet.data.open
M.build_model = imagenet.model.build
M.make_schedule = imagenet.train.schedule
M.count_topk = require('moontorch.train').topk

local function run(opt, dist)
   io.stdout:setvbuf('line')
   torch.setnumthreads(opt.threads)
   if dist then
      print(('data-parallel on %d ranks (%d nodes), allreduce %s, buckets of %g MB, %d images per rank and batch, '
         .. '%d+%d threads per rank'):format(opt.world, dist.nodes(), opt.allreduce, opt.bucketMB, opt.localBatch,
         opt.threads, opt.nThreads))
   end
   local trainSrc, valSrc, nClasses = imagenet.data.sources(opt, dist)
   local model, criterion, config = imagenet.model.setup(opt, nClasses, dist)
   local trainer = imagenet.train.trainer(opt, model, criterion, config, trainSrc, valSrc, nClasses, dist)
   imagenet.model.layers(model, trainer.params, config, opt)
   local c = model.compressor -- with -compress rgc
   if c then c:schedule(math.floor(opt.densityWarmup * trainer.trainBatches)) end
   if opt.resume ~= '' then
      trainer:resume(opt.resume, imagenet.checkpoints.check(opt))
      if c then
         c:schedule(c.o.warmupSteps, (trainer.startEpoch - 1) * trainer.trainBatches + trainer.firstBatch - 1)
      end
   end

   local t0 = progress.now()
   local last, best = trainer:fit()
   trainSrc:free()
   valSrc:free()
   local function pct(v) return v and v == v and ('%.2f%%'):format(100 * v) or 'n/a' end
   print(('final: train loss %s  val top-1 %s  top-5 %s  (best top-1 %s at epoch %d)  %s'):format(
      last.loss and ('%.6f'):format(last.loss) or 'n/a', pct(last.top1), pct(last.top5),
      best.top1 >= 0 and pct(best.top1) or 'n/a', best.epoch, progress.format_time(progress.now() - t0)))
   if opt.save ~= '' then print('checkpoint, log.csv, plot.svg and TensorBoard events in ' .. opt.save) end
   if dist then dist.finalize() end
   return last, model
end

function M.main(args)
   local opt, given = opts.parse(args)
   if not opt then
      -- with -dist, rank 0 alone explains
      local dist = given.dist and require('moontorch.dist').init{ timeout = given.timeout, model = false }
      if not dist or dist.rank() == 0 then io.stderr:write(opts.instructions) end
      if dist then dist.finalize() end
      return nil, nil, 1 -- the exit status
   end
   local dist = opts.distribute(opt)
   if not dist or opt.rank == 0 then return run(opt, dist) end
   -- Ranks other than 0 say nothing on stdout, the library's messages included (errors still
   -- reach stderr through the caller); print comes back however run ends.
   local say = print
   print = function() end -- luacheck: ignore 121 (silences this rank's run; restored below)
   local ok, last, model = xpcall(run, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, opt, dist)
   print = say -- luacheck: ignore 121 (the real print back)
   if not ok then error(last, 0) end
   return last, model
end

if modname ~= 'recipes.resnet50_imagenet' then -- run as a script, not required as a module
   local ok, res, _, code = xpcall(M.main, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, arg)
   if not ok then
      -- with -dist, tell the other ranks (they stop at once, naming this one)
      local dist = package.loaded['moontorch.dist']
      if dist then dist.fail(tostring(res):match('^[^\n]*')) end
      local who = dist and dist.size() > 1 and ('rank %d: '):format(dist.rank()) or ''
      -- one write, so that the lines of several ranks do not interleave
      io.stderr:write(opts.NAME .. ': ' .. who .. tostring(res):gsub('^' .. opts.NAME .. ': ', '') .. '\n')
      os.exit(1)
   end
   if code then os.exit(code) end
end
return M
