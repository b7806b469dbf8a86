-- imagenet/opts.lua: the command line of recipes/resnet50_imagenet.lua, one block per group,
-- and what to print when no data is given. The groups both recipes have (large-batch rows,
-- precision, distributed, compression, checkpoints) come from moontorch.train.flags;
-- torch.CmdLine checks every range and choice.
local torch = require 'moontorch'
local flags = require 'moontorch.train.flags'
local cores = require('moontorch.data.loader').cores
local int = flags.int

local M = {}
M.NAME = 'resnet50_imagenet'

local function fail(fmt, ...) error(M.NAME .. ': ' .. fmt:format(...), 0) end
M.fail = fail

local function cuda_available()
   return torch.cuda ~= nil and torch.cuda.isAvailable ~= nil and torch.cuda.isAvailable()
end

function M.cmdline()
   local cmd = torch.CmdLine()
   cmd.name = M.NAME
   cmd:text(M.NAME .. '.lua: train a ResNet on ImageNet (fb.resnet.torch\'s recipe)')
   flags.group(cmd, 'Data')
   cmd:option('-data', '', 'DIR with train/ and val/: ImageFolders, or shards (train/*.mts + train/classes.txt, '
      .. 'same for val)')
   cmd:option('-synthetic', false, 'random images and labels made on the device, no loader (throughput)')
   cmd:option('-batchSize', 256, 'mini-batch size', int '[1, inf)')
   cmd:option('-cropSize', 224, 'training crop and validation centre crop (validation resizes to cropSize*256/224 '
      .. 'first)', int '[16, inf)')
   cmd:option('-nThreads', 0, 'image decoding threads (0: the cores the trainer does not use); with -dist, for the '
      .. 'ranks of a host together', int '[0, inf)')
   cmd:option('-cache', 'auto', 'keep the encoded images in memory: auto (when they fit -cacheBudget) | on | off',
      { choices = { 'auto', 'on', 'off' } })
   cmd:option('-cacheBudget', 0, 'GB of memory the cache may use, per rank with -dist (0: half of the available '
      .. 'memory, shared by the ranks of a host; with -cache on: no limit)', { range = '[0, inf)' })
   cmd:option('-limitBatches', 0, 'at most this many batches per epoch, in training and in validation (0: all)',
      int '[0, inf)')
   flags.group(cmd, 'Model')
   cmd:option('-depth', 50, 'ResNet depth: 18 | 34 | 50 | 101 | 152', { choices = { 18, 34, 50, 101, 152 } })
   cmd:option('-zeroInitResidual', false, 'start the last BN of each residual block at 0 (blocks start as '
      .. 'identities)')
   flags.group(cmd, 'Optimization')
   cmd:option('-nEpochs', 90, 'number of epochs', int '[1, inf)')
   cmd:option('-LR', 0.1, 'learning rate per 256 images: the rate used is LR * batchSize / 256 (linear scaling)',
      { range = '(0, inf)' })
   cmd:option('-lrSchedule', 'step', 'step: /10 every 30 epochs | cosine | poly: (1 - t/T)^polyPower after the '
      .. 'warm-up', { choices = { 'step', 'cosine', 'poly' } })
   cmd:option('-warmupEpochs', 0, 'epochs of linear warm-up to the scaled LR', { range = '[0, nEpochs)' })
   cmd:option('-optimizer', 'sgd', 'sgd | lars | lamb', { choices = { 'sgd', 'lars', 'lamb' } })
   cmd:option('-momentum', 0.9, 'momentum (sgd, lars)', { range = '[0, 1)' })
   cmd:option('-nesterov', true, 'Nesterov momentum (sgd), as fb.resnet.torch')
   cmd:option('-weightDecay', 1e-4, 'weight decay', { range = '[0, inf)' })
   cmd:option('-labelSmoothing', 0, 'label smoothing of the cross-entropy', { range = '[0, 1)' })
   flags.largeBatch(cmd)
   flags.group(cmd, 'Run')
   cmd:option('-device', cuda_available() and 'cuda' or 'cpu', 'cpu | cuda (default: cuda when a GPU is available)',
      { choices = { 'cpu', 'cuda' } })
   cmd:option('-threads', 0, 'trainer CPU threads (0: 1 with cuda, half the cores on cpu); with -dist, for the '
      .. 'ranks of a host together', int '[0, inf)')
   cmd:option('-seed', 1, 'random seed (initialisation, data order, augmentation)', int '[0, inf)')
   cmd:option('-quiet', false, 'no progress bars')
   flags.precision(cmd)
   flags.distributed(cmd)
   flags.compression(cmd, 4) -- a four-epoch density warm-up, as in DGC
   flags.checkpoints(cmd, 'runs/resnet50_imagenet')
   return cmd
end

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
-- the options when there is no data to train on
function M.parse(args)
   local opt = flags.check(M.cmdline():parse(args or {}))
   if opt.data == '' and not opt.synthetic then return nil, opt end
   if opt.synthetic and opt.data ~= '' then fail('-synthetic and -data exclude each other') end
   local n = cores()
   if opt.threads == 0 then opt.threads = opt.device == 'cuda' and 1 or math.max(1, math.ceil(n / 2)) end
   if opt.nThreads == 0 then opt.nThreads = math.max(1, n - opt.threads) end
   opt.lr = opt.LR * opt.batchSize / 256 -- of the global batch with -dist
   return opt
end

-- Without data: the instructions on stderr (with -dist from rank 0 alone); the exit status, 1.
function M.explain(opt)
   local dist = opt.dist and require('moontorch.dist').init{ timeout = opt.timeout, model = false }
   if not dist or dist.rank() == 0 then io.stderr:write(M.instructions) end
   if dist then dist.finalize() end
   return 1
end

return M
