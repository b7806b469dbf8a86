-- resnet50_imagenet.lua: ResNet-18/34/50/101/152 on ImageNet (ILSVRC2012) as fb.resnet.torch
-- trains them: SGD with Nesterov momentum 0.9, weight decay 1e-4, LR 0.1 per 256 images divided
-- by 10 every 30 epochs, 90 epochs, random-resized crops with flips, colour jitter and PCA
-- lighting; validation on centre crops (top-1 and top-5).
--   luajit recipes/resnet50_imagenet.lua -data /data/imagenet [-depth 50] [-batchSize 256]
--         [-device cuda] [-save runs/resnet50_imagenet] [-resume runs/resnet50_imagenet]
--         [-checkpointEvery 1000]
--   luajit recipes/resnet50_imagenet.lua -synthetic -limitBatches 50    (throughput only)
-- (`-h` lists every option.) -data DIR holds train/ and val/ as ImageFolders (one sub-folder
-- of images per class), or packed shards (train/*.mts, val/*.mts and classes.txt).
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

function M.main(args)
   local opt = opts.parse(args)
   if not opt then
      io.stderr:write(opts.instructions)
      return nil, nil, 1 -- the exit status
   end
   io.stdout:setvbuf('line')
   torch.setnumthreads(opt.threads)
   local trainSrc, valSrc, nClasses = imagenet.data.sources(opt)
   local model, criterion, config = imagenet.model.setup(opt, nClasses)
   local trainer = imagenet.train.trainer(opt, model, criterion, config, trainSrc, valSrc, nClasses)
   imagenet.model.layers(model, trainer.params, config, opt)
   if opt.resume ~= '' then trainer:resume(opt.resume, imagenet.checkpoints.check(opt)) end

   local t0 = progress.now()
   local last, best = trainer:fit()
   trainSrc:free()
   valSrc:free()
   local function pct(v) return v and v == v and ('%.2f%%'):format(100 * v) or 'n/a' end
   print(('final: train loss %s  val top-1 %s  top-5 %s  (best top-1 %s at epoch %d)  %s'):format(
      last.loss and ('%.6f'):format(last.loss) or 'n/a', pct(last.top1), pct(last.top5),
      best.top1 >= 0 and pct(best.top1) or 'n/a', best.epoch, progress.format_time(progress.now() - t0)))
   if opt.save ~= '' then print('checkpoint, log.csv, plot.svg and TensorBoard events in ' .. opt.save) end
   return last, model
end

if modname ~= 'recipes.resnet50_imagenet' then -- run as a script, not required as a module
   local ok, res, _, code = xpcall(M.main, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, arg)
   if not ok then
      io.stderr:write(opts.NAME, ': ', (tostring(res):gsub('^' .. opts.NAME .. ': ', '')), '\n')
      os.exit(1)
   end
   if code then os.exit(code) end
end
return M
