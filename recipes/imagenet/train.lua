-- imagenet/train.lua: the learning-rate schedule of recipes/resnet50_imagenet.lua and the
-- harness (moontorch.train.Trainer) set up with its logs, plot, TensorBoard scalars and
-- per-epoch report.
local optim = require 'moontorch.optim'
local Trainer = require('moontorch.train').Trainer
local precision = require 'moontorch.train.precision'
local recipe = require 'moontorch.train.recipe'
local opts = require 'recipes.imagenet.opts'
local checkpoints = require 'recipes.imagenet.checkpoints'

local M = {}

-- the learning rate of iteration t (from 0)
function M.schedule(opt, itersPerEpoch)
   local S = optim.schedule
   local total = math.max(opt.nEpochs * itersPerEpoch, 1)
   local warm = math.floor(opt.warmupEpochs * itersPerEpoch + 0.5)
   if opt.lrSchedule == 'step' then
      -- /10 at epochs 31, 61, ... counted from the start of training (warm-up included), as
      -- fb.resnet.torch and Goyal et al.
      return S.warmupOver(warm, S.step(opt.lr, 30 * itersPerEpoch, 0.1))
   end
   local base = opt.lrSchedule == 'cosine' and S.cosine(opt.lr, math.max(total - warm, 1))
      or S.polynomial(opt.lr, math.max(total - warm, 1), opt.polyPower)
   return warm > 0 and S.warmup(warm, base) or base
end

local function report(epoch, tr, va)
   print(('epoch %d: train loss %.4f  top-1 %.2f%%  |  val top-1 %.2f%%  top-5 %.2f%%  |  lr %.4g  %.1f img/s  '
      .. 'data %.1f ms/batch%s'):format(epoch, tr.loss, 100 * tr.top1, 100 * va.top1, 100 * va.top5, tr.lr,
      tr.images_per_sec, tr.wait_ms, tr.skipped > 0 and ('  (%d images skipped)'):format(tr.skipped) or ''))
   if tr.loss_scale then
      print(('  loss scale %g, %d steps skipped (inf/NaN gradients)'):format(tr.loss_scale, tr.skipped_steps))
   end
   if tr.comm_MB then
      print(('  %s: %.3f MB/step sent, density %.4f, select %.2f ms, exchange %.2f ms'):format(tr.compress,
         tr.comm_MB, tr.density, tr.select_ms, tr.exchange_ms))
   end
   if tr.ps then print(recipe.psReport(tr.ps)) end
end

-- the Trainer of model (from model.lua) on the sources of data.lua; dist: moontorch.dist with
-- -dist (the model then a dist.DataParallel): epoch statistics are summed over the ranks, and
-- rank 0 alone reports and writes
function M.trainer(opt, model, criterion, config, scaler, trainSrc, valSrc, nClasses, dist)
   local cap = opt.limitBatches > 0 and opt.limitBatches or nil
   local t = Trainer{ name = opts.NAME, model = model, criterion = criterion, dist = dist,
      optimizer = optim[opt.optimizer], config = config, train = trainSrc, val = valSrc, trainBatches = cap,
      valBatches = cap, device = opt.device,
      nEpochs = opt.nEpochs, stopAfter = opt.stopAfter, stopAfterIter = opt.stopAfterIter,
      checkpointEvery = opt.checkpointEvery, save = opt.save ~= '' and opt.save or nil,
      format = checkpoints.FORMAT, meta = checkpoints.meta(opt, nClasses), quiet = opt.quiet, stopOnSignal = true,
      logEvery = opt.logEvery,
      showWait = not opt.synthetic, report = report,
      -- -precision fp16/bf16: loss scaling (and -clip), inputs converted to the model's dtype
      scaler = scaler, accumulate = opt.accumulate, layout = opt.layout,
      inputType = precision.isHalf(opt.precision) and precision.typename(opt.precision) or nil,
      plot = { acc = 'val_top1',
         title = ('ResNet-%d, %s (validation top-1 on the right)'):format(opt.depth, opt.optimizer) },
      tensorboard = { ['train/loss'] = 'train_loss', ['train/top1'] = 'train_top1', ['val/loss'] = 'val_loss',
         ['val/top1'] = 'val_top1', ['val/top5'] = 'val_top5', ['train/lr'] = 'lr',
         ['train/images_per_sec'] = 'images_per_sec', ['train/data_wait_ms'] = 'data_wait_ms' } }
   if model.compressing and model:compressing() then -- -compress: its counters, averaged per epoch
      for tag, col in pairs { ['comm/MB_per_step'] = 'comm_MB', ['comm/density'] = 'density',
         ['comm/select_ms'] = 'select_ms', ['comm/exchange_ms'] = 'exchange_ms' } do t.tensorboard[tag] = col end
   end
   if t.scaler then
      t.tensorboard['train/loss_scale'] = 'loss_scale'
      t.tensorboard['train/skipped_steps'] = 'skipped_steps'
   end
   t.schedule = M.schedule(opt, t.trainBatches)
   recipe.layerwise(t.model, t.params, config, opt)
   return t
end

return M
