-- bench/topk.lua: throughput of the selection step of residual gradient compression
-- (moontorch.dist.topk: sampled, exact, threshold, trimmed) in GB/s of float32 scanned (4n bytes per
-- call), beside a full sort of |v| (torch.sort) and PyTorch's torch.topk(v.abs(), k) on the CPU,
-- run in the same invocation under /usr/bin/python3 with the same sizes, density and threads.
-- With -device cuda the vector lives on the GPU (dist.topk's CUDA kernels), each call ends with a
-- device synchronize, and the peer is PyTorch's CUDA build ($MT_PEER_PYTHON) on the same GPU.
--   luajit bench/topk.lua [-sizes 1e5,1e6,1e7,2.5e7] [-density 0.001] [-threads 1,2] [-reps 5]
--                         [-nosort] [-nopeer] [-device cpu|cuda]
-- Each cell is the median of -reps timed calls after one untimed call; the ratio columns are
-- (PyTorch topk ms) / (ours ms): above 1 means ours is faster.
local torch = require 'moontorch'
local topk = require 'moontorch.dist.topk'
local int = require('moontorch.train.flags').int

local cli = torch.CmdLine()
cli:text('bench/topk.lua: top-k selection throughput, moontorch vs a full sort and PyTorch topk')
cli:text('Options:')
cli:option('-sizes', '1e5,1e6,1e7,2.5e7', 'comma-separated element counts')
cli:option('-density', 0.001, 'fraction selected', { range = '(0, 1]' })
cli:option('-threads', '1,2', 'comma-separated thread counts (PyTorch gets the same)')
cli:option('-reps', 5, 'timed calls per cell (the median is shown)', int '[1, inf)')
cli:option('-nosort', false, 'skip the full sort')
cli:option('-nopeer', false, 'skip PyTorch')
cli:option('-device', 'cpu', 'cpu or cuda', { choices = { 'cpu', 'cuda' } })
local opt = cli:parse(arg)
local gpu = opt.device == 'cuda'
if gpu and not (torch.cuda.isAvailable and torch.cuda.isAvailable()) then
   error('topk: -device cuda but no CUDA device (or a build without CUDA)')
end
local sync = gpu and function() torch.cuda.synchronize() end or function() end

local function list(s)
   local out = {}
   for x in tostring(s):gmatch('[^,]+') do out[#out + 1] = math.floor(tonumber(x)) end
   return out
end
local sizes, threads = list(opt.sizes), list(opt.threads)
local d, reps = opt.density, opt.reps

local timing = require 'bench.timing'
local function median(f) return timing.time_ms(f, reps, 1) end

-- PyTorch's side: one line per cell, "<n> <threads> <median ms>"
local peer = {}
if not opt.nopeer then
   local script = os.tmpname()
   local f = assert(io.open(script, 'w'))
   f:write(([[
import math, time, statistics, torch
sizes, threads, d, reps, dev = [%s], [%s], %.17g, %d, '%s'
sync = torch.cuda.synchronize if dev == 'cuda' else (lambda: None)
for n in sizes:
    v = torch.randn(n, device=dev)
    k = max(1, math.ceil(d * n))
    for nt in threads:
        torch.set_num_threads(nt)
        torch.topk(v.abs(), k)
        sync()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            torch.topk(v.abs(), k)
            sync()
            ts.append((time.perf_counter() - t0) * 1000)
        print(n, nt, statistics.median(ts), flush=True)
]]):format(table.concat(sizes, ','), table.concat(threads, ','), d, reps, opt.device))
   f:close()
   local py = gpu and os.getenv('MT_PEER_PYTHON') or '/usr/bin/python3'
   local p = io.popen(py .. ' ' .. script .. ' 2>&1')
   local out = p:read('*a')
   p:close()
   os.remove(script)
   for n, nt, ms in out:gmatch('(%d+) (%d+) ([%d%.e%-]+)') do peer[n .. ':' .. nt] = tonumber(ms) end
   if next(peer) == nil then io.stderr:write('topk: PyTorch peer gave no timings:\n', out, '\n') end
end

local saved = torch.getnumthreads()
print(('density %g, median of %d; GB/s = 4n bytes / time; ratio = PyTorch topk ms / ours ms'):format(d, reps))
print(('%-10s %3s  %-10s %10s %8s %8s %8s'):format('n', 'thr', 'method', 'ms', 'GB/s', 'k out', 'vs torch'))
for _, n in ipairs(sizes) do
   local v = torch.randn(n):float()
   if gpu then v = v:cuda() end
   for _, nt in ipairs(threads) do
      torch.setnumthreads(nt)
      local ref = peer[n .. ':' .. nt]
      local function row(name, ms, got)
         print(('%-10d %3d  %-10s %10.3f %8.2f %8s %8s'):format(n, nt, name, ms, 4 * n / ms / 1e6, got or '-',
            ref and ('%.2fx'):format(ref / ms) or '-'))
      end
      for _, m in ipairs({ 'sampled', 'exact', 'threshold', 'trimmed' }) do
         local got
         local ms = median(function() got = topk(v, d, { method = m }):nElement(); sync() end)
         row(m, ms, got)
      end
      if not opt.nosort then
         row('sort|v|', median(function() torch.sort(torch.abs(v), 1, true); sync() end))
      end
      if ref then row('torch.topk', ref) end
   end
end
torch.setnumthreads(saved)
