-- dist.DataParallel(model [, opts]): data-parallel training in the manner of PyTorch's DDP.
-- Every rank holds a replica of model and feeds it its own slice of the batch; dp:backward
-- returns once the gradients are averaged over the ranks, so each rank's optimizer step is
-- the same and the replicas stay equal.
--   local dp = dist.DataParallel(model, { bucketMB = 25 })
--   local p, gp = dp:getParameters()          -- the Torch7 idiom works as before
--   ... dp:forward(x); dp:backward(x, dy); optim.sgd(feval, p, cfg)
-- opts: bucketMB (nil: 25 for the first step, then the size moontorch.perf's best predicts for
-- the measured step on this job's cost table), algorithm (nil: the dist default), overlap
-- (true), dist (the module providing the collectives; for tests), compress (dist/compressors.lua:
-- 'none', 'rgc', 'powersgd', 'onebit', 'fp16' or 'auto').
-- compress = 'powersgd' (dist/powersgd.lua; options rank (2), start (100 dense steps first),
-- minCompressionRate, warmStart, seed, errorFeedback), 'onebit' (dist/onebit.lua; chunk, start,
-- errorFeedback) and 'fp16' (dist/fp16.lua; start) compress each bucket as backward produces it
-- and overlap as dense buckets do (dist/codec.lua); the optimizer keeps its momentum and weight
-- decay; float32 gradients; dp.stats holds the step's counters.
-- compress = 'auto' (dist/autocompress.lua): rgc per bucket where the performance
-- model predicts a shorter step, with rgc's options and network (a perf.network, a preset
-- name, a cost table file; nil: the table dist.init measured) and every (100: steps between
-- checks for drift); the choice is printed once by rank 0 and kept in dp.stats.auto.
-- compress = 'rgc': residual gradient compression (dist/rgc.lua: Deep Gradient Compression,
-- RedSync), with its options beside it: density (0.001), method ('sampled', 'exact',
-- 'threshold', 'trimmed'), slack, momentum, nesterov, weightDecay, maskMomentum (true), clip,
-- minSize (16384), wire ('float', 'half', 'bfloat16'), denseFallback (true), warmup (list of
-- densities), warmupSteps, exchange ('allgather', or 'hierarchical': dist.sparseAllreduce).
-- Momentum and weight decay then live here (momentum correction): run the optimizer with
-- momentum = 0 and weightDecay = 0. Each bucket is selected and sent as backward finishes it
-- (with overlap, a float wire and no clip; otherwise one exchange after backward); dp.stats
-- holds the last step's counters (bytes, density, selectTime, exchangeTime, ...). Float32
-- gradients, or float16/bfloat16 ones of a half model: then the residuals and the update are
-- float32, the update is dp:updates() (not the model's gradient tensor), and dp.lossScale
-- (default 1) must be the loss scaler's scale of the step (the Trainer sets it); an overflow on
-- any rank makes the update inf on every rank, so every rank's scaler skips that step and the
-- residuals stay as they were.
-- How: construction flattens the parameters (getParameters), checks every rank has the same
-- layout, and broadcasts rank 0's parameters and buffers (running_* of BatchNormalization).
-- The flat gradient is cut into buckets (dist/buckets.lua); the modules owning parameters get
-- instance hooks on backward/accGradParameters, and the moment the last gradient of a bucket is
-- final its allreduceAsync starts, overlapping the transfer with the rest of backward.
-- Buckets are launched in index order on every rank (a ready bucket waits for lower ones).
-- Only dp:backward / dp:accGradParameters synchronise: dp.module:backward called directly
-- leaves the gradients local until dp:allreduceGradients().
-- Limitations: one module instance placed twice in a model is beyond getParameters, hence
-- beyond dp (share parameters between clones instead: supported); a module called more often
-- in one backward than it appears in the model raises an error with overlap on (use overlap =
-- false). All parameters must have one type (as for getParameters).
-- Clones of dp.module keep the hooks (inert outside dp:backward). type() is collective.
-- BatchNormalization statistics stay local, as in DDP.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local buckets = require 'moontorch.dist.buckets'

local ns = {}
local DataParallel, parent = torch.class('dist.DataParallel', 'nn.Module', ns)

local NAME = 'dist.DataParallel'
local rgc = require 'moontorch.dist.rgc'
local COMPRESSORS = require 'moontorch.dist.compressors'
local OPTIONS = { bucketMB = true, algorithm = true, overlap = true, dist = true, compress = true, network = 'auto',
   every = 'auto' }
for k in pairs(rgc.DEFAULTS) do if k ~= 'algorithm' and k ~= 'sparseUnits' then OPTIONS[k] = 'rgc' end end
local now = require('moontorch.util.progress').now

local function fail(fmt, ...) error(NAME .. ': ' .. fmt:format(...), 0) end

function DataParallel:__init(model, opts)
   parent.__init(self)
   if not torch.isTypeOf(model, 'nn.Module') then
      fail('expected an nn.Module to wrap, got %s', torch.type(model))
   end
   opts = opts or {}
   if type(opts) ~= 'table' then fail('options must be a table, got %s', type(opts)) end
   self.compress = opts.compress or 'none'
   local kind = COMPRESSORS.BY_NAME[self.compress]
   if not kind then
      local names = {}
      for _, c in ipairs(COMPRESSORS.LIST) do names[#names + 1] = c.name end
      fail("compress must be one of %s, got '%s'", table.concat(names, ', '), tostring(self.compress))
   end
   self.compressKind = kind.kind
   self.rgcOptions, self.autoOptions, self.codecOptions = {}, {}, {}
   for k, v in pairs(opts) do
      if not OPTIONS[k] and kind.kind == 'bucket' then
         self.codecOptions[k] = v -- the codec names what it does not know (dist/codec.lua)
      elseif not OPTIONS[k] then
         fail("unknown option '%s' (bucketMB, algorithm, overlap, dist, compress and, with compress = 'rgc' or "
            .. "'auto', %s; with 'auto', network, every; with 'powersgd', 'onebit' or 'fp16', theirs)", tostring(k),
            'density, method, slack, momentum, nesterov, weightDecay, maskMomentum, clip, minSize, wire, '
            .. 'denseFallback, warmup, warmupSteps, exchange')
      elseif OPTIONS[k] == 'rgc' then
         if kind.kind ~= 'step' and kind.kind ~= 'auto' then
            fail("option '%s' needs compress = 'rgc' or 'auto'", k)
         end
         self.rgcOptions[k] = v
      elseif OPTIONS[k] == 'auto' then
         if self.compress ~= 'auto' then fail("option '%s' needs compress = 'auto'", k) end
         self.autoOptions[k] = v
      end
   end
   self.rgcOptions.algorithm = opts.algorithm
   self.module = model
   -- no bucketMB: 25 MB for the first step, then perf.best's size for this model as measured
   -- and this job's cost table (when dist.init has one)
   self.bucketMB, self.bucketAuto = opts.bucketMB or 25, opts.bucketMB == nil
   if type(self.bucketMB) ~= 'number' or not (self.bucketMB > 0) then -- luacheck: ignore 581 (rejects NaN)
      fail('bucketMB must be a positive number, got %s', tostring(opts.bucketMB))
   end
   self.algorithm = opts.algorithm
   self.collectiveOpts = self.algorithm and { algorithm = self.algorithm } or nil
   self.overlap = opts.overlap ~= false
   self.dist = opts.dist or require 'moontorch.dist'
   if self.dist.initialized and not self.dist.initialized() then self.dist.init({}) end
   self.train = model.train
   self.output, self.gradInput = model.output, model.gradInput
   self:_build(true)
end

-- the persistent non-parameter tensors: running_* fields, modules in listModules order and
-- fields sorted by name so every rank lists them alike
local function findBuffers(model)
   local list, seen = {}, {}
   for _, m in ipairs(model:listModules()) do
      if not seen[m] then
         seen[m] = true
         local names = {}
         for k, v in pairs(m) do
            if type(k) == 'string' and k:find('^running_') and torch.isTensor(v) and v:nElement() > 0 then
               names[#names + 1] = k
            end
         end
         table.sort(names)
         for _, k in ipairs(names) do list[#list + 1] = m[k] end
      end
   end
   return list
end

-- flat parameters, buckets, layout check, broadcast (if asked), hooks
function DataParallel:_build(broadcast)
   self:_unhook()
   local model = self.module
   local ok, p, g = pcall(model.getParameters, model)
   if not ok then fail('%s', tostring(p)) end
   self.params, self.gradParams = p, g
   local params, grads = model:parameters()
   params, grads = params or {}, grads or {}
   local units
   ok, units = pcall(buckets.units, grads, g)
   if not ok then fail('%s', tostring(units)) end
   local esize = #units > 0 and tonumber(T.clib.mt_dtype_size(g:dtype())) or 1
   local list = buckets.layout(units, esize, self.bucketMB * 1024 * 1024)
   for _, b in ipairs(list) do b.grad = g:narrow(1, b.lo + 1, b.hi - b.lo) end
   self.units, self.buckets = units, list
   self.buffers = findBuffers(model)
   if self.compress == 'rgc' then
      -- a rebuild (type()) starts the residuals afresh
      local okc, c = pcall(rgc.Compressor, units, g, self.rgcOptions, self.dist)
      if not okc then fail('%s', tostring(c)) end
      self.compressor = c
   elseif self.compressKind == 'bucket' then
      -- per bucket, launched from the hooks as dense buckets are (dist/codec.lua)
      local ctx = { name = self.compress, grad = g, units = units, buckets = list, grads = grads, dist = self.dist,
         collectiveOpts = self.collectiveOpts }
      local okc, c = pcall(require(COMPRESSORS.BY_NAME[self.compress].module).new, ctx, self.codecOptions)
      if not okc then fail('%s', tostring(c)) end
      self.codec = c
   end
   -- check before broadcasting: a broadcast between different layouts would not line up
   self:_checkLayout(buckets.signature(params, list, self.buffers))
   if broadcast then self:broadcastParameters() end
   self:_hook()
   self._tuneBuckets = self.bucketAuto and self.compress == 'none' and self.dist.size() > 1
   if self.compress == 'auto' then
      -- per bucket, compression where the performance model says it pays (dist/autocompress.lua)
      local okc, a = pcall(require('moontorch.dist.autocompress').new, self, self.autoOptions)
      if not okc then fail('%s', tostring(a):gsub('^dist%.DataParallel: ', '')) end
      self.auto = a
   end
end

-- every rank must have built the same layout (same model, same bucketMB, same type)
function DataParallel:_checkLayout(sig)
   local d = self.dist
   local n, k = d.size(), #sig
   local all = d.allgather(torch.DoubleTensor(n * k), torch.DoubleTensor(sig))
   local function show(v)
      local s = {}
      for i, f in ipairs(buckets.FIELDS) do s[i] = ('%s %d'):format(f, v[i]) end
      return table.concat(s, ', ')
   end
   for r = 0, n - 1 do
      local theirs = {}
      for i = 1, k do theirs[i] = all[r * k + i] end
      for i = 1, k do
         if theirs[i] ~= sig[i] then
            fail('the model or its bucket layout differs between ranks: rank %d has %s but rank %d has %s '
               .. '(same model, type and bucketMB on every rank?)', d.rank(), show(sig), r, show(theirs))
         end
      end
   end
end

-- rank 0's parameters and buffers to every rank (construction does it; call it again after
-- changing parameters on one rank only, e.g. loading a checkpoint on rank 0)
function DataParallel:broadcastParameters()
   local d = self.dist
   if self.params:nElement() > 0 then d.broadcast(self.params, 0) end
   for _, t in ipairs(self.buffers) do d.broadcast(t, 0) end
   return self
end

---------------------------------------------------------------------------------------------
-- Hooks. A module owning parameters counts as done with them when its outermost backward or
-- accGradParameters call returns (backward usually calls accGradParameters: depth counts so
-- it is one event). Each bucket needs one event per appearance of each module touching it.
local function install(dp, m, entry)
   local origBackward, origAcc = m.backward, m.accGradParameters
   entry.saved = { backward = rawget(m, 'backward'), accGradParameters = rawget(m, 'accGradParameters') }
   local function leave()
      entry.depth = entry.depth - 1
      if entry.depth == 0 then
         if dp._t0 then entry.doneAt = now() - dp._t0 end
         if dp._active then dp:_ready(entry) end
      end
   end
   m.backward = function(mod, input, gradOutput, scale)
      entry.depth = entry.depth + 1
      local gi = origBackward(mod, input, gradOutput, scale)
      leave()
      return gi
   end
   m.accGradParameters = function(mod, input, gradOutput, scale)
      entry.depth = entry.depth + 1
      origAcc(mod, input, gradOutput, scale)
      leave()
   end
end

function DataParallel:_hook()
   local count, order = {}, {}
   for _, m in ipairs(self.module:listModules()) do
      if m.modules == nil and m:parameters() then
         if not count[m] then order[#order + 1] = m end
         count[m] = (count[m] or 0) + 1
      end
   end
   local base, need, covered = self.gradParams:storageOffset() - 1, {}, {}
   local index = {}
   for i, u in ipairs(self.units) do index[u] = i end
   self.entries = {}
   for _, m in ipairs(order) do
      local _, grads = m:parameters()
      local touch, seen, mine = {}, {}, {}
      for _, g in ipairs(grads or {}) do
         local u = g:nElement() > 0 and buckets.find(self.units, g:storageOffset() - 1 - base)
         if u then
            covered[u] = true
            mine[#mine + 1] = index[u]
            if not seen[u.bucket] then
               seen[u.bucket] = true
               touch[#touch + 1] = u.bucket
               need[u.bucket] = (need[u.bucket] or 0) + count[m]
            end
         end
      end
      if #touch > 0 then
         local entry = { module = m, touch = touch, depth = 0, units = mine }
         install(self, m, entry)
         self.entries[#self.entries + 1] = entry
      end
   end
   for b, bk in ipairs(self.buckets) do
      bk.need = need[b] or 0
      -- a gradient no hooked module owns: this bucket waits for the end of backward
      for _, u in ipairs(bk.units) do
         if not covered[self.units[u]] then bk.need = math.huge end
      end
   end
end

function DataParallel:_unhook()
   for _, e in ipairs(self.entries or {}) do
      e.module.backward, e.module.accGradParameters = e.saved.backward, e.saved.accGradParameters
   end
   self.entries = {}
end

---------------------------------------------------------------------------------------------
-- One synchronisation: _begin, hook events (_ready), _finish (or _abort on error).
function DataParallel:_begin(active)
   for _, bk in ipairs(self.buckets) do bk.ready, bk.handle = 0, nil end
   for _, e in ipairs(self.entries) do e.depth, e.doneAt = 0, nil end
   -- compressed: one exchange after backward, no bucket launched from the hooks; auto: the
   -- dense buckets launch from the hooks, and the hooks time each gradient for the model
   -- rgc per bucket (overlap, float32, float wire, no clipping): launched from the hooks too
   local c = self.compressor
   self._rgcBuckets = c and not self.auto and self.overlap and c:perBucket() or false
   if self._rgcBuckets then c:begin(self.gradParams, self.params) end
   self._next, self._active = 1, active and (not c or self.auto ~= nil or self._rgcBuckets)
   self._t0 = (self.auto or self._tuneBuckets) and now() or nil
end

-- a compressed bucket (compress = 'auto') is skipped: the compressor sends it after backward
function DataParallel:_launch(b)
   local bk = self.buckets[b]
   if self._rgcBuckets then
      self.compressor:launch(bk.lo, bk.hi)
   elseif self.codec then
      bk.handle = self.codec:launch(b, bk)
   elseif not bk.compressed then
      if self.auto then self.auto:beforeLaunch(bk) end
      bk.handle = self.dist.allreduceAsync(bk.grad, 'avg', self.collectiveOpts)
   end
   self._next = b + 1
end

function DataParallel:_ready(entry)
   local list = self.buckets
   for _, b in ipairs(entry.touch) do
      local bk = list[b]
      if bk.handle then
         fail('%s produced gradients after its bucket %d was sent (is it called more often than it appears in '
            .. 'the model?); use overlap = false', tostring(entry.module), b)
      end
      bk.ready = bk.ready + 1
   end
   -- launch in index order, the same on every rank
   local b = self._next
   while b <= #list and (list[b].compressed or list[b].ready >= list[b].need) do
      self:_launch(b)
      b = b + 1
   end
end

function DataParallel:_finish()
   self._active = false
   if self.auto then return self:_finishAuto() end
   if self._rgcBuckets then
      for b = self._next, #self.buckets do self:_launch(b) end
      self.stats = self.compressor:complete()
      return
   end
   if self.compressor then
      self.stats = self.compressor:step(self.gradParams, self.params, self.lossScale)
      return
   end
   for b = self._next, #self.buckets do self:_launch(b) end
   for _, bk in ipairs(self.buckets) do
      bk.handle:wait()
      bk.handle = nil
   end
   if self.codec then self.stats = self.codec:finish() end
   if self._tuneBuckets and self._t0 then self:_chooseBuckets() end
end

-- per unit: the seconds from backward's start until its gradient was final (this step)
function DataParallel:_readyTimes()
   local ready = {}
   for _, e in ipairs(self.entries) do
      for _, ui in ipairs(e.units) do ready[ui] = math.max(ready[ui] or 0, e.doneAt or 0) end
   end
   return ready
end

-- after the first step without a bucketMB: the bucket size perf.best predicts fastest for the
-- times just measured (every rank's slowest, so every rank picks the same) on this job's cost
-- table; the buckets are laid out again when it differs (collective, like type())
function DataParallel:_chooseBuckets()
   self._tuneBuckets, self._t0 = false, nil
   local perf = require 'moontorch.perf'
   local costs = require('moontorch.perf.network').fromDist(self.dist)
   local ready, nu = self:_readyTimes(), #self.units
   local buf = torch.DoubleTensor(nu + 1)
   for i = 1, nu do buf[i] = ready[i] or 0 end
   buf[nu + 1] = self._fwdTime or 0
   self.dist.allreduce(buf, 'max')
   if not costs then return end -- no cost table (model = false): 25 MB stays
   for i = 1, nu do ready[i] = buf[i] end
   local prof = require('moontorch.perf.profile').fromReady(self.units, ready, buf[nu + 1])
   local net = perf.network { table = costs }
   local best = perf.best { profile = prof, network = net, workers = self.dist.size(),
      algorithm = self.algorithm or 'auto', overlap = self.overlap }
   best.profile, best.network = prof, net -- what it was chosen on (dp.bucketChoice)
   self.bucketChoice = best
   if best.bucketMB ~= self.bucketMB then
      local was = self.bucketMB
      self.bucketMB = best.bucketMB
      self:_build(false)
      self._tuneBuckets = false
      if self.dist.rank() == 0 then
         print(('dist.DataParallel: buckets of %g MB (perf.best on this job\'s cost table: %.1f ms predicted, '
            .. '%g MB %.1f ms)'):format(best.bucketMB, best.result.step * 1e3, was, perf.predict { profile = prof,
            network = net, workers = self.dist.size(), algorithm = self.algorithm or 'auto', overlap = self.overlap,
            bucketMB = was }.step * 1e3))
      end
   end
end

function DataParallel:_finishAuto()
   for b = self._next, #self.buckets do self:_launch(b) end
   local handles = {}
   for _, bk in ipairs(self.buckets) do
      if bk.handle then handles[#handles + 1] = bk.handle end
      bk.handle = nil
   end
   self.stats = self.auto:finish(handles)
   self._t0 = nil
   self.auto:observe(self:_readyTimes(), self._fwdTime or 0, self.stats)
end

-- after an error in backward: let the transfers already started end before the gradients
-- are touched again
function DataParallel:_abort()
   self._active = false
   if self._rgcBuckets then self.compressor:abort() end
   for _, bk in ipairs(self.buckets) do
      if bk.handle then pcall(bk.handle.wait, bk.handle) end
      bk.handle = nil
   end
end

local function synced(self, method, input, gradOutput, scale)
   local m = self.module
   if self.skipSync then return m[method](m, input, gradOutput, scale) end
   self:_begin(self.overlap)
   local ok, r = pcall(m[method], m, input, gradOutput, scale)
   if not ok then
      self:_abort()
      error(r, 0)
   end
   self:_finish()
   return r
end

---------------------------------------------------------------------------------------------
-- The module interface

-- channelsLast(): the wrapped model's convolution weights stored channels-last
-- (nn.Module:channelsLast); flat parameters and buckets keep their spans, so every rank must
-- do it alike (train.Trainer{layout = 'nhwc'} does).
function DataParallel:channelsLast()
   self.module:channelsLast()
   return self
end

function DataParallel:updateOutput(input)
   self.output = self.module:updateOutput(input)
   return self.output
end

function DataParallel:forward(input)
   local t0 = (self.auto or self._tuneBuckets) and now()
   self.output = self.module:forward(input)
   if t0 then self._fwdTime = now() - t0 end
   return self.output
end

function DataParallel:backward(input, gradOutput, scale)
   self.gradInput = synced(self, 'backward', input, gradOutput, scale)
   return self.gradInput
end

function DataParallel:updateGradInput(input, gradOutput)
   self.gradInput = self.module:updateGradInput(input, gradOutput)
   return self.gradInput
end

function DataParallel:accGradParameters(input, gradOutput, scale)
   synced(self, 'accGradParameters', input, gradOutput, scale)
end

-- average the gradients over the ranks now (manual loops, gradient accumulation)
function DataParallel:allreduceGradients()
   self:_begin(false)
   self:_finish()
   return self.gradParams
end

-- noSync(true): backward leaves the gradients local (accumulation steps); noSync(false): the
-- next backward (or allreduceGradients) averages everything accumulated
function DataParallel:noSync(on)
   self.skipSync = on ~= false
   return self
end

-- Per-rank state that a checkpoint must carry besides the (shared) parameters: the
-- compressor's residuals and velocities (nil without compression). localState() returns
-- tensors by name and metadata; setLocalState(tensors, meta) restores them.
function DataParallel:localState()
   if self.auto then return self.auto:state() end
   if self.compressor then return self.compressor:state() end
   if self.codec then return self.codec:state() end
end

function DataParallel:setLocalState(tensors, meta)
   if self.auto then
      local ok, err = pcall(self.auto.load, self.auto, tensors, meta)
      if not ok then fail('setLocalState: %s', tostring(err)) end
      return
   end
   local c = self.compressor or self.codec
   if not c then fail('setLocalState: this DataParallel does not compress; it has no local state') end
   local ok, err = pcall(c.load, c, tensors, meta)
   if not ok then fail('setLocalState: %s', tostring(err)) end
end

-- whether gradients are compressed (compress is not 'none'): dp.stats then has the step's counters
function DataParallel:compressing() return self.compress ~= 'none' end

function DataParallel:parameters() return self.module:parameters() end
function DataParallel:getParameters() return self.params, self.gradParams end

-- the tensor holding the averaged update after backward: the gradients, or the compressor's
-- float32 update of a half model
function DataParallel:updates()
   return self.compressor and self.compressor.work or self.gradParams
end

function DataParallel:zeroGradParameters()
   if self.gradParams:nElement() > 0 then self.gradParams:zero() end
end

function DataParallel:updateParameters(lr)
   if self.params:nElement() > 0 then self.params:add(-lr, self.gradParams) end
end

function DataParallel:training()
   self.train = true
   self.module:training()
end

function DataParallel:evaluate()
   self.train = false
   self.module:evaluate()
end

-- reset every rank's weights alike: reset, then rank 0's values everywhere (collective)
function DataParallel:reset(...)
   self.module:reset(...)
   return self:broadcastParameters()
end

-- converts the model and rebuilds the buckets (collective: the layout is checked again)
function DataParallel:type(typename, tensorCache)
   if not typename then return self.module:type() end
   self:_unhook()
   self.module:type(typename, tensorCache)
   self.output, self.gradInput = self.module.output, self.module.gradInput
   self:_build(false)
   return self
end

-- traversal sees the wrapped model only, so train.state checkpoints of dp and of the bare
-- model are interchangeable
function DataParallel:listModules() return self.module:listModules() end
function DataParallel:apply(callback) return self.module:apply(callback) end
function DataParallel:findModules(typename, container) return self.module:findModules(typename, container) end

-- a copy would share the hooks and the communicator: wrap a clone of the model instead
function DataParallel:clone()
   fail('cannot be cloned; clone dp.module and wrap the copy in a DataParallel of its own')
end

function DataParallel:clearState()
   self.module:clearState()
   return self
end

function DataParallel:__tostring__()
   local n = #self.buckets
   local head = ('%s(%d bucket%s of <= %g MB%s%s)'):format(NAME, n, n == 1 and '' or 's', self.bucketMB,
      self.overlap and ', overlapped' or '', self.algorithm and (', ' .. self.algorithm) or '')
   if self.auto then
      head = head:sub(1, -2) .. ', compress auto: ' .. self.auto:summary() .. ')'
   elseif self.compressor then
      local o = self.compressor.o
      head = head:sub(1, -2) .. (', rgc density %g %s, %s wire)'):format(o.density, o.method, o.wire)
   elseif self.codec then
      local o = self.codec.o
      head = head:sub(1, -2) .. ', ' .. self.compress .. (o.rank and (' rank ' .. o.rank) or '')
         .. (o.start > 0 and (' after ' .. o.start .. ' dense steps') or '') .. ')'
   end
   return head .. ' {\n  ' .. (tostring(self.module):gsub('\n', '\n  ')) .. '\n}'
end

return ns.DataParallel
