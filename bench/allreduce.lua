-- bench/allreduce.lua: allreduce bandwidth of every algorithm, MPI_Allreduce (`mpi`) beside
-- them in the same run, float32 sums from 4 KB to 256 MB.
--   mpirun --allow-run-as-root --oversubscribe -np 4 luajit bench/allreduce.lua [-maxMB 256]
--          [-reps 5] [-algorithms mpi,ring,multicolor,hierarchical,auto] [-groupSize 2]
-- Bandwidths as nccl-tests define them: algbw = bytes / time; busbw = algbw * 2(n-1)/n, the
-- traffic each rank's link carries, comparable across rank counts. Time: the median of -reps
-- runs, each the slowest rank's. Rank 0 prints the table; `best/mpi` is our best algorithm's
-- busbw over MPI_Allreduce's, `auto/best` auto's over the best one's at that size.
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/
local dist = require 'moontorch.dist'
local int = require('moontorch.train.flags').int
local progress = require 'moontorch.util.progress'

local cli = torch.CmdLine()
cli:text('bench/allreduce.lua: allreduce busbw per algorithm vs MPI_Allreduce')
cli:text('Options:')
cli:option('-maxMB', 256, 'largest message (MB); sizes go 4 KB, 16 KB, ... up to it', { range = '(0, inf)' })
cli:option('-reps', 5, 'timed runs per size and algorithm (median shown); fewer above 16 MB', int '[1, inf)')
cli:option('-algorithms', 'mpi,ring,multicolor,hierarchical,auto', 'comma-separated')
cli:option('-groupSize', 0, 'ranks per node for hierarchical (0: per host)', int '[0, inf)')
cli:option('-model', '', 'auto: cost table file (default: measured by dist.init into the cache)')
cli:option('-chunkKB', 0, 'pipelining chunk of our algorithms in KB (0: the default)', { range = '[0, inf)' })
local opt = cli:parse(arg)

torch.setnumthreads(1)
dist.init{ timeout = 600, groupSize = opt.groupSize, check = false, model = opt.model ~= '' and opt.model or nil,
   tuneMaxBytes = math.min(opt.maxMB, 64) * 2 ^ 20, chunkBytes = opt.chunkKB > 0 and opt.chunkKB * 1024 or nil }
local R, N = dist.rank(), dist.size()
local algs = {}
for a in opt.algorithms:gmatch('[^,]+') do algs[#algs + 1] = a end

local median = require('bench.timing').median

-- seconds of one allreduce: the slowest rank's, median over reps
local function time(buf, alg, reps)
   local ts, tmax = {}, torch.DoubleTensor(1)
   for _ = 1, reps do
      dist.barrier()
      local t0 = progress.now()
      dist.allreduce(buf, 'sum', { algorithm = alg })
      tmax[1] = progress.now() - t0
      dist.allreduce(tmax, 'max', { algorithm = 'mpi' })
      ts[#ts + 1] = tmax[1]
      buf:fill(1) -- keep the values finite and nonzero
   end
   return median(ts)
end

local function human(b)
   if b >= 2 ^ 20 then return ('%d MB'):format(b / 2 ^ 20) end
   return ('%d KB'):format(b / 2 ^ 10)
end

if R == 0 then
   print(('allreduce, float32 sum, %d ranks (%d nodes), %s, %s'):format(N, dist.nodes(),
      dist.lib.transports().mpi or 'no MPI', os.date('!%Y-%m-%d')))
   local head = ('%-8s'):format('size')
   for _, a in ipairs(algs) do head = head .. ('%14s'):format(a) end
   print(head .. ('%10s%10s  %s'):format('best/mpi', 'auto/best', 'auto→'))
   print('(busbw in GB/s; auto→: the algorithm auto picks at that size)')
end

local bytes = 4096
while bytes <= opt.maxMB * 2 ^ 20 do
   local n = bytes / 4
   local buf = torch.FloatTensor(n):fill(1)
   local reps = bytes > 16 * 2 ^ 20 and math.max(2, math.floor(opt.reps / 2)) or opt.reps
   local bw = {}
   for _, a in ipairs(algs) do
      dist.allreduce(buf, 'sum', { algorithm = a }) -- warm-up: scratch and connections
      buf:fill(1)
      local t = time(buf, a, reps)
      bw[a] = bytes / t / 1e9 * 2 * (N - 1) / math.max(N, 1)
      if N == 1 then bw[a] = bytes / t / 1e9 end
   end
   if R == 0 then
      local line, best = ('%-8s'):format(human(bytes)), 0
      for _, a in ipairs(algs) do
         line = line .. ('%14.3f'):format(bw[a])
         if a ~= 'mpi' and a ~= 'auto' then best = math.max(best, bw[a]) end
      end
      local vsmpi = bw.mpi and bw.mpi > 0 and best / bw.mpi or 0 / 0
      local bestAll = math.max(best, bw.mpi or 0)
      local autor = bw.auto and bw.auto / bestAll or 0 / 0
      print(line .. ('%10.2f%10.2f  %s'):format(vsmpi, autor, bw.auto and dist.autoChoice(bytes) or ''))
   end
   bytes = bytes * 4
end
dist.finalize()
