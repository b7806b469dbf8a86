-- resnet50_imagenet.lua: ResNet-18/34/50/101/152 on ImageNet (ILSVRC2012) as fb.resnet.torch
-- trains them: SGD with Nesterov momentum 0.9, weight decay 1e-4, LR 0.1 per 256 images divided
-- by 10 every 30 epochs, 90 epochs, random-resized crops with flips, colour jitter and PCA
-- lighting; validation on centre crops (top-1 and top-5).
--   luajit recipes/resnet50_imagenet.lua -data /data/imagenet [-depth 50] [-batchSize 256]
--         [-device cuda] [-save runs/resnet50_imagenet] [-resume runs/resnet50_imagenet]
--   luajit recipes/resnet50_imagenet.lua -synthetic -limitBatches 50    (throughput only)
--   mpirun -np 8 luajit recipes/resnet50_imagenet.lua -dist -data DIR [-compress rgc -density 0.001]
-- (`-h` lists every option, by group.) -data DIR holds train/ and val/ as ImageFolders (one
-- sub-folder of images per class), or packed shards (train/*.mts, val/*.mts and classes.txt);
-- without -data the recipe explains how to get ImageNet. The parts, as in fb.resnet.torch:
-- recipes/imagenet/opts.lua (command line), data.lua (loaders, the in-memory cache),
-- model.lua (ResNet, criterion, optimizer config and wrappers), train.lua (schedule, logs,
-- report), checkpoints.lua (what -resume accepts). With -dist, -batchSize is the global batch:
-- each rank trains on its slice of every batch (with the data cached, on its own block of
-- them), dist.DataParallel averages the gradients, the ranks of a host share its cores and
-- memory, rank 0 alone prints and writes files, and an error on any rank stops them all.
-- Each epoch writes log.csv, plot.svg, a TensorBoard event file and checkpoint.safetensors into
-- -save, and -checkpointEvery N also every N batches. Reproducibility: epoch e's order and
-- augmentation come from (seed, e) only, and checkpoints keep the generator's state, so
-- `-resume` gives the numbers of the uninterrupted run (same thread counts), also mid-epoch.
local modname = ...
local torch = require 'moontorch' -- the repository root's loader: lua/ and recipes/ on the path
local progress = require 'moontorch.util.progress'
local recipe = require 'moontorch.train.recipe'
local opts = require 'recipes.imagenet.opts'
local data = require 'recipes.imagenet.data'
local model = require 'recipes.imagenet.model'
local train = require 'recipes.imagenet.train'
local checkpoints = require 'recipes.imagenet.checkpoints'

local M = { make_schedule = train.schedule, count_topk = require('moontorch.train').topk }

local function pct(v) return v and v == v and ('%.2f%%'):format(100 * v) or 'n/a' end

local function run(opt, dist)
   io.stdout:setvbuf('line')
   torch.setnumthreads(opt.threads)
   if dist then
      print(opt.ps and recipe.psBanner(opt) or ('data-parallel on %d ranks (%d nodes), allreduce %s, %s, '
         .. '%d images per rank and batch, %d+%d threads per rank'):format(opt.world, dist.nodes(), opt.allreduce,
         recipe.buckets(opt), opt.localBatch, opt.threads, opt.nThreads))
   end
   recipe.checkResume(opt, checkpoints.FORMAT, checkpoints.check(opt), dist) -- before any data is read
   local trainSrc, valSrc, nClasses = data.sources(opt, dist)
   local net, criterion, config, scaler = model.setup(opt, nClasses, dist)
   local trainer = train.trainer(opt, net, criterion, config, scaler, trainSrc, valSrc, nClasses, dist)
   recipe.resume(trainer, opt, checkpoints.check(opt))

   local t0 = progress.now()
   for epoch = trainer.startEpoch, trainer.lastEpoch do
      local tr = trainer:trainEpoch(epoch) -- nil when -stopAfterIter stops it inside the epoch
      if not tr then break end
      local va = trainer:validate(epoch)
      trainer:record(epoch, tr, va) -- the report, log.csv, plot.svg, TensorBoard scalars
      trainer:checkpoint(epoch)
   end
   local last, best = trainer:finish()
   recipe.exitIfStopped(trainer, opt, dist) -- Ctrl-C or SIGTERM: the checkpoint and the command that goes on
   trainSrc:free()
   valSrc:free()
   print(('final: train loss %s  val top-1 %s  top-5 %s  (best top-1 %s at epoch %d)  %s'):format(
      last.loss and ('%.6f'):format(last.loss) or 'n/a', pct(last.top1), pct(last.top5),
      best.top1 >= 0 and pct(best.top1) or 'n/a', best.epoch, progress.format_time(progress.now() - t0)))
   if opt.save ~= '' then print('checkpoint, log.csv, plot.svg and TensorBoard events in ' .. opt.save) end
   return last, net
end

-- trains as the command line args say; returns the last epoch's { loss, top1, top5 } and the
-- model (nil, nil and the exit status 1 when there are no data)
function M.main(args)
   local opt, given = opts.parse(args)
   if not opt then return nil, nil, opts.explain(given) end
   local dist = recipe.distribute(opt)
   local last, net = recipe.onRankZero(dist, run, opt, dist)
   if dist then dist.finalize() end
   return last, net
end

if modname ~= 'recipes.resnet50_imagenet' then recipe.script(opts.NAME, M.main, arg) end -- run as a script
return M
