-- fashion_mnist.lua: the built-in default recipe, and a short example of the library. Trains a
-- small CNN on Fashion-MNIST with moontorch.train's harness: a progress bar, the test accuracy
-- each epoch, a checkpoint with its CSV log and SVG plot beside it, the final test accuracy.
--   luajit recipes/fashion_mnist.lua [-nEpochs 8] [-batchSize 64] [-LR 0.05] [-optimizer sgd]
--         [-threads 2] [-precision fp32|tf32|fp16|bf16|fp64] [-save runs/fashion_mnist] [-resume DIR]
--   mpirun -np 4 luajit recipes/fashion_mnist.lua -dist [-allreduce auto] [-compress rgc|powersgd|onebit|fp16]
-- (`-h` lists every option, by group.) Data: Debian's dataset-fashion-mnist package
-- (/usr/share/datasets/fashion-mnist/*-idx*-ubyte.gz) or the same four files in -data DIR.
-- The parts, as in fb.resnet.torch: recipes/fashion_mnist/opts.lua (command line), data.lua
-- (the IDX files as tensors, batched by data.TensorLoader), model.lua (small CNN, criterion,
-- optimizer config and wrappers), train.lua (schedule, log columns, report), checkpoints.lua
-- (what -resume accepts). With -dist, -batchSize is the global batch: each rank trains on its
-- slice of every batch, dist.DataParallel averages the gradients, and rank 0 alone prints and
-- writes files. -precision fp16/bf16 keeps the model in that dtype with fp32 master weights in
-- the optimizer, every step going through optim.GradScaler; -accumulate K cuts each batch into
-- K micro-batches. Reproducibility: epoch e draws its shuffling, flips and dropout masks from
-- (seed, e), and checkpoints inside an epoch keep the generator's state, so `-resume` gives the
-- numbers of the uninterrupted run (same thread count).
local modname = ...
local torch = require 'moontorch' -- the repository root's loader: lua/ and recipes/ on the path
local recipe = require 'moontorch.train.recipe'
local opts = require 'recipes.fashion_mnist.opts'
local data = require 'recipes.fashion_mnist.data'
local model = require 'recipes.fashion_mnist.model'
local train = require 'recipes.fashion_mnist.train'
local checkpoints = require 'recipes.fashion_mnist.checkpoints'

local M = { load = data.load, schedule = train.schedule, count_correct = train.count_correct }

local function run(opt, dist)
   torch.setnumthreads(opt.threads)
   io.stdout:setvbuf('line') -- a log file sees each epoch as it ends
   if dist then
      print(opt.ps and recipe.psBanner(opt) or ('data-parallel on %d ranks (%d nodes), allreduce %s, %s, '
         .. '%d threads per rank'):format(opt.world, dist.nodes(), opt.allreduce, recipe.buckets(opt), opt.threads))
   end
   recipe.checkResume(opt, checkpoints.FORMAT, checkpoints.check(opt), dist) -- before any data is read
   local trainSrc, testSrc = data.sources(opt)
   local net, criterion, config, scaler = model.setup(opt, dist)
   local trainer = train.trainer(opt, net, criterion, config, scaler, trainSrc, testSrc, dist)
   recipe.resume(trainer, opt, checkpoints.check(opt))

   for epoch = trainer.startEpoch, trainer.lastEpoch do
      local tr = trainer:trainEpoch(epoch) -- nil when -stopAfterIter stops it inside the epoch
      if not tr then break end
      local va = trainer:validate(epoch)
      trainer:record(epoch, tr, va) -- the report, log.csv, plot.svg (and TensorBoard scalars)
      trainer:checkpoint(epoch)
   end
   local last = trainer:finish()
   recipe.exitIfStopped(trainer, opt, dist) -- Ctrl-C or SIGTERM: the checkpoint and the command that goes on
   local acc = last.top1 or trainer:validate(trainer.startEpoch).top1 -- nothing was left to train
   print(('final test accuracy: %.2f%%'):format(100 * acc))
   return acc, net, trainer
end

-- trains as the command line args say; returns the final test accuracy (a fraction), the model
-- and the trainer
function M.main(args)
   local opt = opts.parse(args)
   local dist = recipe.distribute(opt)
   local acc, net, trainer = recipe.onRankZero(dist, run, opt, dist)
   if dist then dist.finalize() end
   return acc, net, trainer
end

if modname ~= 'recipes.fashion_mnist' then recipe.script(opts.NAME, M.main, arg) end -- run as a script
return M
