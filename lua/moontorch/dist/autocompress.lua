-- dist/autocompress.lua: DataParallel{compress = 'auto'}. Per bucket, residual gradient
-- compression (dist/rgc.lua) is used only where the performance model (moontorch.perf) predicts
-- a shorter step on this run's network with this run's measured selection cost; the rest of the
-- buckets are allreduced dense, overlapped with backward as without compression.
-- How it decides: simulate.step's 'auto' choice over DataParallel's own units and buckets. The
-- first decision (at construction) knows no compute times and assumes none; after the first step
-- the per-tensor times backward made each gradient ready, the forward time and the selection cost
-- (every rank's slowest, so all ranks decide alike) replace the guesses, and every `every` steps
-- the measured figures are compared with those the decision used: a drift above 20% decides
-- again. A tensor that stops being compressed sends its residual with its next gradient, and its
-- local velocity is averaged into the global one; one that starts gets the global velocity.
-- Momentum and weight decay live here for every tensor (as with compress = 'rgc': run the
-- optimizer with momentum = 0 and weightDecay = 0): the compressor keeps them for its tensors,
-- the dense buckets get optim.sgd's momentum on their averaged gradient.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local rgc = require 'moontorch.dist.rgc'
local perfnet = require 'moontorch.perf.network'
local simulate = require 'moontorch.perf.simulate'
local perfprofile = require 'moontorch.perf.profile'
local dlib = require 'moontorch.dist.lib'
local ffi = require 'ffi'

local A = {}
A.__index = A

local DRIFT = 0.2
-- Compression is chosen only when the model predicts a step this much shorter than dense: the
-- cost table and the selection cost are measurements, and their noise alone (a loaded machine's
-- dist.init) must not turn a tie into a compressed tensor.
local MARGIN = 0.05

local function now() return require('moontorch.util.progress').now() end
local function fail(fmt, ...) error('dist.DataParallel: ' .. fmt:format(...), 0) end

-- seconds per element of o's top-k selection on this rank, timed on a random vector (the
-- accumulation pass before it is not counted: a dense bucket pays the same pass for its momentum)
local function measureSelection(dist, n, o)
   local v = torch.FloatTensor(n):normal()
   local cap = dlib.topkCapacity(n, o.density, o.method, o.slack)
   local idx, val = torch.IntTensor(cap), torch.FloatTensor(cap)
   local count = ffi.new('int64_t[1]')
   local ts = {}
   for r = 1, 3 do
      local t0 = now()
      T.check(dlib.C.mt_dist_topk(v.h, o.density, dlib.TOPK_METHODS[o.method], o.slack, idx.h, val.h, count),
         'dist.DataParallel')
      ts[r] = now() - t0
   end
   table.sort(ts)
   local t = torch.DoubleTensor(1):fill(ts[2] / n)
   dist.allreduce(t, 'max')
   return t[1]
end

-- the network the model is given: a perf.network, a preset name, a table path, or (nil) the cost
-- table dist.init measured for this job
local function networkOf(spec, dist)
   if spec == nil then
      local t = perfnet.fromDist(dist)
      if not t then
         fail("compress = 'auto' needs a network: dist.init measured no cost table here (model = false?); give "
            .. "network = a preset (%s) or a table file", table.concat(perfnet.presets(), ', '))
      end
      return perfnet.network { table = t, name = ('this job (%d ranks, measured by dist.init)'):format(t.ranks) }
   end
   if type(spec) == 'string' then
      if perfnet.PRESETS[spec] then return perfnet.network { preset = spec } end
      local f = io.open(spec, 'r')
      if not f then
         fail("network '%s' is neither a preset (%s) nor a readable cost table file", spec,
            table.concat(perfnet.presets(), ', '))
      end
      f:close()
      return perfnet.network { table = spec }
   end
   if type(spec) == 'table' and spec.allreduce then return spec end
   return perfnet.network(spec)
end

function A.new(dp, opts)
   local g = dp.gradParams
   if g:nElement() > 0 and g:dtype() ~= T.FLOAT then
      fail("compress = 'auto' needs float32 gradients, got %s (use compress = 'rgc' for a half model)", g:type())
   end
   local o = rgc.options(dp.rgcOptions)
   if o.clip then fail("compress = 'auto' does not clip (clip needs compress = 'rgc')") end
   local self = setmetatable({ dp = dp, o = o, steps = 0, every = opts.every or 100, decisions = 0 }, A)
   self.net = networkOf(opts.network, dp.dist)
   local largest = 1
   for _, u in ipairs(dp.units) do largest = math.max(largest, u.hi - u.lo) end
   self.selectionCost = dp.dist.size() > 1 and measureSelection(dp.dist, math.min(largest, 2 ^ 20), o) or 0
   if (o.momentum > 0 or o.weightDecay > 0) and g:nElement() > 0 then self.vel = g:clone():zero() end
   -- on the CPU, selection and the transfers share the cores: selection waits for the dense
   -- buckets (and the model knows it); on a GPU it runs while they travel
   self.onCPU = g:nElement() == 0 or tonumber(T.clib.mt_tensor_device(g.h)) == T.CPU_DEVICE
   self.ready = {} -- per unit: seconds from the start of backward to its gradient being final
   self.forwardTime = 0
   self:decide('start')
   return self
end

-- the profile the model sees: one layer per unit, each ready when measured
function A:profile() return perfprofile.fromReady(self.dp.units, self.ready, self.forwardTime) end

function A:predict(compress)
   local dp = self.dp
   return simulate.step(self:profile(), self.net, { workers = dp.dist.size(), algorithm = dp.algorithm or 'auto',
      bucketMB = dp.bucketMB, overlap = dp.overlap, compress = compress, density = self.o.density,
      selectionCost = self.selectionCost, wire = rgc.WIRE_BYTES[self.o.wire], minSize = self.o.minSize,
      selectionOverlap = not self.onCPU })
end

-- runs the model and applies its choice (collective where the choice changes: every rank has the
-- same inputs, so the same choice)
function A:decide(why)
   local r = self:predict('auto')
   local dense = self:predict('none')
   if next(r.sparse) ~= nil and r.step > dense.step * (1 - MARGIN) then r = dense end
   self.predicted = r.step
   self.basis = { backward = r.backward, selection = self.selectionCost }
   local sparse = {}
   for i in pairs(r.sparse or {}) do sparse[i] = true end
   self:apply(sparse)
   self.decisions = self.decisions + 1
   self.why = why
   if self.dp.dist.rank() == 0 and (why == 'start' or self.changed) then
      local comp = self:predict('rgc')
      print(('dist.DataParallel compress=auto (%s, %s; selection %.2f ns/element): %s; predicted step %.1f ms '
         .. '(dense %.1f, rgc %.1f)'):format(why, self.net.name, self.selectionCost * 1e9, self:summary(), r.step * 1e3,
         dense.step * 1e3, comp.step * 1e3))
   end
end

-- 'bucket 1 (24.9 MB): rgc 3/12 tensors, bucket 2 (...): dense'
function A:summary()
   local parts = {}
   for b, bk in ipairs(self.dp.buckets) do
      local n, s = #bk.units, 0
      for _, ui in ipairs(bk.units) do if self.sparse[ui] then s = s + 1 end end
      parts[#parts + 1] = ('bucket %d (%.2f MB): %s'):format(b, bk.bytes / 2 ^ 20,
         s > 0 and ('rgc %d/%d tensors'):format(s, n) or 'dense')
   end
   return table.concat(parts, ', ')
end

-- the global velocity of unit ranges kept by a compressor's dense part, into/out of self.vel
local function denseVel(c, vel, into)
   if not (c and c.dvel and vel) then return end
   for _, u in ipairs(c.dense) do
      local len = u.hi - u.lo
      local mine, theirs = vel:narrow(1, u.lo + 1, len), c.dvel:narrow(1, u.pos + 1, len)
      if into then mine:copy(theirs) else theirs:copy(mine) end
   end
end

function A:apply(sparse)
   local dp, old = self.dp, self.compressor
   local same = self.sparse ~= nil
   for i in ipairs(dp.units) do same = same and (self.sparse[i] == true) == (sparse[i] == true) end
   self.changed = not same
   if same then return end
   local byLo = {}
   for i, u in ipairs(dp.units) do if sparse[i] then byLo[u.lo] = true end end
   -- what the old compressor held: residuals and local velocities by unit start
   local oldSparse = {}
   if old then
      denseVel(old, self.vel, true)
      for _, u in ipairs(old.sparse) do oldSparse[u.lo] = u end
   end
   self.flush = {}
   for lo, u in pairs(oldSparse) do
      if not byLo[lo] then
         -- leaving: its residual goes out with its next gradient, its velocity joins the global one
         self.flush[#self.flush + 1] = { lo = u.lo, hi = u.hi, v = u.v }
         if u.u and self.vel then
            local avg = u.u:clone()
            dp.dist.allreduce(avg, 'avg')
            self.vel:narrow(1, u.lo + 1, u.hi - u.lo):copy(avg)
         end
      end
   end
   table.sort(self.flush, function(a, b) return a.lo < b.lo end)
   local units = {}
   for b, bk in ipairs(dp.buckets) do
      bk.compressed = false
      for _, ui in ipairs(bk.units) do bk.compressed = bk.compressed or sparse[ui] == true end
      if bk.compressed then for _, ui in ipairs(bk.units) do units[#units + 1] = dp.units[ui] end end
      bk.flush = {}
      for _, f in ipairs(self.flush) do
         if f.lo >= bk.lo and f.hi <= bk.hi and not bk.compressed then bk.flush[#bk.flush + 1] = f end
      end
   end
   local c
   if #units > 0 then
      local o = {}
      for k, v in pairs(dp.rgcOptions) do o[k] = v end
      o.sparseUnits = byLo
      c = rgc.Compressor(units, dp.gradParams, o, dp.dist)
      c.steps = old and old.steps or 0
      for _, u in ipairs(c.sparse) do
         local was = oldSparse[u.lo]
         if was then
            u.v:copy(was.v)
            if u.u and was.u then u.u:copy(was.u) end
         elseif u.u and self.vel then
            u.u:copy(self.vel:narrow(1, u.lo + 1, u.hi - u.lo)) -- starts from the global velocity
         end
      end
      denseVel(c, self.vel, false)
   end
   -- a flushed residual inside a compressed bucket joins the gradient before the compressor packs it
   for _, f in ipairs(self.flush) do
      for _, bk in ipairs(dp.buckets) do
         if bk.compressed and f.lo >= bk.lo and f.hi <= bk.hi then f.pendingInCompressor = true end
      end
   end
   self.sparse, self.compressor = sparse, c
   dp.compressor = c
end

-- a dense bucket about to be sent: any residual flushed into it joins the gradient once
function A:beforeLaunch(bk)
   if bk.flush and #bk.flush > 0 then
      for _, f in ipairs(bk.flush) do bk.grad:narrow(1, f.lo - bk.lo + 1, f.hi - f.lo):add(f.v) end
      bk.flush = {}
   end
end

-- after backward: the compressor's step (its collectives queue behind the dense buckets), then
-- the dense buckets' momentum; returns the step's counters
function A:finish(handles)
   local dp, o = self.dp, self.o
   local g = dp.gradParams
   -- residuals flushed into a compressed bucket's dense part join the gradient before it is packed
   for _, f in ipairs(self.flush or {}) do
      if f.pendingInCompressor then
         g:narrow(1, f.lo + 1, f.hi - f.lo):add(f.v)
         f.pendingInCompressor = nil
      end
   end
   if self.onCPU then for _, h in ipairs(handles) do h:wait() end end
   local t0 = now()
   local stats
   if self.compressor then stats = self.compressor:step(g, dp.params) end
   for _, h in ipairs(handles) do h:wait() end
   local vel = self.vel
   local denseBytes = 0
   for _, bk in ipairs(dp.buckets) do
      if not bk.compressed then
         denseBytes = denseBytes + bk.bytes
         if vel then
            local gb = bk.grad
            local pb = dp.params:narrow(1, bk.lo + 1, bk.hi - bk.lo)
            local vb = vel:narrow(1, bk.lo + 1, bk.hi - bk.lo)
            if o.weightDecay > 0 then gb:add(o.weightDecay, pb) end
            if o.momentum > 0 then
               vb:mul(o.momentum):add(gb)
               if o.nesterov then gb:add(o.momentum, vb) else gb:copy(vb) end
            end
         end
      end
   end
   self.flush = {}
   local N = dp.dist.size()
   local ringBytes = 2 * (N - 1) / math.max(N, 1) * denseBytes
   stats = stats or { density = 1, selectTime = 0, exchangeTime = 0, bytes = 0, sparseElements = 0 }
   stats.bytes = (stats.bytes or 0) + ringBytes
   stats.exchangeTime = now() - t0 - (stats.selectTime or 0) -- the sparse and the dense exchanges
   stats.auto = { buckets = self:summary(), decisions = self.decisions, predicted = self.predicted, why = self.why }
   self.steps = self.steps + 1
   return stats
end

-- the measured figures of this step (ready: per unit, seconds from backward's start), every
-- rank's slowest; decides again after the first step and on a drift above 20%
function A:observe(ready, forwardTime, stats)
   local check = self.steps == 1 or self.steps % self.every == 0
   if not check then return end
   local dp = self.dp
   local nu = #dp.units
   local buf = torch.DoubleTensor(nu + 2)
   for i = 1, nu do buf[i] = ready[i] or 0 end
   buf[nu + 1] = forwardTime
   local se = stats and stats.sparseElements or 0
   buf[nu + 2] = (se > 0 and stats.selectTime / se) or self.selectionCost
   dp.dist.allreduce(buf, 'max')
   for i = 1, nu do self.ready[i] = buf[i] end
   self.forwardTime = buf[nu + 1]
   local sel = buf[nu + 2]
   local oldBwd, oldSel = self.basis.backward, self.basis.selection
   local bwd = 0
   for i = 1, nu do bwd = math.max(bwd, self.ready[i]) end
   local function drift(a, b) return math.abs(a - b) > DRIFT * math.max(math.abs(b), 1e-9) end
   if self.steps == 1 or drift(bwd, oldBwd) or drift(sel, oldSel) then
      self.selectionCost = sel
      self:decide(self.steps == 1 and 'measured' or 'drift')
   end
end

-- the per-rank state for a checkpoint: the compressor's, the global velocity, the choice
function A:state()
   local t, meta = {}, { autoSparse = {} }
   if self.compressor then t, meta = self.compressor:state() end
   meta = meta or {}
   meta.autoSparse = {}
   for i in ipairs(self.dp.units) do if self.sparse[i] then meta.autoSparse[#meta.autoSparse + 1] = i end end
   if self.vel then t['auto.vel'] = self.vel end
   return t, meta
end

function A:load(tensors, meta)
   local sparse = {}
   for _, i in ipairs(meta.autoSparse or {}) do sparse[tonumber(i)] = true end
   self.sparse = nil -- rebuild from the saved choice, nothing carried
   self.compressor = nil
   self:apply(sparse)
   self.flush = {}
   for _, bk in ipairs(self.dp.buckets) do bk.flush = {} end
   if self.compressor then self.compressor:load(tensors, meta) end
   if self.vel then
      local v = tensors['auto.vel']
      if not v or v:nElement() ~= self.vel:nElement() then fail('setLocalState: the saved state lacks auto.vel') end
      self.vel:copy(v)
   end
end

return A
