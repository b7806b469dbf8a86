-- bench/dp_step.lua: one rank of a data-parallel training step over the real gradient lists of
-- ResNet-50 and VGG-16 (float32, the published parameter counts), with a modelled compute time,
-- through dist.DataParallel; bench/netem.sh runs it under mpirun over a shaped network.
--   mpirun -np 4 luajit bench/dp_step.lua [-models resnet50,vgg16]
--        [-algorithms mpi,ring,multicolor,hierarchical,auto] [-overlap both|true|false]
--        [-steps 3] [-warmup 1] [-computeMs 0 (per model)] [-forwardRatio 0.5] [-burn sleep|busy]
--        [-measure [-measureBatch 1]] [-bucketMB 25] [-groupSize 2] [-rate label] [-delay label]
--        [-compress none,rgc,rgc-h,auto,powersgd,onebit,fp16] [-density 0.001] [-wire float|half|bfloat16]
--        [-rgcAlgorithms ring] [-compressRank 2]
--        [-momentum 0.9] [-nesterov] [-weightDecay 1e-4] [-method sampled|exact|threshold|trimmed]
--        (rgc and auto: what a recipe moves into them, and the selection)
--   luajit bench/dp_step.lua -list        -- the layer lists only (no MPI): params, MB, GFLOPs
--
-- The model is an nn.Sequential of one stand-in module per parameter-owning layer of the real
-- network, in forward order, each owning weight/gradWeight (and bias/gradBias) of that layer's
-- shapes. A step's compute time is split over the layers in proportion to each layer's FLOPs at
-- 224x224: the forward spends forwardRatio * computeMs, the backward computeMs, half of a
-- layer's share in updateGradInput and half in accGradParameters (the hook DataParallel watches),
-- so gradients become ready layer by layer from the last to the first, as on a GPU. With -measure
-- the per-layer times are instead measured: rank 0 runs the real network (moontorch.models' ResNet-50,
-- VGG-16 built here) forward and backward on its CPU and times each layer; -computeMs then rescales
-- that profile to a given backward time (e.g. a GPU's), keeping its shape. Time is spent
-- sleeping (a GPU computing leaves the CPU free for the communication thread) or, with -burn
-- busy, spinning; either way against a schedule from the pass's start, so the per-call overhead
-- does not add up. The default computeMs is about a V100's in fp32 at batch 64: ResNet-50 110 ms
-- backward (55 forward), VGG-16 195 ms (97.5 forward).
--
-- Per model and algorithm: comm-only ms is a step with zero compute and no overlap (the
-- gradient exchange alone, bucketed as DataParallel does it); then a step with overlap off and on.
-- compute ms is the same model's forward + backward without DataParallel (the one-worker step),
-- measured; efficiency = compute / step. Times are the slowest rank's, median of -steps.
-- With -compress rgc the same cases run through DataParallel's residual gradient compression
-- ({ compress = 'rgc', density, wire }): large gradients go as top-k (index, value) pairs by
-- allgather (rgc-h: dist.sparseAllreduce's hierarchical exchange in nodes of -groupSize), so the
-- algorithm then only carries the dense part (small layers). Their cases run for
-- -rgcAlgorithms (default: every -algorithms), since the algorithm barely matters there; so do
-- the per-bucket compressors (-compress powersgd,onebit,fp16: dist/codec.lua), compressing from
-- the first step (start = 0); their density column is bytes / the float32 gradient's.
-- bytes/step (MiB/step in the table): for rgc, dp.stats.bytes (what a rank put on the wire), max
-- over ranks, median over the timed steps; for none, 4 * params * 2(N-1)/N, the per-rank send of a
-- ring (bandwidth-optimal) allreduce of the float32 gradient. sel% = dp.stats.selectTime / step.
-- Rank 0 prints a table; with -rows FILE it also appends lines
-- `ROW|model|MB|rate|delay|algorithm|overlap|compute|step|comm|eff|compress|density|wire|bytes|selectMs`
-- there (times in ms, bytes per step per rank; none rows: density 1, wire float, selectMs 0), which
-- netem.sh gathers; the first 11 fields are as before. A DataParallel without the compress option
-- (an older one) makes the rgc cases print a skip line and write `SKIP|model|rate|delay|algorithm|
-- compress|reason` instead of failing the run.
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/
local nn = require 'moontorch.nn'
local int = require('moontorch.train.flags').int
local progress = require 'moontorch.util.progress'
local ffi = require 'ffi'

local cli = torch.CmdLine()
cli:text('bench/dp_step.lua: DataParallel step time over the gradient lists of ResNet-50 and VGG-16')
cli:text('Options:')
cli:option('-models', 'resnet50,vgg16', 'comma-separated: resnet50, vgg16')
cli:option('-algorithms', 'mpi,ring,multicolor,hierarchical,auto', 'comma-separated allreduce algorithms')
cli:option('-overlap', 'both', 'both | true | false', { choices = { 'both', 'true', 'false' } })
cli:option('-steps', 3, 'timed steps per case (the median is shown)', int '[1, inf)')
cli:option('-warmup', 1, 'untimed steps first', int '[0, inf)')
cli:option('-computeMs', 0, 'backward ms per step (0: the model\'s default, see the header)', { range = '[0, inf)' })
cli:option('-forwardRatio', 0.5, 'forward time as a fraction of the backward', { range = '[0, inf)' })
cli:option('-measure', false,
   'compute measured: rank 0 times the real network per layer on this CPU (-computeMs then rescales it)')
cli:option('-measureBatch', 1, 'batch for -measure (224x224 images)', int '[1, inf)')
cli:option('-measureThreads', 2, 'CPU threads for -measure', int '[1, inf)')
cli:option('-burn', 'sleep', 'how compute time is spent: sleep | busy', { choices = { 'sleep', 'busy' } })
cli:option('-bucketMB', 25, 'DataParallel bucket size', { range = '(0, inf)' })
cli:option('-groupSize', 2, 'ranks per group for dist.init (the hierarchical algorithm\'s "nodes")', int '[0, inf)')
cli:option('-timeout', 300, 'dist timeout, seconds', { range = '(0, inf)' })
cli:option('-check', false, 'dist\'s per-collective signature check (off: as bench/allreduce.lua)')
cli:option('-threads', 1, 'CPU threads per rank (reductions)', int '[1, inf)')
cli:option('-distModel', '', 'where dist keeps the auto cost table (default: measured now, not saved)')
cli:option('-saveModel', '',
   'rank 0 saves the cost table measured here (every algorithm) to this path (%r: -rate, %n: ranks); perf reads it')
cli:option('-calibrate', '',
   'rank 0 saves perf.calibrate\'s table (back-to-back allreduces up to -bucketMB) to this path (%r, %n as above)')
cli:option('-rate', '-', 'label for the table: the link rate')
cli:option('-delay', '-', 'label for the table: the link delay')
cli:option('-rows', '', 'rank 0 appends ROW|... lines for netem.sh to this file')
cli:option('-compress', 'none',
   'comma-separated gradient exchanges: none (dense allreduce), rgc (residual gradient compression), auto '
      .. '(compress = \'auto\': rgc per bucket where moontorch.perf predicts it pays, on the table measured here)')
cli:option('-density', 0.001, 'rgc: fraction of each large gradient sent', { range = '(0, 1]' })
cli:option('-compressRank', 2, 'powersgd: the rank of the factors', int('[1, inf)'))
cli:option('-wire', 'float',
   'rgc: value type on the wire: float | half | bfloat16', { choices = { 'float', 'half', 'bfloat16' } })
cli:option('-rgcAlgorithms', '', 'algorithms for the rgc cases (default: -algorithms)')
cli:option('-momentum', 0.9, 'rgc, auto: the momentum the compressor keeps (a recipe\'s, moved there)',
   { range = '[0, 1)' })
cli:option('-nesterov', false, 'rgc, auto: Nesterov momentum')
cli:option('-method', 'sampled', 'rgc, auto: top-k selection (dist.topk\'s methods)',
   { choices = { 'exact', 'threshold', 'trimmed', 'sampled' } })
cli:option('-weightDecay', 1e-4, 'rgc, auto: the weight decay the compressor applies', { range = '[0, inf)' })
cli:option('-list', false, 'print the layer lists and exit (no MPI)')
local opt = cli:parse(arg)

-- Layer lists, forward order (lua/moontorch/perf/models.lua): { name, weight = {shape}, bias =
-- {shape} or nil, flops = forward FLOPs per 224x224 image (2 per multiply-add) }.
local perfModels = require 'moontorch.perf.models'
local MODELS, summary = perfModels.MODELS, perfModels.summary

---------------------------------------------------------------------------------------------
-- The stand-in layer and its clock

pcall(ffi.cdef, 'int usleep(unsigned int usec);')
local now = progress.now

local function wait_until(t, busy)
   if busy then
      while now() < t do end
   else
      local d = t - now()
      if d > 0 then ffi.C.usleep(math.floor(d * 1e6)) end
   end
end

-- shared by every stand-in of one model: when the current pass started
local Clock = {}
Clock.__index = Clock
local function clock(busy) return setmetatable({ start = 0, busy = busy }, Clock) end

local Fake, parent = torch.class('nn.DPBenchLayer', 'nn.Module')

-- spec: a layer of the list; clk: the model's clock; fwd: this layer's forward seconds and fwdEnd
-- the forward's cumulative time at its end; bwd, bwdEnd the same for the backward (from the last
-- layer); first/last: whether it starts the forward / the backward
function Fake:__init(spec, clk, t)
   parent.__init(self)
   self.name = spec.name
   self.weight = torch.FloatTensor(torch.LongStorage(spec.weight)):zero()
   self.gradWeight = torch.FloatTensor(torch.LongStorage(spec.weight)):zero()
   if spec.bias then
      self.bias = torch.FloatTensor(torch.LongStorage(spec.bias)):zero()
      self.gradBias = torch.FloatTensor(torch.LongStorage(spec.bias)):zero()
   end
   self.clk, self.t = clk, t
end

function Fake:updateOutput(input)
   local clk, t = self.clk, self.t
   if t.first then clk.start = now() end
   wait_until(clk.start + t.fwdEnd, clk.busy)
   self.output = input
   return input
end

function Fake:updateGradInput(input, gradOutput)
   local clk, t = self.clk, self.t
   if t.last then clk.start = now() end
   wait_until(clk.start + t.bwdEnd - t.bwd / 2, clk.busy)
   self.gradInput = gradOutput
   return gradOutput
end

-- Gradients are fresh random values every step, as a real backward writes them: a window of
-- one shared random buffer, moved by the step, so that nothing is selected or timed on zeros
-- (the compressor writes the averaged update back into the gradient). The copy falls inside
-- the layer's modelled time.
local source -- float32 normal values, the largest layer's numel + SHIFT
local SHIFT = 4096
function Fake:accGradParameters(input, gradOutput, scale)
   local clk, t = self.clk, self.t
   local at = 1 + (clk.steps * 997 + t.index * 131) % SHIFT
   self.gradWeight:view(-1):copy(source:narrow(1, at, self.gradWeight:nElement()))
   if self.gradBias then self.gradBias:copy(source:narrow(1, at + 1, self.gradBias:nElement())) end
   if t.first then clk.steps = clk.steps + 1 end
   wait_until(clk.start + t.bwdEnd, clk.busy)
end

-- per-layer seconds, modelled: backward computeMs (forward computeMs * forwardRatio) split by FLOPs
local function modelled(layers, computeMs)
   local _, flops = summary(layers)
   local fwd, bwd = {}, {}
   for i, l in ipairs(layers) do
      local share = l.flops / flops
      fwd[i], bwd[i] = share * computeMs * opt.forwardRatio / 1000, share * computeMs / 1000
   end
   return { fwd = fwd, bwd = bwd }
end

local function total(t)
   local s = 0
   for _, v in ipairs(t) do s = s + v end
   return s
end

-- the stand-in network, each layer spending its fwd[i] / bwd[i] seconds (times = nil: none)
local function build(layers, times)
   local clk = clock(opt.burn == 'busy')
   local model = nn.Sequential()
   local fcum, bcum = 0, 0
   local t = {}
   for i = 1, #layers do
      local f, b = times and times.fwd[i] or 0, times and times.bwd[i] or 0
      fcum = fcum + f
      t[i] = { fwd = f, fwdEnd = fcum, bwd = b, first = i == 1, last = i == #layers }
   end
   for i = #layers, 1, -1 do
      bcum = bcum + t[i].bwd
      t[i].bwdEnd = bcum
      t[i].index = i
   end
   local largest = 0
   for _, l in ipairs(layers) do
      local n = 1
      for _, d in ipairs(l.weight) do n = n * d end
      largest = math.max(largest, n)
   end
   if not source or source:nElement() < largest + SHIFT then
      torch.manualSeed(1234 + require('moontorch.dist').rank())
      source = torch.randn(largest + SHIFT):float()
   end
   clk.steps = 0
   for i, l in ipairs(layers) do model:add(nn.DPBenchLayer(l, clk, t[i])) end
   return model
end

-- the real networks, for -measure
local function vgg16_real()
   local m, cin = nn.Sequential(), 3
   for _, v in ipairs({ 64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M' }) do
      if v == 'M' then
         m:add(nn.SpatialMaxPooling(2, 2, 2, 2))
      else
         m:add(nn.SpatialConvolution(cin, v, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))
         cin = v
      end
   end
   local flat = nn.View(512 * 7 * 7)
   if flat.setNumInputDims then flat:setNumInputDims(3) end
   m:add(flat)
   m:add(nn.Linear(512 * 7 * 7, 4096)):add(nn.ReLU(true)):add(nn.Dropout(0.5))
   m:add(nn.Linear(4096, 4096)):add(nn.ReLU(true)):add(nn.Dropout(0.5))
   m:add(nn.Linear(4096, 1000))
   return m
end
local REAL = {
   resnet50 = function() return (require('moontorch.models').create('resnet50')) end,
   vgg16 = vgg16_real,
}

-- per-layer seconds, measured: the real network's forward and backward on this CPU at batch
-- -measureBatch, 224x224, by perf.profile (each leaf module timed; a module without parameters,
-- such as ReLU, pooling or the residual addition, counts towards the parameter-owning layer
-- before it), one timed pass after one warm-up
local function measured(name, layers)
   torch.setnumthreads(opt.measureThreads)
   local p = require('moontorch.perf').profile(REAL[name](), { opt.measureBatch, 3, 224, 224 }, { reps = 1 })
   if #p.layers ~= #layers then
      error(('dp_step: the real %s has %d parameter-owning layers, the list %d'):format(name, #p.layers, #layers), 0)
   end
   local fwd, bwd = {}, {}
   for i, l in ipairs(p.layers) do fwd[i], bwd[i] = l.forward, l.backward end
   return { fwd = fwd, bwd = bwd }
end

---------------------------------------------------------------------------------------------

local function split(s)
   local t = {}
   for w in s:gmatch('[^,%s]+') do t[#t + 1] = w end
   return t
end

local models = split(opt.models)
for _, m in ipairs(models) do
   if not MODELS[m] then error(("dp_step: unknown model '%s' (resnet50, vgg16)"):format(m), 0) end
end

if opt.list then
   print(('%-10s %8s %12s %10s %12s  %s'):format('model', 'layers', 'params', 'MB', 'GFLOPs/img', 'check'))
   for _, m in ipairs(models) do
      local layers = MODELS[m].layers()
      local params, flops = summary(layers)
      local check = params == MODELS[m].params and 'published count' or ('expected ' .. MODELS[m].params)
      if m == 'resnet50' then
         -- the same shapes, in the same order, as the recipe's model
         local real = require('moontorch.models').create('resnet50')
         local ps = real:parameters()
         local shapes = {}
         for _, l in ipairs(layers) do
            shapes[#shapes + 1] = table.concat(l.weight, 'x')
            if l.bias then shapes[#shapes + 1] = table.concat(l.bias, 'x') end
         end
         local same = #ps == #shapes
         for i = 1, math.min(#ps, #shapes) do
            local s = {}
            for d = 1, ps[i]:dim() do s[d] = ps[i]:size(d) end
            if table.concat(s, 'x') ~= shapes[i] then same = false end
         end
         check = check .. (same and ', shapes = moontorch.models resnet50' or ', shapes DIFFER from moontorch.models')
      end
      print(('%-10s %8d %12d %10.1f %12.2f  %s'):format(m, #layers, params, params * 4 / 2 ^ 20, flops / 1e9, check))
   end
   os.exit(0)
end

local compresses = split(opt.compress)
local doDense, doRgc, doAuto, codecs = false, false, false, {} -- rgc-h: rgc, exchange = 'hierarchical'
for _, c in ipairs(compresses) do
   local known = require('moontorch.dist.compressors').BY_NAME[c]
   if c == 'none' then doDense = true
   elseif c == 'rgc' or c == 'rgc-h' then doRgc = true
   elseif c == 'auto' then doAuto = true
   elseif known and known.kind == 'bucket' then codecs[#codecs + 1] = c
   else error(("dp_step: unknown -compress '%s' (none, rgc, rgc-h, auto, powersgd, onebit, fp16)"):format(c), 0) end
end

local dist = require 'moontorch.dist'
local algorithms = split(opt.algorithms)
local rgcAlgorithms = opt.rgcAlgorithms ~= '' and split(opt.rgcAlgorithms) or algorithms
-- the cases, in order: every dense algorithm, then every rgc one
local cases = {}
if doDense then for _, a in ipairs(algorithms) do cases[#cases + 1] = { alg = a, compress = 'none' } end end
for _, c in ipairs(compresses) do
   if c == 'rgc' or c == 'rgc-h' then
      for _, a in ipairs(rgcAlgorithms) do cases[#cases + 1] = { alg = a, compress = c } end
   end
end
-- the per-bucket compressors (powersgd, onebit, fp16) on -rgcAlgorithms too, compressing from the first step
for _, c in ipairs(codecs) do
   for _, a in ipairs(rgcAlgorithms) do cases[#cases + 1] = { alg = a, compress = c } end
end
-- auto: DataParallel's compress = 'auto' on the cost table dist.init measures here
if doAuto then for _, a in ipairs(algorithms) do cases[#cases + 1] = { alg = a, compress = 'auto' } end end
local wantAuto = doAuto
for _, c in ipairs(cases) do if c.alg == 'auto' then wantAuto = true end end
-- the auto cost table is measured on this network (a cached one may be another network's)
local distModel = false
if opt.saveModel ~= '' then wantAuto = true end -- the table is measured even without an auto case
if wantAuto then distModel = opt.distModel ~= '' and opt.distModel or os.tmpname() end
if wantAuto and opt.distModel == '' then os.remove(distModel) end
torch.setnumthreads(opt.threads)
dist.init { timeout = opt.timeout, groupSize = opt.groupSize, model = distModel, check = opt.check,
   tuneMaxBytes = math.max(opt.bucketMB, 1) * 2 ^ 20 }
local rank, size = dist.rank(), dist.size()
local master = rank == 0
local function expand(path) return (path:gsub('%%r', (opt.rate:gsub('[^%w.]', '_'))):gsub('%%n', tostring(size))) end
if opt.saveModel ~= '' then dist.saveModel(expand(opt.saveModel)) end
if opt.calibrate ~= '' then
   local perf = require 'moontorch.perf'
   local t = perf.calibrate(dist, { maxBytes = math.max(opt.bucketMB, 1) * 2 ^ 20 })
   if master then perf.saveTable(t, expand(opt.calibrate)) end
end
local function say(...) if master then io.write(string.format(...)); io.stdout:flush() end end

local median = require('bench.timing').median

local slowest = torch.DoubleTensor(1)
local function max_over_ranks(x)
   slowest[1] = x
   dist.allreduce(slowest, 'max', { algorithm = 'mpi' })
   return slowest[1]
end

local x, gradOut = torch.FloatTensor(1):zero(), torch.FloatTensor(1):zero()

-- median over ranks' slowest of `steps` timed runs of fn, after `warmup`
local function timeit(fn)
   local ts = {}
   for i = 1, opt.warmup + opt.steps do
      dist.barrier()
      local t0 = now()
      fn()
      local t = max_over_ranks(now() - t0)
      if i > opt.warmup then ts[#ts + 1] = t end
   end
   return median(ts) * 1000
end

local function release()
   collectgarbage('collect')
   collectgarbage('collect')
end

local overlaps = opt.overlap == 'both' and { false, true } or { opt.overlap == 'true' }
say('dp_step: %d ranks (groupSize %d, %d node(s)), rate %s, delay %s, bucket %d MB, median of %d steps after %d, '
   .. 'compute by %s\n', size, opt.groupSize, dist.nodes(), opt.rate, opt.delay, opt.bucketMB, opt.steps, opt.warmup,
   opt.burn)
if doRgc then
   say('rgc: density %g, wire %s, algorithms %s; MiB/step: rgc = dp.stats.bytes (max over ranks), '
      .. 'none = 4 * params * 2(N-1)/N (ring allreduce)\n', opt.density, opt.wire, table.concat(rgcAlgorithms, ','))
end
if wantAuto then
   local probes = {}
   for _, mb in ipairs({ 1, 4, 25 }) do probes[#probes + 1] = ('%d MB: %s'):format(mb, dist.autoChoice(mb * 2 ^ 20)) end
   say('auto chooses (measured at init on this network): %s\n', table.concat(probes, ', '))
end

local header = ('%-9s %7s %-7s %-8s %-13s %-8s %-7s %10s %10s %10s %7s %9s %6s\n')
local rowfmt = ('%-9s %7.1f %-7s %-8s %-13s %-8s %-7s %10.1f %10.1f %10.1f %7.3f %9s %6s\n')

-- the option names a DataParallel without compression rejects: then the rgc cases are skipped
local function rejectsCompress(err)
   local k = tostring(err):match("unknown option '(%w+)'")
   return k == 'compress' or k == 'density' or k == 'wire'
end

local function append(line)
   if master and opt.rows ~= '' then
      local f = assert(io.open(opt.rows, 'a'))
      f:write(line, '\n')
      f:close()
   end
end

local status = 0
dist.run(function()
   for _, m in ipairs(models) do
      local spec = MODELS[m]
      local layers = spec.layers()
      local params = summary(layers)
      local ntensors = 0
      for _, l in ipairs(layers) do ntensors = ntensors + (l.bias and 2 or 1) end
      local mb = params * 4 / 2 ^ 20
      local times, how
      if opt.measure then
         -- rank 0 measures (alone on the CPUs: the others wait in the broadcast), then every rank
         -- uses its numbers
         local n = #layers
         local buf = torch.DoubleTensor(2 * n):zero()
         if master then
            local mt = measured(m, layers)
            torch.setnumthreads(opt.threads)
            for i = 1, n do buf[i], buf[n + i] = mt.fwd[i], mt.bwd[i] end
         end
         dist.broadcast(buf, 0)
         times = { fwd = {}, bwd = {} }
         for i = 1, n do times.fwd[i], times.bwd[i] = buf[i], buf[n + i] end
         local fwdMs, bwdMs = total(times.fwd) * 1000, total(times.bwd) * 1000
         how = ('measured on this CPU at batch %d: backward %.0f ms, forward %.0f ms'):format(opt.measureBatch, bwdMs,
            fwdMs)
         if opt.computeMs > 0 then
            local scale = opt.computeMs / bwdMs
            for i = 1, n do times.fwd[i], times.bwd[i] = times.fwd[i] * scale, times.bwd[i] * scale end
            how = how .. (', per-layer profile rescaled to a %.0f ms backward (%.0f ms forward)'):format(opt.computeMs,
               fwdMs * scale)
         end
      else
         local computeMs = opt.computeMs > 0 and opt.computeMs or spec.computeMs
         times = modelled(layers, computeMs)
         how = ('modelled: backward %.0f ms + forward %.0f ms split by FLOPs'):format(computeMs,
            computeMs * opt.forwardRatio)
      end

      -- the one-worker step: the stand-in's forward + backward alone
      local model = build(layers, times)
      local compute = timeit(function()
         model:forward(x)
         model:backward(x, gradOut)
      end)
      model = nil
      release()
      say('\n%s: %d tensors, %.1f MB of float32 gradients; compute %s; one-worker step %.1f ms\n',
         spec.desc, ntensors, mb, how, compute)
      say(header, 'model', 'MB', 'rate', 'delay', 'algorithm', 'compress', 'overlap', 'compute', 'step ms', 'comm-only',
         'eff', 'MiB/step', 'sel%')
      -- what a ring allreduce of the float32 gradient sends per rank: the dense rows' bytes/step
      local denseBytes = 4 * params * 2 * (size - 1) / size

      -- ms per DataParallel step of the stand-in model with these per-layer times (nil: none),
      -- and for rgc the medians over the timed steps of dp.stats' bytes and selectTime (each the
      -- slowest rank's; nil where dp.stats lacks them)
      local function timeSteps(layerTimes, alg, overlap, compress)
         local dpOpts = { bucketMB = opt.bucketMB, algorithm = alg, overlap = overlap }
         -- none passes no compress key at all, so the dense path runs on a DataParallel without it
         if compress == 'powersgd' or compress == 'onebit' or compress == 'fp16' then
            dpOpts.compress, dpOpts.start = compress, 0
            if compress == 'powersgd' then dpOpts.rank = opt.compressRank end
         elseif compress ~= 'none' then
            dpOpts.compress, dpOpts.density, dpOpts.wire = compress, opt.density, opt.wire
            if compress == 'rgc-h' then dpOpts.compress, dpOpts.exchange = 'rgc', 'hierarchical' end
            dpOpts.momentum, dpOpts.nesterov, dpOpts.weightDecay = opt.momentum, opt.nesterov, opt.weightDecay
            dpOpts.method = opt.method
         end
         local dp = dist.DataParallel(build(layers, layerTimes), dpOpts)
         local seen = {}
         local ms = timeit(function()
            dp:forward(x)
            dp:backward(x, gradOut)
            local st = dp.stats
            seen[#seen + 1] = { st and tonumber(st.bytes) or -1, st and tonumber(st.selectTime) or -1 }
         end)
         dp = nil
         release()
         if compress == 'none' then return ms end
         -- one collective for all timed steps (rank-local stats, so every rank calls it alike)
         local n = #seen - opt.warmup
         local buf = torch.DoubleTensor(2 * n)
         for i = 1, n do buf[i], buf[n + i] = seen[opt.warmup + i][1], seen[opt.warmup + i][2] end
         dist.allreduce(buf, 'max', { algorithm = 'mpi' })
         local bytes, sel = {}, {}
         for i = 1, n do bytes[i], sel[i] = buf[i], buf[n + i] end
         local b, s = median(bytes), median(sel)
         return ms, b >= 0 and b or nil, s >= 0 and s * 1000 or nil
      end

      local rgcSkipped -- the reason, once DataParallel has rejected the rgc options
      for _, c in ipairs(cases) do
         local alg, compress = c.alg, c.compress
         local function skip(reason)
            say('%-9s %7.1f %-7s %-8s %-13s %-8s skipped: %s\n', m, mb, opt.rate, opt.delay, alg, compress, reason)
            append(('SKIP|%s|%s|%s|%s|%s|%s'):format(m, opt.rate, opt.delay, alg, compress,
               (reason:gsub('[|\n]', ' '))))
         end
         local ok, err = true, nil
         if (compress == 'rgc' or compress == 'rgc-h') and rgcSkipped then
            skip(rgcSkipped)
         else
            ok, err = pcall(function()
               local comm = timeSteps(nil, alg, false, compress) -- comm only: zero compute, no overlap
               for _, ov in ipairs(overlaps) do
                  local step, bytes, selMs = timeSteps(times, alg, ov, compress)
                  if compress == 'none' then bytes, selMs = denseBytes, 0 end
                  local eff = compute / step
                  local density = (compress == 'rgc' or compress == 'rgc-h' or compress == 'auto') and opt.density
                     or compress == 'none' and 1 or (bytes and bytes / (4 * params)) or 1
                  local wire = compress ~= 'none' and opt.wire or 'float'
                  append(('ROW|%s|%.1f|%s|%s|%s|%s|%.1f|%.1f|%.1f|%.3f|%s|%g|%s|%s|%s'):format(m, mb, opt.rate,
                     opt.delay, alg, tostring(ov), compute, step, comm, eff, compress, density, wire,
                     bytes and ('%.0f'):format(bytes) or '-', selMs and ('%.2f'):format(selMs) or '-'))
                  say(rowfmt, m, mb, opt.rate, opt.delay, alg, compress, tostring(ov), compute, step, comm, eff,
                     bytes and ('%.2f'):format(bytes / 2 ^ 20) or '-',
                     (compress ~= 'none' and selMs) and ('%.1f'):format(100 * selMs / step) or '-')
               end
            end)
         end
         if not ok and compress == 'rgc' and rejectsCompress(err) then
            -- raised by the constructor's option check, before any collective, alike on every
            -- rank: the communicator is intact and the other cases can run
            rgcSkipped = 'this DataParallel has no compression (' .. tostring(err):match('^[^\n]*') .. ')'
            skip(rgcSkipped)
         elseif not ok then
            status = 1
            say('%-9s %7.1f %-7s %-8s %-13s %-8s failed: %s\n', m, mb, opt.rate, opt.delay, alg, compress,
               tostring(err):match('^[^\n]*'))
            -- a failed collective leaves the communicator broken: later cases cannot run
            error(err, 0)
         end
      end
   end
end)

dist.finalize()
if wantAuto and opt.distModel == '' and master then os.remove(distModel) end
os.exit(status)
