-- dist/buckets.lua: the bucket layout of dist.DataParallel. The gradients live in the one flat
-- tensor getParameters made; a bucket is a contiguous slice of it, so it can be allreduced in
-- place with no packing copy. Buckets hold gradients in reverse parameter order (backward
-- finishes the last layers first) and at most capBytes each; a gradient larger than that gets
-- a bucket of its own.
local T = require 'moontorch.internal'
local ffi = require 'ffi'
local C = T.clib

local buckets = {}

local function skey(t) return tonumber(ffi.cast('intptr_t', C.mt_tensor_storage_key(t.h))) end
buckets.storageKey = skey

-- [lo, hi) of t's elements in its storage, 0-based
local function span(t)
   local lo = t:storageOffset() - 1
   if t:nElement() == 0 then return lo, lo end
   local hi = lo
   for d = 1, t:dim() do hi = hi + (t:size(d) - 1) * t:stride(d) end
   return lo, hi + 1
end
buckets.span = span

-- The units of the layout: the distinct spans the gradients occupy in flat, relative to flat's
-- first element (gradients that overlap, i.e. shared ones, merge into one unit), last first.
-- unit = { lo =, hi =, params = { indices into grads } }
function buckets.units(grads, flat)
   local spans = {}
   if #grads == 0 then return spans end
   local key, base = skey(flat), flat:storageOffset() - 1
   for i, g in ipairs(grads) do
      if g:nElement() > 0 then
         if skey(g) ~= key then
            error(('gradient %d (size %s) is not a view of the flat gradient (was it replaced after '
               .. 'getParameters?)'):format(i, table.concat(T.sizes(g), 'x')), 0)
         end
         local lo, hi = span(g)
         spans[#spans + 1] = { lo = lo - base, hi = hi - base, params = { i } }
      end
   end
   table.sort(spans, function(a, b) return a.lo < b.lo end)
   local merged = {}
   for _, s in ipairs(spans) do
      local last = merged[#merged]
      if last and s.lo < last.hi then
         last.hi = math.max(last.hi, s.hi)
         last.params[#last.params + 1] = s.params[1]
      else
         merged[#merged + 1] = s
      end
   end
   local units = {}
   for i = #merged, 1, -1 do units[#units + 1] = merged[i] end
   return units
end

-- The unit holding flat position pos (0-based), or nil.
function buckets.find(units, pos)
   for _, u in ipairs(units) do
      if pos >= u.lo and pos < u.hi then return u end
   end
end

-- Greedy packing of consecutive units (already last first) into buckets of <= capBytes:
-- moontorch.perf's, so the performance model and DataParallel lay buckets out alike.
-- bucket = { lo =, hi =, bytes =, units = { unit indices } }; each unit gets .bucket.
buckets.layout = require('moontorch.perf.layout').layout

-- What every rank must agree on, as numbers a double holds exactly: { parameters, elements,
-- buckets, buffers, hash of the shapes, dtypes, bucket sizes and buffer sizes }.
buckets.FIELDS = { 'parameters', 'elements', 'buckets', 'buffers', 'shape hash' }
function buckets.signature(params, list, buffers)
   local P, h, numel = 2147483647, 17, 0
   local function mix(x) h = (h * 131 + x) % P end
   for _, p in ipairs(params) do
      mix(p:dtype()); mix(p:dim())
      for d = 1, p:dim() do mix(p:size(d)) end
      numel = numel + p:nElement()
   end
   for _, b in ipairs(list) do mix(b.hi - b.lo) end
   for _, t in ipairs(buffers) do mix(t:dtype()); mix(t:nElement()) end
   return { #params, numel, #list, #buffers, h }
end

return buckets
