-- imagenet/opts.lua: the command line of recipes/resnet50_imagenet.lua, its checks, and what to
-- print when no data is given.
local torch = require 'moontorch'
local options = require 'moontorch.util.options'
local cores = require('moontorch.data.loader').cores

local M = {}
M.NAME = 'resnet50_imagenet'

local function fail(fmt, ...) error(M.NAME .. ': ' .. fmt:format(...), 0) end
M.fail = fail

function M.cuda_available()
   return torch.cuda ~= nil and torch.cuda.isAvailable ~= nil and torch.cuda.isAvailable()
end

M.spec = {
   { 'data', '', 'DIR with train/ and val/: ImageFolders, or shards (train/*.mts + train/classes.txt, same for val)' },
   { 'synthetic', false, 'random images and labels made on the device, no loader (throughput)' },
   { 'depth', 50, 'ResNet depth: 18 | 34 | 50 | 101 | 152', choices = { 18, 34, 50, 101, 152 } },
   { 'batchSize', 256, 'mini-batch size' },
   { 'nEpochs', 90, 'number of epochs' },
   { 'LR', 0.1, 'learning rate per 256 images: the rate used is LR * batchSize / 256 (linear scaling)' },
   { 'momentum', 0.9, 'momentum (sgd, lars)' },
   { 'nesterov', true, 'Nesterov momentum (sgd), as fb.resnet.torch' },
   { 'weightDecay', 1e-4, 'weight decay' },
   { 'optimizer', 'sgd', 'sgd | lars | lamb', choices = { 'sgd', 'lars', 'lamb' } },
   { 'lrSchedule', 'step', 'step: /10 every 30 epochs | cosine | poly: (1 - t/T)^polyPower after the warm-up',
      choices = { 'step', 'cosine', 'poly' } },
   { 'polyPower', 2, 'power of the poly schedule (2: Jia et al. 2018)' },
   { 'eta', 0.001, 'LARS trust coefficient: layer rate eta*||w||/(||g|| + wd*||w||) (LAMB has none)' },
   { 'warmupEpochs', 0, 'epochs of linear warm-up to the scaled LR' },
   { 'labelSmoothing', 0, 'label smoothing of the cross-entropy' },
   { 'ghostBatch', 0, 'batch norm statistics over ghost batches of about this many samples per process '
      .. '(Hoffer et al. 2017; 0: the whole batch)' },
   { 'zeroInitResidual', false, 'start the last BN of each residual block at 0 (blocks start as identities)' },
   { 'cropSize', 224, 'training crop and validation centre crop (validation resizes to cropSize*256/224 first)' },
   { 'device', M.cuda_available() and 'cuda' or 'cpu', 'cpu | cuda (default: cuda when a GPU is available)',
      choices = { 'cpu', 'cuda' } },
   { 'threads', 0,
      'trainer CPU threads (0: 1 with cuda, half the cores on cpu); with -dist, for the ranks of a host together' },
   { 'nThreads', 0,
      'image decoding threads (0: the cores the trainer does not use); with -dist, for the ranks of a host together' },
   { 'cache', 'auto', 'keep the encoded images in memory: auto (when they fit -cacheBudget) | on | off',
      choices = { 'auto', 'on', 'off' } },
   { 'cacheBudget', 0, 'GB of memory the cache may use, per rank with -dist (0: half of the available memory, '
      .. 'shared by the ranks of a host; with -cache on: no limit)' },
   { 'seed', 1, 'random seed (initialisation, data order, augmentation)' },
   { 'save', 'runs/resnet50_imagenet',
      'directory for checkpoint.safetensors, log.csv, plot.svg and TensorBoard events ("" for none)' },
   { 'resume', '', 'checkpoint (or its directory) to continue from, at an epoch end or mid-epoch' },
   { 'checkpointEvery', 0,
      'also checkpoint every N training batches, for an exact resume mid-epoch (0: epoch ends only)' },
   { 'limitBatches', 0, 'at most this many batches per epoch, in training and in validation (0: all)' },
   { 'stopAfter', 0, 'stop after this epoch, as if interrupted (0: run all nEpochs)' },
   { 'stopAfterIter', 0, 'stop after this many training iterations in all, as if interrupted (0: no limit)' },
   { 'quiet', false, 'no progress bars' },
   { 'dist', false, 'data-parallel over the ranks of mpirun (moontorch.dist); -batchSize is global' },
   { 'allreduce', 'auto', 'allreduce algorithm with -dist',
      choices = require('moontorch.dist').algorithms() },
   { 'bucketMB', 25, 'gradient bucket size in MB with -dist' },
   { 'timeout', 300, 'seconds a rank waits for the others before failing, with -dist' },
}
-- -precision fp32|tf32|fp16|bf16|fp64, -lossScale, -scaleWindow, -clip, -accumulate, -layout nchw|nhwc
-- (moontorch.train.precision)
local precision = require 'moontorch.train.precision'
for _, row in ipairs(precision.recipeOptions()) do M.spec[#M.spec + 1] = row end
-- -compress rgc and its flags (moontorch.dist.rgcflags), a four-epoch density warm-up by default as in DGC
for _, row in ipairs(require('moontorch.dist.rgcflags').recipeOptions(4)) do M.spec[#M.spec + 1] = row end

M.instructions = [[
resnet50_imagenet: no data given. Point -data at ImageNet, or pass -synthetic to measure
throughput on random images.

Getting ImageNet (ILSVRC2012, about 150 GB):
  1. Register at https://image-net.org (Download page), accept the terms of access and
     download ILSVRC2012_img_train.tar (138 GB) and ILSVRC2012_img_val.tar (6.3 GB).
  2. Training images: one tar per class inside the big tar.
       mkdir -p DIR/train && tar -xf ILSVRC2012_img_train.tar -C DIR/train
       cd DIR/train && for f in n*.tar; do mkdir -p "${f%.tar}" && tar -xf "$f" -C "${f%.tar}" && rm "$f"; done
  3. Validation images: 50,000 JPEGs in one folder; move them into one folder per class (the
     same wnid names as train/), e.g. with valprep.sh from
     https://github.com/soumith/imagenetloader.torch :
       mkdir -p DIR/val && tar -xf ILSVRC2012_img_val.tar -C DIR/val && cd DIR/val && bash valprep.sh
  4. Optional, for fewer and larger reads: pack both splits into shards (checked by CRC-32),
       luajit recipes/tools/pack.lua DIR PACKED     (PACKED/{train,val}/*.mts + classes.txt)
     and pass -data PACKED.

Then run:  luajit recipes/resnet50_imagenet.lua -data DIR   (-h lists the options)
]]

-- the options of args, checked, with the derived ones (thread counts, lr) filled in; nil and
-- the options as given when there is no data to train on
function M.parse(args)
   local opt = options.parse(args or {}, M.spec,
      M.NAME .. '.lua: train a ResNet on ImageNet (fb.resnet.torch\'s recipe)\nOptions:')
   if opt.data == '' and not opt.synthetic then return nil, opt end
   local function int(name, min)
      local v = opt[name]
      if v ~= math.floor(v) or v < min then fail('-%s must be an integer >= %d, got %s', name, min, tostring(v)) end
   end
   int('batchSize', 1); int('nEpochs', 1); int('cropSize', 16); int('threads', 0); int('nThreads', 0)
   int('limitBatches', 0); int('stopAfter', 0); int('stopAfterIter', 0); int('checkpointEvery', 0); int('seed', 0)
   -- luacheck: push ignore 581 (these not (x > y) checks reject NaN too, where x <= y would let it through)
   if not (opt.LR > 0) then fail('-LR must be > 0, got %s', tostring(opt.LR)) end
   if not (opt.momentum >= 0 and opt.momentum < 1) then
      fail('-momentum must be in [0, 1), got %s', tostring(opt.momentum))
   end
   if not (opt.polyPower >= 0) then fail('-polyPower must be >= 0, got %s', tostring(opt.polyPower)) end
   if not (opt.eta > 0) then fail('-eta must be > 0, got %s', tostring(opt.eta)) end
   if not (opt.weightDecay >= 0) then fail('-weightDecay must be >= 0, got %s', tostring(opt.weightDecay)) end
   if not (opt.warmupEpochs >= 0 and opt.warmupEpochs < opt.nEpochs) then
      fail('-warmupEpochs must be in [0, nEpochs = %d), got %s', opt.nEpochs, tostring(opt.warmupEpochs))
   end
   if not (opt.labelSmoothing >= 0 and opt.labelSmoothing < 1) then
      fail('-labelSmoothing must be in [0, 1), got %s', tostring(opt.labelSmoothing))
   end
   if not (opt.ghostBatch >= 0 and opt.ghostBatch == math.floor(opt.ghostBatch)) then
      fail('-ghostBatch must be a non-negative integer, got %s', tostring(opt.ghostBatch))
   end
   if not (opt.cacheBudget >= 0) then fail('-cacheBudget must be >= 0 GB, got %s', tostring(opt.cacheBudget)) end
   if opt.device == 'cuda' and not M.cuda_available() then
      fail('-device cuda but %s', (torch.cuda and torch.cuda.isCompiled and torch.cuda.isCompiled())
         and 'no CUDA device is available' or 'this build of moontorch has no CUDA support')
   end
   if opt.synthetic and opt.data ~= '' then fail('-synthetic and -data exclude each other') end
   if not (opt.bucketMB > 0) then fail('-bucketMB must be > 0, got %s', tostring(opt.bucketMB)) end
   if not (opt.timeout > 0) then fail('-timeout must be > 0 seconds, got %s', tostring(opt.timeout)) end
   -- luacheck: pop
   local problem = require('moontorch.dist.rgcflags').recipeProblem(opt) or precision.problem(opt)
   if problem then fail('%s', problem) end
   local n = cores()
   if opt.threads == 0 then opt.threads = opt.device == 'cuda' and 1 or math.max(1, math.ceil(n / 2)) end
   if opt.nThreads == 0 then opt.nThreads = math.max(1, n - opt.threads) end
   opt.lr = opt.LR * opt.batchSize / 256 -- of the global batch with -dist
   opt.rank, opt.world, opt.localBatch = 0, 1, opt.batchSize
   return opt
end

-- With -dist: join the ranks, check that they can share -batchSize, and give each rank its
-- share of its host's cores (the thread counts above are for a whole machine) and its GPU.
-- Fills in opt.rank, opt.world and opt.localBatch (this rank's slice of every batch); returns
-- the moontorch.dist module, nil without -dist.
function M.distribute(opt)
   if not opt.dist then return nil end
   local dist = require 'moontorch.dist'
   -- the cost table is measured (once per cluster shape) only for -allreduce auto to consult
   local costs
   if opt.allreduce ~= 'auto' then costs = false end
   dist.init{ timeout = opt.timeout, algorithm = opt.allreduce, model = costs }
   opt.rank, opt.world = dist.rank(), dist.size()
   if opt.batchSize % opt.world ~= 0 then
      fail('-batchSize %d is not a multiple of the %d ranks (-batchSize is the global batch with -dist)',
         opt.batchSize, opt.world)
   end
   opt.localBatch = opt.batchSize / opt.world
   local here = dist.localSize()
   opt.threads = math.max(1, math.floor(opt.threads / here))
   opt.nThreads = math.max(1, math.floor(opt.nThreads / here))
   -- one GPU per rank of a host (shared round-robin when there are fewer GPUs than ranks)
   if opt.device == 'cuda' then torch.cuda.setDevice(dist.localRank() % torch.cuda.deviceCount() + 1) end
   return dist
end

return M
