-- resnet50_imagenet.lua: ResNet-18/34/50/101/152 on ImageNet (ILSVRC2012) as fb.resnet.torch
-- trains them: SGD with Nesterov momentum 0.9, weight decay 1e-4, LR 0.1 per 256 images divided
-- by 10 every 30 epochs, 90 epochs, random-resized crops with flips, colour jitter and PCA
-- lighting; validation on centre crops (top-1 and top-5).
--   luajit recipes/resnet50_imagenet.lua -data /data/imagenet [-depth 50] [-batchSize 256]
--         [-device cuda] [-save runs/resnet50_imagenet] [-resume runs/resnet50_imagenet]
--   luajit recipes/resnet50_imagenet.lua -synthetic -limitBatches 50    (throughput only)
-- (`-h` lists every option.) -data DIR holds train/ and val/ as ImageFolders (one sub-folder
-- of images per class), or packed shards (train/*.mts, val/*.mts and classes.txt).
--
-- Each epoch writes log.csv, plot.svg, a TensorBoard event file and checkpoint.safetensors
-- (atomically) into -save. Reproducibility: the loader draws epoch e's order and augmentation
-- from (seed, e) only, and synthetic batches come from a generator seeded by (seed, e), so
-- `-resume` after epoch e gives the numbers of the uninterrupted run (same thread counts).
local modname = ...
local script_dir = (arg and arg[0] or ''):match('^(.*)/recipes/[^/]*$') or '.'
package.path = script_dir .. '/lua/?.lua;' .. script_dir .. '/lua/?/init.lua;' .. script_dir .. '/?.lua;' ..
   script_dir .. '/?/init.lua;' .. package.path

local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local checkpoint = require 'moontorch.checkpoint'
local options = require 'moontorch.util.options'
local progress = require 'moontorch.util.progress'
local logger = require 'moontorch.util.logger'
local plot = require 'moontorch.util.plot'
local models = require 'recipes.models'

local NAME = 'resnet50_imagenet'
-- ILSVRC2012's sizes, for the synthetic epochs
local IMAGENET_TRAIN, IMAGENET_VAL, IMAGENET_CLASSES = 1281167, 50000, 1000

local cores = require('moontorch.data.loader').cores

local function cuda_available()
   return torch.cuda ~= nil and torch.cuda.isAvailable ~= nil and torch.cuda.isAvailable()
end

local spec = {
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
   { 'lrSchedule', 'step', 'step: /10 every 30 epochs | cosine | poly: (1 - t/T)^2', choices = { 'step', 'cosine', 'poly' } },
   { 'warmupEpochs', 0, 'epochs of linear warm-up to the scaled LR' },
   { 'labelSmoothing', 0, 'label smoothing of the cross-entropy' },
   { 'zeroInitResidual', false, 'start the last BN of each residual block at 0 (blocks start as identities)' },
   { 'cropSize', 224, 'training crop and validation centre crop (validation resizes to cropSize*256/224 first)' },
   { 'device', cuda_available() and 'cuda' or 'cpu', 'cpu | cuda (default: cuda when a GPU is available)', choices = { 'cpu', 'cuda' } },
   { 'threads', 0, 'trainer CPU threads (0: 1 with cuda, half the cores on cpu)' },
   { 'nThreads', 0, 'image decoding threads (0: the cores the trainer does not use)' },
   { 'cache', 'auto', 'keep the encoded images in memory: auto (when they fit -cacheBudget) | on | off',
      choices = { 'auto', 'on', 'off' } },
   { 'cacheBudget', 0, 'GB of memory the cache may use (0: half of the available memory; with -cache on: no limit)' },
   { 'seed', 1, 'random seed (initialisation, data order, augmentation)' },
   { 'save', 'runs/resnet50_imagenet', 'directory for checkpoint.safetensors, log.csv, plot.svg and TensorBoard events ("" for none)' },
   { 'resume', '', 'checkpoint (or its directory) to continue from' },
   { 'limitBatches', 0, 'at most this many batches per epoch, in training and in validation (0: all)' },
   { 'stopAfter', 0, 'stop after this epoch, as if interrupted (0: run all nEpochs)' },
   { 'quiet', false, 'no progress bars' },
}

local M = {}

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

local function fail(fmt, ...) error(NAME .. ': ' .. fmt:format(...), 0) end

----------------------------------------------------------------------------------------------
-- options

local function check_options(opt)
   local function int(name, min)
      local v = opt[name]
      if v ~= math.floor(v) or v < min then fail('-%s must be an integer >= %d, got %s', name, min, tostring(v)) end
   end
   int('batchSize', 1); int('nEpochs', 1); int('cropSize', 16); int('threads', 0); int('nThreads', 0)
   int('limitBatches', 0); int('stopAfter', 0); int('seed', 0)
   if not (opt.LR > 0) then fail('-LR must be > 0, got %s', tostring(opt.LR)) end
   if not (opt.momentum >= 0 and opt.momentum < 1) then fail('-momentum must be in [0, 1), got %s', tostring(opt.momentum)) end
   if not (opt.weightDecay >= 0) then fail('-weightDecay must be >= 0, got %s', tostring(opt.weightDecay)) end
   if not (opt.warmupEpochs >= 0 and opt.warmupEpochs < opt.nEpochs) then
      fail('-warmupEpochs must be in [0, nEpochs = %d), got %s', opt.nEpochs, tostring(opt.warmupEpochs))
   end
   if not (opt.labelSmoothing >= 0 and opt.labelSmoothing < 1) then
      fail('-labelSmoothing must be in [0, 1), got %s', tostring(opt.labelSmoothing))
   end
   if not (opt.cacheBudget >= 0) then fail('-cacheBudget must be >= 0 GB, got %s', tostring(opt.cacheBudget)) end
   if opt.device == 'cuda' and not cuda_available() then
      fail('-device cuda but %s', (torch.cuda and torch.cuda.isCompiled and torch.cuda.isCompiled())
         and 'no CUDA device is available' or 'this build of moontorch has no CUDA support')
   end
   if opt.synthetic and opt.data ~= '' then fail('-synthetic and -data exclude each other') end
   local n = cores()
   if opt.threads == 0 then opt.threads = opt.device == 'cuda' and 1 or math.max(1, math.ceil(n / 2)) end
   if opt.nThreads == 0 then opt.nThreads = math.max(1, n - opt.threads) end
   opt.lr = opt.LR * opt.batchSize / 256
end

----------------------------------------------------------------------------------------------
-- data

local function is_dir(path)
   local f = io.open(path, 'rb')
   if not f then return false end
   local _, _, code = f:read(1)
   f:close()
   return code == 21 -- EISDIR: opening works, reading says it is a directory
end

local function is_file(path)
   local f = io.open(path, 'rb')
   if not f then return false end
   local _, _, code = f:read(1)
   f:close()
   return code ~= 21
end

-- MemAvailable of /proc/meminfo in bytes (nil when unknown)
local function available_memory()
   local f = io.open('/proc/meminfo', 'r')
   if not f then return nil end
   local s = f:read('*a')
   f:close()
   local kb = tonumber(s:match('MemAvailable:%s*(%d+)'))
   return kb and kb * 1024
end

-- the train and val datasets of -data, and which layout they are in
function M.open_data(dir)
   local data = require 'moontorch.data'
   if not is_dir(dir) then fail('-data %s: no such directory (expected train/ and val/ inside)', dir) end
   for _, split in ipairs({ 'train', 'val' }) do
      if not is_dir(dir .. '/' .. split) then
         fail('-data %s: no %s/ folder (expected train/ and val/, as ImageFolders or packed shards; run without -data for how to get ImageNet)', dir, split)
      end
   end
   -- recipes/tools/pack.lua writes DIR/<split>/classes.txt beside the split's shards
   local shards = is_file(dir .. '/train/classes.txt')
   local make = shards and data.Shards or data.ImageFolder
   local function open(split)
      local ok, ds = pcall(make, dir .. '/' .. split)
      if ok then return ds end
      fail('-data %s: %s%s', dir, tostring(ds), split == 'val' and not shards and
         ' (the val tar unpacks flat: sort it into one folder per class with valprep.sh, see the instructions printed without -data)' or '')
   end
   local train, val = open('train'), open('val')
   local tc, vc = train:classes(), val:classes()
   if #tc == 0 then fail('-data %s/train: no classes found', dir) end
   if #tc ~= #vc then
      fail('-data %s: train/ has %d classes but val/ has %d (is val/ sorted into one folder per class? see valprep.sh in the instructions printed without -data)',
         dir, #tc, #vc)
   end
   for i = 1, #tc do
      if tc[i] ~= vc[i] then fail('-data %s: class %d is %s in train/ but %s in val/', dir, i, tc[i], vc[i]) end
   end
   return train, val, shards and 'shards' or 'folders'
end

local function human(bytes)
   if bytes >= 2 ^ 30 then return ('%.2f GB'):format(bytes / 2 ^ 30) end
   return ('%.1f MB'):format(bytes / 2 ^ 20)
end

-- cache a dataset's encoded bytes in memory per -cache; returns the budget left (bytes)
local function setup_cache(ds, split, opt, budget, say)
   if opt.cache == 'off' then return budget end
   local need = ds:partitionBytes(0, 1, false)
   if opt.cache == 'auto' and need > budget then
      say(('not caching %s: its %s exceed the %s left of the cache budget (-cacheBudget); streaming from disk'):format(
         split, human(need), human(budget)))
      return budget
   end
   local ok, err = pcall(ds.cache, ds, { rank = 0, world = 1, replicated = false,
      budget = budget == math.huge and 0 or budget, threads = opt.nThreads })
   if not ok then
      if opt.cache == 'on' then fail('-cache on: %s', tostring(err)) end
      say(('not caching %s (%s); streaming from disk'):format(split, tostring(err)))
      return budget
   end
   local st = ds:cacheStats()
   say(('cached %s: %d images, %s in %.1f s'):format(split, st.samples, human(st.bytes), st.seconds))
   return budget - st.bytes
end

-- Synthetic batches with the loader's interface: images N(0, 1) and uniform labels drawn on
-- the device from a generator seeded by (seed, epoch).
local Synthetic = {}
Synthetic.__index = Synthetic

function M.Synthetic(n, batchSize, cropSize, nClasses, device, seed, dropLast)
   local self = setmetatable({ n = n, bs = batchSize, nClasses = nClasses, seed = seed }, Synthetic)
   self.nb = dropLast and math.floor(n / batchSize) or math.ceil(n / batchSize)
   self.x = torch.FloatTensor(batchSize, 3, cropSize, cropSize)
   self.y = torch.LongTensor(batchSize)
   if device == 'cuda' then self.x, self.y = self.x:cuda(), self.y:cuda() end
   return self
end

function Synthetic:nbatches() return self.nb end

function Synthetic:run(epoch, first)
   torch.manualSeed(self.seed * 1000003 + epoch)
   local b = (first or 1) - 1
   return function()
      b = b + 1
      if b > self.nb then return nil end
      local count = math.min(self.bs, self.n - (b - 1) * self.bs)
      local x, y = self.x:narrow(1, 1, count), self.y:narrow(1, 1, count)
      x:normal()
      y:random(1, self.nClasses)
      return x, y, { epoch = epoch, index = b, nbatches = self.nb, count = count, skipped = 0, wait = 0 }
   end
end

function Synthetic:errors() return {} end
function Synthetic:free() end

----------------------------------------------------------------------------------------------
-- model, schedule, accuracy

function M.build_model(depth, nClasses, zeroInitResidual)
   local model = models.resnet{ depth = depth, nClasses = nClasses, zeroInitLastBN = zeroInitResidual }
   -- fb.resnet.torch pools 7x7, which is global at 224; pooling globally is the same there and
   -- lets any -cropSize through
   for i, m in ipairs(model.modules) do
      if torch.type(m) == 'nn.SpatialAveragePooling' then model.modules[i] = nn.SpatialGlobalAveragePooling() end
   end
   return model
end

-- the learning rate of iteration t (from 0)
function M.make_schedule(opt, itersPerEpoch)
   local S = optim.schedule
   local total = math.max(opt.nEpochs * itersPerEpoch, 1)
   local warm = math.floor(opt.warmupEpochs * itersPerEpoch + 0.5)
   local base
   if opt.lrSchedule == 'step' then
      -- /10 at epochs 31, 61, ... counted from the start of training (warm-up included), as
      -- fb.resnet.torch and Goyal et al.
      local step = S.step(opt.lr, 30 * itersPerEpoch, 0.1)
      base = function(t) return step(t + warm) end
   elseif opt.lrSchedule == 'cosine' then base = S.cosine(opt.lr, math.max(total - warm, 1))
   else base = S.polynomial(opt.lr, math.max(total - warm, 1), 2) end
   return warm > 0 and S.warmup(warm, base) or base
end

-- numbers of rows whose target is among the k highest scores, for each k of ks (ascending)
function M.count_topk(scores, target, ks)
   local kmax = math.min(ks[#ks], scores:size(2))
   local _, idx = scores:topk(kmax, 2, true, true)
   local hit = idx:eq(target:view(-1, 1):expandAs(idx)):long()
   local out = {}
   for i, k in ipairs(ks) do out[i] = hit:narrow(2, 1, math.min(k, kmax)):sum() end
   return out
end

----------------------------------------------------------------------------------------------
-- checkpoints: parameters and BN statistics by module, optimizer state, progress

local function state_tensors(model)
   local out = {}
   for i, m in ipairs(model:listModules()) do
      for _, field in ipairs({ 'weight', 'bias', 'running_mean', 'running_var' }) do
         if torch.isTensor(m[field]) and m[field]:nElement() > 0 then out[('%d.%s'):format(i, field)] = m[field] end
      end
   end
   return out
end

local function save_checkpoint(path, model, optimState, meta)
   local tensors = {}
   for k, t in pairs(state_tensors(model)) do tensors[k] = t:cpu() end
   local ts, values = optim.stateToCheckpoint(optimState, 'optim.')
   for k, t in pairs(ts) do tensors[k] = t:cpu() end
   meta.optim = values
   checkpoint.save(path, tensors, meta)
end

local function load_checkpoint(path, model, opt)
   if not is_file(path) then fail('-resume %s: no such checkpoint', path) end
   local tensors, meta = checkpoint.load(path)
   meta = meta or {}
   if meta.format ~= 'moontorch resnet_imagenet 1' then
      fail('-resume %s: not a checkpoint of this recipe (format %s)', path, tostring(meta.format))
   end
   if tonumber(meta.depth) ~= opt.depth then
      fail('-resume %s: the checkpoint is a ResNet-%s, this run asks for -depth %d', path, tostring(meta.depth), opt.depth)
   end
   if meta.optimizer ~= opt.optimizer then
      fail('-resume %s: the checkpoint was trained with -optimizer %s, not %s', path, tostring(meta.optimizer), opt.optimizer)
   end
   for name, t in pairs(state_tensors(model)) do
      local src = tensors[name]
      if not src then fail('-resume %s: no tensor %s for this model', path, name) end
      if src:nElement() ~= t:nElement() then
         fail('-resume %s: tensor %s has %d elements, the model expects %d (another number of classes?)', path, name,
            src:nElement(), t:nElement())
      end
      t:copy(src:contiguous():view(t:size())) -- copy converts dtype and device
   end
   local state = optim.stateFromCheckpoint(tensors, meta.optim, 'optim.')
   if opt.device == 'cuda' then
      for k, v in pairs(state) do if torch.isTensor(v) then state[k] = v:cuda() end end
   end
   return state, meta
end

----------------------------------------------------------------------------------------------
-- training

-- a progress bar whose line also shows the mean time per batch spent waiting for data
local function new_bar(n, title, opt)
   local bar = progress.new(n, { title = title, tty = (not opt.quiet) and nil or false, silent = opt.quiet })
   bar.wait = 0
   bar.line = function(self, i)
      local s = progress.line(self, i)
      if self.showWait and i > 0 then s = s .. ('  data %.1f ms'):format(1000 * self.wait / i) end
      return s
   end
   return bar
end

local function to_device(x, y, buf, device)
   if device ~= 'cuda' or x:device() ~= -1 then return x, y end
   buf.x = buf.x or torch.CudaTensor()
   buf.y = buf.y or torch.CudaLongTensor()
   buf.x:resize(x:size()):copy(x)
   buf.y:resize(y:size()):copy(y)
   return buf.x, buf.y
end

-- one optimizer step on a batch; returns its loss and number of correct top-1 predictions
local function train_step(ctx, x, y)
   local model, criterion = ctx.model, ctx.criterion
   local loss, correct
   local function feval()
      ctx.gradParams:zero()
      local out = model:forward(x)
      loss = criterion:forward(out, y)
      model:backward(x, criterion:backward(out, y))
      correct = M.count_topk(out, y, { 1 })[1]
      return loss, ctx.gradParams
   end
   ctx.optfn(feval, ctx.params, ctx.config, ctx.optimState)
   return loss, correct
end

-- one training epoch; returns its statistics
local function train_epoch(ctx, epoch)
   local opt = ctx.opt
   local nb = ctx.trainBatches
   local bar = new_bar(nb, ('epoch %d/%d'):format(epoch, opt.nEpochs), opt)
   bar.showWait = not opt.synthetic
   ctx.model:training()
   local lossSum, top1, seen, skipped, lr = 0, 0, 0, 0, ctx.schedule((epoch - 1) * nb)
   local b = 0
   for input, target, info in ctx.train:run(epoch) do
      b = b + 1
      lr = ctx.schedule((epoch - 1) * nb + (b - 1))
      local count = info.count
      skipped = skipped + (info.skipped or 0)
      bar.wait = bar.wait + (info.wait or 0)
      if count > 0 then -- (0 when every image of the batch was undecodable)
         ctx.config.learningRate = lr
         local loss, correct = train_step(ctx, to_device(input, target, ctx.buf, opt.device))
         if loss ~= loss then fail('the loss became NaN at epoch %d batch %d (lr %g)', epoch, b, lr) end
         lossSum, top1, seen = lossSum + loss * count, top1 + correct, seen + count
         bar:update(b, { loss = loss, acc = correct / count, images = count })
      end
      if b >= nb then break end
   end
   if seen == 0 then fail('epoch %d delivered no training image', epoch) end
   local st = opt.quiet and bar:stats() or bar:finish()
   return { loss = lossSum / seen, top1 = top1 / seen, lr = lr, seconds = st.seconds,
      images_per_sec = st.images_per_sec, wait_ms = 1000 * bar.wait / b, skipped = skipped }
end

local function validate(ctx, epoch)
   local opt, model, criterion = ctx.opt, ctx.model, ctx.criterion
   local nb = ctx.valBatches
   local bar = new_bar(nb, '  validation', opt)
   model:evaluate()
   local lossSum, top1, top5, seen, b = 0, 0, 0, 0, 0
   for input, target, info in ctx.val:run(epoch) do
      b = b + 1
      if info.count > 0 then
         local x, y = to_device(input, target, ctx.buf, opt.device)
         local out = model:forward(x)
         local loss = criterion:forward(out, y)
         local c = M.count_topk(out, y, { 1, 5 })
         lossSum, top1, top5, seen = lossSum + loss * info.count, top1 + c[1], top5 + c[2], seen + info.count
         bar:update(b, { loss = loss, acc = c[1] / info.count, images = info.count })
      end
      if b >= nb then break end
   end
   if not opt.quiet then bar:finish() end
   model:training()
   if seen == 0 then return { loss = 0 / 0, top1 = 0 / 0, top5 = 0 / 0 } end
   return { loss = lossSum / seen, top1 = top1 / seen, top5 = top5 / seen }
end

-- name each undecodable image once (the loader skips it again every epoch)
local function report_skipped(loader, split, seen)
   local new = {}
   for _, e in ipairs(loader:errors()) do
      if not seen[e] then seen[e] = true new[#new + 1] = e end
   end
   for i = 1, math.min(#new, 5) do io.stderr:write(NAME, ': skipped ', split, ' image: ', new[i], '\n') end
   if #new > 5 then io.stderr:write(('%s: ... and %d more skipped %s images\n'):format(NAME, #new - 5, split)) end
end

----------------------------------------------------------------------------------------------
-- main

function M.main(args)
   local opt = options.parse(args or {}, spec, NAME .. '.lua: train a ResNet on ImageNet (fb.resnet.torch\'s recipe)\nOptions:')
   if opt.data == '' and not opt.synthetic then
      io.stderr:write(M.instructions)
      return nil, nil, 1 -- the exit status
   end
   check_options(opt)
   io.stdout:setvbuf('line')
   local function say(s) print(s) end
   torch.setnumthreads(opt.threads)

   -- data
   local trainSrc, valSrc, nClasses
   if opt.synthetic then
      nClasses = IMAGENET_CLASSES
      trainSrc = M.Synthetic(IMAGENET_TRAIN, opt.batchSize, opt.cropSize, nClasses, opt.device, opt.seed, true)
      valSrc = M.Synthetic(IMAGENET_VAL, opt.batchSize, opt.cropSize, nClasses, opt.device, opt.seed + 7919, false)
      say(('synthetic data: %d classes, %dx%d crops made on the %s'):format(nClasses, opt.cropSize, opt.cropSize, opt.device))
   else
      local data = require 'moontorch.data'
      local train, val, layout = M.open_data(opt.data)
      nClasses = #train:classes()
      say(('data: %s (%s): %d training and %d validation images, %d classes'):format(opt.data, layout, train:size(),
         val:size(), nClasses))
      for _, w in ipairs(train:warnings()) do io.stderr:write(NAME, ': train: ', w, '\n') end
      for _, w in ipairs(val:warnings()) do io.stderr:write(NAME, ': val: ', w, '\n') end
      local budget = math.floor(opt.cacheBudget * 2 ^ 30)
      if budget == 0 then budget = opt.cache == 'on' and math.huge or math.floor((available_memory() or 2 ^ 33) / 2) end
      budget = setup_cache(train, 'train', opt, budget, say)
      setup_cache(val, 'val', opt, budget, say)
      local resize = math.floor(opt.cropSize * 256 / 224 + 0.5)
      local common = { threads = opt.nThreads, prefetch = 2, skipBad = true, pinned = opt.device == 'cuda',
         seed = opt.seed, batchSize = opt.batchSize }
      local function loader(ds, transform, shuffle, dropLast)
         local o = { shuffle = shuffle, dropLast = dropLast }
         for k, v in pairs(common) do o[k] = v end
         return data.Loader(ds, transform, o)
      end
      trainSrc = loader(train, data.Transform{ train = true, size = opt.cropSize, resize = resize, flip = true,
         brightness = 0.4, contrast = 0.4, saturation = 0.4, lighting = 0.1, dctScaling = true, dtype = 'float',
         layout = 'NCHW' }, true, true)
      valSrc = loader(val, data.Transform{ train = false, size = opt.cropSize, resize = resize, dctScaling = true,
         dtype = 'float', layout = 'NCHW' }, false, false)
   end
   local trainBatches, valBatches = trainSrc:nbatches(), valSrc:nbatches()
   if opt.limitBatches > 0 then
      trainBatches, valBatches = math.min(trainBatches, opt.limitBatches), math.min(valBatches, opt.limitBatches)
   end
   if trainBatches < 1 then fail('the training set does not make one batch of %d images', opt.batchSize) end

   -- model and optimizer
   torch.manualSeed(opt.seed)
   local model = M.build_model(opt.depth, nClasses, opt.zeroInitResidual)
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing)
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local params, gradParams = model:getParameters()
   local config = { learningRate = opt.lr, weightDecay = opt.weightDecay }
   if opt.optimizer ~= 'lamb' then config.momentum = opt.momentum end
   if opt.optimizer == 'sgd' and opt.nesterov and opt.momentum > 0 then config.nesterov, config.dampening = true, 0 end
   if opt.optimizer ~= 'sgd' then config.layers, config.lars_exclude = optim.layerSegments(model, params) end
   say(('ResNet-%d, %d classes, %.2fM parameters on %s; %s, lr %g (%g per 256 images x %d / 256), %s schedule'):format(
      opt.depth, nClasses, models.nParameters(model) / 1e6, opt.device, opt.optimizer, opt.lr, opt.LR, opt.batchSize,
      opt.lrSchedule))

   local optimState, startEpoch, best = {}, 1, { top1 = -1, top5 = 0, epoch = 0 }
   local last = {}
   if opt.resume ~= '' then
      local path = opt.resume
      if is_dir(path) then path = path .. '/checkpoint.safetensors' end
      local meta
      optimState, meta = load_checkpoint(path, model, opt)
      startEpoch = (tonumber(meta.epoch) or 0) + 1
      best = { top1 = tonumber(meta.best_top1) or -1, top5 = tonumber(meta.best_top5) or 0,
         epoch = tonumber(meta.best_epoch) or 0 }
      last = { loss = tonumber(meta.train_loss), top1 = tonumber(meta.val_top1), top5 = tonumber(meta.val_top5) }
      say(('resumed from %s after epoch %d'):format(path, startEpoch - 1))
   end

   local ckpt, log, tb
   if opt.save ~= '' then
      os.execute(('mkdir -p %q'):format(opt.save))
      if not is_dir(opt.save) then fail('-save %s: cannot create the directory', opt.save) end
      ckpt = opt.save .. '/checkpoint.safetensors'
      log = logger.new(opt.save .. '/log.csv', { 'epoch', 'train_loss', 'train_top1', 'val_loss', 'val_top1',
         'val_top5', 'lr', 'seconds', 'images_per_sec', 'data_wait_ms', 'skipped' },
         { append = startEpoch > 1, keep = function(r) return tonumber(r.epoch) and r.epoch < startEpoch end })
      tb = require('moontorch.util.tensorboard').Writer(opt.save)
   end

   local ctx = { opt = opt, model = model, criterion = criterion, params = params, gradParams = gradParams,
      config = config, optimState = optimState, optfn = optim[opt.optimizer], train = trainSrc, val = valSrc,
      trainBatches = trainBatches, valBatches = valBatches, schedule = M.make_schedule(opt, trainBatches), buf = {},
      reported = {} }
   local lastEpoch = opt.nEpochs
   if opt.stopAfter > 0 then lastEpoch = math.min(lastEpoch, opt.stopAfter) end
   local t0 = progress.now()
   for epoch = startEpoch, lastEpoch do
      local tr = train_epoch(ctx, epoch)
      report_skipped(trainSrc, 'training', ctx.reported)
      local va = validate(ctx, epoch)
      report_skipped(valSrc, 'validation', ctx.reported)
      if va.top1 > best.top1 then best = { top1 = va.top1, top5 = va.top5, epoch = epoch } end
      last = { loss = tr.loss, top1 = va.top1, top5 = va.top5 }
      print(('epoch %d: train loss %.4f  top-1 %.2f%%  |  val top-1 %.2f%%  top-5 %.2f%%  |  lr %.4g  %.1f img/s  data %.1f ms/batch%s'):format(
         epoch, tr.loss, 100 * tr.top1, 100 * va.top1, 100 * va.top5, tr.lr, tr.images_per_sec, tr.wait_ms,
         tr.skipped > 0 and ('  (%d images skipped)'):format(tr.skipped) or ''))
      if ckpt then
         log:add({ epoch = epoch, train_loss = tr.loss, train_top1 = tr.top1, val_loss = va.loss, val_top1 = va.top1,
            val_top5 = va.top5, lr = tr.lr, seconds = tr.seconds, images_per_sec = tr.images_per_sec,
            data_wait_ms = tr.wait_ms, skipped = tr.skipped })
         local h = { epoch = {}, train_loss = {}, test_acc = {} }
         for _, r in ipairs(log:rows()) do
            h.epoch[#h.epoch + 1] = tonumber(r.epoch)
            h.train_loss[#h.train_loss + 1] = tonumber(r.train_loss)
            h.test_acc[#h.test_acc + 1] = tonumber(r.val_top1)
         end
         plot.write(opt.save .. '/plot.svg', h, ('ResNet-%d, %s (validation top-1 on the right)'):format(opt.depth,
            opt.optimizer))
         for _, s in ipairs({ { 'train/loss', tr.loss }, { 'train/top1', tr.top1 }, { 'val/loss', va.loss },
            { 'val/top1', va.top1 }, { 'val/top5', va.top5 }, { 'train/lr', tr.lr },
            { 'train/images_per_sec', tr.images_per_sec }, { 'train/data_wait_ms', tr.wait_ms } }) do
            if s[2] == s[2] then tb:scalar(s[1], s[2], epoch) end
         end
         save_checkpoint(ckpt, model, optimState, { format = 'moontorch resnet_imagenet 1', epoch = epoch,
            depth = opt.depth, nClasses = nClasses, optimizer = opt.optimizer, batchSize = opt.batchSize,
            cropSize = opt.cropSize, seed = opt.seed, train_loss = tr.loss, val_top1 = va.top1 == va.top1 and va.top1 or nil,
            val_top5 = va.top5 == va.top5 and va.top5 or nil, best_top1 = best.top1 >= 0 and best.top1 or nil,
            best_top5 = best.top5, best_epoch = best.epoch })
      end
   end
   if log then log:close() end
   if tb then tb:close() end
   trainSrc:free()
   valSrc:free()

   local function pct(v) return v and v == v and ('%.2f%%'):format(100 * v) or 'n/a' end
   print(('final: train loss %s  val top-1 %s  top-5 %s  (best top-1 %s at epoch %d)  %s'):format(
      last.loss and ('%.6f'):format(last.loss) or 'n/a', pct(last.top1), pct(last.top5),
      best.top1 >= 0 and pct(best.top1) or 'n/a', best.epoch, progress.format_time(progress.now() - t0)))
   if ckpt then print('checkpoint, log.csv, plot.svg and TensorBoard events in ' .. opt.save) end
   return last, model
end

if modname ~= 'recipes.resnet50_imagenet' then -- run as a script, not required as a module
   local ok, res, _, code = xpcall(M.main, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, arg)
   if not ok then
      io.stderr:write(NAME, ': ', (tostring(res):gsub('^' .. NAME .. ': ', '')), '\n')
      os.exit(1)
   end
   if code then os.exit(code) end
end
return M
