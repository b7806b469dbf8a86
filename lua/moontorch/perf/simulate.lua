-- perf/simulate.lua: one synchronous data-parallel step as a DAG (Shi et al. 2018), simulated.
-- Tasks: forward of every layer in order; backward in the profile's backward order, each layer's
-- gradients ready when its backward ends; per bucket (dist/buckets.lua's layout: gradients in
-- reverse parameter order, at most bucketMB each) one allreduce on the one communication stream,
-- launched in bucket order once all its gradients are ready (DataParallel's rule), or after the
-- whole backward without overlap; compressed gradients (residual top-k, dist/rgc.lua) are
-- selected on the compute stream after backward, then exchanged (a tiny allreduce of the count,
-- allgathers of indices and values, the small tensors of their buckets by one allreduce);
-- the update runs once the last exchange is done.
--   local r = simulate.step(profile, net, { workers = 8, algorithm = 'ring', bucketMB = 25,
--      overlap = true, compress = 'none'|'rgc'|'auto'|{per-unit booleans}, density = 0.001,
--      selectionCost = 2e-9 (s per element), selectionFixed = 20e-6 (s per tensor), wire = 4,
--      minSize = 16384, jitter = 0, selectionOverlap = true })
-- selectionOverlap: whether selection may run while dense buckets are still in flight (a GPU
-- selecting while the NIC sends); false where both would share the same CPU cores, so the
-- selection starts once the communication stream is free (as DataParallel then does).
-- jitter: the spread of one worker's step (standard deviation over mean). A synchronous step
-- waits for the slowest of n workers, about mean + sd * sqrt(2 ln n) for normal spreads, so the
-- compute of every layer is stretched by 1 + jitter * sqrt(2 ln n).
local buckets = require 'moontorch.perf.layout'

local simulate = {}

local function fail(fmt, ...) error('perf.predict: ' .. fmt:format(...), 0) end

-- the units of a profile in getParameters order (layers in forward order, their tensors in
-- order): { lo, hi, layer }; then last first, as dist/buckets.units returns them
function simulate.units(profile)
   local list, at = {}, 0
   for li, l in ipairs(profile.layers) do
      for _, n in ipairs(l.grads or {}) do
         if n > 0 then
            list[#list + 1] = { lo = at, hi = at + n, layer = li }
            at = at + n
         end
      end
   end
   local units = {}
   for i = #list, 1, -1 do units[#units + 1] = list[i] end
   return units, at
end

-- per layer: the time its backward ends (gradients ready), the forward total and backward end
function simulate.timeline(profile)
   local F = 0
   for _, l in ipairs(profile.layers) do F = F + (l.forward or 0) end
   local order = profile.order
   if not order then
      order = {}
      for i = #profile.layers, 1, -1 do order[#order + 1] = i end
   end
   local ready, t = {}, F
   for _, li in ipairs(order) do
      t = t + (profile.layers[li].backward or 0)
      ready[li] = t
   end
   for li = 1, #profile.layers do ready[li] = ready[li] or t end
   return ready, F, t
end

-- forward + backward of one worker, seconds
function simulate.timelineEnd(profile)
   local _, _, B = simulate.timeline(profile)
   return B
end

local function pairsOf(len, density) return math.max(1, math.ceil(density * len)) end

-- which units go sparse: compress = 'none' (none), 'rgc' (those of >= minSize elements, as
-- dist/rgc.lua), or a table unit index -> true
local function sparseSet(units, o)
   local set = {}
   if o.compress == 'rgc' then
      for i, u in ipairs(units) do set[i] = (u.hi - u.lo) >= o.minSize or nil end
   elseif type(o.compress) == 'table' then
      for i in ipairs(units) do set[i] = o.compress[i] == true or nil end
   end
   return set
end

-- the simulated step for a fixed per-unit choice
local function run(profile, net, o, units, list, sparse)
   local n = o.workers
   local ready, F, B = simulate.timeline(profile)
   if o.jitter > 0 and n > 1 then
      local k = 1 + o.jitter * math.sqrt(2 * math.log(n))
      for li, t in pairs(ready) do ready[li] = t * k end
      F, B = F * k, B * k
   end
   local out = { buckets = {}, forward = F, backward = B - F }
   -- a bucket is compressed when any of its units is sparse; then all of it is exchanged after
   -- backward (its small tensors by one allreduce beside the sparse sets)
   local free = 0           -- when the communication stream is next free
   local lastReady = 0      -- buckets launch in order: the latest ready time so far
   local bytesSent = 0
   local post = {}          -- compressed buckets, exchanged after backward
   for b, bk in ipairs(list) do
      local r, comp = 0, false
      for _, ui in ipairs(bk.units) do
         r = math.max(r, ready[units[ui].layer])
         comp = comp or sparse[ui]
      end
      local rec = { bytes = bk.bytes, ready = r, compressed = comp }
      out.buckets[b] = rec
      if comp or o.compress == 'rgc' or n <= 1 then
         post[#post + 1] = b
      else
         lastReady = math.max(lastReady, r)
         local start = math.max(o.overlap and lastReady or B, free)
         local dur = net:allreduce(o.algorithm, bk.bytes, n)
         rec.start, rec.finish = start, start + dur
         free = rec.finish
         bytesSent = bytesSent + 2 * (n - 1) / n * bk.bytes
      end
   end
   -- the compressed part: selection on the compute stream after backward, then the exchange
   local selEnd = B
   if #post > 0 and n > 1 then
      local sparseElems, tensors, pairsTotal, denseSmall = 0, 0, 0, 0
      for _, b in ipairs(post) do
         for _, ui in ipairs(list[b].units) do
            local len = units[ui].hi - units[ui].lo
            if sparse[ui] then
               sparseElems, tensors = sparseElems + len, tensors + 1
               pairsTotal = pairsTotal + pairsOf(len, o.density)
            else
               denseSmall = denseSmall + len
            end
         end
      end
      local sel = sparseElems * o.selectionCost + tensors * o.selectionFixed
      selEnd = (o.selectionOverlap and B or math.max(B, free)) + sel
      local start = math.max(free, selEnd)
      local t = start
      if denseSmall > 0 then
         t = t + net:allreduce(o.algorithm, denseSmall * 4, n)
         bytesSent = bytesSent + denseSmall * 4
      end
      if tensors > 0 then
         local wire = 4 + o.wire
         t = t + net:allreduce(o.algorithm, 8, n)
            + net:allgather(n * pairsTotal * 4, n) + net:allgather(n * pairsTotal * o.wire, n)
         bytesSent = bytesSent + 8 + pairsTotal * wire
      end
      for _, b in ipairs(post) do out.buckets[b].start, out.buckets[b].finish = start, t end
      free = t
      out.selection = sel
   elseif #post > 0 then
      for _, b in ipairs(post) do out.buckets[b].start, out.buckets[b].finish = B, B end
   end
   local update = profile.update or 0
   out.compute = simulate.timelineEnd(profile) + update -- the one-worker step
   out.step = math.max(selEnd, free) + update
   out.exposed = out.step - out.compute
   out.efficiency = out.compute / out.step
   out.bytes = bytesSent
   return out
end

local DEFAULTS = { workers = 1, algorithm = 'ring', bucketMB = 25, overlap = true, compress = 'none',
   density = 0.001, selectionCost = 2e-9, selectionFixed = 20e-6, wire = 4, minSize = 16384, jitter = 0,
   selectionOverlap = true }
simulate.DEFAULTS = DEFAULTS

function simulate.options(o)
   local r = {}
   for k, v in pairs(DEFAULTS) do r[k] = v end
   for k, v in pairs(o or {}) do r[k] = v end
   if type(r.workers) ~= 'number' or r.workers < 1 or r.workers % 1 ~= 0 then
      fail('workers must be an integer >= 1, got %s', tostring(r.workers))
   end
   if type(r.bucketMB) ~= 'number' or not (r.bucketMB > 0) then -- luacheck: ignore 581 (rejects NaN)
      fail('bucketMB must be a number > 0, got %s', tostring(r.bucketMB))
   end
   if type(r.density) ~= 'number' or not (r.density > 0 and r.density <= 1) then
      fail('density must be in (0, 1], got %s', tostring(r.density))
   end
   local c = r.compress
   if c ~= 'none' and c ~= 'rgc' and c ~= 'auto' and type(c) ~= 'table' then
      fail("compress must be 'none', 'rgc', 'auto' or a per-unit table, got '%s'", tostring(c))
   end
   return r
end

-- the cheapest per-unit choice (compress = 'auto'), greedily: first whole buckets (a bucket
-- compressed sends its tensors of >= minSize elements sparse, as dist/rgc.lua), largest bucket
-- first, each kept when it shortens the simulated step; then every tensor of a compressed bucket
-- flipped alone, each change kept when it gains more than 0.1% (so small tensors, whose
-- fixed selection and exchange costs outweigh their bytes, stay dense). Starts from the better
-- of all dense and all compressed.
local function choose(profile, net, o, units, list)
   local function try(set) return run(profile, net, o, units, list, set) end
   -- a change is kept only when it gains more than 0.1%: no flips on rounding-level gains
   local function better(r, b) return r.step < b.step * 0.999 end
   local sparse = {}
   local best = try(sparse)
   local all = sparseSet(units, { compress = 'rgc', minSize = o.minSize })
   local rAll = try(all)
   if better(rAll, best) then sparse, best = all, rAll end
   local order = {}
   for b in ipairs(list) do order[#order + 1] = b end
   table.sort(order, function(a, b) return list[a].bytes > list[b].bytes end)
   local function flipBucket(b, on)
      local old = {}
      for _, ui in ipairs(list[b].units) do
         old[ui] = sparse[ui]
         sparse[ui] = (on and (units[ui].hi - units[ui].lo) >= o.minSize) or nil
      end
      return old
   end
   for _, b in ipairs(order) do
      local on = false
      for _, ui in ipairs(list[b].units) do on = on or sparse[ui] == true end
      local old = flipBucket(b, not on)
      local r = try(sparse)
      if better(r, best) then
         best = r
      else
         for _, ui in ipairs(list[b].units) do sparse[ui] = old[ui] end
      end
   end
   local idx = {}
   for i in ipairs(units) do idx[#idx + 1] = i end
   table.sort(idx, function(a, b)
      local la, lb = units[a].hi - units[a].lo, units[b].hi - units[b].lo
      if la ~= lb then return la > lb end
      return a < b
   end)
   for _, i in ipairs(idx) do
      local old = sparse[i]
      sparse[i] = (not old) or nil
      local r = try(sparse)
      if better(r, best) then best = r else sparse[i] = old end
   end
   return sparse, best
end

-- simulate.step(profile, net, opts): the step's figures (seconds; bytes one rank sends):
-- step, compute (one worker's), exposed (communication not hidden), efficiency (compute /
-- step), bytes, forward, backward, selection, buckets = { {bytes, ready, start, finish,
-- compressed} }, and for compress = 'auto' sparse (unit index -> true) and units
function simulate.step(profile, net, opts)
   local o = simulate.options(opts)
   local units = simulate.units(profile)
   local list = buckets.layout(units, profile.elementBytes or 4, o.bucketMB * 2 ^ 20)
   local r, sparse
   if o.compress == 'auto' then
      sparse, r = choose(profile, net, o, units, list)
   else
      sparse = sparseSet(units, o)
      r = run(profile, net, o, units, list, sparse)
   end
   r.sparse, r.units = sparse, units
   return r
end

return simulate
