-- util.lua: shared test tools. Inputs are fresh random numbers each run (the seed is printed
-- so a failure can be replayed with MT_TEST_SEED=...); references are computed in Lua doubles.
local torch = require 'moontorch'
local util = {}

local seed = tonumber(os.getenv('MT_TEST_SEED')) or (os.time() + math.floor(os.clock() * 1e6))
math.randomseed(seed)
if torch.manualSeed then torch.manualSeed(seed) end
util.seed = seed
-- the Python that computes references: Debian's (PyTorch 1.13, numpy) unless MT_REF_PYTHON names
-- another (the GPU machine's /usr/bin/python3 has neither; its PyTorch lives in a venv)
util.PY = os.getenv('MT_REF_PYTHON') or '/usr/bin/python3'
io.stderr:write(('[spec seed %d]\n'):format(seed))

-- flat array of n uniform values in [lo, hi)
function util.rand_flat(n, lo, hi)
   lo, hi = lo or -1, hi or 1
   local r = {}
   for i = 1, n do r[i] = lo + (hi - lo) * math.random() end
   return r
end

function util.numel(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return n
end

-- a random tensor of a shape with its flat reference values: t, flat
function util.rand_tensor(shape, typename, lo, hi)
   local flat = util.rand_flat(util.numel(shape), lo, hi)
   local T = require 'moontorch.internal'
   local dtype = T.parse_typename(typename or 'torch.DoubleTensor')
   if not T.dtypes[dtype + 1].is_float then
      for i = 1, #flat do flat[i] = math.floor(flat[i]) end
   end
   if dtype ~= T.DOUBLE and T.dtypes[dtype + 1].is_float then
      -- the reference sees the values the tensor holds: float32 rounding too, which would
      -- otherwise show as ~1e-9 relative noise in a long float64-accumulated sum
      local t = T.from_flat(flat, shape, dtype, T.CPU_DEVICE)
      return t, util.flat(t)
   end
   return T.from_flat(flat, shape, dtype, T.CPU_DEVICE), flat
end

-- flat row-major values of a tensor (any device/dtype) as Lua numbers: the totable of a 1-d
-- view, no walk over nested tables. (It was a recursive walk, the pattern Debian's LuaJIT
-- 2.1.0-beta3 can crash on: docs/design.md, "Lua code and Debian's LuaJIT".)
function util.flat(t)
   return t:contiguous():view(t:nElement()):totable()
end

-- call fn(pos) for every multi-index of sizes in row-major order (pos: 1-based, reused between
-- calls; lo, when given, is each dimension's first index instead of 1). A loop, not recursion,
-- for the reason util.flat's comment gives.
function util.each_index(sizes, fn, lo)
   local nd, pos = #sizes, {}
   for k = 1, nd do
      if sizes[k] <= 0 then return end
      pos[k] = lo and lo[k] or 1
   end
   while true do
      fn(pos)
      local k = nd
      while k > 0 do
         local first = lo and lo[k] or 1
         if pos[k] < first + sizes[k] - 1 then
            pos[k] = pos[k] + 1
            break
         end
         pos[k] = first
         k = k - 1
      end
      if k == 0 then return end
   end
end

-- assert every element is within atol + rtol*|expected|; NaN never passes unless expected NaN
-- and allow_nan is set.
function util.assert_close(actual, expected, tol, what, allow_nan)
   tol = tol or {}
   local atol, rtol = tol.atol or 1e-12, tol.rtol or 1e-10
   if torch.isTensor(actual) then actual = util.flat(actual) end
   if torch.isTensor(expected) then expected = util.flat(expected) end
   assert(#actual == #expected, ('%s: %d elements, expected %d'):format(what or 'value', #actual, #expected))
   for i = 1, #expected do
      local a, e = actual[i], expected[i]
      if e ~= e then
         assert(allow_nan and a ~= a, ('%s: element %d is %s, expected NaN'):format(what or 'value', i, tostring(a)))
      else
         assert(a == a, ('%s: element %d is NaN, expected %.17g'):format(what or 'value', i, e))
         local ok = a == e or math.abs(a - e) <= atol + rtol * math.abs(e)
         assert(ok, ('%s: element %d is %.17g, expected %.17g (atol %g, rtol %g)'):format(what or 'value', i, a, e,
            atol, rtol))
      end
   end
end

-- tolerance by dtype for results computed in that dtype
util.tol = {
   ['torch.DoubleTensor'] = { atol = 1e-12, rtol = 1e-10 },
   ['torch.FloatTensor'] = { atol = 1e-5, rtol = 1e-5 },
   ['torch.HalfTensor'] = { atol = 1e-2, rtol = 1e-2 },
   ['torch.BFloat16Tensor'] = { atol = 3e-2, rtol = 3e-2 },
}

-- CUDA tests: run when a GPU is present, else show as pending (visibly skipped, never passed)
function util.has_gpu() return torch.cuda and torch.cuda.isAvailable and torch.cuda.isAvailable() or false end
function util.gpu_it(name, fn)
   -- busted defines it/pending in each spec file's environment, not in _G: use the caller's
   local env = getfenv(2)
   if util.has_gpu() then env.it(name, fn) else env.pending('[no GPU] ' .. name) end
end

-- expect an error whose message contains each of the given fragments
function util.assert_error(fn, ...)
   local ok, err = pcall(fn)
   assert(not ok, 'expected an error, got success')
   err = tostring(err)
   for _, frag in ipairs { ... } do
      assert(err:find(frag, 1, true), ('error message %q lacks %q'):format(err, frag))
   end
   return err
end

-- files: a fresh temporary directory, whole-file reads and writes, existence
-- a shell command's output (stderr too) and exit status
function util.sh(cmd)
   local f = io.popen(cmd .. ' 2>&1; echo "exit=$?"')
   local out = f:read('*a')
   f:close()
   return out, tonumber(out:match('exit=(%d+)%s*$'))
end

-- run a Python script (given as text) under /usr/bin/python3 with arguments (each quoted);
-- its stdout, after asserting that it exited 0 (else the error is its output)
function util.python(code, ...)
   local f = os.tmpname()
   util.write_bytes(f, code)
   local args = {}
   for i, a in ipairs { ... } do args[i] = ("'%s'"):format(tostring(a)) end
   local out, rc = util.sh(util.PY .. ' ' .. f .. ' ' .. table.concat(args, ' '))
   os.remove(f)
   assert(rc == 0, out)
   return (out:gsub('exit=%d+%s*$', ''))
end

-- run a Python script (given as text) under /usr/bin/python3; every line it printed (stderr
-- too), whatever its exit status
function util.python_lines(code)
   local path = os.tmpname()
   local f = assert(io.open(path, 'w'))
   f:write(code)
   f:close()
   local pf = io.popen(util.PY .. ' ' .. path .. ' 2>&1')
   local lines = {}
   for line in pf:lines() do lines[#lines + 1] = line end
   pf:close()
   os.remove(path)
   return lines
end

-- the largest absolute difference between two tensors, in float64
function util.maxdiff(a, b) return (a:double() - b:double()):abs():max() end

-- seconds on the wall clock (for specs that time whole runs)
function util.now()
   local f = io.popen('date +%s.%N')
   local t = tonumber(f:read('*a'))
   f:close()
   return t
end

-- why a spec cannot run a recipe under mpirun here, or nil
function util.mpi_missing()
   local mpi = require('moontorch.internal').clib.MT_DIST_MPI
   local _, rc = util.sh('command -v mpirun')
   if bit.band(require('moontorch.dist.lib').C.mt_dist_transports(), mpi) == 0 or rc ~= 0 then
      return 'needs Open MPI (mpirun, and a build with MPI): NOT run'
   end
end

-- why a spec that trains the Fashion-MNIST recipe under mpirun cannot run here, or nil
function util.mpi_fashion_missing()
   local f = io.open('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz', 'rb')
   if f then f:close() end
   if not f or util.mpi_missing() then return 'needs Open MPI and dataset-fashion-mnist: NOT run' end
end

function util.tmpdir()
   local dir = os.tmpname()
   os.remove(dir)
   os.execute(('mkdir -p %q'):format(dir))
   return dir
end
-- names of files in a fresh temporary directory: a function name -> path, and the directory
function util.tmp_namer()
   local dir = util.tmpdir()
   return function(name) return dir .. '/' .. name end, dir
end
function util.read_bytes(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end
function util.write_bytes(path, s)
   local f = assert(io.open(path, 'wb'))
   f:write(s)
   f:close()
end
-- a file's bytes, or nil when it cannot be read
function util.slurp(path)
   local f = io.open(path, 'rb')
   if not f then return nil end
   local s = f:read('*a')
   f:close()
   return s
end
function util.exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

-- A distributed spec's start: dist.init with "nodes" of 2 ranks (so the hierarchical algorithms
-- have more than one node on this one host; 3 ranks: nodes of 2 and 1), and one fresh seed for
-- the whole job from rank 0 (MT_TEST_SEED replays it), printed. Returns rank, size, seed.
function util.distStart(dist, name)
   local world = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or '1')
   dist.init{ timeout = 120, model = false, groupSize = world >= 2 and 2 or 0 }
   local R, N = dist.rank(), dist.size()
   assert(world == N, ('launched as %d ranks, dist sees %d'):format(world, N))
   local jobSeed = dist.broadcastNumber(tonumber(os.getenv('MT_TEST_SEED'))
      or (os.time() % 100000 * 1000 + math.floor(os.clock() * 1e3) % 1000))
   if R == 0 then io.stderr:write(('[dist %s spec seed %d, %d ranks]\n'):format(name, jobSeed, N)) end
   return R, N, jobSeed
end

return util
