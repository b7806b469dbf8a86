-- bench/train_step.lua: one training step (forward, backward, SGD update with momentum and
-- weight decay) of the small CNN (batch 64, 1x28x28) and of the CIFAR ResNet-18 (batch 32,
-- 3x32x32) on the CPU, with PyTorch's CPU build (bench/train_step_peer.py under
-- /usr/bin/python3) running the same models, batches and thread count in the same run.
-- With -device cuda both run on the GPU (PyTorch's CUDA build is then the peer), and resnet50
-- (ImageNet, batch 64, 3x224x224) is worth adding to -models; each step is bracketed by a
-- device synchronize.
--   luajit bench/train_step.lua [-threads 2] [-reps 10] [-warmup 3] [-models small_cnn,resnet18]
--                               [-precision fp32,bf16] [-layout nchw,nhwc] [-device cpu|cuda] [-batch N]
--                               [-nopeer] [-profile] [-algo auto|native|onednn|onednn_nchw] [-fuse]
-- -precision (any of fp32, bf16, fp16): moontorch converts the model, the criterion and the
-- input with :type() to FloatTensor, BFloat16Tensor or HalfTensor and steps with optim.sgd on
-- the flat parameters as for float32 (optim.sgd keeps a float32 master copy of half or bfloat16
-- parameters itself). The peer runs PyTorch's usual mixed precision for the same name: fp32
-- plain; bf16 torch.autocast(dtype=torch.bfloat16) around forward and loss, float32 parameters
-- and SGD; fp16 the same with float16 and a GradScaler on the GPU. PyTorch's CPU autocast has
-- no float16, so there the peer column says n/a.
-- Each precision's first-step loss is checked against float32's on the same weights, batch and
-- dropout draw (the bench stops on a NaN or a loss too far off) and shown in the last column.
-- -layout (nchw, nhwc): nhwc stores the input channels-last, and on the GPU the model's
-- convolution weights too, as train.Trainer{layout = 'nhwc'} does (x:channelsLast(),
-- model:channelsLast(); PyTorch: model and input .to(memory_format=torch.channels_last) on
-- either device), so each layer that keeps the layout runs on NHWC tensors (cuDNN's NHWC
-- kernels on the GPU; the CPU convolution and BatchNorm copy to NCHW). Its first-step loss is
-- checked against float32 NCHW's too.
-- Prints median ms/step and the ratio moontorch / PyTorch (below 1: we are faster).
-- -profile adds where the time goes: seconds per step by layer type, forward and backward.
-- -fuse times every model, precision and layout twice, as built and rewritten by
-- nn.utils.fuseBatchNorm (BN+ReLU and the ResNet block's BN+add+ReLU fused; rows keyed
-- "<precision>/<layout>+fuse", PyTorch's time beside both); on the CPU the fused first-step loss
-- must equal the unfused one exactly.
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local models = require 'moontorch.models'
local int = require('moontorch.train.flags').int
local progress = require 'moontorch.util.progress'

local cli = torch.CmdLine()
cli:text('bench/train_step.lua: ms per training step, moontorch vs PyTorch')
cli:text('Options:')
cli:option('-threads', 2, 'CPU threads (PyTorch gets the same)', int '[1, inf)')
cli:option('-reps', 10, 'timed steps per model (the median is shown)', int '[1, inf)')
cli:option('-warmup', 3, 'untimed steps first', int '[0, inf)')
cli:option('-batch', 0, "batch size of every model (0: each model's own, shown in its row)", int '[0, inf)')
cli:option('-models', 'small_cnn,resnet18', 'comma-separated: small_cnn, resnet18, resnet50')
cli:option('-precision', 'fp32,bf16', 'comma-separated: fp32, bf16, fp16 (see the top of this file)')
cli:option('-layout', 'nchw', 'comma-separated: nchw, nhwc (channels-last model and input)')
cli:option('-device', 'cpu', 'cpu or cuda', { choices = { 'cpu', 'cuda' } })
cli:option('-peerTF32', false, "let PyTorch use TF32 in cuDNN convolutions (its GPU default; we compute float32)")
cli:option('-tf32', false, 'both sides use TF32 tensor cores for float32 GEMMs and convolutions (torch.cuda.allowTF32)')
cli:option('-nopeer', false, 'skip PyTorch')
cli:option('-profile', false, 'time each layer type')
cli:option('-algo', 'native',
   'CPU float32 convolutions by native, onednn, onednn_nchw or auto (torch.convBackend)',
   { choices = { 'native', 'onednn', 'onednn_nchw', 'auto' } })
cli:option('-fuse', false, 'also time each model with fused batch norm (nn.utils.fuseBatchNorm)')
local opt = cli:parse(arg)
torch.setnumthreads(opt.threads)
torch.convBackend(opt.algo)
local gpu = opt.device == 'cuda'
if gpu and not (torch.cuda.isAvailable and torch.cuda.isAvailable()) then
   io.stderr:write('train_step: -device cuda but no CUDA device (or a build without CUDA)\n')
   os.exit(3)
end
local sync = gpu and function() torch.cuda.synchronize() end or function() end
if opt.tf32 then
   if not gpu then error('train_step: -tf32 needs -device cuda') end
   torch.cuda.allowTF32(true)
   opt.peerTF32 = true
end
torch.manualSeed(0)

local cases = {
   small_cnn = { make = function() return models.small_cnn{ nClasses = 10 } end, shape = { 64, 1, 28, 28 },
      desc = 'small CNN, batch 64, 1x28x28' },
   resnet18 = { make = function() return models.resnet{ depth = 18, dataset = 'cifar10' } end,
      shape = { 32, 3, 32, 32 }, desc = 'ResNet-18 (CIFAR), batch 32, 3x32x32' },
   resnet50 = { make = function() return models.resnet{ depth = 50 } end, shape = { 64, 3, 224, 224 },
      classes = 1000, desc = 'ResNet-50 (ImageNet), batch 64, 3x224x224' },
}
if opt.batch ~= 0 then -- one batch size for all: the rows say it
   for _, c in pairs(cases) do
      c.shape[1] = opt.batch
      c.desc = c.desc:gsub('batch %d+', 'batch ' .. opt.batch)
   end
end

-- wrap every leaf module's passes with timers, summed by type
local prof = {}
local function instrument(model)
   for _, m in ipairs(model:listModules()) do
      if not m.modules then
         local name = torch.type(m)
         for _, pass in ipairs({ 'updateOutput', 'updateGradInput', 'accGradParameters' }) do
            local f = m[pass]
            m[pass] = function(self, ...)
               sync() -- on the GPU each layer's queued work is waited for, so the time is its own
               local t0 = progress.now()
               local r = f(self, ...)
               sync()
               local key = name .. (pass == 'updateOutput' and ' forward' or ' backward')
               prof[key] = (prof[key] or 0) + progress.now() - t0
               return r
            end
         end
      end
   end
end

local median = require('bench.timing').median

-- per precision: moontorch's tensor type on each device, and how far the first-step loss may
-- stray from float32's (relative) before the bench refuses the run: bfloat16 keeps 8 significant
-- bits, float16 11, and the error of a forward pass through ResNet-18 is a few of those roundings
local PRECISIONS = {
   fp32 = { cpu = 'torch.FloatTensor', cuda = 'torch.CudaTensor', tol = 1e-4, desc = 'float32' },
   bf16 = { cpu = 'torch.BFloat16Tensor', cuda = 'torch.CudaBFloat16Tensor', tol = 0.02, desc = 'bfloat16' },
   fp16 = { cpu = 'torch.HalfTensor', cuda = 'torch.CudaHalfTensor', tol = 0.005, desc = 'float16' },
}
local precisions = {}
for p in opt.precision:gmatch('[^,]+') do
   if not PRECISIONS[p] then error('train_step: unknown precision ' .. p .. ' (fp32, bf16, fp16)') end
   precisions[#precisions + 1] = p
end
if #precisions == 0 then error('train_step: -precision names none of fp32, bf16, fp16') end
local layouts = {}
for l in opt.layout:gmatch('[^,]+') do
   if l ~= 'nchw' and l ~= 'nhwc' then error('train_step: unknown layout ' .. l .. ' (nchw, nhwc)') end
   layouts[#layouts + 1] = l
end
if #layouts == 0 then error('train_step: -layout names none of nchw, nhwc') end
-- the rows of a model: every precision in every layout, keyed "fp32/nhwc" (also the peer's key)
local variants = {}
for _, prec in ipairs(precisions) do
   for _, l in ipairs(layouts) do
      local key = prec .. '/' .. l
      variants[#variants + 1] = { prec = prec, layout = l, key = key, peer = key }
      if opt.fuse then
         variants[#variants + 1] = { prec = prec, layout = l, key = key .. '+fuse', peer = key, fused = true }
      end
   end
end

local function finite(v) return v == v and v ~= math.huge and v ~= -math.huge end

-- the model, criterion, input and labels in float32, on the bench's device, from seed 0: every
-- precision of a model starts from the same weights and batch and (the generator being in the
-- same state afterwards) draws the same dropout mask on its first step
local function build(c)
   torch.manualSeed(0)
   local model = c.make():float()
   model:training()
   local criterion = nn.CrossEntropyCriterion():float()
   local x = torch.randn(torch.LongStorage(c.shape)):float()
   local y = torch.LongTensor(c.shape[1]):random(1, c.classes or 10)
   if gpu then model:cuda(); criterion:cuda(); x = x:cuda(); y = y:cuda() end
   return model, criterion, x, y
end

local results, order = {}, {}
for name in opt.models:gmatch('[^,]+') do
   local c = cases[name]
   if not c then error('train_step: unknown model ' .. name .. ' (small_cnn, resnet18, resnet50)') end
   order[#order + 1] = name
   results[name] = {}
   local ref -- float32's first-step loss
   for _, v in ipairs(variants) do
      local prec = v.prec
      if not ref and v.key ~= 'fp32/nchw' then -- no float32 run before this one: one float32 forward
         local model, criterion, x, y = build(c)
         ref = criterion:forward(model:forward(x), y)
         model = nil -- luacheck: ignore 311 (drops the model so that collectgarbage() can free it)
         collectgarbage()
      end
      local P = PRECISIONS[prec]
      local ty = gpu and P.cuda or P.cpu
      local model, criterion, x, y = build(c)
      if v.fused then model:fuseBatchNorm() end
      model:type(ty)
      criterion:type(ty)
      x = x:type(ty)
      if v.layout == 'nhwc' then
         if gpu then model:channelsLast() end
         x = x:channelsLast()
      end
      local params, grads = model:getParameters()
      local config, state = { learningRate = 0.01, momentum = 0.9, weightDecay = 5e-4 }, {}
      local last
      local function feval()
         grads:zero()
         local out = model:forward(x)
         local loss = criterion:forward(out, y)
         model:backward(x, criterion:backward(out, y))
         last = loss
         return loss, grads
      end
      local function step() optim.sgd(feval, params, config, state) end
      step() -- the first warm-up step: its loss is checked against float32's
      local first = last
      if v.key == 'fp32/nchw' and not ref then ref = first end
      local unfused = results[name][v.peer]
      if v.fused and not gpu and unfused and first ~= unfused.loss then
         error(('train_step: %s %s: the fused model\'s first-step loss %.17g differs from the unfused %.17g')
            :format(name, v.key, first, unfused.loss))
      end
      local rel = (first - ref) / math.max(math.abs(ref), 1e-12)
      if not finite(first) or not (math.abs(rel) <= P.tol) then -- luacheck: ignore 581 (rejects NaN)
         error(('train_step: %s %s: first-step loss %s against float32\'s %.6f (relative %.3g, allowed %g)')
            :format(name, v.key, tostring(first), ref, rel, P.tol))
      end
      for _ = 2, opt.warmup do step() end
      sync()
      local times = {}
      for i = 1, opt.reps do
         local t0 = progress.now()
         step()
         sync()
         times[i] = (progress.now() - t0) * 1000
      end
      if not finite(last) then
         error(('train_step: %s %s: the loss became %s after %d steps'):format(name, v.key, tostring(last),
            math.max(opt.warmup, 1) + opt.reps))
      end
      results[name][v.key] = { ours = median(times), loss = first, rel = rel }
      if opt.profile then
         instrument(model)
         prof = {}
         local t0 = progress.now()
         for _ = 1, 3 do step() end
         local total = (progress.now() - t0) / 3
         local keys, layers = {}, 0
         for k, secs in pairs(prof) do keys[#keys + 1] = k; layers = layers + secs / 3 end
         table.sort(keys, function(a, b) return prof[a] > prof[b] end)
         print(('where the time goes, %s, %s %s (%.1f ms/step; layers %.1f ms, rest: criterion, sgd, containers):')
            :format(c.desc, P.desc, v.layout, total * 1000, layers * 1000))
         for _, k in ipairs(keys) do
            print(('  %-44s %8.2f ms  %5.1f%%'):format(k, prof[k] / 3 * 1000, 100 * prof[k] / 3 / total))
         end
      end
      model, params, grads, state = nil, nil, nil, nil
      collectgarbage()
   end
end

if not opt.nopeer then
   -- MT_PEER_PYTHON names another interpreter (on the GPU machine, the one with CUDA PyTorch)
   -- OPENBLAS_NUM_THREADS: PyTorch's torch.set_num_threads does not reach Debian's pthread
   -- OpenBLAS, whose pool would otherwise run PyTorch's GEMMs (mm, bmm, slow_conv*) on every core
   local cmd = ('OPENBLAS_NUM_THREADS=%d %s bench/train_step_peer.py --threads %d --reps %d --warmup %d --batch %d'
      .. ' --models %s --precision %s --layout %s%s 2>&1')
      :format(opt.threads, os.getenv('MT_PEER_PYTHON') or '/usr/bin/python3', opt.threads, opt.reps, opt.warmup,
         opt.batch, table.concat(order, ','), table.concat(precisions, ','), table.concat(layouts, ','),
         (gpu and ' --cuda' or '') .. (opt.peerTF32 and ' --tf32' or ''))
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   -- one line per model, precision and layout: "<name> <precision>/<layout> <ms> <first-step
   -- loss>", or "<name> <precision>/<layout> n/a" where PyTorch has no such mode on this device
   local any = false
   for line in out:gmatch('[^\n]+') do
      local name, prec, ms, loss = line:match('^(%S+) (%S+) (%S+) ?(%S*)$')
      local r = name and results[name] and results[name][prec]
      if r then
         any = true
         if ms == 'n/a' then
            r.peer = 'n/a'
         elseif tonumber(ms) then
            r.peer = tonumber(ms)
            if not finite(tonumber(loss) or 0 / 0) then
               io.stderr:write(('train_step: PyTorch %s %s: first-step loss %s\n'):format(name, prec, loss))
            end
         end
      end
   end
   if not any then io.stderr:write('train_step: PyTorch peer gave no timings:\n', out, '\n') end
   -- a fused row has the unfused row's peer
   for name, rs in pairs(results) do
      for _, v in ipairs(variants) do
         if v.fused and rs[v.key] and rs[v.peer] then rs[v.key].peer = rs[v.peer].peer end
      end
   end
end

print(('\none training step on %s, median of %d (ms/step)')
   :format(gpu and ('CUDA (' .. torch.cuda.getDeviceName() .. ')')
      or ('the CPU, ' .. opt.threads .. ' threads, convBackend ' .. opt.algo), opt.reps))
print(('%-40s %-9s %-11s %12s %12s %8s   %s'):format('model', 'precision', 'layout', 'moontorch', 'PyTorch', 'ratio',
   'step-1 loss (vs fp32 nchw)'))
for _, name in ipairs(order) do
   for _, v in ipairs(variants) do
      local r = results[name][v.key]
      local peer = r.peer
      print(('%-40s %-9s %-11s %12.2f %12s %8s   %.4f (%+.3f%%)'):format(cases[name].desc, v.prec,
         v.layout .. (v.fused and '+fuse' or ''), r.ours,
         type(peer) == 'number' and ('%.2f'):format(peer) or peer or '-',
         type(peer) == 'number' and ('%.2f'):format(r.ours / peer) or (peer or '-'), r.loss, 100 * r.rel))
   end
end
