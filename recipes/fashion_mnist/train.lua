-- fashion_mnist/train.lua: the learning-rate schedule of recipes/fashion_mnist.lua and the
-- harness (moontorch.train.Trainer) set up with its log columns, plot, TensorBoard scalars
-- (each epoch's, a compressor's counters, and every -logEvery iterations loss, rate, images/s
-- and data wait) and per-epoch report.
local optim = require 'moontorch.optim'
local train = require 'moontorch.train'
local recipe = require 'moontorch.train.recipe'
local opts = require 'recipes.fashion_mnist.opts'
local checkpoints = require 'recipes.fashion_mnist.checkpoints'

local M = {}

-- the learning rate of iteration t (from 0): warm-up, then the chosen schedule
function M.schedule(opt, itersPerEpoch)
   opts.check(opt)
   local S = optim.schedule
   local total = math.max(opt.nEpochs * itersPerEpoch, 1)
   local warm = math.floor(opt.warmup * itersPerEpoch)
   local base
   if opt.schedule == 'cosine' then base = S.cosine(opt.LR, math.max(total - warm, 1))
   elseif opt.schedule == 'step' then -- x0.1 at a third and two thirds of the run
      base = S.step(opt.LR, math.max(math.floor(opt.nEpochs / 3), 1) * itersPerEpoch, 0.1)
   elseif opt.schedule == 'poly' then base = S.polynomial(opt.LR, math.max(total - warm, 1), opt.polyPower)
   else base = S.constant(opt.LR) end
   return warm > 0 and S.warmup(warm, base) or base
end

-- number of rows whose highest score is at the target class
function M.count_correct(scores, target) return train.topk(scores, target:long(), { 1 })[1] end

local function report(opt)
   return function(epoch, tr, va)
      print(('epoch %d: train loss %.4f  train acc %.2f%%  test acc %.2f%%  (%.1f s, %.0f img/s)'):format(epoch,
         tr.loss, 100 * tr.top1, 100 * va.top1, tr.seconds, tr.images_per_sec))
      if tr.loss_scale then
         print(('  %s: loss scale %g, %d steps skipped (inf/NaN gradients)'):format(opt.precision, tr.loss_scale,
            tr.skipped_steps))
      end
      if tr.comm_MB then
         print(('  %s: %.3f MB/step sent, density %.4f, select %.2f ms, exchange %.2f ms'):format(tr.compress,
            tr.comm_MB, tr.density, tr.select_ms, tr.exchange_ms))
      end
      if tr.ps then print(recipe.psReport(tr.ps)) end
   end
end

-- the CSV row of an epoch (log.csv's columns: see trainer below)
local function row(epoch, tr, va)
   return { epoch = epoch, train_loss = tr.loss, train_acc = tr.top1, test_acc = va.top1, lr = tr.lr,
      seconds = tr.seconds, images_per_sec = tr.images_per_sec, comm_MB = tr.comm_MB, density = tr.density,
      select_ms = tr.select_ms, exchange_ms = tr.exchange_ms, loss_scale = tr.loss_scale,
      skipped_steps = tr.skipped_steps }
end

-- the Trainer of model (from model.lua) on the sources of data.lua; dist: moontorch.dist with
-- -dist (epoch statistics are summed over the ranks; rank 0 alone reports and writes)
function M.trainer(opt, model, criterion, config, scaler, trainSrc, testSrc, dist)
   local compressing = model.compressing and model:compressing()
   local columns = { 'epoch', 'train_loss', 'train_acc', 'test_acc', 'lr', 'seconds', 'images_per_sec' }
   if compressing then
      for _, c in ipairs { 'comm_MB', 'density', 'select_ms', 'exchange_ms' } do columns[#columns + 1] = c end
   end
   if scaler then columns[#columns + 1], columns[#columns + 2] = 'loss_scale', 'skipped_steps' end
   local t = train.Trainer{ name = opts.NAME, model = model, criterion = criterion, dist = dist,
      optimizer = optim[opt.optimizer], config = config, device = opt.device, nEpochs = opt.nEpochs,
      scaler = scaler, accumulate = opt.accumulate, layout = opt.layout, train = trainSrc, val = testSrc,
      trainBatches = opt.limitBatches > 0 and opt.limitBatches or nil,
      valBatches = opt.limitTestBatches > 0 and opt.limitTestBatches or nil,
      save = opt.save ~= '' and opt.save or nil, checkpointEvery = opt.checkpointEvery,
      format = checkpoints.FORMAT, meta = checkpoints.meta(opt),
      stopAfter = opt.stopAfter, stopAfterIter = opt.stopAfterIter, quiet = opt.quiet, stopOnSignal = true,
      logEvery = opt.logEvery,
      columns = columns, row = row,
      tensorboard = { ['train/loss'] = 'train_loss', ['train/acc'] = 'train_acc', ['accuracy/test'] = 'test_acc',
         ['train/lr'] = 'lr', ['train/images_per_sec'] = 'images_per_sec' },
      plot = { acc = 'test_acc', title = 'fashion_mnist: small CNN, ' .. opt.optimizer },
      report = not opt.quiet and report(opt) or nil }
   if compressing then -- its counters, averaged per epoch
      for tag, col in pairs { ['comm/MB_per_step'] = 'comm_MB', ['comm/density'] = 'density',
         ['comm/select_ms'] = 'select_ms', ['comm/exchange_ms'] = 'exchange_ms' } do t.tensorboard[tag] = col end
   end
   t.schedule = M.schedule(opt, t.trainBatches)
   recipe.layerwise(t.model, t.params, config, opt)
   return t
end

return M
