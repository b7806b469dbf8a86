-- bench/tensor.lua: how fast moontorch's core tensor ops are, next to what bounds them.
--   luajit bench/tensor.lua [-threads N] [-reps N] [-quick] [-nopeer] [-nogpu]
-- Tables:
--   1. GEMM GFLOP/s: torch.mm vs OpenBLAS's cblas_sgemm/dgemm called directly through the FFI
--      (with OpenBLAS's own threads)
--   2. elementwise add GB/s (bytes read + written) vs memcpy moving the same bytes
--   3. both against PyTorch on the CPU (bench/torch_peer.py under /usr/bin/python3)
--   4. on a GPU: torch.mm and add on CUDA vs PyTorch CUDA (skipped with a note without one)
-- Every case runs on random inputs with warm-up runs first; the median of -reps runs is shown.
local ffi = require 'ffi'
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/

---------------------------------------------------------------------------------------------
-- options
local cli = torch.CmdLine()
cli:text('bench/tensor.lua: core tensor ops against OpenBLAS, memcpy and PyTorch')
cli:text('Options:')
cli:option('-threads', 0, 'CPU threads (0: every core)', { range = '[0, inf)', integer = true })
cli:option('-reps', 7, 'timed runs per case (the median is shown)', { range = '[1, inf)', integer = true })
cli:option('-quick', false, 'fewer sizes and 3 runs each')
cli:option('-nopeer', false, 'skip PyTorch')
cli:option('-nogpu', false, 'skip the GPU table')
local opt = cli:parse(arg)
opt.warmup, opt.peer, opt.gpu = 2, not opt.nopeer, not opt.nogpu
local function nproc()
   local f = io.popen('nproc')
   local n = f and tonumber(f:read('*l'))
   if f then f:close() end
   return n or 1
end
if opt.threads == 0 then opt.threads = nproc() end
torch.setnumthreads(opt.threads) -- OpenMP; BLAS stays single-threaded inside it
if opt.quick then opt.reps = 3 end

---------------------------------------------------------------------------------------------
-- timing
pcall(ffi.cdef, [[
   void *memcpy(void *dst, const void *src, size_t n);
]])

local sync = function() end
local timing = require 'bench.timing'
-- seconds
local function median_time(fn)
   return timing.time_ms(fn, opt.reps, opt.warmup, sync) / 1000
end

---------------------------------------------------------------------------------------------
-- OpenBLAS, loaded directly (the same shared object libmoontorch uses)
pcall(ffi.cdef, [[
   void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc);
   void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                    const double *b, int ldb, double beta, double *c, int ldc);
   void openblas_set_num_threads(int n);
]])
local blas_ok, blas = pcall(ffi.load, 'openblas')
if not blas_ok then blas_ok, blas = pcall(ffi.load, 'libopenblas.so.0') end
local ROW_MAJOR, NO_TRANS = 101, 111

---------------------------------------------------------------------------------------------
-- the PyTorch peer: one subprocess for all cases, its lines parsed into a lookup table
local function run_peer(gemms, adds, cuda)
   -- MT_PEER_PYTHON names another interpreter (on the GPU machine, the one with CUDA PyTorch)
   local py = os.getenv('MT_PEER_PYTHON') or '/usr/bin/python3'
   if not opt.peer then return nil, 'skipped (-nopeer)' end
   local f = io.open(py)
   if not f then return nil, 'no ' .. py end
   f:close()
   local g, a = {}, {}
   for _, c in ipairs(gemms) do g[#g + 1] = ('%s:%dx%dx%d'):format(c.dt, c.m, c.k, c.n) end
   for _, c in ipairs(adds) do a[#a + 1] = ('%s:%d'):format(c.dt, c.n) end
   local here = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') or 'bench'
   -- OPENBLAS_NUM_THREADS: PyTorch's torch.set_num_threads does not reach Debian's pthread
   -- OpenBLAS, whose pool would otherwise run PyTorch's GEMMs (mm, bmm, slow_conv*) on every core
   local cmd = ('OPENBLAS_NUM_THREADS=%d %s %s/torch_peer.py --threads %d --reps %d --warmup %d --gemm %s'
      .. ' --add %s%s 2>&1'):format(opt.threads, py, here,
      opt.threads, opt.reps, opt.warmup, table.concat(g, ','), table.concat(a, ','), cuda and ' --cuda' or '')
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   local res = { gemm = {}, add = {} }
   local found = false
   for line in out:gmatch('[^\n]+') do
      local dt, m, k, n, t = line:match('^gemm (%w+) (%d+) (%d+) (%d+) ([%d.e+-]+)$')
      if dt then res.gemm[dt .. m .. 'x' .. k .. 'x' .. n] = tonumber(t); found = true end
      local adt, an, at = line:match('^add (%w+) (%d+) ([%d.e+-]+)$')
      if adt then res.add[adt .. an] = tonumber(at); found = true end
      local ver = line:match('^peer torch (%S+)')
      if ver then res.version = ver end
   end
   if not found then return nil, (out:match('[^\n]+$') or 'no output'):sub(1, 100) end
   return res
end

---------------------------------------------------------------------------------------------
-- printing
local function row(fmt, ...) io.write(fmt:format(...), '\n') end
local function ratio(a, b) return (a and b and b > 0) and ('%.2f'):format(a / b) or '-' end
local function num(x, f) return x and (f or '%.1f'):format(x) or '-' end

local types = { f32 = 'torch.FloatTensor', f64 = 'torch.DoubleTensor' }
local cuda_types = { f32 = 'torch.CudaTensor', f64 = 'torch.CudaDoubleTensor' }

local function rand(typename, ...)
   return torch.rand(...):type(typename) -- uniform [0, 1): random, never all zeros
end

---------------------------------------------------------------------------------------------
-- the cases
local gemms = {
   { dt = 'f32', m = 256, k = 256, n = 256 },
   { dt = 'f32', m = 512, k = 512, n = 512 },
   { dt = 'f32', m = 1024, k = 1024, n = 1024 },
   { dt = 'f32', m = 2048, k = 2048, n = 2048 },
   { dt = 'f32', m = 4096, k = 256, n = 1024 }, -- tall times wide
   { dt = 'f32', m = 128, k = 4096, n = 128 },  -- long inner dimension
   { dt = 'f64', m = 1024, k = 1024, n = 1024 },
}
local adds = {
   { dt = 'f32', n = 2 ^ 24 },
   { dt = 'f32', n = 2 ^ 25 },
   { dt = 'f32', n = 2 ^ 26 },
}
if opt.quick then
   gemms = { gemms[1], gemms[2], gemms[5], gemms[7] }
   adds = { adds[1] }
end

local cpu_name = (io.open('/proc/cpuinfo') or io.open('/dev/null')):read('*a'):match('model name%s*:%s*([^\n]+)')
row('moontorch %s: %d thread%s, median of %d runs after %d warm-up%s; %s', torch.version, opt.threads,
   opt.threads == 1 and '' or 's', opt.reps, opt.warmup, opt.warmup == 1 and '' or 's', cpu_name or 'unknown CPU')

local peer, peer_why = run_peer(gemms, adds, false)
local peer_note = peer and ('PyTorch ' .. (peer.version or '?') .. ' on the CPU') or ('PyTorch: ' .. peer_why)

-- 1 + 3: GEMM
io.write('\nGEMM, C = A @ B (GFLOP/s; ratios > 1 mean moontorch is faster)  [', peer_note, ']\n')
row('%-6s %-18s %10s %10s %10s %9s %9s', 'dtype', 'm x k x n', 'moontorch', 'OpenBLAS', 'PyTorch', 'mt/BLAS',
   'mt/torch')
for _, c in ipairs(gemms) do
   local a, b = rand(types[c.dt], c.m, c.k), rand(types[c.dt], c.k, c.n)
   local out = torch[types[c.dt]:match('torch%.(.*)')](c.m, c.n)
   local flops = 2 * c.m * c.k * c.n
   local t_mt = median_time(function() torch.mm(out, a, b) end)
   local t_blas
   if blas_ok then
      local pa, pb, pc = a:data(), b:data(), out:data()
      local gemm = c.dt == 'f32' and blas.cblas_sgemm or blas.cblas_dgemm
      -- moontorch keeps OpenBLAS single-threaded (it splits products over OpenMP threads itself);
      -- the bound is OpenBLAS threading its own calls, so give it the threads for this row only
      blas.openblas_set_num_threads(opt.threads)
      t_blas = median_time(function()
         gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, c.m, c.n, c.k, 1, pa, c.k, pb, c.n, 0, pc, c.n)
      end)
      blas.openblas_set_num_threads(1)
   end
   local t_pt = peer and peer.gemm[c.dt .. c.m .. 'x' .. c.k .. 'x' .. c.n]
   local g_mt, g_blas, g_pt = flops / t_mt / 1e9, t_blas and flops / t_blas / 1e9, t_pt and flops / t_pt / 1e9
   row('%-6s %-18s %10s %10s %10s %9s %9s', c.dt, ('%d x %d x %d'):format(c.m, c.k, c.n), num(g_mt), num(g_blas),
      num(g_pt), ratio(g_mt, g_blas), ratio(g_mt, g_pt))
   a, b, out = nil, nil, nil
   collectgarbage()
end
if not blas_ok then io.write('  (OpenBLAS could not be loaded through the FFI: ', tostring(blas), ')\n') end

-- 2 + 3: elementwise add
io.write('\nElementwise add, contiguous (GB/s of bytes read + written; memcpy is single-threaded)\n')
row('%-6s %-12s %10s %10s %10s %9s %9s', 'dtype', 'elements', 'moontorch', 'memcpy', 'PyTorch', 'mt/memcpy', 'mt/torch')
for _, c in ipairs(adds) do
   local a, b = rand(types[c.dt], c.n), rand(types[c.dt], c.n)
   local out = torch[types[c.dt]:match('torch%.(.*)')](c.n)
   local es = c.dt == 'f32' and 4 or 8
   local bytes = 3 * c.n * es -- two reads and a write per element
   local t_mt = median_time(function() torch.add(out, a, b) end)
   -- memcpy of the same number of bytes: half read, half written
   local half = bytes / 2
   local src, dst = ffi.new('uint8_t[?]', half), ffi.new('uint8_t[?]', half)
   ffi.fill(src, half, 7)
   local t_mc = median_time(function() ffi.C.memcpy(dst, src, half) end)
   local t_pt = peer and peer.add[c.dt .. c.n]
   local g_mt, g_mc, g_pt = bytes / t_mt / 1e9, bytes / t_mc / 1e9, t_pt and bytes / t_pt / 1e9
   row('%-6s %-12s %10s %10s %10s %9s %9s', c.dt, ('2^%d'):format(math.floor(math.log(c.n) / math.log(2) + 0.5)),
      num(g_mt), num(g_mc), num(g_pt), ratio(g_mt, g_mc), ratio(g_mt, g_pt))
   a, b, out, src, dst = nil, nil, nil, nil, nil
   collectgarbage()
end

-- 4: CUDA
io.write('\nCUDA\n')
local has_gpu = opt.gpu and torch.cuda and torch.cuda.isAvailable and torch.cuda.isAvailable()
if not has_gpu then
   io.write(opt.gpu and '  skipped: no CUDA device (or a build without CUDA)\n' or '  skipped (-nogpu)\n')
   os.exit(0)
end
sync = function() torch.cuda.synchronize() end
local ggemms = {
   { dt = 'f32', m = 1024, k = 1024, n = 1024 },
   { dt = 'f32', m = 4096, k = 4096, n = 4096 },
   { dt = 'f32', m = 8192, k = 8192, n = 8192 },
   { dt = 'f64', m = 4096, k = 4096, n = 4096 },
}
local gadds = { { dt = 'f32', n = 2 ^ 24 }, { dt = 'f32', n = 2 ^ 26 }, { dt = 'f32', n = 2 ^ 28 } }
if opt.quick then ggemms, gadds = { ggemms[1], ggemms[2] }, { gadds[1], gadds[2] } end
local gpeer, gwhy = run_peer(ggemms, gadds, true)
row('  device: %s; %s', torch.cuda.getDeviceName(), gpeer and ('PyTorch ' .. (gpeer.version or '?') .. ' on CUDA')
   or ('PyTorch CUDA: ' .. gwhy))
row('%-6s %-18s %12s %12s %9s', 'dtype', 'm x k x n', 'moontorch', 'PyTorch', 'mt/torch')
for _, c in ipairs(ggemms) do
   local a, b = rand(cuda_types[c.dt], c.m, c.k), rand(cuda_types[c.dt], c.k, c.n)
   local out = torch[cuda_types[c.dt]:match('torch%.(.*)')](c.m, c.n)
   local flops = 2 * c.m * c.k * c.n
   local t_mt = median_time(function() torch.mm(out, a, b) end)
   local t_pt = gpeer and gpeer.gemm[c.dt .. c.m .. 'x' .. c.k .. 'x' .. c.n]
   row('%-6s %-18s %12s %12s %9s', c.dt, ('%d x %d x %d'):format(c.m, c.k, c.n), num(flops / t_mt / 1e9),
      num(t_pt and flops / t_pt / 1e9), ratio(t_pt, t_mt))
   a, b, out = nil, nil, nil
   collectgarbage()
end
row('%-6s %-18s %12s %12s %9s', 'dtype', 'add elements', 'GB/s', 'PyTorch', 'mt/torch')
for _, c in ipairs(gadds) do
   local a, b = rand(cuda_types[c.dt], c.n), rand(cuda_types[c.dt], c.n)
   local out = torch[cuda_types[c.dt]:match('torch%.(.*)')](c.n)
   local bytes = 3 * c.n * (c.dt == 'f32' and 4 or 8)
   local t_mt = median_time(function() torch.add(out, a, b) end)
   local t_pt = gpeer and gpeer.add[c.dt .. c.n]
   row('%-6s %-18s %12s %12s %9s', c.dt, ('2^%d'):format(math.floor(math.log(c.n) / math.log(2) + 0.5)),
      num(bytes / t_mt / 1e9), num(t_pt and bytes / t_pt / 1e9), ratio(t_pt, t_mt))
   a, b, out = nil, nil, nil
   collectgarbage()
end
