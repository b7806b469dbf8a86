-- dist/rgc.lua: residual gradient compression (Deep Gradient Compression, Lin et al. 2018;
-- RedSync, Fang et al. 2019) for dist.DataParallel. Each rank sends, per large gradient, only
-- its elements of largest magnitude as (int32 index, value) pairs; what it did not send stays
-- in a local residual and is added to later gradients, so nothing is dropped, only delayed.
--
--   local c = rgc.Compressor(units, grad, opts, dist)   -- units: {lo=, hi=} ranges of grad
--   local stats = c:step(grad, params)                   -- collective; grad := the update
--
-- One step (collective, every rank the same calls in the same order):
--   1. local clipping: the rank's gradient is scaled to norm <= clip / sqrt(N) (DGC sec. 3.2)
--   2. weight decay joins the gradient before anything is accumulated: d = g + wd * w
--   3. parameters with fewer than minSize elements (biases, batch-norm) go dense: packed into
--      one buffer and averaged by one allreduce; their momentum is the ordinary global one
--   4. the others, with momentum correction: u = m*u + d (local velocity), v = v + u (the
--      residual is of the velocity; v += d + m*u with Nesterov); the top `density` of |v| is
--      selected (dist.topk's methods), cleared from v and, with maskMomentum, from u
--   5. exchange: the largest count over the ranks (one tiny allreduce), then one allgather of
--      the indices and one of the values, padded to that count (values in `wire` precision);
--      every rank sums all pairs into the zeroed sparse part of grad and divides by N; with a
--      half or bfloat16 wire the rounding error of each sent value stays in the residual
-- The optimizer then runs without momentum and weight decay (they happened here), e.g.
-- optim.sgd with momentum = 0, weightDecay = 0: the update is w -= lr * grad.
-- When the sparse exchange would move more bytes than a dense allreduce (density high, or
-- density = 1), the step goes dense instead (denseFallback): every residual is sent whole and
-- nothing is masked, which is then exactly momentum SGD on the averaged gradient.
-- Density warm-up: `warmup` lists densities used one after the other over the first
-- warmupSteps steps (evenly split), then `density` (DGC: 25%, 6.25%, 1.5625%, 0.4%, 0.1%).
-- Selection defaults to sampled (DGC's): a threshold from a sample and one gathering pass, k to
-- k*(1+slack) pairs; on one core here 30 M floats take 50 ms, against 77 for exact (a sample, then
-- counting and gathering passes, then exact on the candidates), 106 for threshold and 270 for
-- trimmed (csrc/cpu/dist_topk.c). Tensors too short for the sample go exact.
-- exchange = 'hierarchical' sends the pairs through dist.sparseAllreduce instead (csrc/dist/
-- sparse.c): gathered and merged at each node's leader, merged sets (or a dense ring) among the
-- leaders, the sum back into the node; what ranks select in common travels once, and no rank
-- receives more than the dense sizes whatever the rank count.
-- State (residuals, velocities, step count) is per rank: state()/load() move it in and out of
-- a checkpoint of its own (the Trainer writes one file per rank beside its checkpoint).
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local dlib = require 'moontorch.dist.lib'
local COMPRESSORS = require 'moontorch.dist.compressors'
require 'moontorch.dist.topk'

local C, D = T.clib, dlib.C
local rgc = {}

local DEFAULTS = {
   density = 0.001, method = 'sampled', slack = 0.2, momentum = 0, nesterov = false, weightDecay = 0,
   maskMomentum = true, clip = false, minSize = 16384, wire = 'float', denseFallback = true,
   warmup = { 0.25, 0.0625, 0.015625, 0.004 }, warmupSteps = 0, algorithm = false,
   sparseUnits = false, -- instead of minSize: a set of unit starts (lo) that go sparse (compress = 'auto')
   exchange = 'allgather', -- or 'hierarchical' (dist.sparseAllreduce; float wire)
}
rgc.DEFAULTS = DEFAULTS
local WIRE = { float = T.FLOAT, half = T.HALF, bfloat16 = T.BFLOAT16 }
local WIRE_BYTES = { float = 4, half = 2, bfloat16 = 2 }
local METHODS = dlib.TOPK_METHODS
rgc.WIRE_BYTES = WIRE_BYTES -- bytes per sent value
local count = ffi.new('int64_t[1]')

local function fail(fmt, ...) error('dist.rgc: ' .. fmt:format(...), 0) end

local function now()
   return require('moontorch.util.progress').now()
end

-- checked options, defaults filled in
function rgc.options(o)
   local r = {}
   for k, v in pairs(DEFAULTS) do r[k] = v end
   for k, v in pairs(o or {}) do
      if DEFAULTS[k] == nil then
         local names = {}
         for name in pairs(DEFAULTS) do names[#names + 1] = name end
         table.sort(names)
         fail("unknown option '%s' (%s)", tostring(k), table.concat(names, ', '))
      end
      r[k] = v
   end
   local function num(name, lo, hi, open)
      local v = r[name]
      if type(v) ~= 'number' or v ~= v or v < lo or v > hi or (open and v == lo) then
         fail('%s must be a number in %s%g, %g], got %s', name, open and '(' or '[', lo, hi, tostring(v))
      end
   end
   num('density', 0, 1, true)
   num('slack', 0, 1e6)
   num('momentum', 0, 1)
   num('weightDecay', 0, math.huge)
   num('minSize', 0, math.huge)
   num('warmupSteps', 0, math.huge)
   if not METHODS[r.method] then
      fail("method must be exact, threshold, trimmed or sampled, got '%s'", tostring(r.method))
   end
   if not WIRE[r.wire] then fail("wire must be float, half or bfloat16, got '%s'", tostring(r.wire)) end
   if r.exchange ~= 'allgather' and r.exchange ~= 'hierarchical' then
      fail("exchange must be allgather or hierarchical, got '%s'", tostring(r.exchange))
   end
   if r.exchange == 'hierarchical' and r.wire ~= 'float' then
      fail("the hierarchical exchange sums on the way and sends float32 values: wire must be float, got '%s'", r.wire)
   end
   if r.clip ~= false and (type(r.clip) ~= 'number' or not (r.clip > 0)) then -- luacheck: ignore 581 (rejects NaN)
      fail('clip must be false or a positive number, got %s', tostring(r.clip))
   end
   if type(r.warmup) ~= 'table' then fail('warmup must be a list of densities, got %s', type(r.warmup)) end
   for i, d in ipairs(r.warmup) do
      if type(d) ~= 'number' or not (d > 0 and d <= 1) then
         fail('warmup[%d] must be a density in (0, 1], got %s', i, tostring(d))
      end
   end
   return r
end

local Compressor = {}
Compressor.__index = Compressor

-- units: { {lo =, hi =}, ... } 0-based [lo, hi) element ranges of grad (disjoint)
-- grad: float32, or float16/bfloat16 (a half model): then the residuals, velocities and the
-- update stay float32 in self.work (see step)
local HALVES = { [T.HALF] = true, [T.BFLOAT16] = true }
function rgc.Compressor(units, grad, opts, dist)
   local o = rgc.options(opts)
   local dt = grad:dtype()
   if dt ~= T.FLOAT and not HALVES[dt] then
      fail('gradients must be float32, float16 or bfloat16, got %s', grad:type())
   end
   local self = setmetatable({ o = o, dist = dist, steps = 0 }, Compressor)
   self.device = tonumber(C.mt_tensor_device(grad.h))
   self.n = grad:nElement()
   if HALVES[dt] then
      self.work = self:_new(T.FLOAT, math.max(self.n, 1)):narrow(1, 1, math.max(self.n, 1))
      if self.n == 0 then self.work = nil end
      self.bad, self.ss = ffi.new('int64_t[1]'), ffi.new('double[1]')
   end
   self.sparse, self.dense = {}, {}
   local list = {}
   for _, u in ipairs(units) do list[#list + 1] = { lo = u.lo, hi = u.hi } end
   table.sort(list, function(a, b) return a.lo < b.lo end) -- a fixed order, the same on every rank
   local nd, ns = 0, 0
   for _, u in ipairs(list) do
      local len = u.hi - u.lo
      if len > 0 then
         local sparse
         if o.sparseUnits then sparse = o.sparseUnits[u.lo] == true else sparse = len >= o.minSize end
         if sparse then
            u.sp = ns -- where it starts in the compressed parameters, one after the other
            u.v = self:_new(T.FLOAT, len):zero()
            if o.momentum > 0 then u.u = self:_new(T.FLOAT, len):zero() end
            self.sparse[#self.sparse + 1] = u
            ns = ns + len
         else
            u.pos = nd
            self.dense[#self.dense + 1] = u
            nd = nd + len
         end
      end
   end
   self.denseElements, self.sparseElements = nd, ns
   if nd > 0 then
      self.dbuf = self:_new(T.FLOAT, nd)
      if o.momentum > 0 then self.dvel = self:_new(T.FLOAT, nd):zero() end
   end
   self.cnt = torch.DoubleTensor(1)
   return self
end

function Compressor:_new(dtype, n) return T.new_tensor(dtype, self.device, { n }) end

-- the density of the coming step (warm-up, then opts.density)
function Compressor:density()
   local o = self.o
   local w = #o.warmup
   if w > 0 and o.warmupSteps > 0 and self.steps < o.warmupSteps then
      return o.warmup[math.min(w, math.floor(self.steps * w / o.warmupSteps) + 1)]
   end
   return o.density
end

-- the warm-up length in steps and the steps already taken (a recipe knows its epoch length
-- only once its data are open, and a resumed run is that far along)
function Compressor:schedule(warmupSteps, steps)
   if type(warmupSteps) ~= 'number' or not (warmupSteps >= 0) then -- luacheck: ignore 581 (rejects NaN)
      fail('warmupSteps must be a number >= 0, got %s', tostring(warmupSteps))
   end
   self.o.warmupSteps = warmupSteps
   if steps ~= nil then self.steps = steps end
end

local capOf = dlib.topkCapacity

-- whether the sparse exchange of this density costs more bytes than a dense allreduce: each
-- rank receives N sets of (index, value) against about 2*(N-1)/N of the gradient for a ring
function Compressor:_goesDense(density)
   if density >= 1 then return true end
   if not self.o.denseFallback then return false end
   local N = self.dist.size()
   local pairs = 0
   for _, u in ipairs(self.sparse) do pairs = pairs + capOf(u.hi - u.lo, density, self.o.method, self.o.slack) end
   local sparseBytes = N * pairs * (4 + WIRE_BYTES[self.o.wire])
   local denseBytes = 2 * math.max(N - 1, 1) / math.max(N, 1) * self.sparseElements * 4
   return sparseBytes >= denseBytes
end

-- momentum correction into the residual, in one pass (dist.rgc.accumulate): d = g + wd * w,
-- u = m*u + d; v += u (or d + m*u with Nesterov)
function Compressor:_accumulate(u, g, p)
   local o = self.o
   T.check(D.mt_dist_rgc_accumulate(u.v.h, o.momentum > 0 and u.u.h or nil, g.h, p and p.h or nil, o.momentum,
      o.nesterov and 1 or 0, p and o.weightDecay or 0), 'dist.rgc')
end

-- u's selection at density into sidx/sval from position `at`: the index and value views and
-- the count k
function Compressor:_select(u, density, at)
   local o = self.o
   local c = capOf(u.hi - u.lo, density, o.method, o.slack)
   local iv, vv = self.sidx:narrow(1, at + 1, c), self.sval:narrow(1, at + 1, c)
   T.check(D.mt_dist_topk(u.v.h, density, METHODS[o.method], o.slack, iv.h, vv.h, count), 'dist.rgc')
   return iv, vv, tonumber(count[0])
end

-- the small parameters' averaged gradient (a span of dbuf from `at`) through their global
-- momentum, in place
function Compressor:_smallMomentum(small, at)
   if not self.dvel then return end
   local o = self.o
   local vel = self.dvel:narrow(1, at + 1, small:nElement())
   vel:mul(o.momentum):add(small)
   if o.nesterov then small:add(o.momentum, vel) else small:copy(vel) end
end

function Compressor:_ensure(name, dtype, n)
   local t = self[name]
   if not t or t:nElement() < n then
      t = self:_new(dtype, math.max(n, 1))
      self[name] = t
   end
   return t
end

-- One step: grad becomes the averaged update direction. Returns the step's counters.
-- Half gradients (fp16/bf16, scaled by a loss scaler's `scale`) go through float32: every rank
-- counts its inf/NaN elements and one tiny allreduce makes them agree; on overflow anywhere the
-- residuals are left alone and the update is inf, so each rank's scaler skips the same step;
-- otherwise the unscaled float32 gradient is compressed and the update, times scale again (fp32
-- has the range), is left in self.work for the optimizer (through its loss scaler).
function Compressor:step(grad, params, scale)
   if self.work then return self:_halfStep(grad, params, scale or 1) end
   local o, d = self.o, self.dist
   local N = d.size()
   local t0 = now()
   if o.clip then
      local norm, thr = grad:norm(), o.clip / math.sqrt(N)
      if norm > thr then grad:mul(thr / norm) end
   end
   -- weight decay joins the small tensors' gradient here and the others' in their accumulation
   -- (only this compressor's tensors: the rest of grad may be DataParallel's dense buckets)
   local wd = o.weightDecay > 0
   if wd and not params then fail('weightDecay needs the parameters: step(grad, params)') end
   if wd then
      for _, u in ipairs(self.dense) do
         local len = u.hi - u.lo
         grad:narrow(1, u.lo + 1, len):add(o.weightDecay, params:narrow(1, u.lo + 1, len))
      end
   end
   local density = self:density()
   local dense = self:_goesDense(density)
   for _, u in ipairs(self.sparse) do
      local len = u.hi - u.lo
      self:_accumulate(u, grad:narrow(1, u.lo + 1, len), wd and params:narrow(1, u.lo + 1, len) or nil)
   end
   -- the dense buffer: small parameters, plus every residual when the step goes dense
   local nd = self.denseElements + (dense and self.sparseElements or 0)
   local dbuf = nd > 0 and self:_ensure('dbuf', T.FLOAT, nd):narrow(1, 1, nd) or nil
   for _, u in ipairs(self.dense) do
      dbuf:narrow(1, u.pos + 1, u.hi - u.lo):copy(grad:narrow(1, u.lo + 1, u.hi - u.lo))
   end
   local pos = 0 -- pairs selected so far
   local hier = false -- the pairs go to dist.sparseAllreduce, indexed into the compressed parameters
   if dense then
      local at = self.denseElements
      for _, u in ipairs(self.sparse) do
         local len = u.hi - u.lo
         dbuf:narrow(1, at + 1, len):copy(u.v)
         u.v:zero()
         at = at + len
      end
   else
      local cap = 0
      for _, u in ipairs(self.sparse) do cap = cap + capOf(u.hi - u.lo, density, o.method, o.slack) end
      self:_ensure('sidx', T.INT, cap)
      self:_ensure('sval', T.FLOAT, cap)
      hier = o.exchange == 'hierarchical'
      for _, u in ipairs(self.sparse) do
         local iv, vv, k = self:_select(u, density, pos)
         local um = (o.maskMomentum and u.u) and u.u.h or nil
         if o.wire ~= 'float' and k > 0 then
            -- what travels is the value rounded to the wire's precision: the rounding error stays
            -- in the residual, so nothing is lost (sent + residual == accumulated still holds)
            local sent, ik = vv:narrow(1, 1, k), iv:narrow(1, 1, k)
            local err = self:_ensure('etmp', T.FLOAT, k):narrow(1, 1, k):copy(sent)
            sent:copy(self:_ensure('wtmp', WIRE[o.wire], k):narrow(1, 1, k):copy(sent))
            err:add(-1, sent)
            T.check(D.mt_dist_rgc_mask(u.v.h, um, ik.h, k, 0), 'dist.rgc')
            T.check(D.mt_dist_rgc_scatter_add(u.v.h, ik.h, err.h, k, 1), 'dist.rgc')
            ik:add(u.lo)
         else
            T.check(D.mt_dist_rgc_mask(u.v.h, um, iv.h, k, hier and u.sp or u.lo), 'dist.rgc')
         end
         pos = pos + k
      end
   end
   local t1 = now()
   -- exchange: the dense part in the background while the sparse sets travel
   local h = dbuf and d.allreduceAsync(dbuf, 'avg', o.algorithm and { algorithm = o.algorithm } or nil)
   local bytes = dbuf and nd * 4 or 0
   local recv = COMPRESSORS.allreduceReceived(bytes, N)
   if hier and #self.sparse > 0 then
      bytes, recv = self:_hierarchical(grad, pos, bytes, recv)
   elseif not dense and #self.sparse > 0 then
      self.cnt[1] = pos
      d.allreduce(self.cnt, 'max')
      local maxc = math.floor(self.cnt[1])
      if maxc > 0 then
         local idx, val = self.sidx, self.sval
         if maxc > pos then
            idx:narrow(1, pos + 1, maxc - pos):fill(-1)
            val:narrow(1, pos + 1, maxc - pos):zero()
         end
         local sendv = val:narrow(1, 1, maxc)
         if o.wire ~= 'float' then
            sendv = self:_ensure('swire', WIRE[o.wire], maxc):narrow(1, 1, maxc):copy(sendv)
         end
         local allIdx = self:_ensure('ridx', T.INT, N * maxc):narrow(1, 1, N * maxc)
         local allVal = self:_ensure('rval', WIRE[o.wire], N * maxc):narrow(1, 1, N * maxc)
         local hi = d.allgatherAsync(allIdx, idx:narrow(1, 1, maxc))
         d.allgather(allVal, sendv)
         hi:wait()
         for _, u in ipairs(self.sparse) do grad:narrow(1, u.lo + 1, u.hi - u.lo):zero() end
         T.check(D.mt_dist_rgc_scatter_add(grad.h, allIdx.h, allVal.h, maxc, 1 / N), 'dist.rgc')
         bytes = bytes + 8 + maxc * (4 + WIRE_BYTES[o.wire])
         recv = recv + COMPRESSORS.allreduceReceived(8, N)
            + COMPRESSORS.allgatherReceived(maxc * (4 + WIRE_BYTES[o.wire]), N)
      else
         for _, u in ipairs(self.sparse) do grad:narrow(1, u.lo + 1, u.hi - u.lo):zero() end
      end
   end
   if h then h:wait() end
   -- back into grad: small parameters with the global momentum, residuals as they came
   if dbuf then
      local nsmall = self.denseElements
      if nsmall > 0 then
         local small = dbuf:narrow(1, 1, nsmall)
         self:_smallMomentum(small, 0)
         for _, u in ipairs(self.dense) do
            grad:narrow(1, u.lo + 1, u.hi - u.lo):copy(small:narrow(1, u.pos + 1, u.hi - u.lo))
         end
      end
      if dense then
         local p = nsmall
         for _, u in ipairs(self.sparse) do
            local len = u.hi - u.lo
            grad:narrow(1, u.lo + 1, len):copy(dbuf:narrow(1, p + 1, len))
            p = p + len
         end
      end
   end
   local t2 = now()
   self.steps = self.steps + 1
   return {
      step = self.steps, density = dense and 1 or (self.sparseElements > 0 and pos / self.sparseElements or 0),
      target = density, dense = dense, bytes = bytes, recvBytes = recv, denseBytes = self.n * 4,
      sparseElements = self.sparseElements, denseElements = self.denseElements, sent = pos,
      selectTime = t1 - t0, exchangeTime = t2 - t1,
   }
end

-- the sparse sets through dist.sparseAllreduce's hierarchical exchange (merged at each node's
-- leader, dense where that is cheaper), into the compressed parameters' places in grad
local EMPTY = { idx = torch.IntTensor(0), val = torch.FloatTensor(0) } -- a rank with no pairs

-- the first n selected pairs (empty tensors when n is 0) from position `at`
function Compressor:_pairs(at, n)
   if n == 0 then return EMPTY.idx, EMPTY.val end
   return self.sidx:narrow(1, at + 1, n), self.sval:narrow(1, at + 1, n)
end

function Compressor:_hierarchical(grad, pos, bytes, recv)
   local sum = self:_ensure('ssum', T.FLOAT, self.sparseElements):narrow(1, 1, self.sparseElements)
   local idx, val = self:_pairs(0, pos)
   local _, st = self.dist.sparseAllreduce(sum, idx, val, { op = 'avg', algorithm = 'hierarchical' })
   for _, u in ipairs(self.sparse) do
      local len = u.hi - u.lo
      grad:narrow(1, u.lo + 1, len):copy(sum:narrow(1, u.sp + 1, len))
   end
   return bytes + pos * 8, recv + st.recvBytes
end

---------------------------------------------------------------------------------------------
-- Per bucket, overlapped with backward: dist.DataParallel calls begin(grad, params) before
-- backward, launch(lo, hi) for each bucket's element range [lo, hi) as backward finishes it
-- (accumulation, selection and masking here, the exchange started on the communication thread:
-- dist.sparseAllreduce with `exchange`, the small parameters by an allreduce), and complete()
-- after backward, which waits, puts the averages into grad and returns the step's counters.
-- The result is step()'s, up to the order of the sums. For float32 gradients, a float wire and
-- no clipping (the norm needs the whole gradient first): perBucket() says; step() does the rest.
function Compressor:perBucket()
   return not self.work and self.o.wire == 'float' and not self.o.clip
end

function Compressor:begin(grad, params)
   local o = self.o
   if o.weightDecay > 0 and not params then fail('weightDecay needs the parameters: begin(grad, params)') end
   local density = self:density()
   local pb = { grad = grad, params = params, density = density, dense = self:_goesDense(density), pos = 0,
      jobs = {}, select = 0 }
   self.pb = pb
   if not pb.dense then -- room for every bucket's pairs at once: their exchanges overlap
      local cap = 0
      for _, u in ipairs(self.sparse) do cap = cap + capOf(u.hi - u.lo, density, o.method, o.slack) end
      self:_ensure('sidx', T.INT, cap)
      self:_ensure('sval', T.FLOAT, cap)
   end
   if self.sparseElements > 0 then self:_ensure('ssum', T.FLOAT, self.sparseElements) end
end

-- the units starting in [lo, hi), of a list sorted by lo
local function within(list, lo, hi)
   local r = {}
   for _, u in ipairs(list) do
      if u.lo >= lo and u.lo < hi then r[#r + 1] = u end
   end
   return r
end

function Compressor:launch(lo, hi)
   local pb, o, d = self.pb, self.o, self.dist
   if not pb then fail('launch before begin') end
   local t0 = now()
   local grad, params, wd = pb.grad, pb.params, o.weightDecay > 0
   local job = { dense = within(self.dense, lo, hi), sparse = within(self.sparse, lo, hi) }
   for _, u in ipairs(job.dense) do -- weight decay, then the average (momentum once it is back)
      local len = u.hi - u.lo
      local g = grad:narrow(1, u.lo + 1, len)
      if wd then g:add(o.weightDecay, params:narrow(1, u.lo + 1, len)) end
      self.dbuf:narrow(1, u.pos + 1, len):copy(g)
   end
   local sp = job.sparse
   if #sp > 0 then
      job.spLo, job.spHi = sp[1].sp, sp[#sp].sp + sp[#sp].hi - sp[#sp].lo
      local sum = self.ssum:narrow(1, job.spLo + 1, job.spHi - job.spLo)
      for _, u in ipairs(sp) do
         local len = u.hi - u.lo
         self:_accumulate(u, grad:narrow(1, u.lo + 1, len), wd and params:narrow(1, u.lo + 1, len) or nil)
      end
      if pb.dense then -- every residual whole: momentum SGD on the average
         for _, u in ipairs(sp) do
            sum:narrow(1, u.sp - job.spLo + 1, u.hi - u.lo):copy(u.v)
            u.v:zero()
         end
         job.h = d.allreduceAsync(sum, 'avg', o.algorithm and { algorithm = o.algorithm } or nil)
      else
         local start = pb.pos
         for _, u in ipairs(sp) do
            local iv, _, k = self:_select(u, pb.density, pb.pos)
            local um = (o.maskMomentum and u.u) and u.u.h or nil
            T.check(D.mt_dist_rgc_mask(u.v.h, um, iv.h, k, u.sp - job.spLo), 'dist.rgc')
            pb.pos = pb.pos + k
         end
         job.sent = pb.pos - start
         local idx, val = self:_pairs(start, job.sent)
         job.hs = d.sparseAllreduceAsync(sum, idx, val, { op = 'avg', algorithm = o.exchange })
      end
   end
   if #job.dense > 0 then
      local first, last = job.dense[1], job.dense[#job.dense]
      job.dLo, job.dHi = first.pos, last.pos + last.hi - last.lo
      job.hd = d.allreduceAsync(self.dbuf:narrow(1, job.dLo + 1, job.dHi - job.dLo), 'avg',
         o.algorithm and { algorithm = o.algorithm } or nil)
   end
   pb.jobs[#pb.jobs + 1] = job
   pb.select = pb.select + now() - t0
end

-- waits for every launched bucket (also after an error: nothing may still write into them)
function Compressor:abort()
   local pb = self.pb
   self.pb = nil
   for _, job in ipairs(pb and pb.jobs or {}) do
      for _, h in ipairs { job.h, job.hs, job.hd } do pcall(h.wait, h) end
   end
end

function Compressor:complete()
   local pb = self.pb
   if not pb then fail('complete before begin') end
   self.pb = nil
   local N = self.dist.size()
   local t1 = now()
   local grad, bytes, recv = pb.grad, 0, 0
   for _, job in ipairs(pb.jobs) do
      if job.hs or job.h then
         local _, st = (job.hs or job.h):wait()
         local n = job.spHi - job.spLo
         if job.hs then
            bytes, recv = bytes + job.sent * 8, recv + st.recvBytes
         else
            bytes, recv = bytes + n * 4, recv + COMPRESSORS.allreduceReceived(n * 4, N)
         end
         local sum = self.ssum
         for _, u in ipairs(job.sparse) do
            grad:narrow(1, u.lo + 1, u.hi - u.lo):copy(sum:narrow(1, u.sp + 1, u.hi - u.lo))
         end
      end
      if job.hd then
         job.hd:wait()
         local n = job.dHi - job.dLo
         self:_smallMomentum(self.dbuf:narrow(1, job.dLo + 1, n), job.dLo)
         for _, u in ipairs(job.dense) do
            grad:narrow(1, u.lo + 1, u.hi - u.lo):copy(self.dbuf:narrow(1, u.pos + 1, u.hi - u.lo))
         end
         bytes, recv = bytes + n * 4, recv + COMPRESSORS.allreduceReceived(n * 4, N)
      end
   end
   self.steps = self.steps + 1
   return {
      step = self.steps, density = pb.dense and 1 or (self.sparseElements > 0 and pb.pos / self.sparseElements or 0),
      target = pb.density, dense = pb.dense, bytes = bytes, recvBytes = recv, denseBytes = self.n * 4,
      sparseElements = self.sparseElements, denseElements = self.denseElements, sent = pb.pos,
      selectTime = pb.select, exchangeTime = now() - t1, buckets = #pb.jobs,
   }
end

function Compressor:_halfStep(grad, params, scale)
   if type(scale) ~= 'number' or not (scale > 0) or scale == math.huge then -- luacheck: ignore 581 (rejects NaN)
      fail('the loss scale must be a finite number > 0, got %s', tostring(scale))
   end
   T.check(C.mt_grad_check(grad.h, self.bad, self.ss), 'dist.rgc')
   self.cnt[1] = tonumber(self.bad[0])
   self.dist.allreduce(self.cnt, 'sum')
   local work = self.work
   if self.cnt[1] > 0 then
      work:fill(math.huge)
      return { step = self.steps, overflow = true, density = 0, target = self:density(), dense = false, bytes = 8,
         recvBytes = COMPRESSORS.allreduceReceived(8, self.dist.size()),
         denseBytes = self.n * 4, sparseElements = self.sparseElements, denseElements = self.denseElements, sent = 0,
         selectTime = 0, exchangeTime = 0 }
   end
   work:copy(grad)
   if scale ~= 1 then work:mul(1 / scale) end
   local p32
   if params and self.o.weightDecay > 0 then
      p32 = self:_ensure('p32', T.FLOAT, self.n):narrow(1, 1, self.n):copy(params)
   end
   self.work = nil -- the float32 path below, on the float32 gradient
   local ok, stats = pcall(self.step, self, work, p32)
   self.work = work
   if not ok then error(stats, 0) end
   if scale ~= 1 then work:mul(scale) end
   return stats
end

-- The per-rank state (residuals, velocities, step count) as tensors by name and metadata, for
-- a checkpoint of this rank; load() puts it back into a compressor of the same layout.
function Compressor:state()
   local t = {}
   for i, u in ipairs(self.sparse) do
      t[('v.%d'):format(i)] = u.v
      if u.u then t[('u.%d'):format(i)] = u.u end
   end
   if self.dvel then t.dvel = self.dvel end
   local layout = {}
   for i, u in ipairs(self.sparse) do layout[i] = u.hi - u.lo end
   return t, { steps = self.steps, sparse = layout, dense = self.denseElements, momentum = self.o.momentum }
end

function Compressor:load(tensors, meta)
   local want = {}
   for i, u in ipairs(self.sparse) do want[i] = u.hi - u.lo end
   local got = meta.sparse or {}
   local same = #got == #want and tonumber(meta.dense) == self.denseElements
      and (tonumber(meta.momentum) or 0) == self.o.momentum
   for i = 1, #want do same = same and tonumber(got[i]) == want[i] end
   if not same then
      fail('the saved residuals are of another layout or momentum (%d compressed parameters, %s dense elements, '
         .. 'momentum %s; here %d, %d, %g)', #got, tostring(meta.dense), tostring(meta.momentum), #want,
         self.denseElements, self.o.momentum)
   end
   local function put(dst, name)
      local src = tensors[name]
      if not src then fail('the saved state lacks %s', name) end
      if src:nElement() ~= dst:nElement() then
         fail('%s has %d elements, expected %d', name, src:nElement(), dst:nElement())
      end
      dst:copy(src)
   end
   for i, u in ipairs(self.sparse) do
      put(u.v, ('v.%d'):format(i))
      if u.u then put(u.u, ('u.%d'):format(i)) end
   end
   if self.dvel then put(self.dvel, 'dvel') end
   self.steps = tonumber(meta.steps) or 0
end

-- every residual and velocity element (for the invariant tests): v + sent == accumulated
function Compressor:residuals()
   local r = {}
   for i, u in ipairs(self.sparse) do r[i] = { lo = u.lo, hi = u.hi, v = u.v, u = u.u } end
   return r
end

return rgc
