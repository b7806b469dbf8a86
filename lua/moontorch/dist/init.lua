-- moontorch.dist: synchronous data-parallel training across processes.
--
--   local dist = require 'moontorch.dist'
--   dist.init{timeout = 300}          -- under mpirun/srun: MPI; without a launcher: one process
--   dist.allreduce(t, 'avg')          -- sum, avg, max, min; {algorithm = 'ring'} per call
--   local h = dist.allreduceAsync(t)  -- ... h:wait()
--   local dp = dist.DataParallel(model, {bucketMB = 25})
--   local ps = dist.ParameterServer(model, {staleness = 3, servers = 2})  -- SSP, beside allreduce
--   dist.finalize()
--
-- Processes, launch and transport are Open MPI's (NCCL's for CUDA tensors); the allreduce
-- algorithms (ring, multicolor, hierarchical) are ours, on MPI's point-to-point calls, in
-- libmoontorch_dist.so. Every collective runs on one communication thread in the order it was
-- issued, so every rank must issue the same collectives in the same order (the library checks
-- and names both ranks' calls when they differ).
local ffi = require 'ffi'
local T = require 'moontorch.internal'
local dlib = require 'moontorch.dist.lib'

local C, D = T.clib, dlib.C
local dist = { lib = dlib }

local comm      -- the mt_dist* (ffi.gc: at exit without finalize, the peers are told)
local defaultAlg = 0

-- the reduction ops and allreduce algorithms are the C lists MT_DIST_REDS and MT_DIST_ALGS
-- (csrc/moontorch.h): name -> id, and the names in id order
local ops, algs, opnames, algnames = {}, {}, {}, {}
for i = 0, C.MT_NUM_RED - 1 do
   opnames[i + 1] = ffi.string(D.mt_dist_red_name(i))
   ops[opnames[i + 1]] = i
end
for i = 0, C.MT_NUM_ALG - 1 do
   algnames[i + 1] = ffi.string(D.mt_dist_alg_name(i))
   algs[algnames[i + 1]] = i
end

-- the algorithm names, in order ('auto' first): what dist.init{algorithm}, the collectives'
-- {algorithm} and the recipes' -allreduce accept
function dist.algorithms() return { unpack(algnames) } end

local function need(op)
   if comm == nil then error('dist.' .. op .. ': call dist.init() first', 3) end
   return comm
end

local function opid(name, op)
   local id = ops[name or 'sum']
   if not id then
      T.argerror('dist.' .. op,
         ("unknown reduction op '%s' (%s)"):format(tostring(name), table.concat(opnames, ', ')), 3)
   end
   return id
end

local function algid(name, op)
   if name == nil then return defaultAlg end
   local id = algs[name]
   if not id then
      T.argerror('dist.' .. op,
         ("unknown algorithm '%s' (%s)"):format(tostring(name), table.concat(algnames, ', ')), 3)
   end
   return id
end

-- opts itself (nil: {}) once every key is one of `known` (names in the order messages list
-- them); otherwise the error names the key and lists the known ones, as dist.DataParallel does
local function options(opts, known, op)
   if opts == nil then return {} end
   if type(opts) ~= 'table' then T.argerror('dist.' .. op, 'options must be a table, got ' .. type(opts), 3) end
   for k in pairs(opts) do
      local found = false
      for _, name in ipairs(known) do found = found or k == name end
      if not found then
         T.argerror('dist.' .. op, ("unknown option '%s' (%s)"):format(tostring(k), table.concat(known, ', ')), 3)
      end
   end
   return opts
end

-- the collectives that take no options: a table where one would go (dist.allgather(out, t,
-- {grupSize = 2}), dist.broadcast(t, {root = 1})) is an error naming a key of it, not ignored
local function nooptions(extra, op, what)
   if extra == nil then return end
   local k = type(extra) == 'table' and next(extra)
   if k ~= nil and k ~= false then
      T.argerror('dist.' .. op, ("unknown option '%s' (dist.%s takes none%s)"):format(tostring(k), op,
         what and ('; its ' .. what .. ' is a plain argument') or ''), 3)
   end
   if type(extra) ~= 'table' then
      T.argerror('dist.' .. op, ('too many arguments: a %s after the last one, %s'):format(type(extra),
         what or 'the tensors'), 3)
   end
end

local INIT_OPTIONS = { 'timeout', 'groupSize', 'algorithm', 'check', 'chunkBytes', 'model', 'tuneMaxBytes', 'tuneReps' }
local ALLREDUCE_OPTIONS = { 'algorithm' }

local function default_cache()
   local home = os.getenv('HOME') or '/tmp'
   return ('%s/.cache/moontorch/dist-%dx%d.model'):format(home, dist.size(), dist.nodes())
end

-- dist.init{timeout = 300, groupSize = 0, algorithm = 'auto', check = true, chunkBytes = 256 KB,
--           model = nil|path|false, tuneMaxBytes = 64 MB, tuneReps = 3}
-- model: where the `auto` cost table is cached (default ~/.cache/moontorch/dist-<ranks>x<nodes>.model;
-- measured and saved when missing); false: do not measure (auto then means mpi).
-- Idempotent: a second call returns the module as it is. An unknown option is an error.
function dist.init(opts)
   opts = options(opts, INIT_OPTIONS, 'init')
   if comm ~= nil then return dist end
   local out = ffi.new('mt_dist*[1]')
   T.check(D.mt_dist_init(out, opts.timeout or 300, opts.groupSize or 0), 'dist.init')
   comm = ffi.gc(out[0], D.mt_dist_free)
   if opts.check == false then D.mt_dist_set_check(comm, 0) end
   if opts.chunkBytes then dist.setChunkBytes(opts.chunkBytes) end
   defaultAlg = algid(opts.algorithm or 'auto', 'init')
   if dist.size() > 1 and opts.model ~= false then
      local path = opts.model or os.getenv('MOONTORCH_DIST_MODEL') or default_cache()
      local f = io.open(path, 'r')
      local have = dist.broadcastNumber(f and 1 or 0) == 1 -- rank 0 decides for all
      if f then f:close() end
      if have then
         T.check(D.mt_dist_load_model(comm, path), 'dist.init')
      else
         if dist.rank() == 0 then -- once per cluster shape: say why the start takes seconds, and where it goes
            io.stderr:write(('dist.init: measuring the allreduce cost table of %d ranks on %d nodes for algorithm '
               .. "'auto' (once; kept in %s: delete it to measure again)\n"):format(dist.size(), dist.nodes(), path))
         end
         dist.tune(opts.tuneMaxBytes or 64 * 2 ^ 20, opts.tuneReps or 3)
         if dist.rank() == 0 then
            os.execute(("mkdir -p '%s'"):format(path:match('^(.*)/[^/]*$') or '.'))
            T.check(D.mt_dist_save_model(comm, path), 'dist.init')
         end
      end
   end
   return dist
end

function dist.initialized() return comm ~= nil end
function dist.rank() return comm ~= nil and D.mt_dist_rank(comm) or 0 end
function dist.size() return comm ~= nil and D.mt_dist_size(comm) or 1 end
function dist.localRank() return comm ~= nil and D.mt_dist_local_rank(comm) or 0 end
function dist.localSize() return comm ~= nil and D.mt_dist_local_size(comm) or 1 end
function dist.node() return comm ~= nil and D.mt_dist_node(comm) or 0 end
function dist.nodes() return comm ~= nil and D.mt_dist_nodes(comm) or 1 end
function dist.isMaster() return dist.rank() == 0 end
function dist.launched() return comm ~= nil and D.mt_dist_launched(comm) == 1 end

function dist.setTimeout(seconds) T.check(D.mt_dist_set_timeout(need('setTimeout'), seconds), 'dist.setTimeout') end
function dist.setChunkBytes(bytes)
   T.check(D.mt_dist_set_chunk_bytes(need('setChunkBytes'), bytes), 'dist.setChunkBytes')
end
function dist.setCheck(on) D.mt_dist_set_check(need('setCheck'), on and 1 or 0) end
function dist.setAlgorithm(name) defaultAlg = algid(name, 'setAlgorithm') end
function dist.algorithm() return ffi.string(D.mt_dist_alg_name(defaultAlg)) end

-- the algorithm `auto` runs for a message of `bytes`, and the time the table predicts for each
function dist.autoChoice(bytes)
   return ffi.string(D.mt_dist_alg_name(D.mt_dist_auto_choice(need('autoChoice'), bytes)))
end
function dist.modelTime(alg, bytes) return D.mt_dist_model_time(need('modelTime'), algid(alg, 'modelTime'), bytes) end
function dist.tune(maxBytes, reps)
   T.check(D.mt_dist_tune(need('tune'), maxBytes or 64 * 2 ^ 20, reps or 3), 'dist.tune')
end
function dist.saveModel(path) T.check(D.mt_dist_save_model(need('saveModel'), path), 'dist.saveModel') end
function dist.loadModel(path) T.check(D.mt_dist_load_model(need('loadModel'), path), 'dist.loadModel') end

---------------------------------------------------------------------------------------------
-- Handles. A collective on a non-contiguous tensor runs on a contiguous copy that wait()
-- copies back, so every call takes any tensor.
local Handle = {}
Handle.__index = Handle

function Handle:wait()
   if self.w ~= nil then
      local st = D.mt_dist_work_wait(self.w)
      if self.report and st == 0 then self.reported = self.report(self.w) end
      D.mt_dist_work_free(ffi.gc(self.w, nil))
      self.w = nil
      self.keep = nil
      if st ~= 0 then T.raise('dist.' .. self.op, true) end
      if self.back then self.back:copy(self.result_c) end
   end
   if self.report then return self.result, self.reported end
   return self.result
end

function Handle:test()
   if self.w == nil then return true end
   return D.mt_dist_work_test(self.w) == 1
end

local workp = ffi.new('mt_dist_work*[1]')

local function contiguous(t) return t:isContiguous() and t or t:contiguous() end

-- runs `fn(handles...)` for a collective; result: the user's tensor; written: the one C writes
local function submit(op, async, result, written, fn)
   local cw = contiguous(written)
   local st = fn(async and workp or nil, cw)
   T.check(st, 'dist.' .. op, true, 3)
   local h = setmetatable({ op = op, result = result, result_c = cw, back = cw ~= written and written or nil }, Handle)
   if async then
      h.w = ffi.gc(workp[0], D.mt_dist_work_free)
      h.keep = { result, written, cw }
      return h
   end
   if h.back then h.back:copy(cw) end
   return result
end

local function collective(name, body)
   dist[name] = function(...) return body(false, ...) end
   dist[name .. 'Async'] = function(...) return body(true, ...) end
end

collective('allreduce', function(async, t, op, opts)
   T.expect_tensor(t, 'dist.allreduce', 'to reduce', 3)
   opts = options(opts, ALLREDUCE_OPTIONS, 'allreduce')
   local d, o, a = need('allreduce'), opid(op, 'allreduce'), algid(opts.algorithm, 'allreduce')
   return submit('allreduce', async, t, t, function(w, c) return D.mt_dist_allreduce(d, c.h, o, a, w) end)
end)

collective('broadcast', function(async, t, root, extra)
   T.expect_tensor(t, 'dist.broadcast', 'to broadcast', 3)
   if type(root) == 'table' then nooptions(root, 'broadcast', 'root') end
   if root ~= nil and (type(root) ~= 'number' or root % 1 ~= 0) then
      T.argerror('dist.broadcast', 'root must be a rank number, got ' .. tostring(root), 3)
   end
   nooptions(extra, 'broadcast', 'root')
   local d = need('broadcast')
   return submit('broadcast', async, t, t, function(w, c) return D.mt_dist_broadcast(d, c.h, root or 0, w) end)
end)

collective('allgather', function(async, out, t, extra)
   T.expect_tensor(out, 'dist.allgather', 'out', 3)
   T.expect_tensor(t, 'dist.allgather', 'input', 3)
   nooptions(extra, 'allgather')
   local d, ct = need('allgather'), contiguous(t)
   local h = submit('allgather', async, out, out, function(w, c) return D.mt_dist_allgather(d, c.h, ct.h, w) end)
   if async then h.keep[#h.keep + 1] = ct end
   return h
end)

collective('reduceScatter', function(async, out, t, op, extra)
   T.expect_tensor(out, 'dist.reduceScatter', 'out', 3)
   T.expect_tensor(t, 'dist.reduceScatter', 'input', 3)
   if type(op) == 'table' then nooptions(op, 'reduceScatter', 'op') end
   nooptions(extra, 'reduceScatter', 'op')
   local d, ct, o = need('reduceScatter'), contiguous(t), opid(op, 'reduceScatter')
   local h = submit('reduceScatter', async, out, out,
      function(w, c) return D.mt_dist_reduce_scatter(d, c.h, ct.h, o, w) end)
   if async then h.keep[#h.keep + 1] = ct end
   return h
end)

-- dist.sparseAllreduce(out, idx, val, {op = 'sum'|'avg', algorithm = 'allgather'|'hierarchical'}):
-- out (float32, CPU) := the sum over the ranks of each rank's (idx, val) pairs (int32 0-based
-- indices into out, -1 for padding; float32 values; counts may differ between ranks). Returns
-- out and {recvBytes = what this rank received, pairs = what it summed or received (-1 when
-- the sum came dense)}; the Async form's handle returns both from wait().
local SPARSE_OPTIONS = { 'op', 'algorithm' }
local sparseAlgs, sparseNames = {}, {}
for i = 0, C.MT_NUM_SPARSE_ALG - 1 do
   sparseNames[i + 1] = ffi.string(D.mt_dist_sparse_alg_name(i))
   sparseAlgs[sparseNames[i + 1]] = i
end
function dist.sparseAlgorithms() return { unpack(sparseNames) } end

local counters = ffi.new('int64_t[2]')
local function sparseReport(w)
   D.mt_dist_work_counters(w, counters)
   return { recvBytes = tonumber(counters[0]), pairs = tonumber(counters[1]) }
end

collective('sparseAllreduce', function(async, out, idx, val, opts)
   T.expect_tensor(out, 'dist.sparseAllreduce', 'out', 3)
   T.expect_tensor(idx, 'dist.sparseAllreduce', 'idx', 3)
   T.expect_tensor(val, 'dist.sparseAllreduce', 'val', 3)
   opts = options(opts, SPARSE_OPTIONS, 'sparseAllreduce')
   local d, o = need('sparseAllreduce'), opid(opts.op, 'sparseAllreduce')
   local a = sparseAlgs[opts.algorithm or 'allgather']
   if not a then
      T.argerror('dist.sparseAllreduce', ("unknown algorithm '%s' (%s)"):format(tostring(opts.algorithm),
         table.concat(sparseNames, ', ')), 3)
   end
   local ci, cv = contiguous(idx), contiguous(val)
   local h = submit('sparseAllreduce', true, out, out,
      function(w, c) return D.mt_dist_sparse_allreduce(d, c.h, ci.h, cv.h, o, a, w) end)
   h.keep[#h.keep + 1], h.keep[#h.keep + 2] = ci, cv
   h.report = sparseReport
   if async then return h end
   return h:wait()
end)

function dist.barrier(extra)
   nooptions(extra, 'barrier')
   T.check(D.mt_dist_barrier(need('barrier'), nil), 'dist.barrier', true)
end

function dist.barrierAsync(extra)
   nooptions(extra, 'barrier')
   T.check(D.mt_dist_barrier(need('barrier'), workp), 'dist.barrier', true)
   return setmetatable({ op = 'barrier', w = ffi.gc(workp[0], D.mt_dist_work_free) }, Handle)
end

-- a Lua number from rank `root` to every rank
function dist.broadcastNumber(x, root)
   if dist.size() == 1 then return x end
   local torch = require 'moontorch'
   local t = torch.DoubleTensor(1):fill(x)
   dist.broadcast(t, root or 0)
   return t[1]
end

---------------------------------------------------------------------------------------------
-- Faults. fail(msg) tells every peer this rank failed (each peer waiting in a collective stops
-- at once with "rank R failed: msg"); run(fn) does that for any error fn raises, then re-raises.
function dist.fail(msg)
   if comm ~= nil then D.mt_dist_fail(comm, tostring(msg)) end
end

function dist.run(fn, ...)
   local args, n = { ... }, select('#', ...)
   local res = { xpcall(function() return fn(unpack(args, 1, n)) end, debug.traceback) }
   if not res[1] then
      dist.fail(tostring(res[2]):match('^[^\n]*'))
      error(res[2], 0)
   end
   return unpack(res, 2, table.maxn(res))
end

function dist.finalize()
   if comm == nil then return end
   local PS = package.loaded['moontorch.dist.ParameterServer']
   if PS then PS.closeAll() end -- collective, in the order the tables were opened
   local st = D.mt_dist_finalize(comm)
   if st ~= 0 then T.raise('dist.finalize', true) end
   D.mt_dist_free(ffi.gc(comm, nil))
   comm = nil
end

-- the communicator itself, for the modules of this package that call C with it
function dist._comm() return need('ParameterServer') end

-- dist.DataParallel(model, opts) and dist.ParameterServer(model, opts), loaded on first use
setmetatable(dist, { __index = function(self, k)
   if k == 'DataParallel' or k == 'ParameterServer' then
      local class = require('moontorch.dist.' .. k)
      rawset(self, k, class)
      return class
   end
end })

return dist
