-- bench/train_step.lua: one training step (forward, backward, SGD update with momentum and
-- weight decay) of the small CNN (batch 64, 1x28x28) and of the CIFAR ResNet-18 (batch 32,
-- 3x32x32) on the CPU, with PyTorch's CPU build (bench/train_step_peer.py under
-- /usr/bin/python3) running the same models, batches and thread count in the same run.
-- With -device cuda both run on the GPU (PyTorch's CUDA build is then the peer), and resnet50
-- (ImageNet, batch 64, 3x224x224) is worth adding to -models; each step is bracketed by a
-- device synchronize.
--   luajit bench/train_step.lua [-threads 2] [-reps 10] [-warmup 3] [-models small_cnn,resnet18]
--                               [-device cpu|cuda] [-nopeer] [-profile]
-- Prints median ms/step and the ratio moontorch / PyTorch (below 1: we are faster).
-- -profile adds where the time goes: seconds per step by layer type, forward and backward.
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local models = require 'recipes.models'
local options = require 'moontorch.util.options'
local progress = require 'moontorch.util.progress'

local opt = options.parse(arg, {
   { 'threads', 2, 'CPU threads (PyTorch gets the same)' },
   { 'reps', 10, 'timed steps per model (the median is shown)' },
   { 'warmup', 3, 'untimed steps first' },
   { 'models', 'small_cnn,resnet18', 'comma-separated: small_cnn, resnet18, resnet50' },
   { 'device', 'cpu', 'cpu or cuda' },
   { 'peerTF32', false, "let PyTorch use TF32 in cuDNN convolutions (its GPU default; we compute float32)" },
   { 'nopeer', false, 'skip PyTorch' },
   { 'profile', false, 'time each layer type' },
}, 'bench/train_step.lua: ms per training step, moontorch vs PyTorch\nOptions:')
torch.setnumthreads(opt.threads)
if opt.device ~= 'cpu' and opt.device ~= 'cuda' then
   error("train_step: -device must be 'cpu' or 'cuda', got " .. tostring(opt.device))
end
local gpu = opt.device == 'cuda'
if gpu and not (torch.cuda.isAvailable and torch.cuda.isAvailable()) then
   io.stderr:write('train_step: -device cuda but no CUDA device (or a build without CUDA)\n')
   os.exit(3)
end
local sync = gpu and function() torch.cuda.synchronize() end or function() end
torch.manualSeed(0)

local cases = {
   small_cnn = { make = function() return models.small_cnn{ nClasses = 10 } end, shape = { 64, 1, 28, 28 },
      desc = 'small CNN, batch 64, 1x28x28' },
   resnet18 = { make = function() return models.resnet{ depth = 18, dataset = 'cifar10' } end,
      shape = { 32, 3, 32, 32 }, desc = 'ResNet-18 (CIFAR), batch 32, 3x32x32' },
   resnet50 = { make = function() return models.resnet{ depth = 50 } end, shape = { 64, 3, 224, 224 },
      classes = 1000, desc = 'ResNet-50 (ImageNet), batch 64, 3x224x224' },
}

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

local function median(t)
   table.sort(t)
   local n = #t
   return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

local results, order = {}, {}
for name in opt.models:gmatch('[^,]+') do
   local c = cases[name]
   if not c then error('train_step: unknown model ' .. name .. ' (small_cnn, resnet18, resnet50)') end
   order[#order + 1] = name
   local model = c.make():float()
   model:training()
   local criterion = nn.CrossEntropyCriterion():float()
   local x = torch.randn(torch.LongStorage(c.shape)):float()
   local y = torch.LongTensor(c.shape[1]):random(1, c.classes or 10)
   if gpu then model:cuda(); criterion:cuda(); x = x:cuda(); y = y:cuda() end
   local params, grads = model:getParameters()
   local config, state = { learningRate = 0.01, momentum = 0.9, weightDecay = 5e-4 }, {}
   local function feval()
      grads:zero()
      local out = model:forward(x)
      local loss = criterion:forward(out, y)
      model:backward(x, criterion:backward(out, y))
      return loss, grads
   end
   local function step() optim.sgd(feval, params, config, state) end
   for _ = 1, opt.warmup do step() end
   sync()
   local times = {}
   for i = 1, opt.reps do
      local t0 = progress.now()
      step()
      sync()
      times[i] = (progress.now() - t0) * 1000
   end
   results[name] = { ours = median(times) }
   if opt.profile then
      instrument(model)
      prof = {}
      local t0 = progress.now()
      for _ = 1, 3 do step() end
      local total = (progress.now() - t0) / 3
      local keys, layers = {}, 0
      for k, v in pairs(prof) do keys[#keys + 1] = k; layers = layers + v / 3 end
      table.sort(keys, function(a, b) return prof[a] > prof[b] end)
      print(('where the time goes, %s (%.1f ms/step; layers %.1f ms, rest: criterion, sgd, containers):')
         :format(c.desc, total * 1000, layers * 1000))
      for _, k in ipairs(keys) do
         print(('  %-44s %8.2f ms  %5.1f%%'):format(k, prof[k] / 3 * 1000, 100 * prof[k] / 3 / total))
      end
   end
   model, params, grads = nil, nil, nil
   collectgarbage()
end

if not opt.nopeer then
   -- MT_PEER_PYTHON names another interpreter (on the GPU machine, the one with CUDA PyTorch)
   local cmd = ('%s bench/train_step_peer.py --threads %d --reps %d --warmup %d --models %s%s 2>&1')
      :format(os.getenv('MT_PEER_PYTHON') or '/usr/bin/python3', opt.threads, opt.reps, opt.warmup, table.concat(order, ','),
         (gpu and ' --cuda' or '') .. (opt.peerTF32 and ' --tf32' or ''))
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   local any = false
   for name, ms in out:gmatch('(%S+) ([%d%.]+)\n') do
      if results[name] then results[name].peer = tonumber(ms); any = true end
   end
   if not any then io.stderr:write('train_step: PyTorch peer gave no timings:\n', out, '\n') end
end

print(('\none training step on %s, median of %d (ms/step)')
   :format(gpu and ('CUDA (' .. torch.cuda.getDeviceName() .. ')') or ('the CPU, ' .. opt.threads .. ' threads'), opt.reps))
print(('%-40s %12s %12s %10s'):format('model', 'moontorch', 'PyTorch', 'ratio'))
for _, name in ipairs(order) do
   local r = results[name]
   print(('%-40s %12.2f %12s %10s'):format(cases[name].desc, r.ours, r.peer and ('%.2f'):format(r.peer) or '-',
      r.peer and ('%.2f'):format(r.ours / r.peer) or '-'))
end
