-- dist.ParameterServer(model [, opts]): training through a stale-synchronous parameter server
-- (Ho et al. 2013; Bösen, PMLS-Caffe), beside dist.DataParallel's allreduce. Every rank is a
-- worker training a replica on its own slice of each batch; the flat parameters are sharded
-- over `servers` server threads, one beside the worker on each of ranks 0 .. servers-1 (as
-- Bösen and PMLS-Caffe run a server on every machine), which apply the optimizer.
--   local ps = dist.ParameterServer(model, { staleness = 3, servers = 2, momentum = 0.9 })
--   ps:forward(x)          -- reads the newest pulled parameters; waits only when the bound says
--   ps:backward(x, dy)     -- pushes each layer's gradient as backward produces it
--   ps:clock(lr)           -- ends this worker's clock; the servers step with lr
--   ps:close()             -- collective; dist.finalize closes open tables too
-- Semantics. A clock is one iteration of one worker; clock() ends it. A worker at clock c may
-- read parameters only once every worker has reached clock c - s; it then sees every update of
-- clocks <= c - s - 1 of all workers, and every whole clock applied since (never fewer). A
-- server applies a clock once every worker has pushed and ended it: the mean of the workers'
-- gradients in one fused SGD step (momentum, dampening, Nesterov, weight decay as optim.sgd),
-- so s = 0 is synchronous SGD with the global batch, step for step. A table is the set of
-- parameters sharing a bound: a model is one table.
-- opts: staleness (s, 0), servers (1), optimizer ('sgd', the one servers run), learningRate
-- (the rate clock() uses without one), momentum (0), dampening (momentum, as Torch7),
-- nesterov, weightDecay (0), pushEvery ('layer': wait-free backprop, each module's gradient
-- sent when its backward returns, as DataParallel's buckets; 'step': one push after backward),
-- lookahead (true: a read that is k clocks stale gets the parameters moved on by the momentum
-- part of those k steps, which the servers know, so that stale reads lag by only the gradients
-- still in flight; false: the servers' state as it is), dist (the module providing the
-- collectives). Float32 CPU parameters.
-- The Trainer drives it through serverStep (instead of an optimizer), checkpoints it through
-- withServerState and resumes it through restoreServers; :counters() are this worker's totals.
-- ps.straggle = F (experiments: -straggler) makes serverStep sleep F-1 times its compute time,
-- every clock, or with ps.straggleAny on the clocks this worker is drawn for (one per clock).
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
require 'moontorch.dist.DataParallel' -- registers dist.DataParallel, the parent
local dlib = require 'moontorch.dist.lib'
local D = dlib.C

local ns = {}
local ParameterServer, parent = torch.class('dist.ParameterServer', 'dist.DataParallel', ns)
local NAME = 'dist.ParameterServer'
local HIST = 16 -- bins of the read staleness histogram (the last: that many clocks or more)
local OPTIONS = { 'staleness', 'servers', 'optimizer', 'learningRate', 'momentum', 'dampening', 'nesterov',
   'weightDecay', 'pushEvery', 'lookahead', 'dist' }

local function fail(fmt, ...) error(NAME .. ': ' .. fmt:format(...), 0) end

pcall(ffi.cdef, [[
   struct mt_ps_timespec { long tv_sec; long tv_nsec; };
   int mt_ps_nanosleep(const struct mt_ps_timespec *req, struct mt_ps_timespec *rem) __asm__("nanosleep");
]])
local function sleep(seconds)
   local ts = ffi.new('struct mt_ps_timespec', math.floor(seconds), math.floor(seconds % 1 * 1e9))
   ffi.C.mt_ps_nanosleep(ts, nil)
end

-- the tables not yet closed, in the order they were opened (every rank opens them alike), so
-- that dist.finalize can close them first, in that order
local opened = {}
function ParameterServer.closeAll()
   for i = 1, #opened do
      local ps = opened[i]
      if ps and ps.table then ps:close() end
   end
   opened = {}
end

local workp = ffi.new('mt_dist_work*[1]')

-- a handle on a queued request; h:wait() (DataParallel waits on its buckets' handles so)
local Handle = {}
Handle.__index = Handle

function Handle:wait()
   if self.w == nil then return end
   local st = D.mt_dist_work_wait(self.w)
   D.mt_dist_work_free(ffi.gc(self.w, nil))
   self.w, self.keep = nil, nil
   if st ~= 0 then T.raise(NAME .. ':' .. self.op, true, 2) end
end

local function handle(op, keep)
   return setmetatable({ w = ffi.gc(workp[0], D.mt_dist_work_free), op = op, keep = keep }, Handle)
end

local function wait(h) if h then h:wait() end end

function ParameterServer:__init(model, opts)
   opts = opts or {}
   if type(opts) ~= 'table' then fail('options must be a table, got %s', type(opts)) end
   for k in pairs(opts) do
      local known = false
      for _, name in ipairs(OPTIONS) do known = known or k == name end
      if not known then fail("unknown option '%s' (%s)", tostring(k), table.concat(OPTIONS, ', ')) end
   end
   local function number(k, default, lo, int)
      local v = opts[k] == nil and default or opts[k]
      if type(v) ~= 'number' or v ~= v or v < lo or (int and v % 1 ~= 0) then
         fail('%s must be %s >= %g, got %s', k, int and 'a whole number' or 'a number', lo, tostring(opts[k]))
      end
      return v
   end
   local o = { staleness = number('staleness', 0, 0, true), servers = number('servers', 1, 1, true),
      momentum = number('momentum', 0, 0), weightDecay = number('weightDecay', 0, 0),
      learningRate = number('learningRate', 0, 0), nesterov = opts.nesterov and true or false,
      optimizer = opts.optimizer or 'sgd', pushEvery = opts.pushEvery or 'layer', lookahead = opts.lookahead ~= false }
   o.dampening = number('dampening', o.momentum, 0)
   if o.optimizer ~= 'sgd' then
      fail("optimizer must be 'sgd' (the servers' fused step), got '%s'", tostring(o.optimizer))
   end
   if o.pushEvery ~= 'layer' and o.pushEvery ~= 'step' then
      fail("pushEvery must be 'layer' or 'step', got '%s'", tostring(o.pushEvery))
   end
   self.ps = o
   -- DataParallel's hooks and buckets, one bucket per module (layer) or one for the step
   local layer = o.pushEvery == 'layer'
   parent.__init(self, model, { bucketMB = layer and 1e-9 or math.huge, overlap = layer, dist = opts.dist })
end

-- (called by DataParallel's build) the layout is checked: open the table, make rank 0's
-- parameters the servers' state at clock 0 and pull them; the BN statistics are broadcast
function ParameterServer:broadcastParameters()
   local d = self.dist
   for _, t in ipairs(self.buffers) do d.broadcast(t, 0) end
   local p = self.params
   if p:nElement() > 0 and (p:type() ~= 'torch.FloatTensor' or not p:isContiguous()) then
      fail('the parameters must be float32 on the CPU (got %s): -precision fp32, -device cpu', p:type())
   end
   if not self.table then
      local o, out = self.ps, ffi.new('mt_ps*[1]')
      local comm = (d._comm or require('moontorch.dist')._comm)()
      T.check(D.mt_ps_open(comm, p:nElement(), o.servers, o.staleness, o.momentum, o.dampening, o.weightDecay,
         o.nesterov and 1 or 0, o.lookahead and 1 or 0, out), NAME, true)
      self.table = ffi.gc(out[0], D.mt_ps_free)
      opened[#opened + 1] = self
   end
   self:restoreServers(nil, 0)
   return self
end

-- collective: this rank 0's parameters (and momentum) become the servers' state at `clock`;
-- every worker continues from that clock with the pulled parameters
function ParameterServer:restoreServers(momentum, clock)
   -- every worker's requests answered before the init: a pull the servers had not yet seen
   -- would otherwise wait, in the new state, for a version it needed in the old one
   self:_drain()
   self.dist.barrier()
   local mine = self.dist.rank() == 0
   if momentum and not mine then momentum = nil end
   if momentum then momentum = momentum:float():contiguous() end
   T.check(D.mt_ps_init(self.table, mine and self.params.h or nil, momentum and momentum.h or nil, clock or 0, nil),
      NAME .. ':restore', true)
   self:_pull(0)
   self:_land()
   self.freshAt = nil
   return self
end

-- Reads go through a cache, as Bösen's client does: a pull lands in self.incoming in the
-- background, and becomes the parameters (self.params, with self.versions: each server's
-- version in them) at the next read once it is complete, or when the parameters in hand are too
-- old for the bound; only then does the read wait.
function ParameterServer:_pull(s)
   self.incoming = self.incoming or torch.FloatTensor(self.params:nElement())
   T.check(D.mt_ps_pull(self.table, self.incoming.h, 0, self.params:nElement(), s, workp), NAME .. ':pull', true)
   self.pending = self.pending or {}
   self.pending[#self.pending + 1] = handle('pull', self.incoming)
end

-- the pulls issued are done; the newest becomes the parameters
function ParameterServer:_land()
   local pending = self.pending or {}
   if #pending == 0 then return end
   self.pending = {}
   for _, h in ipairs(pending) do wait(h) end
   self.params:copy(self.incoming)
   self.versions = self:_lastVersions()
end

function ParameterServer:_lastVersions()
   local n = self.ps.servers
   local v = ffi.new('int64_t[?]', n)
   D.mt_ps_last_versions(self.table, v)
   local versions = {}
   for k = 1, n do versions[k] = tonumber(v[k - 1]) end
   return versions
end

function ParameterServer:_clock() return tonumber(D.mt_ps_current_clock(self.table)) end

-- The read before a forward at clock c: the newest complete pull, else the parameters in hand
-- when every server's version in them is at least c - s, else a wait for the pull. Counts the
-- read's staleness (c minus the oldest version) and shows it to self.observer(info) if set.
function ParameterServer:_read(bound)
   local c, pending = self:_clock(), self.pending or {}
   local last = pending[#pending]
   if last and D.mt_dist_work_test(last.w) == 1 then
      self:_land()
   elseif last and math.min(unpack(self.versions)) < c - bound then
      local t0 = torch.tic()
      self:_land()
      self.waited = (self.waited or 0) + torch.toc(t0)
   end
   local stale = c - math.min(unpack(self.versions))
   self.hist = self.hist or {}
   local bin = math.min(stale, HIST - 1) + 1
   self.hist[bin] = (self.hist[bin] or 0) + 1
   self.reads = (self.reads or 0) + 1
   if self.observer then self.observer(self:lastPull()) end
end

-- the parameters in use: { clock = this worker's, versions = { each server's } }
function ParameterServer:lastPull()
   return { clock = self:_clock(), versions = { unpack(self.versions) } }
end

-- every queued request of this worker done (its last pull landed)
function ParameterServer:_drain()
   self:_land()
   wait(self.clockHandle)
   self.clockHandle = nil
end

-- ends this worker's clock: its gradient is with the servers, which step with lr (worker 0's)
-- once every worker has ended it; the pull for the next clock starts now
function ParameterServer:clock(lr)
   lr = lr or self.ps.learningRate
   wait(self.clockHandle) -- the one before (done: requests run in order)
   T.check(D.mt_ps_clock(self.table, lr, workp), NAME .. ':clock', true)
   self.clockHandle = handle('clock')
   self:_pull(-1)
end

-- the newest state for this clock (every worker's updates up to it), for evaluation
function ParameterServer:sync()
   self:_land()
   local clock = self:_clock()
   if self.freshAt == clock then return self end
   if math.min(unpack(self.versions)) < clock then
      self:_pull(0)
      self:_land()
   end
   self.freshAt = clock
   return self
end

-- whether this worker straggles this clock: always (ps.straggle on its rank alone), or with
-- ps.straggleAny when it is the one worker drawn for this clock (the same draw on every rank)
function ParameterServer:_straggles()
   if not self.straggleAny then return true end
   local h = (self:_clock() + 1) * 2654435761 % 4294967296 -- Knuth's multiplicative hash (exact in a double)
   return math.floor(h / 65536) % self.dist.size() == self.dist.rank()
end

-- the Trainer's optimizer step: feval computes the loss and pushes the gradient, the clock
-- ends; returns like an optim method
function ParameterServer:serverStep(feval, config)
   local t0 = torch.tic()
   local fx = feval()
   if self.straggle and self.straggle > 1 and self:_straggles() then sleep((self.straggle - 1) * torch.toc(t0)) end
   self:clock(config and config.learningRate)
   return self.params, { fx }
end

-- DataParallel's bucket launch and end of backward, as pushes (after the pulls before them:
-- requests run in order)
function ParameterServer:_launch(b)
   local bk = self.buckets[b]
   T.check(D.mt_ps_push(self.table, bk.grad.h, bk.lo, workp), NAME .. ':push', true)
   bk.handle = handle('push', bk.grad)
   self._next = b + 1
end

function ParameterServer:forward(input)
   if self.train == false then self:sync() else self:_read(self.ps.staleness) end
   self.output = self.module:forward(input)
   return self.output
end
ParameterServer.updateOutput = ParameterServer.forward

-- fn(optimState) runs with self.params holding the servers' state at this clock (rank 0: for a
-- checkpoint) and optimState the momentum and clock to restore it; the pulled values come back
-- after. Other ranks call nothing.
function ParameterServer:withServerState(fn)
   self:_drain()
   local p = self.params
   local state = { ps_clock = 0, ps_started = 0 }
   local mom = self.ps.momentum ~= 0 and torch.FloatTensor(p:nElement()) or nil
   local gathered = torch.FloatTensor(p:nElement())
   local started, version = ffi.new('int[1]'), ffi.new('int64_t[1]')
   T.check(D.mt_ps_gather(self.table, gathered.h, mom and mom.h or nil, started, version), NAME .. ':gather', true)
   state.ps_clock, state.ps_started, state.ps_momentum = tonumber(version[0]), started[0], mom
   local mine = p:clone()
   p:copy(gathered)
   local ok, err = pcall(fn, state)
   p:copy(mine)
   if not ok then error(err, 0) end
end

-- this worker's totals: reads and the staleness histogram of them (reads[k]: k clocks stale,
-- the last bin that many or more), pulls, pushes, clocks, bytes, seconds a read waited, seconds
-- the servers held pulls for the bound (after close: the totals at close)
function ParameterServer:counters()
   if not self.table then return self.closedCounters end
   local s = ffi.new('mt_ps_stats')
   D.mt_ps_get_stats(self.table, s)
   local hist = {}
   for i = 1, HIST do hist[i] = (self.hist or {})[i] or 0 end
   return { reads = self.reads or 0, staleness = hist, pulls = tonumber(s.pulls), pushes = tonumber(s.pushes),
      clocks = tonumber(s.clocks), bytesPushed = tonumber(s.bytes_pushed), bytesPulled = tonumber(s.bytes_pulled),
      heldSeconds = s.held_seconds, pullSeconds = s.pull_seconds, waitSeconds = self.waited or 0 }
end

-- collective: every worker's requests done, then the servers stop
function ParameterServer:close()
   if not self.table then return end
   self:_drain()
   T.check(D.mt_ps_close(self.table), NAME .. ':close', true)
   self.closedCounters = self:counters()
   D.mt_ps_free(ffi.gc(self.table, nil))
   self.table = nil
end

function ParameterServer:localState() end

function ParameterServer:type(typename, tensorCache)
   if not typename then return self.module:type() end
   if typename ~= 'torch.FloatTensor' then fail('the servers hold float32: cannot convert to %s', typename) end
   return self
end

function ParameterServer:clone()
   fail('cannot be cloned; clone ps.module and wrap the copy in a ParameterServer of its own')
end

function ParameterServer:__tostring__()
   local o = self.ps
   local head = ('%s(staleness %d, %d server%s, push every %s, sgd momentum %g, weight decay %g)'):format(NAME,
      o.staleness, o.servers, o.servers == 1 and '' or 's', o.pushEvery, o.momentum, o.weightDecay)
   return head .. ' {\n  ' .. (tostring(self.module):gsub('\n', '\n  ')) .. '\n}'
end

return ns.ParameterServer
