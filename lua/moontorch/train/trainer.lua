-- train.Trainer: the parts of the epoch loop, which a recipe writes out as
--   for epoch = trainer.startEpoch, trainer.lastEpoch do
--      local tr = trainer:trainEpoch(epoch)   -- nil when stopped inside the epoch (stopAfterIter)
--      if not tr then break end
--      local va = trainer:validate(epoch)
--      trainer:record(epoch, tr, va)          -- report, log.csv, plot.svg, TensorBoard scalars
--      trainer:checkpoint(epoch)
--   end
--   local last, best = trainer:finish()
-- and trainer:fit() runs as it is. Per batch: the scheduled learning rate, one optimizer step
-- (Trainer:step: zero, forward, criterion, backward, optimizer step), loss / top-1 / images/s /
-- data wait on a progress bar; per epoch: validation (loss, top-1, top-5), a CSV row, an SVG
-- plot, TensorBoard scalars and a checkpoint; every checkpointEvery batches a mid-epoch
-- checkpoint that resumes exactly.
-- Sources (data.Loader, data.Synthetic or any table like them) give nbatches(), run(epoch,
-- first) -> iterator of (input, target, info{count, skipped, wait}), errors() and free().
-- Exactness: epoch e's data depend on (seed, e) only, and a mid-epoch checkpoint keeps the
-- generator's state, so a resumed run repeats the uninterrupted one bit for bit.
-- Data-parallel (o.dist = require 'moontorch.dist', the model a dist.DataParallel, each source
-- giving this rank its slice of every batch): the epoch's loss, accuracy and image counts are
-- summed over the ranks, and only rank 0 shows progress, reports and writes files.
-- A parameter server (the model a dist.ParameterServer): its servers step instead of the
-- optimizer, checkpoints hold their state (gathered by rank 0) and -resume restores it, and
-- the epoch's rows gain the ps_* counters (read staleness, wait, bytes) of every worker.
-- Mixed precision (o.scaler = optim.GradScaler{...}): each step goes through the scaler, which
-- scales the loss gradient, skips steps whose gradients overflow and adjusts the scale; the
-- epoch's rows gain loss_scale and skipped_steps. Gradient accumulation (o.accumulate = K):
-- each batch is cut into K micro-batches whose gradients add up, weighted by their share of
-- the batch, before one optimizer step (with dist, only the last one is allreduced); for a
-- model without BatchNorm the step equals one taken on the whole batch.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local state = require 'moontorch.train.state'
local topk = require('moontorch.train.meter').topk
local progress = require 'moontorch.util.progress'
local logger = require 'moontorch.util.csvlog'
local plot = require 'moontorch.util.plot'
local fs = require 'moontorch.io.fs'

local Trainer = {}
Trainer.__index = Trainer

local COLUMNS = { 'epoch', 'train_loss', 'train_top1', 'val_loss', 'val_top1', 'val_top5', 'lr', 'seconds',
   'images_per_sec', 'data_wait_ms', 'skipped' }

-- the default CSV row: every column above
local function default_row(epoch, tr, va)
   return { epoch = epoch, train_loss = tr.loss, train_top1 = tr.top1, val_loss = va.loss, val_top1 = va.top1,
      val_top5 = va.top5, lr = tr.lr, seconds = tr.seconds, images_per_sec = tr.images_per_sec,
      data_wait_ms = tr.wait_ms, skipped = tr.skipped, comm_MB = tr.comm_MB, density = tr.density,
      select_ms = tr.select_ms, exchange_ms = tr.exchange_ms, loss_scale = tr.loss_scale,
      skipped_steps = tr.skipped_steps }
end
-- with a compressing DataParallel, its counters join the default columns
local COMM_COLUMNS = { 'comm_MB', 'density', 'select_ms', 'exchange_ms' }
-- with a loss scaler, its scale at the epoch's end and the steps it skipped in the epoch
local SCALER_COLUMNS = { 'loss_scale', 'skipped_steps' }
-- with a parameter server (Trainer:serverCounters), whatever columns the recipe chose
local PS_COLUMNS = { 'ps_staleness', 'ps_stale_max', 'ps_wait_ms', 'ps_held_ms', 'ps_push_MB', 'ps_pull_MB',
   'ps_hist', 'ps_wait_ms_by_worker' }

-- o: model, criterion, optimizer (an optim function), config, schedule (iteration from 0 ->
-- rate), train, val, nEpochs; optional: trainBatches / valBatches (caps), device ('cpu' |
-- 'cuda'), name (for messages), save (folder; nil: no files), checkpointEvery (batches; 0:
-- epoch ends only), stopAfter (epoch), stopAfterIter (iteration), format and meta (checkpoint
-- metadata), columns + row(epoch, tr, va) (CSV), plot = { title =, acc = column },
-- tensorboard = { tag = column }, report(epoch, tr, va), quiet, showWait, scaler
-- (optim.GradScaler), accumulate (micro-batches per batch, default 1), inputType (the tensor
-- type inputs are converted to, for a model in another dtype than its data), layout ('nchw',
-- the default, or 'nhwc': each 4-d input batch is stored channels-last, and on CUDA the
-- model's convolution weights too (nn.Module:channelsLast, so cuDNN reads NHWC filters as they
-- are; the CPU convolution wants NCHW filters and would copy NHWC ones on every pass); the
-- values, and so the losses, are the same), dist (moontorch.dist, with a dist.DataParallel
-- model), stopOnSignal (SIGINT and SIGTERM stop training at the end of the step they arrive in,
-- every rank at the same one, with a checkpoint there; trainEpoch then returns nil and
-- self.stopped = { signal =, epoch = epochs done, batch = batches done of the next }). Any other
-- key is an error naming it. logEvery = N (with save): TensorBoard scalars every N training
-- iterations, means over those N over every rank: iter/loss, iter/lr, iter/images_per_sec,
-- iter/data_wait_ms (rank 0's), the step being the iteration.
local OPTIONS = {}
for k in ([[model criterion optimizer config schedule train val nEpochs trainBatches valBatches device name save
   checkpointEvery stopAfter stopAfterIter format meta columns row plot tensorboard report quiet showWait scaler
   accumulate inputType layout dist stopOnSignal logEvery]]):gmatch('%S+') do OPTIONS[k] = true end

local function new(o)
   if type(o) ~= 'table' then error('train.Trainer: expected a table of options', 3) end
   local self = setmetatable({}, Trainer)
   for k, v in pairs(o) do
      if not OPTIONS[k] then
         local known = {}
         for name in pairs(OPTIONS) do known[#known + 1] = name end
         table.sort(known)
         error(("train.Trainer: unknown option '%s' (%s)"):format(tostring(k), table.concat(known, ', ')), 3)
      end
      self[k] = v
   end
   for _, k in ipairs { 'model', 'criterion', 'optimizer', 'train', 'val' } do
      if self[k] == nil then
         error(("train.Trainer: option '%s' is required (model, criterion, optimizer, train, val; and for "
            .. 'fit, schedule and nEpochs)'):format(k), 3)
      end
   end
   self.name = self.name or 'train'
   -- every rank writes its own local state (a compressor's residuals) into this folder
   self.localSave = self.save
   if self.dist and self.dist.rank() ~= 0 then self.quiet, self.save, self.report = true, nil, nil end
   self.trainBatches = math.min(self.trainBatches or math.huge, self.train:nbatches())
   self.valBatches = math.min(self.valBatches or math.huge, self.val:nbatches())
   if self.trainBatches < 1 then self:fail('the training data do not make one batch') end
   self.layout = self.layout or 'nchw'
   if self.layout ~= 'nchw' and self.layout ~= 'nhwc' then
      self:fail("layout must be 'nchw' or 'nhwc', got %s", tostring(self.layout))
   end
   if self.layout == 'nhwc' and self.device == 'cuda' then self.model:channelsLast() end
   self.params, self.gradParams = self.model:getParameters()
   self.optimState, self.startEpoch, self.firstBatch = {}, 1, 1
   self.best, self.last, self.reported, self.buf = { top1 = -1, top5 = 0, epoch = 0 }, {}, {}, {}
   self.losses = {} -- every training step's loss, by iteration (this process's steps only)
   self.accumulate = self.accumulate or 1
   if type(self.accumulate) ~= 'number' or self.accumulate < 1 or self.accumulate % 1 ~= 0 then
      self:fail('accumulate must be a whole number >= 1 of micro-batches, got %s', tostring(self.accumulate))
   end
   local compressing = self.model.compressing and self.model:compressing()
   if not self.columns and (compressing or self.scaler) then
      self.columns = {}
      for _, c in ipairs(COLUMNS) do self.columns[#self.columns + 1] = c end
      local comm = compressing and COMM_COLUMNS or {}
      for _, c in ipairs(comm) do self.columns[#self.columns + 1] = c end
      for _, c in ipairs(self.scaler and SCALER_COLUMNS or {}) do self.columns[#self.columns + 1] = c end
   end
   self.columns, self.row = self.columns or COLUMNS, self.row or default_row
   if self.model.counters then
      local cols = { unpack(self.columns) }
      for _, c in ipairs(PS_COLUMNS) do cols[#cols + 1] = c end
      self.columns = cols
   end
   self.lastEpoch = (self.stopAfter or 0) > 0 and math.min(self.nEpochs, self.stopAfter) or self.nEpochs
   if self.stopOnSignal then T.check(T.clib.mt_signals_catch(1), 'train.Trainer') end
   return self
end

-- One step's sums over every rank (a collective with dist; every rank calls it every step): the
-- loss times the rows it counts, the correct rows, the rows, the loss's rows; and the stop
-- signal any rank caught (SIGINT before SIGTERM; nil: none). The progress bar shows these, so
-- the bar and the epoch's summary are one meter over all ranks. A parameter server's workers
-- run apart by design (staleness): there each rank's own sums, and stop signals are heard at
-- epoch starts only (epochStart: that collective).
local STOP_SIGNALS = { 2, 15 } -- SIGINT, SIGTERM: what mt_signals_catch records
function Trainer:stepTotals(lossSum, correct, rows, lossRows, epochStart)
   local caught = self.stopOnSignal and T.clib.mt_signals_caught() or 0
   local v = { lossSum, correct, rows, lossRows }
   for i, sig in ipairs(STOP_SIGNALS) do v[4 + i] = caught == sig and 1 or 0 end
   local d = self.dist
   local many = d and d.size() > 1
   if many and not epochStart and self.model.serverStep then
      v[5], v[6] = 0, 0
   elseif many then
      self.totals = self.totals or torch.DoubleTensor(#v)
      for i = 1, #v do self.totals[i] = v[i] end
      d.allreduce(self.totals, 'sum')
      for i = 1, #v do v[i] = self.totals[i] end
   end
   local sig
   for i = #STOP_SIGNALS, 1, -1 do if v[4 + i] > 0 then sig = STOP_SIGNALS[i] end end
   return { loss = v[1], correct = v[2], rows = v[3], lossRows = v[4], signal = sig }
end

-- the stop signal any rank caught, or nil (a collective with dist, at an epoch's start)
function Trainer:signalled()
   if not self.stopOnSignal then return nil end
   return self:stepTotals(0, 0, 0, 0, true).signal
end

function Trainer:fail(fmt, ...) error(self.name .. ': ' .. fmt:format(...), 0) end

-- the sums of these numbers over every rank (the numbers themselves with one process)
function Trainer:sumRanks(...)
   local dist = self.dist
   if not dist or dist.size() == 1 then return ... end
   local v = { ... }
   local t = torch.DoubleTensor(#v)
   for i = 1, #v do t[i] = v[i] end
   dist.allreduce(t, 'sum')
   for i = 1, #v do v[i] = t[i] end
   return unpack(v)
end

local function num(v) return v == v and v or nil end -- NaN cannot go into JSON metadata

-- An epoch's sums so far, which a checkpoint inside the epoch carries. Each rank sums its own
-- slices, so with several ranks the checkpoint holds every rank's (partial.ranks) and each rank
-- resumes its own: the epoch's totals then add up in the unbroken run's order.
local SUMS = { 'loss', 'top1', 'seen', 'skipped', 'lossSeen' }

local function sums_of(acc)
   local row = {}
   for _, k in ipairs(SUMS) do row[k] = acc[k] or (k == 'lossSeen' and acc.seen) or 0 end
   return row
end

-- acc (this rank's) with every rank's sums and generator state beside it (ranks draw dropout
-- masks for their own slices, so their generators need not agree); a collective: every rank calls it
function Trainer:partialForCheckpoint(acc)
   local p = {}
   for k, v in pairs(acc) do p[k] = v end
   local d, n = self.dist, #SUMS
   if d and d.size() > 1 then
      local mine, all = torch.DoubleTensor(n), torch.DoubleTensor(n * d.size())
      local row = sums_of(acc)
      for i, k in ipairs(SUMS) do mine[i] = row[k] end
      d.allgather(all, mine)
      local rng = torch.getRNGState()
      local rngs = torch.ByteTensor(rng:nElement() * d.size())
      d.allgather(rngs, rng)
      p.ranks = {}
      for r = 1, d.size() do
         p.ranks[r] = { rng = rngs:narrow(1, (r - 1) * rng:nElement() + 1, rng:nElement()):totable() }
         for i, k in ipairs(SUMS) do p.ranks[r][k] = all[(r - 1) * n + i] end
      end
   end
   return p
end

-- this rank's share of a checkpoint's partial epoch: its own sums when the checkpoint was written
-- by as many ranks; on another number of ranks rank 0 takes the totals and the others start at 0
function Trainer:partialFromCheckpoint(partial)
   if not partial then return nil end
   local acc = {}
   for k, v in pairs(partial) do acc[k] = v end
   local ranks = partial.ranks or { sums_of(partial) }
   acc.ranks = nil
   local size, rank = self.dist and self.dist.size() or 1, self.dist and self.dist.rank() or 0
   -- this rank's own generator; on another number of ranks every rank takes rank 0's
   if #ranks == size and ranks[rank + 1].rng then self.rng = ranks[rank + 1].rng end
   for _, k in ipairs(SUMS) do
      if #ranks == size then
         acc[k] = ranks[rank + 1][k]
      else
         local total = 0
         for _, row in ipairs(ranks) do total = total + row[k] end
         acc[k] = rank == 0 and total or 0
      end
   end
   return acc
end

-- The checkpoint after epochsDone epochs and batch batches of the next (0: at the epoch's end;
-- partial: the epoch's sums so far), when there is a save folder; and on every rank its local
-- state beside it (a compressing DataParallel's residuals).
function Trainer:checkpoint(epochsDone, batch, partial)
   batch = batch or 0
   if self.save then self:checkpointShared(epochsDone, batch, partial) end
   self:checkpointLocal(epochsDone, batch)
end

function Trainer:checkpointShared(epochsDone, batch, partial)
   local meta = { format = self.format, epoch = epochsDone, batch = batch, partial = partial,
      iteration = epochsDone * self.trainBatches + batch,
      rng = batch > 0 and torch.getRNGState():totable() or nil, -- JSON: the state's bytes
      train_loss = self.last.loss, val_top1 = num(self.last.top1), val_top5 = num(self.last.top5),
      best_top1 = self.best.top1 >= 0 and self.best.top1 or nil, best_top5 = self.best.top5,
      best_epoch = self.best.epoch, layout = self.layout ~= 'nchw' and self.layout or nil }
   for k, v in pairs(self.meta or {}) do meta[k] = v end
   local path = self.save .. '/checkpoint.safetensors'
   if not self.model.withServerState then return state.save(path, self.model, self.optimState, meta) end
   -- a parameter server's parameters and momentum are the servers' (gathered at this clock)
   self.model:withServerState(function(server) state.save(path, self.model, server, meta) end)
end

-- this rank's file of local state beside the checkpoint
function Trainer:localPath(dir)
   local d = self.dist
   return ('%s/local-rank%d-of-%d.safetensors'):format(dir, d and d.rank() or 0, d and d.size() or 1)
end

-- every rank, at every checkpoint: the model's per-rank state (a compressing DataParallel's
-- residuals), tagged with the iteration so that resume pairs it with the right checkpoint
function Trainer:checkpointLocal(epochsDone, batch)
   if not self.localSave or not self.model.localState then return end
   local tensors, meta = self.model:localState()
   if not tensors then return end
   meta.iteration = epochsDone * self.trainBatches + batch
   fs.mkdir_p(self.localSave)
   require('moontorch.checkpoint').save(self:localPath(self.localSave), tensors, meta)
end

-- continue from a checkpoint (or a folder holding checkpoint.safetensors); check(meta) may
-- refuse it by raising an error
function Trainer:resume(path, check)
   if fs.isdir(path) then path = path .. '/checkpoint.safetensors' end
   if not fs.isfile(path) then self:fail('-resume %s: no such checkpoint', path) end
   -- the optimizer's flat state lists each channels-last weight in NHWC order: it only lines up
   -- with a model in the layout it was written from
   local function check_layout(meta, p)
      local was = meta.layout or 'nchw'
      if was ~= self.layout then
         error(('%s was written with layout %s; resume it with layout %s (-layout %s)'):format(p, was, was, was), 0)
      end
      if check then check(meta, p) end
   end
   local ok, st, meta = pcall(state.load, path, self.model, { format = self.format, check = check_layout })
   if not ok then
      if tostring(st):sub(1, #self.name + 2) == self.name .. ': ' then error(st, 0) end
      self:fail('-resume %s', tostring(st))
   end
   self.optimState = st
   if self.model.restoreServers then -- collective: the servers' state and every worker's clock
      self.model:restoreServers(tonumber(st.ps_started) == 1 and st.ps_momentum or nil, tonumber(st.ps_clock)
         or (tonumber(meta.epoch) or 0) * self.trainBatches + (tonumber(meta.batch) or 0))
      self.optimState = {}
   end
   self.startEpoch = (tonumber(meta.epoch) or 0) + 1
   self.firstBatch = (tonumber(meta.batch) or 0) + 1
   self.rng = meta.rng
   self.partial = self:partialFromCheckpoint(meta.partial) -- (this rank's rng when every rank's was kept)
   self.best = { top1 = tonumber(meta.best_top1) or -1, top5 = tonumber(meta.best_top5) or 0,
      epoch = tonumber(meta.best_epoch) or 0 }
   self.last = { loss = tonumber(meta.train_loss), top1 = tonumber(meta.val_top1), top5 = tonumber(meta.val_top5) }
   -- this rank's local state, when the model has some and it was saved at the same iteration
   if self.model.setLocalState and self.model:localState() then
      local lp = self:localPath(path:match('^(.*)/[^/]*$') or '.')
      local it = (tonumber(meta.epoch) or 0) * self.trainBatches + (tonumber(meta.batch) or 0)
      local okl, t, lm = pcall(require('moontorch.checkpoint').load, lp)
      if okl and tonumber(lm.iteration) == it then
         self.model:setLocalState(t, lm)
      else
         io.stderr:write(('%s: -resume: no local state of this rank at iteration %d (%s); it starts empty\n'):format(
            self.name, it, okl and ('found iteration ' .. tostring(lm.iteration)) or lp))
      end
   end
   if not (self.dist and self.dist.rank() ~= 0) then -- said once
      print(('resumed from %s after epoch %d%s'):format(path, self.startEpoch - 1,
         self.firstBatch > 1 and (' and batch %d of epoch %d'):format(self.firstBatch - 1, self.startEpoch) or ''))
   end
   return meta
end

-- a progress bar of n steps (first of them done before, on a resume) whose line also shows the
-- mean time per batch spent waiting for data
function Trainer:bar(n, title, first)
   -- tty nil: the bar redraws in place when stdout is a terminal; quiet: never
   local tty = nil
   if self.quiet then tty = false end
   local bar = progress.new(n, { title = title, tty = tty, silent = self.quiet, first = first })
   bar.wait, bar.showWait = 0, self.showWait
   bar.line = function(b, i)
      local s = progress.line(b, i)
      if b.showWait and i > b.first then s = s .. ('  data %.1f ms'):format(1000 * b.wait / (i - b.first)) end
      return s
   end
   return bar
end

-- CPU batches go to the GPU, and inputs to the model's dtype (o.inputType, e.g.
-- 'torch.HalfTensor' for a float16 model fed float batches), through buffers reused by every batch
function Trainer:toDevice(x, y)
   local buf, cuda = self.buf, self.device == 'cuda' and x:device() == -1
   local want = self.inputType or x:type()
   if cuda then want = T.typename((T.parse_typename(want)), 0) end -- the same dtype on the GPU
   if x:type() ~= want then
      if not buf.x or buf.x:type() ~= want then buf.x = x:type(want) else buf.x:resize(x:size()):copy(x) end
      x = buf.x
   end
   if self.layout == 'nhwc' and x:dim() == 4 and not x:isChannelsLast() then
      if buf.xcl and buf.xcl:type() == x:type() and buf.xcl:isSameSizeAs(x) then buf.xcl:copy(x)
      else buf.xcl = x:channelsLast() end
      x = buf.xcl
   end
   if cuda then
      buf.y = buf.y or torch.CudaLongTensor()
      buf.y:resize(y:size()):copy(y)
      y = buf.y
   end
   return x, y
end

-- The optimizer step of feval (which computes the loss and the gradient), the same call for
-- every wrapper: through the loss scaler when there is one (which skips steps whose gradients
-- overflow), telling a compressing DataParallel the scale first (it unscales what it sends).
function Trainer:optimize(feval)
   local scaler = self.scaler
   if self.model.serverStep then return self.model:serverStep(feval, self.config) end -- the servers step
   if not scaler then return self.optimizer(feval, self.params, self.config, self.optimState) end
   if self.model.updates then self.model.lossScale = scaler:getScale(self.optimState) end
   local _, _, stepped = scaler:step(self.optimizer, feval, self.params, self.config, self.optimState)
   self.skippedRun = stepped and 0 or (self.skippedRun or 0) + 1
   if self.skippedRun >= 50 then
      self:fail('the last %d steps all had inf/NaN gradients (loss scale %g); '
         .. 'lower the learning rate or use bf16/fp32', self.skippedRun, scaler:getScale(self.optimState))
   end
end

-- what the optimizer steps with: the gradient, or a compressing DataParallel's update (float32
-- for a half model, scaled by the loss scale it was told)
function Trainer:updates() return self.model.updates and self.model:updates() or self.gradParams end

-- One optimizer step on a batch: zero, forward, criterion, backward, optimizer step. Returns
-- its loss (the mean over its rows) and its correct count. With accumulate = K the batch goes
-- through forward/backward as K micro-batches (rows split as evenly as possible), each one's
-- parameter gradients weighted by its share of the rows (with dist, only the last allreduces).
function Trainer:step(x, y)
   local model, criterion, scaler, loss, correct = self.model, self.criterion, self.scaler, 0, 0
   local n = x:size(1)
   local k = math.min(self.accumulate, n)
   local function feval()
      self.gradParams:zero()
      loss, correct = 0, 0
      for i = 1, k do
         local lo, hi = math.floor(n * (i - 1) / k), math.floor(n * i / k)
         local xi, yi = x, y
         if k > 1 then xi, yi = x:narrow(1, lo + 1, hi - lo), y:narrow(1, lo + 1, hi - lo) end
         local w = (hi - lo) / n
         if k > 1 and model.noSync then model:noSync(i < k) end
         local out = model:forward(xi)
         local l = criterion:forward(out, yi)
         local gradOut = criterion:backward(out, yi)
         model:backward(xi, scaler and scaler:scale(gradOut) or gradOut, w)
         loss, correct = loss + l * w, correct + topk(out, yi, { 1 })[1]
      end
      return loss, self:updates()
   end
   self:optimize(feval)
   return loss, correct
end

-- Every image of this rank's slice was undecodable: its peers still average gradients and
-- step, so take part with a zero gradient and take the same step (through the scaler too:
-- every rank must skip the same overflowing steps).
function Trainer:emptyStep()
   self:optimize(function()
      self.gradParams:zero()
      self.model:allreduceGradients()
      return 0, self:updates()
   end)
end

-- one training epoch from batch self.firstBatch; its statistics, or nil when stopped inside it
function Trainer:trainEpoch(epoch)
   if not self.schedule then self:fail('training needs schedule (iteration from 0 -> learning rate)') end
   local nb, first = self.trainBatches, self.firstBatch
   if self.save and not self.log then self:openLogs() end
   local ps0 = self.model.counters and self.model:counters()
   local acc = self.partial or { loss = 0, top1 = 0, seen = 0, skipped = 0, wait = 0, skippedSteps = 0 }
   acc.skippedSteps = acc.skippedSteps or 0
   local skippedBefore = self.optimState.skippedSteps or 0
   local sig = first == 1 and self:signalled() -- during the last epoch's end: stop before this one
   if sig then
      self.stopped = { signal = sig, epoch = epoch - 1, batch = 0 }
      return nil
   end
   local bar = self:bar(nb, ('epoch %d/%d'):format(epoch, self.nEpochs), first - 1)
   self.model:training()
   local batches = self.train:run(epoch, first)
   if self.rng then -- where the interrupted epoch was (bytes; older checkpoints hold {seed=, offset=})
      torch.setRNGState(self.rng.seed and self.rng or torch.ByteTensor(self.rng))
   end
   self.partial, self.rng, self.firstBatch = nil, nil, 1
   local lr
   for b = first, nb do
      local input, target, info = batches()
      if not input then break end
      local iter = (epoch - 1) * nb + b -- optimizer steps done after this batch
      lr = self.schedule(iter - 1)
      acc.skipped, acc.wait = acc.skipped + (info.skipped or 0), acc.wait + (info.wait or 0)
      bar.wait = bar.wait + (info.wait or 0)
      local stepLoss, stepCorrect, stepRows, stepLossRows = 0, 0, 0, 0
      if info.count == 0 and self.dist and self.dist.size() > 1 then
         self.config.learningRate = lr
         self:emptyStep()
      elseif info.count > 0 then -- (0 when every image of the batch was undecodable)
         self.config.learningRate = lr
         local loss, correct = self:step(self:toDevice(input, target))
         local overflow = self.scaler and self.optimState.lastSkipped
         if loss ~= loss and not overflow then
            self:fail('the loss became NaN at epoch %d batch %d (lr %g)', epoch, b, lr)
         end
         -- a skipped step's loss may be inf: the epoch's mean loss is over the finite ones
         local counted = (loss == loss and math.abs(loss) < math.huge) and info.count or 0
         local cs = self.model.stats -- a compressing DataParallel's counters of this step
         if cs then
            local c = acc.comm or { steps = 0, bytes = 0, density = 0, select = 0, exchange = 0 }
            acc.comm = c
            c.steps, c.bytes, c.density = c.steps + 1, c.bytes + cs.bytes, c.density + cs.density
            c.select, c.exchange = c.select + cs.selectTime, c.exchange + cs.exchangeTime
         end
         acc.loss, acc.top1, acc.seen = acc.loss + (counted > 0 and loss * counted or 0), acc.top1 + correct,
            acc.seen + info.count
         acc.lossSeen = (acc.lossSeen or acc.seen - info.count) + counted
         self.losses[iter] = loss
         stepLoss, stepCorrect, stepRows, stepLossRows = counted > 0 and loss * counted or 0, correct, info.count,
            counted
      end
      local tot = self:stepTotals(stepLoss, stepCorrect, stepRows, stepLossRows)
      if self.tb and (self.logEvery or 0) > 0 then self:logIteration(iter, tot, lr, info.wait or 0) end
      if tot.rows > 0 then
         bar:update(b, { loss = tot.lossRows > 0 and tot.loss / tot.lossRows or nil, lossWeight = tot.lossRows,
            acc = tot.correct / tot.rows, weight = tot.rows, images = tot.rows })
      end
      sig = b < nb and tot.signal
      if b < nb and (sig or (self.checkpointEvery or 0) > 0 and b % self.checkpointEvery == 0) then
         acc.skippedSteps = acc.skippedSteps + (self.optimState.skippedSteps or 0) - skippedBefore
         skippedBefore = self.optimState.skippedSteps or 0
         self:checkpoint(epoch - 1, b, self:partialForCheckpoint(acc))
      end
      if sig then
         if not self.quiet then bar:finish() end
         self.stopped = { signal = sig, epoch = epoch - 1, batch = b }
         return nil
      end
      if (self.stopAfterIter or 0) > 0 and iter >= self.stopAfterIter and b < nb then return nil end
   end
   local st = self.quiet and bar:stats() or bar:finish()
   local loss, top1, seen, skipped, lossSeen = self:sumRanks(acc.loss, acc.top1, acc.seen, acc.skipped,
      acc.lossSeen or acc.seen)
   if seen == 0 then self:fail('epoch %d delivered no training image', epoch) end
   -- every rank's images since this run began the epoch (a parameter server's bar is its rank's)
   local ips = (self.model.serverStep and seen ~= acc.seen) and seen / math.max(st.seconds, 1e-9) or st.images_per_sec
   local c = acc.comm
   local sk = acc.skippedSteps + (self.optimState.skippedSteps or 0) - skippedBefore
   self:reportSkipped(self.train, 'training')
   return { ps = ps0 and self:serverCounters(ps0),
      loss = lossSeen > 0 and loss / lossSeen or 0 / 0, top1 = top1 / seen, lr = lr, seconds = st.seconds,
      images_per_sec = ips, wait_ms = 1000 * acc.wait / nb, skipped = skipped,
      -- this rank's means per step, with gradient compression
      compress = c and self.model.compress, comm_MB = c and c.bytes / c.steps / 2 ^ 20,
      density = c and c.density / c.steps,
      select_ms = c and 1000 * c.select / c.steps, exchange_ms = c and 1000 * c.exchange / c.steps,
      loss_scale = self.scaler and self.scaler:getScale(self.optimState), skipped_steps = self.scaler and sk }
end

-- every logEvery iterations, the TensorBoard scalars of the iterations since the last ones
function Trainer:logIteration(iter, tot, lr, wait)
   local w = self.window or { loss = 0, lossRows = 0, rows = 0, wait = 0, steps = 0, t0 = progress.now() }
   self.window = w
   w.loss, w.lossRows, w.rows = w.loss + tot.loss, w.lossRows + tot.lossRows, w.rows + tot.rows
   w.wait, w.steps = w.wait + wait, w.steps + 1
   if iter % self.logEvery ~= 0 then return end
   local now = progress.now()
   if w.lossRows > 0 then self.tb:scalar('iter/loss', w.loss / w.lossRows, iter) end
   self.tb:scalar('iter/lr', lr, iter)
   self.tb:scalar('iter/images_per_sec', w.rows / math.max(now - w.t0, 1e-9), iter)
   self.tb:scalar('iter/data_wait_ms', 1000 * w.wait / w.steps, iter)
   self.window = { loss = 0, lossRows = 0, rows = 0, wait = 0, steps = 0, t0 = now }
end

-- A parameter server's counters since `before` (model:counters()), over every worker (a
-- collective): the pulls' mean and largest observed staleness and their histogram ("0:812 1:40"),
-- per step the ms a worker waited for its pull (mean of the workers, and each one's) and of that
-- the ms a server held it for the bound, and the MB pushed and pulled by a worker.
function Trainer:serverCounters(before)
   local now = self.model:counters()
   local f = { now.pulls - before.pulls, now.clocks - before.clocks, now.waitSeconds - before.waitSeconds,
      now.heldSeconds - before.heldSeconds, now.bytesPushed - before.bytesPushed, now.bytesPulled - before.bytesPulled }
   local H, n = #now.staleness, #f
   for i = 1, H do f[n + i] = now.staleness[i] - before.staleness[i] end
   local d, k = self.dist, #f
   local N = d and d.size() or 1
   local all = torch.DoubleTensor(N * k)
   if N > 1 then d.allgather(all, torch.DoubleTensor(f)) else all:copy(torch.DoubleTensor(f)) end
   local sum, waits = {}, {}
   for j = 1, k do sum[j] = 0 end
   for r = 0, N - 1 do
      for j = 1, k do sum[j] = sum[j] + all[r * k + j] end
      waits[r + 1] = ('%.2f'):format(1000 * all[r * k + 3] / math.max(all[r * k + 2], 1))
   end
   local pulls, steps, weighted, top, hist = 0, math.max(sum[2], 1), 0, 0, {}
   for i = 1, H do
      local c = sum[n + i]
      if c > 0 then
         pulls, weighted, top = pulls + c, weighted + (i - 1) * c, i - 1
         hist[#hist + 1] = ('%d%s:%d'):format(i - 1, i == H and '+' or '', c)
      end
   end
   return { ps_staleness = pulls > 0 and weighted / pulls or 0, ps_stale_max = top, ps_hist = table.concat(hist, ' '),
      ps_wait_ms = 1000 * sum[3] / steps, ps_held_ms = 1000 * sum[4] / steps, ps_push_MB = sum[5] / steps / 2 ^ 20,
      ps_pull_MB = sum[6] / steps / 2 ^ 20, ps_wait_ms_by_worker = table.concat(waits, '|'), hist = hist }
end

function Trainer:validate(epoch)
   local model, criterion, nb = self.model, self.criterion, self.valBatches
   local bar = self:bar(nb, '  validation')
   model:evaluate()
   local lossSum, top1, top5, seen, b = 0, 0, 0, 0, 0
   for input, target, info in self.val:run(epoch) do
      b = b + 1
      if info.count > 0 then
         local x, y = self:toDevice(input, target)
         local out = model:forward(x)
         local loss = criterion:forward(out, y)
         local c = topk(out, y, { 1, 5 })
         lossSum, top1, top5, seen = lossSum + loss * info.count, top1 + c[1], top5 + c[2], seen + info.count
         bar:update(b, { loss = loss, acc = c[1] / info.count, weight = info.count, images = info.count })
      end
      if b >= nb then break end
   end
   if not self.quiet then bar:finish() end
   model:training()
   lossSum, top1, top5, seen = self:sumRanks(lossSum, top1, top5, seen)
   self:reportSkipped(self.val, 'validation')
   if seen == 0 then return { loss = 0 / 0, top1 = 0 / 0, top5 = 0 / 0 } end
   return { loss = lossSum / seen, top1 = top1 / seen, top5 = top5 / seen }
end

-- name each undecodable image once (a loader skips it again every epoch)
function Trainer:reportSkipped(src, split)
   local fresh = {}
   for _, e in ipairs(src:errors()) do
      if not self.reported[e] then self.reported[e] = true fresh[#fresh + 1] = e end
   end
   for i = 1, math.min(#fresh, 5) do io.stderr:write(self.name, ': skipped ', split, ' image: ', fresh[i], '\n') end
   if #fresh > 5 then
      io.stderr:write(('%s: ... and %d more skipped %s images\n'):format(self.name, #fresh - 5, split))
   end
end

-- log.csv (with only the rows before where this run starts), and TensorBoard's event file
function Trainer:openLogs()
   fs.mkdir_p(self.save)
   local start = self.startEpoch
   self.log = logger.new(self.save .. '/log.csv', self.columns, { append = start > 1 or self.firstBatch > 1,
      keep = function(r) return tonumber(r.epoch) and r.epoch < start end })
   if self.tensorboard or self.model.counters or (self.logEvery or 0) > 0 then
      self.tb = require('moontorch.io.tensorboard').Writer(self.save)
   end
end

-- An epoch's end: the best and last validation, the report, and with a save folder the CSV
-- row, the plot and the TensorBoard scalars.
function Trainer:record(epoch, tr, va)
   if va.top1 > self.best.top1 then self.best = { top1 = va.top1, top5 = va.top5, epoch = epoch } end
   self.last = { loss = tr.loss, top1 = va.top1, top5 = va.top5 }
   if self.report then self.report(epoch, tr, va) end
   if not self.save then return end
   local row = self.row(epoch, tr, va)
   for key, v in pairs(tr.ps or {}) do
      if row[key] == nil and key:find('^ps_') then row[key] = v end
   end
   self.log:add(row)
   if self.plot then
      local h = { epoch = {}, train_loss = {}, test_acc = {} }
      for _, r in ipairs(self.log:rows()) do
         h.epoch[#h.epoch + 1] = tonumber(r.epoch)
         h.train_loss[#h.train_loss + 1] = tonumber(r.train_loss)
         h.test_acc[#h.test_acc + 1] = tonumber(r[self.plot.acc])
      end
      plot.write(self.save .. '/plot.svg', h, self.plot.title)
   end
   if self.tb then
      for tag, col in pairs(self.tensorboard or {}) do
         local v = row[col]
         if v == v then self.tb:scalar(tag, v, epoch) end
      end
      if tr.ps then self:serverScalars(tr.ps, epoch) end
   end
end

-- a parameter server's epoch in TensorBoard: the means, the pulls at each staleness, each
-- worker's wait
function Trainer:serverScalars(ps, epoch)
   for _, c in ipairs { 'ps_staleness', 'ps_wait_ms', 'ps_held_ms', 'ps_push_MB', 'ps_pull_MB' } do
      self.tb:scalar('ps/' .. c:sub(4), ps[c], epoch)
   end
   for _, h in ipairs(ps.hist) do
      local k, c = h:match('^(%d+)%+?:(%d+)$')
      self.tb:scalar('ps/pulls_at_staleness_' .. k, tonumber(c), epoch)
   end
   local r = 0
   for w in ps.ps_wait_ms_by_worker:gmatch('[^|]+') do
      self.tb:scalar(('ps/wait_ms_worker%d'):format(r), tonumber(w), epoch)
      r = r + 1
   end
end

-- closes the logs; returns the last epoch's { loss, top1, top5 } and the best validation
function Trainer:finish()
   if self.stopOnSignal then T.check(T.clib.mt_signals_catch(0), 'train.Trainer') end
   if self.log then self.log:close() end
   if self.tb then self.tb:close() end
   self.log, self.tb = nil, nil
   return self.last, self.best
end

-- runs the epochs left, as the loop at the top of this file
function Trainer:fit()
   if type(self.lastEpoch) ~= 'number' then
      self:fail('fit needs nEpochs (a number), got %s', tostring(self.nEpochs))
   end
   for epoch = self.startEpoch, self.lastEpoch do
      local tr = self:trainEpoch(epoch)
      if not tr then break end -- stopped mid-epoch (stopAfterIter)
      local va = self:validate(epoch)
      self:record(epoch, tr, va)
      self:checkpoint(epoch)
   end
   return self:finish()
end

-- train.Trainer{...} makes one; train.Trainer.fit etc. are the methods, for subclassing
return setmetatable({}, { __index = Trainer, __call = function(_, o)
   local t = new(o) -- (not a tail call: errors point at the caller's line)
   return t
end })
