-- dist/codec.lua: what dist.DataParallel's per-bucket compressors (compress = 'fp16', 'onebit',
-- 'powersgd'; dist/fp16.lua, onebit.lua, powersgd.lua) share. They follow GRACE's split (Xu et
-- al. 2021): the compressor (each file: encode a bucket, decode what came back), the memory
-- (error feedback: what a rank's code left out, kept here and added to its next gradient) and
-- the communicator (the collective each compressor picks: allreduce or allgather).
-- A codec works per bucket, as backward produces it: launch(b, bucket) encodes bucket b and
-- starts its exchange; the handle it returns, once waited on, leaves the average over the ranks
-- of the decoded gradients in the bucket. So compression overlaps backward as dense buckets do.
-- The first `start` steps are plain averages (PyTorch's start_powerSGD_iter). finish() ends a
-- step and returns its counters: bytes (what this rank put into the collectives), recvBytes
-- (what it receives from them, by the bandwidth-optimal schedule: dist/compressors.lua),
-- denseBytes (a float32 allreduce's bytes), density (bytes / denseBytes), selectTime (seconds
-- encoding and decoding) and exchangeTime (seconds waiting for the exchange).
local T = require 'moontorch.internal'
local COMPRESSORS = require 'moontorch.dist.compressors'
local now = require('moontorch.util.progress').now

local codec = {}

local Base = {}
Base.__index = Base
codec.Base = Base

function codec.fail(name, fmt, ...) error(('dist.%s: '):format(name) .. fmt:format(...), 0) end

-- a codec class deriving from Base
function codec.class()
   local c = setmetatable({}, { __index = Base })
   c.__index = c
   return c
end

-- ctx: { name, grad (the flat float32 gradient), units, buckets, grads (the parameters'
-- gradient views), dist, collectiveOpts }; opts: checked against defaults (start and
-- errorFeedback are every codec's)
function codec.new(class, ctx, opts, defaults)
   local o = { start = 0, errorFeedback = true }
   for k, v in pairs(defaults) do o[k] = v end
   for k, v in pairs(opts or {}) do
      if o[k] == nil then
         local names = {}
         for name in pairs(o) do names[#names + 1] = name end
         table.sort(names)
         codec.fail(ctx.name, "unknown option '%s' (%s)", tostring(k), table.concat(names, ', '))
      end
      o[k] = v
   end
   if type(o.start) ~= 'number' or not (o.start >= 0) or o.start % 1 ~= 0 then -- luacheck: ignore 581 (NaN)
      codec.fail(ctx.name, 'start must be a whole number of steps >= 0, got %s', tostring(o.start))
   end
   if type(o.errorFeedback) ~= 'boolean' then
      codec.fail(ctx.name, 'errorFeedback must be a boolean, got %s', tostring(o.errorFeedback))
   end
   local g = ctx.grad
   if g:nElement() > 0 and g:dtype() ~= T.FLOAT then
      codec.fail(ctx.name, 'gradients must be float32, got %s (half models: compress = \'rgc\' or none)', g:type())
   end
   local self = setmetatable({ o = o, ctx = ctx, dist = ctx.dist, name = ctx.name, N = ctx.dist.size(),
      steps = 0, memory = {}, buffers = {} }, class)
   self.device = tonumber(T.clib.mt_tensor_device(g.h))
   self:_zero()
   return self
end

function Base:_zero()
   self.bytes, self.recvBytes, self.denseBytes, self.selectTime, self.exchangeTime = 0, 0, 0, 0, 0
end

-- a scratch tensor of n elements kept between steps (contents undefined)
function Base:buffer(key, dtype, n)
   local t = self.buffers[key]
   if not t or t:nElement() ~= n or t:dtype() ~= dtype then
      t = T.new_tensor(dtype, self.device, { n })
      self.buffers[key] = t
   end
   return t
end

-- the error-feedback residual `key` (float32, n elements, zero at first): per rank, in state();
-- made when the codec is built, so that state() and load() see the whole layout from the start
function Base:residual(key, n)
   local t = self.memory[key]
   if not t then
      t = T.new_tensor(T.FLOAT, self.device, { n }):zero()
      self.memory[key] = t
   end
   return t
end

-- whether this step still averages plainly (the first `start` steps)
function Base:warming() return self.steps < self.o.start end

-- a plain average of the bucket, for the warm-up steps
function Base:average(bk)
   local n = bk.grad:nElement()
   self:count(4 * n, 4 * n, 'allreduce')
   local t0 = now()
   local h = self.dist.allreduceAsync(bk.grad, 'avg', self.ctx.collectiveOpts)
   return self:handle(function() h:wait() end, t0, t0)
end

local Handle = {}
Handle.__index = Handle
function Handle:wait()
   local fn = self.fn
   if fn then
      self.fn = nil
      fn()
   end
end

-- the handle of a launched bucket: finish() runs once at its wait; the time from start to
-- encoded (launch's own) counts as selection time
function Base:handle(finish, start, encoded)
   self.selectTime = self.selectTime + (encoded - start)
   return setmetatable({ fn = finish }, Handle)
end

-- time spent in fn() as exchange (waiting) or selection (decoding)
function Base:timed(kind, fn)
   local t0 = now()
   fn()
   if kind == 'exchange' then self.exchangeTime = self.exchangeTime + now() - t0
   else self.selectTime = self.selectTime + now() - t0 end
end

-- bytes of this bucket on the wire (this rank's contribution, sent by `how`: 'allreduce' or
-- 'allgather') and of its dense allreduce
function Base:count(bytes, denseBytes, how)
   self.bytes, self.denseBytes = self.bytes + bytes, self.denseBytes + denseBytes
   local received = how == 'allgather' and COMPRESSORS.allgatherReceived or COMPRESSORS.allreduceReceived
   self.recvBytes = self.recvBytes + received(bytes, self.N)
end

-- the end of a synchronised step: its counters
function Base:finish()
   local s = { step = self.steps + 1, bytes = self.bytes, recvBytes = self.recvBytes, denseBytes = self.denseBytes,
      density = self.denseBytes > 0 and self.bytes / self.denseBytes or 0, selectTime = self.selectTime,
      exchangeTime = self.exchangeTime, compress = self.name, warmup = self:warming() or nil }
   self:describe(s)
   self.steps = self.steps + 1
   self:_zero()
   return s
end

function Base:describe() end

-- the per-rank state (residuals, and whatever the codec adds) and its metadata, for this
-- rank's checkpoint file; load() puts it back into a codec of the same layout
function Base:state()
   local t, sizes = {}, {}
   for k, v in pairs(self.memory) do
      t[k], sizes[k] = v, v:nElement()
   end
   return t, { compress = self.name, steps = self.steps, sizes = sizes }
end

function Base:load(tensors, meta)
   if meta.compress ~= self.name then
      codec.fail(self.name, 'the saved state is of compress = %s, not %s', tostring(meta.compress), self.name)
   end
   local sizes = meta.sizes or {}
   for k in pairs(sizes) do
      if not self.memory[k] then codec.fail(self.name, 'the saved state has %s, which this model has not', k) end
   end
   for k, dst in pairs(self.memory) do
      local src = tensors[k]
      if not src or not sizes[k] then codec.fail(self.name, 'the saved state lacks %s', k) end
      if src:nElement() ~= dst:nElement() then
         codec.fail(self.name, '%s has %d elements saved, %d here (another model?)', k, src:nElement(),
            dst:nElement())
      end
   end
   for k, dst in pairs(self.memory) do dst:copy(tensors[k]) end
   self.steps = tonumber(meta.steps) or 0
end

return codec
