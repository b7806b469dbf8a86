-- fashion_mnist.lua: the built-in default recipe, and a short example of the library. Trains a
-- small CNN on Fashion-MNIST with moontorch.train's harness: a progress bar, the test accuracy
-- each epoch, a checkpoint with its CSV log and SVG plot beside it, the final test accuracy.
--   luajit recipes/fashion_mnist.lua [-nEpochs 8] [-batchSize 64] [-LR 0.05] [-optimizer sgd]
--         [-threads 2] [-seed 1] [-device cpu] [-precision fp32|tf32|fp16|bf16|fp64] [-accumulate K]
--         [-lossScale 65536] [-clip 0] [-layout nchw|nhwc] [-save runs/fashion_mnist]
--         [-resume runs/fashion_mnist/checkpoint.safetensors] [-checkpointEvery N] [-data DIR]
--   mpirun -np 4 luajit recipes/fashion_mnist.lua -dist [-allreduce auto] [-bucketMB 25]
--         [-compress rgc -density 0.001 -densityWarmup 1 -rgcMethod exact -wire float]
-- (`-h` lists every option.) With -dist, -batchSize is the global batch: each rank trains on
-- its slice of every batch, gradients are averaged by dist.DataParallel, and rank 0 alone
-- prints and writes files. Data: Debian's dataset-fashion-mnist package
-- (/usr/share/datasets/fashion-mnist/*-idx*-ubyte.gz) or the same four files in -data DIR.
--
-- Mixed precision: -precision fp16 or bf16 keeps the model (parameters, activations, gradients)
-- in that dtype, an fp32 master copy and fp32 optimizer state in the optimizer (written back in
-- its fused pass), and runs every step through optim.GradScaler: fp16 with dynamic loss scaling
-- (from -lossScale, halved on overflow, doubled after -scaleWindow clean steps), bf16 unscaled;
-- both skip steps whose gradients are not finite. -accumulate K cuts each batch into K
-- micro-batches whose gradients add up before one step. -layout nhwc stores the convolution
-- weights and the batches channels-last (the same losses; cuDNN's NHWC kernels on CUDA).
--
-- Reproducibility: epoch e draws its shuffling, flips and dropout masks from the seed (seed, e),
-- and checkpoints inside an epoch keep the generator's state, so `-resume` gives the numbers of
-- the uninterrupted run (same thread count).
local modname = ...
local torch = require 'moontorch' -- the repository root's loader: lua/ and recipes/ on the path
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local train = require 'moontorch.train'
local idx = require 'moontorch.data.idx'
local options = require 'moontorch.util.options'
local models = require 'recipes.models'

local spec = {
   { 'data', '/usr/share/datasets/fashion-mnist', 'directory with the four *-idx*-ubyte(.gz) files' },
   { 'nEpochs', 8, 'number of epochs' },
   { 'batchSize', 64, 'mini-batch size' },
   { 'LR', 0.05, 'peak learning rate (0: the optimizer\'s default)' },
   { 'schedule', 'cosine', 'learning-rate schedule over iterations; poly: LR * (1 - t/T)^polyPower after the warm-up',
      choices = { 'cosine', 'step', 'constant', 'poly' } },
   { 'polyPower', 2, 'power of the poly schedule (2: Jia et al. 2018)' },
   { 'warmup', 1, 'epochs of linear warm-up' },
   { 'optimizer', 'sgd', 'sgd | adam | adamw | lars | lamb', choices = { 'sgd', 'adam', 'adamw', 'lars', 'lamb' } },
   { 'momentum', 0.9, 'momentum (sgd, lars)' },
   { 'eta', 0.001, 'LARS trust coefficient: layer rate eta*||w||/(||g|| + wd*||w||) (LAMB has none)' },
   { 'weightDecay', 5e-4, 'weight decay' },
   { 'nesterov', true, 'Nesterov momentum (sgd)' },
   { 'labelSmoothing', 0, 'label smoothing of the cross-entropy' },
   { 'ghostBatch', 0,
      'batch norm statistics over ghost batches of about this many samples (Hoffer et al. 2017; 0: the whole batch)' },
   { 'augment', true, 'random horizontal flips in training' },
   { 'width', 32, 'channels of the first convolution of the small CNN' },
   { 'threads', 2, 'CPU threads' },
   { 'seed', 1, 'random seed (data order, augmentation, dropout, initialisation)' },
   { 'device', 'cpu', 'cpu | cuda', choices = { 'cpu', 'cuda' } },
   { 'save', 'runs/fashion_mnist', 'directory for checkpoint.safetensors, log.csv and plot.svg ("" for none)' },
   { 'resume', '', 'checkpoint (or its directory) to continue from, at an epoch end or mid-epoch' },
   { 'checkpointEvery', 0, 'also checkpoint every N training batches (0: epoch ends only)' },
   { 'limitBatches', 0, 'train on at most this many batches per epoch (0: all)' },
   { 'limitTestBatches', 0, 'evaluate at most this many test batches (0: all)' },
   { 'testBatchSize', 500, 'mini-batch size for evaluation' },
   { 'stopAfter', 0, 'stop after this epoch, as if interrupted (0: run all nEpochs)' },
   { 'stopAfterIter', 0, 'stop after this many training iterations in all, as if interrupted (0: no limit)' },
   { 'quiet', false, 'no progress bar' },
   { 'dist', false, 'data-parallel over the ranks of mpirun (moontorch.dist); -batchSize is global' },
   { 'allreduce', 'auto', 'allreduce algorithm with -dist',
      choices = require('moontorch.dist').algorithms() },
   { 'bucketMB', 25, 'gradient bucket size in MB with -dist' },
   { 'timeout', 300, 'seconds a rank waits for the others before failing, with -dist' },
}
-- -precision, -lossScale, -scaleWindow, -clip, -accumulate (moontorch.train.precision)
local precision = require 'moontorch.train.precision'
for _, row in ipairs(precision.recipeOptions()) do spec[#spec + 1] = row end
-- -compress rgc and its flags (moontorch.dist.rgcflags), a one-epoch density warm-up by default
for _, row in ipairs(require('moontorch.dist.rgcflags').recipeOptions(1)) do spec[#spec + 1] = row end

local M = {}

local function find_file(dir, stem)
   for _, name in ipairs({ stem .. '.gz', stem }) do
      local p = dir .. '/' .. name
      local f = io.open(p, 'rb')
      if f then f:close() return p end
   end
   error(('fashion_mnist: no %s(.gz) in %s (install dataset-fashion-mnist or pass -data DIR)'):format(stem, dir), 0)
end

-- images as (N, 1, 28, 28) normalised floats, labels as 1..10 LongTensor
function M.load(dir, set, typename)
   local prefix = set == 'train' and 'train' or 't10k'
   local images = idx.read(find_file(dir, prefix .. '-images-idx3-ubyte'))
   local labels = idx.read(find_file(dir, prefix .. '-labels-idx1-ubyte'))
   if images:dim() ~= 3 or labels:dim() ~= 1 or images:size(1) ~= labels:size(1) then
      error(('fashion_mnist: %s images %s and labels %s do not match'):format(set,
         table.concat(images:size():totable(), 'x'), table.concat(labels:size():totable(), 'x')), 0)
   end
   local n, h, w = images:size(1), images:size(2), images:size(3)
   -- Fashion-MNIST's training-set mean and standard deviation of the pixel values in [0, 1]
   local x = images:type(typename):div(255):add(-0.2860):div(0.3530):view(n, 1, h, w)
   return { x = x, y = labels:long():add(1), n = n }
end

-- number of rows whose highest score is at the target class
function M.count_correct(scores, target) return train.topk(scores, target:long(), { 1 })[1] end

-- Batches of a dataset in memory, with the loader's interface (run, nbatches). Training order
-- and flips come from the generator seeded by (seed, epoch) at the start of each epoch. With
-- o.world > 1 every rank draws the same order and flips and keeps its slice of each batch.
local function batches(d, bs, o)
   local self = { nb = o.dropLast and math.floor(d.n / bs) or math.ceil(d.n / bs) }
   local rank, world = o.rank or 0, o.world or 1
   local xb, yb = torch[torch.type(d.x):match('torch%.(%w+)')](bs, 1, 28, 28), torch.LongTensor(bs)
   local rev = torch.LongTensor(28)
   for i = 1, 28 do rev[i] = 29 - i end
   function self.nbatches() return self.nb end
   function self.errors() return {} end
   function self.run(_, epoch, first)
      local perm
      if o.shuffle then
         torch.manualSeed(o.seed * 1000003 + epoch)
         perm = torch.randperm(d.n):long()
      end
      local b = (first or 1) - 1
      return function()
         b = b + 1
         if b > self.nb then return nil end
         local start = (b - 1) * bs + 1
         local len = math.min(bs, d.n - start + 1)
         -- this rank's part of the batch: [lo, hi) of its len rows
         local lo, hi = math.floor(len * rank / world), math.floor(len * (rank + 1) / world)
         start, len = start + lo, hi - lo
         if not perm then return d.x:narrow(1, start, len), d.y:narrow(1, start, len), { count = len } end
         local ids = perm:narrow(1, start, len)
         local x, y = xb:narrow(1, 1, len), yb:narrow(1, 1, len)
         torch.index(x, d.x, 1, ids)
         torch.index(y, d.y, 1, ids)
         if o.flip then
            local flips = torch.rand(bs):narrow(1, lo + 1, len) -- every rank draws the whole batch's
            local flipped = x:index(4, rev)
            for i = 1, len do if flips[i] < 0.5 then x[i]:copy(flipped[i]) end end
         end
         return x, y, { count = len }
      end
   end
   return self
end

-- the learning rate of iteration t (from 0): warm-up, then the chosen schedule
local function schedule(opt, itersPerEpoch)
   local S = optim.schedule
   local total = math.max(opt.nEpochs * itersPerEpoch, 1)
   local warm = math.floor(opt.warmup * itersPerEpoch)
   local base
   if opt.schedule == 'cosine' then base = S.cosine(opt.LR, math.max(total - warm, 1))
   elseif opt.schedule == 'step' then -- x0.1 at a third and two thirds of the run
      base = S.step(opt.LR, math.max(math.floor(opt.nEpochs / 3), 1) * itersPerEpoch, 0.1)
   elseif opt.schedule == 'poly' then
      if not (opt.polyPower >= 0) then -- luacheck: ignore 581 (rejects NaN)
         error(('fashion_mnist: -polyPower must be >= 0, got %s'):format(opt.polyPower), 0)
      end
      base = S.polynomial(opt.LR, math.max(total - warm, 1), opt.polyPower)
   else base = S.constant(opt.LR) end
   return warm > 0 and S.warmup(warm, base) or base
end
M.schedule = schedule -- for spec/recipes/large_batch_spec.lua

function M.main(args)
   local opt = options.parse(args or {}, spec,
      'fashion_mnist.lua: train a small CNN on Fashion-MNIST (moontorch\'s default recipe)\nOptions:')
   if not (opt.ghostBatch >= 0 and opt.ghostBatch == math.floor(opt.ghostBatch)) then
      error(('fashion_mnist: -ghostBatch must be a non-negative integer, got %s'):format(opt.ghostBatch), 0)
   end
   local dist, rank, world
   if opt.dist then
      dist = require 'moontorch.dist'
      dist.init{ timeout = opt.timeout, algorithm = opt.allreduce }
      rank, world = dist.rank(), dist.size()
      if opt.batchSize % world ~= 0 then
         error(('fashion_mnist: -batchSize %d is not a multiple of the %d ranks'):format(opt.batchSize, world), 0)
      end
      -- the ranks of one host share its cores
      opt.threads = math.max(1, math.floor(opt.threads / dist.localSize()))
      if rank == 0 then
         print(('data-parallel on %d ranks (%d nodes), allreduce %s, buckets of %g MB, %d threads per rank'):format(
            world, dist.nodes(), opt.allreduce, opt.bucketMB, opt.threads))
      end
   end
   torch.setnumthreads(opt.threads)
   io.stdout:setvbuf('line') -- a log file sees each epoch as it ends
   local bad = precision.problem(opt)
   if bad then error('fashion_mnist: ' .. bad, 0) end
   local typename = precision.typename(opt.precision)
   local scaler = precision.scaler(opt)
   if opt.device == 'cuda' and not (torch.cuda and torch.cuda.isAvailable and torch.cuda.isAvailable()) then
      error('fashion_mnist: -device cuda but no CUDA device is available', 0)
   end

   precision.apply(opt)
   torch.manualSeed(opt.seed)
   local trainSet, testSet = M.load(opt.data, 'train', typename), M.load(opt.data, 'test', typename)
   local model = models.small_cnn{ nClasses = 10, width = opt.width }:type(typename)
   nn.utils.ghostBatchNorm(model, opt.ghostBatch) -- 0: off
   model = precision.fuse(model, opt)
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing > 0 and opt.labelSmoothing or nil):type(typename)
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local config = { learningRate = opt.LR, weightDecay = opt.weightDecay }
   if opt.optimizer == 'sgd' or opt.optimizer == 'lars' then config.momentum = opt.momentum end
   if opt.optimizer == 'sgd' and opt.nesterov and opt.momentum > 0 then config.nesterov, config.dampening = true, 0 end

   local trainIt = batches(trainSet, opt.batchSize, { shuffle = true, flip = opt.augment, seed = opt.seed,
      dropLast = true, rank = rank, world = world })
   local rgc = require 'moontorch.dist.rgcflags'
   local problem = rgc.recipeProblem(opt)
   if problem then error('fashion_mnist: ' .. problem, 0) end
   local compressing = dist and opt.compress == 'rgc'
   if dist then
      model = dist.DataParallel(model,
         rgc.recipeSetup(opt, config, { bucketMB = opt.bucketMB, algorithm = opt.allreduce }))
   end
   local columns = { 'epoch', 'train_loss', 'train_acc', 'test_acc', 'lr', 'seconds', 'images_per_sec' }
   if compressing then
      for _, c in ipairs { 'comm_MB', 'density', 'select_ms', 'exchange_ms' } do columns[#columns + 1] = c end
   end
   if scaler then columns[#columns + 1], columns[#columns + 2] = 'loss_scale', 'skipped_steps' end
   local trainer = train.Trainer{ name = 'fashion_mnist', model = model, criterion = criterion, dist = dist,
      optimizer = optim[opt.optimizer], config = config, device = opt.device, nEpochs = opt.nEpochs,
      scaler = scaler, accumulate = opt.accumulate, layout = opt.layout,
      train = trainIt,
      val = batches(testSet, opt.testBatchSize, { rank = rank, world = world }),
      trainBatches = opt.limitBatches > 0 and opt.limitBatches or nil,
      valBatches = opt.limitTestBatches > 0 and opt.limitTestBatches or nil,
      save = opt.save ~= '' and opt.save or nil, checkpointEvery = opt.checkpointEvery,
      format = 'moontorch fashion_mnist 2',
      meta = { seed = opt.seed, optimizer = opt.optimizer, precision = opt.precision, fuse = opt.fuse },
      stopAfter = opt.stopAfter, stopAfterIter = opt.stopAfterIter,
      quiet = opt.quiet,
      columns = columns,
      row = function(epoch, tr, va)
         return { epoch = epoch, train_loss = tr.loss, train_acc = tr.top1, test_acc = va.top1, lr = tr.lr,
            seconds = tr.seconds, images_per_sec = tr.images_per_sec, comm_MB = tr.comm_MB, density = tr.density,
            select_ms = tr.select_ms, exchange_ms = tr.exchange_ms, loss_scale = tr.loss_scale,
            skipped_steps = tr.skipped_steps }
      end,
      tensorboard = compressing and { ['comm/MB_per_step'] = 'comm_MB', ['comm/density'] = 'density',
         ['comm/select_ms'] = 'select_ms', ['comm/exchange_ms'] = 'exchange_ms',
         ['accuracy/test'] = 'test_acc' } or nil,
      plot = { acc = 'test_acc', title = 'fashion_mnist: small CNN, ' .. opt.optimizer },
      report = not opt.quiet and function(epoch, tr, va)
         print(('epoch %d: train loss %.4f  train acc %.2f%%  test acc %.2f%%  (%.1f s, %.0f img/s)'):format(epoch,
            tr.loss, 100 * tr.top1, 100 * va.top1, tr.seconds, tr.images_per_sec))
         if tr.loss_scale then
            print(('  %s: loss scale %g, %d steps skipped (inf/NaN gradients)'):format(opt.precision, tr.loss_scale,
               tr.skipped_steps))
         end
         if tr.comm_MB then
            print(('  rgc: %.3f MB/step sent, density %.4f, select %.2f ms, exchange %.2f ms'):format(tr.comm_MB,
               tr.density, tr.select_ms, tr.exchange_ms))
         end
      end or nil }
   trainer.schedule = schedule(opt, trainer.trainBatches)
   if compressing then model.compressor:schedule(math.floor(opt.densityWarmup * trainer.trainBatches)) end
   -- per-layer trust ratios; BN and bias (1-D) parameters take plain steps without weight decay
   if opt.optimizer == 'lars' or opt.optimizer == 'lamb' then
      config.layers, config.lars_exclude = optim.layerSegments(model, trainer.params)
      if not (opt.eta > 0) then -- luacheck: ignore 581 (rejects NaN)
         error(('fashion_mnist: -eta must be > 0, got %s'):format(opt.eta), 0)
      end
      if opt.optimizer == 'lars' then config.eta = opt.eta end
   end
   if opt.resume ~= '' then
      trainer:resume(opt.resume, function(meta, path)
         local mismatch = precision.fuseMismatch(meta, opt)
         if mismatch then error(path .. ': ' .. mismatch, 0) end
      end)
      -- the warm-up goes on from there; residuals are per rank and start empty (not checkpointed)
      if compressing then
         model.compressor:schedule(model.compressor.o.warmupSteps,
            (trainer.startEpoch - 1) * trainer.trainBatches + trainer.firstBatch - 1)
      end
   end

   local last = trainer:fit()
   local acc = last.top1 or trainer:validate(trainer.startEpoch).top1 -- nothing left to train
   if not dist or rank == 0 then print(('final test accuracy: %.2f%%'):format(100 * acc)) end
   if dist then dist.finalize() end
   return acc, model, trainer
end

if modname ~= 'recipes.fashion_mnist' then -- run as a script, not required as a module
   local ok, err = xpcall(M.main, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, arg)
   if not ok then
      -- with -dist, tell the other ranks (they stop at once, naming this one)
      if package.loaded['moontorch.dist'] then package.loaded['moontorch.dist'].fail(tostring(err):match('^[^\n]*')) end
      io.stderr:write('fashion_mnist: ', tostring(err):gsub('^fashion_mnist: ', ''), '\n')
      os.exit(1)
   end
end
return M
