-- fashion_mnist.lua: the built-in default recipe. Trains a small CNN on Fashion-MNIST with a
-- progress bar, evaluates on the test set each epoch, saves a checkpoint with its CSV log and
-- SVG plot beside it, and prints the final test accuracy.
--   luajit recipes/fashion_mnist.lua [-nEpochs 8] [-batchSize 64] [-LR 0.05] [-optimizer sgd]
--         [-threads 2] [-seed 1] [-device cpu] [-precision float] [-save runs/fashion_mnist]
--         [-resume runs/fashion_mnist/checkpoint.safetensors] [-data DIR] [-limitBatches N]
-- (`-h` lists every option.) Data: Debian's dataset-fashion-mnist package
-- (/usr/share/datasets/fashion-mnist/*-idx*-ubyte.gz) or the same four files in -data DIR.
--
-- Reproducibility: epoch e draws its shuffling, augmentation and dropout masks from the seed
-- (seed, e), never from state carried over between epochs, so `-resume` from the checkpoint of
-- epoch e gives the same numbers as the uninterrupted run (same thread count).
local modname = ...
local script_dir = (arg and arg[0] or ''):match('^(.*)/recipes/[^/]*$') or '.'
package.path = script_dir .. '/lua/?.lua;' .. script_dir .. '/lua/?/init.lua;' .. script_dir .. '/?.lua;' ..
   script_dir .. '/?/init.lua;' .. package.path

local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local checkpoint = require 'moontorch.checkpoint'
local idx = require 'moontorch.data.idx'
local options = require 'moontorch.util.options'
local progress = require 'moontorch.util.progress'
local logger = require 'moontorch.util.logger'
local plot = require 'moontorch.util.plot'
local models = require 'recipes.models'

local spec = {
   { 'data', '/usr/share/datasets/fashion-mnist', 'directory with the four *-idx*-ubyte(.gz) files' },
   { 'nEpochs', 8, 'number of epochs' },
   { 'batchSize', 64, 'mini-batch size' },
   { 'LR', 0.05, 'peak learning rate (0: the optimizer\'s default)' },
   { 'schedule', 'cosine', 'learning-rate schedule over iterations', choices = { 'cosine', 'step', 'constant' } },
   { 'warmup', 1, 'epochs of linear warm-up' },
   { 'optimizer', 'sgd', 'sgd | adam | adamw | lars | lamb', choices = { 'sgd', 'adam', 'adamw', 'lars', 'lamb' } },
   { 'momentum', 0.9, 'momentum (sgd, lars)' },
   { 'weightDecay', 5e-4, 'weight decay' },
   { 'nesterov', true, 'Nesterov momentum (sgd)' },
   { 'labelSmoothing', 0, 'label smoothing of the cross-entropy' },
   { 'augment', true, 'random horizontal flips in training' },
   { 'width', 32, 'channels of the first convolution of the small CNN' },
   { 'threads', 2, 'CPU threads' },
   { 'seed', 1, 'random seed (data order, augmentation, dropout, initialisation)' },
   { 'device', 'cpu', 'cpu | cuda', choices = { 'cpu', 'cuda' } },
   { 'precision', 'float', 'float | double', choices = { 'float', 'double' } },
   { 'save', 'runs/fashion_mnist', 'directory for checkpoint.safetensors, log.csv and plot.svg ("" for none)' },
   { 'resume', '', 'checkpoint (or its directory) to continue from' },
   { 'limitBatches', 0, 'train on at most this many batches per epoch (0: all)' },
   { 'limitTestBatches', 0, 'evaluate at most this many test batches (0: all)' },
   { 'testBatchSize', 500, 'mini-batch size for evaluation' },
   { 'stopAfter', 0, 'stop after this epoch, as if interrupted (0: run all nEpochs)' },
   { 'quiet', false, 'no progress bar' },
}

local M = {}

----------------------------------------------------------------------------------------------
-- data

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
   local y = labels:long():add(1)
   return { x = x, y = y, n = n }
end

----------------------------------------------------------------------------------------------
-- learning rate per iteration

-- a function of the iteration (from 0), built from optim.schedule
local function make_schedule(opt, itersPerEpoch)
   local S = optim.schedule
   local total = math.max(opt.nEpochs * itersPerEpoch, 1)
   local warm = math.floor(opt.warmup * itersPerEpoch)
   local base
   if opt.schedule == 'cosine' then base = S.cosine(opt.LR, math.max(total - warm, 1))
   elseif opt.schedule == 'step' then -- x0.1 at a third and two thirds of the run
      base = S.step(opt.LR, math.max(math.floor(opt.nEpochs / 3), 1) * itersPerEpoch, 0.1)
   else base = S.constant(opt.LR) end
   return warm > 0 and S.warmup(warm, base) or base
end

----------------------------------------------------------------------------------------------
-- checkpoint: parameters and BN buffers by module, optimizer state, epoch

local function state_tensors(model)
   local out = {}
   for i, m in ipairs(model:listModules()) do
      for _, field in ipairs({ 'weight', 'bias', 'running_mean', 'running_var' }) do
         if torch.isTensor(m[field]) and m[field]:nElement() > 0 then
            out[('%d.%s'):format(i, field)] = m[field]
         end
      end
   end
   return out
end

local function save_checkpoint(path, model, optimState, epoch, opt)
   local tensors = state_tensors(model)
   local meta = { epoch = tostring(epoch), seed = tostring(opt.seed), optimizer = opt.optimizer,
      format = 'moontorch fashion_mnist 1' }
   for k, v in pairs(optimState) do
      if torch.isTensor(v) then tensors['optim.' .. k] = v
      elseif type(v) == 'number' then meta['optim.' .. k] = ('%.17g'):format(v)
      elseif type(v) == 'boolean' then meta['optim.' .. k] = tostring(v) end
   end
   checkpoint.save(path, tensors, meta)
end

local function load_checkpoint(path, model, optimState, typename)
   local tensors, meta = checkpoint.load(path)
   local own = state_tensors(model)
   for name, t in pairs(own) do
      local src = tensors[name]
      if not src then error(('fashion_mnist: %s has no tensor %s for this model'):format(path, name), 0) end
      if src:nElement() ~= t:nElement() then
         error(('fashion_mnist: %s: tensor %s has %d elements, the model expects %d'):format(path, name,
            src:nElement(), t:nElement()), 0)
      end
      t:copy(src:type(t:type()):viewAs(t))
   end
   for name, t in pairs(tensors) do
      local k = name:match('^optim%.(.+)$')
      if k then -- the optimizer's buffers live in the parameters' type
         local float = t:type() == 'torch.FloatTensor' or t:type() == 'torch.DoubleTensor'
         optimState[k] = float and t:type(typename):clone() or t:clone()
      end
   end
   for name, v in pairs(meta or {}) do
      local k = name:match('^optim%.(.+)$')
      if k then
         if v == 'true' then optimState[k] = true elseif v == 'false' then optimState[k] = false
         else optimState[k] = tonumber(v) or v end
      end
   end
   return tonumber(meta.epoch) or 0, meta
end

----------------------------------------------------------------------------------------------
-- training and evaluation

-- number of rows whose highest score is at the target class (1-based)
function M.count_correct(scores, target)
   local _, pred = scores:max(2)
   -- counted as Long: a ByteTensor sum wraps at 256 in the core for now
   return pred:view(-1):long():eq(target:long()):long():sum()
end

-- a per-epoch seed from the base seed, so every epoch's randomness is independent of the past
local function epoch_seed(seed, epoch) return seed * 1000003 + epoch end

local function evaluate(model, data, opt, device_batch)
   model:evaluate()
   local correct, seen = 0, 0
   local bs = opt.testBatchSize
   local nb = math.ceil(data.n / bs)
   if opt.limitTestBatches > 0 then nb = math.min(nb, opt.limitTestBatches) end
   for b = 1, nb do
      local first = (b - 1) * bs + 1
      local len = math.min(bs, data.n - first + 1)
      local x, y = device_batch(data.x:narrow(1, first, len), data.y:narrow(1, first, len))
      correct = correct + M.count_correct(model:forward(x), y)
      seen = seen + len
   end
   model:training()
   return correct / seen
end

function M.main(args)
   local opt = options.parse(args or {}, spec,
      'fashion_mnist.lua: train a small CNN on Fashion-MNIST (moontorch\'s default recipe)\nOptions:')
   torch.setnumthreads(opt.threads)
   io.stdout:setvbuf('line') -- a log file sees each epoch as it ends
   local typename = opt.precision == 'double' and 'torch.DoubleTensor' or 'torch.FloatTensor'
   if opt.device == 'cuda' and not (torch.cuda and torch.cuda.isAvailable and torch.cuda.isAvailable()) then
      error('fashion_mnist: -device cuda but no CUDA device is available', 0)
   end

   torch.manualSeed(opt.seed)
   local train = M.load(opt.data, 'train', typename)
   local test = M.load(opt.data, 'test', typename)
   local model = models.small_cnn{ nClasses = 10, width = opt.width }
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing > 0 and opt.labelSmoothing or nil)
   model:type(typename)
   criterion:type(typename)
   local function device_batch(x, y)
      if opt.device == 'cuda' then return x:cuda(), y:cuda() end
      return x, y
   end
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local params, gradParams = model:getParameters()

   local optimState = {}
   local startEpoch = 1
   local ckpt_path
   if opt.save ~= '' then
      os.execute(('mkdir -p %q'):format(opt.save))
      ckpt_path = opt.save .. '/checkpoint.safetensors'
   end
   if opt.resume ~= '' then
      local path = opt.resume
      if not path:match('%.safetensors$') then path = path .. '/checkpoint.safetensors' end
      local done = load_checkpoint(path, model, optimState, typename)
      startEpoch = done + 1
      if not opt.quiet then print(('resumed from %s after epoch %d'):format(path, done)) end
   end

   local nTrainBatches = math.floor(train.n / opt.batchSize) -- drop the last partial batch
   if opt.limitBatches > 0 then nTrainBatches = math.min(nTrainBatches, opt.limitBatches) end
   if nTrainBatches < 1 then error(('fashion_mnist: %d training images do not make one batch of %d'):format(
      train.n, opt.batchSize), 0) end

   local log
   if ckpt_path then
      log = logger.new(opt.save .. '/log.csv',
         { 'epoch', 'train_loss', 'train_acc', 'test_acc', 'lr', 'seconds', 'images_per_sec' },
         { append = startEpoch > 1, keep = function(r) return tonumber(r.epoch) and r.epoch < startEpoch end })
   end

   local optfn = optim[opt.optimizer]
   local config = { learningRate = opt.LR, weightDecay = opt.weightDecay }
   if opt.optimizer == 'sgd' or opt.optimizer == 'lars' then
      config.momentum = opt.momentum
      if opt.optimizer == 'sgd' and opt.nesterov and opt.momentum > 0 then config.nesterov, config.dampening = true, 0 end
   end
   if opt.optimizer == 'lars' and optim.layerSegments then config.layers = optim.layerSegments(model) end

   local schedule = make_schedule(opt, nTrainBatches)
   local bs = opt.batchSize
   local xb = torch[typename:match('torch%.(%w+)')](bs, 1, 28, 28)
   local yb = torch.LongTensor(bs)
   local rev = torch.LongTensor(28)
   for i = 1, 28 do rev[i] = 29 - i end
   local acc = 0
   local lastEpoch = opt.nEpochs
   if opt.stopAfter > 0 then lastEpoch = math.min(lastEpoch, opt.stopAfter) end
   for epoch = startEpoch, lastEpoch do
      torch.manualSeed(epoch_seed(opt.seed, epoch))
      local perm = torch.randperm(train.n):long()
      model:training()
      local bar = progress.new(nTrainBatches, { title = ('epoch %d/%d'):format(epoch, opt.nEpochs),
         tty = (not opt.quiet) and nil or false, silent = opt.quiet, out = io.stdout })
      local lossSum, correctSum, seen = 0, 0, 0
      local lr
      for b = 1, nTrainBatches do
         local ids = perm:narrow(1, (b - 1) * bs + 1, bs)
         torch.index(xb, train.x, 1, ids)
         torch.index(yb, train.y, 1, ids)
         if opt.augment then
            local flips = torch.rand(bs)
            local flipped = xb:index(4, rev)
            for i = 1, bs do
               if flips[i] < 0.5 then xb[i]:copy(flipped[i]) end
            end
         end
         local x, y = device_batch(xb, yb)
         lr = schedule((epoch - 1) * nTrainBatches + (b - 1))
         config.learningRate = lr
         local loss, correct
         local function feval()
            gradParams:zero()
            local out = model:forward(x)
            loss = criterion:forward(out, y)
            model:backward(x, criterion:backward(out, y))
            correct = M.count_correct(out, y)
            return loss, gradParams
         end
         optfn(feval, params, config, optimState)
         if loss ~= loss then error(('fashion_mnist: the loss became NaN at epoch %d batch %d (lr %g)'):format(
            epoch, b, lr), 0) end
         lossSum, correctSum, seen = lossSum + loss, correctSum + correct, seen + bs
         bar:update(b, { loss = loss, acc = correct / bs, images = bs })
      end
      local st = opt.quiet and bar:stats() or bar:finish()
      acc = evaluate(model, test, opt, device_batch)
      local row = { epoch = epoch, train_loss = lossSum / nTrainBatches, train_acc = correctSum / seen,
         test_acc = acc, lr = lr, seconds = st.seconds, images_per_sec = st.images_per_sec }
      if not opt.quiet then
         print(('epoch %d: train loss %.4f  train acc %.2f%%  test acc %.2f%%  (%.1f s, %.0f img/s)'):format(epoch,
            row.train_loss, 100 * row.train_acc, 100 * acc, st.seconds, st.images_per_sec))
      end
      if ckpt_path then
         log:add(row)
         local h = { epoch = {}, train_loss = {}, test_acc = {} }
         for _, r in ipairs(log:rows()) do
            h.epoch[#h.epoch + 1] = tonumber(r.epoch)
            h.train_loss[#h.train_loss + 1] = tonumber(r.train_loss)
            h.test_acc[#h.test_acc + 1] = tonumber(r.test_acc)
         end
         plot.write(opt.save .. '/plot.svg', h, 'fashion_mnist: small CNN, ' .. opt.optimizer)
         save_checkpoint(ckpt_path, model, optimState, epoch, opt)
      end
   end
   if log then log:close() end
   if startEpoch > lastEpoch then acc = evaluate(model, test, opt, device_batch) end
   print(('final test accuracy: %.2f%%'):format(100 * acc))
   return acc, model
end

if modname ~= 'recipes.fashion_mnist' then -- run as a script, not required as a module
   local ok, err = xpcall(M.main, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, arg)
   if not ok then
      io.stderr:write('fashion_mnist: ', tostring(err):gsub('^fashion_mnist: ', ''), '\n')
      os.exit(1)
   end
end
return M
