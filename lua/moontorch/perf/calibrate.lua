-- perf/calibrate.lua: the network as a stream of buckets sees it. dist.init's cost table times
-- one allreduce at a time with a barrier before each (what `auto` needs to rank algorithms);
-- DataParallel sends its buckets back to back, which a shaped link (its token bucket drained) or
-- a CPU-bound transport serves more slowly. calibrate() times `streak` allreduces of each size
-- issued together and keeps the time per allreduce, in dist.init's table format, so
-- perf.network{table = ...} and dist.loadModel read it alike.
--   local t = calibrate.run(dist, { maxBytes = 16 * 2^20, streak = 4, reps = 5 })   -- collective
--   calibrate.save(t, path)          -- rank 0 writes (atomically)
local torch = require 'moontorch'
local progress = require 'moontorch.util.progress'

local calibrate = {}

-- the rows dist.init's table has, in its order (csrc/dist/model.c)
calibrate.ALGORITHMS = { 'mpi', 'ring', 'multicolor', 'hierarchical' }

local median = require('moontorch.perf.profile').median

-- collective: every rank the same calls. Returns { ranks, nodes, rows = { alg = {seconds...} } }
-- at 4 KB, 16 KB, ... up to maxBytes (every rank's slowest time per entry)
function calibrate.run(dist, opts)
   opts = opts or {}
   local maxBytes, streak, reps = opts.maxBytes or 16 * 2 ^ 20, opts.streak or 4, opts.reps or 5
   if not (maxBytes >= 4096) then -- luacheck: ignore 581 (rejects NaN)
      error('perf.calibrate: maxBytes must be >= 4096', 2)
   end
   local sizes = {}
   local s = 4096
   while s <= maxBytes do sizes[#sizes + 1] = s; s = s * 4 end
   local bufs = {}
   for k = 1, streak do bufs[k] = torch.FloatTensor(sizes[#sizes] / 4):uniform(0.5, 1.5) end
   local times = torch.DoubleTensor(#calibrate.ALGORITHMS * #sizes)
   local at = 0
   for _, alg in ipairs(calibrate.ALGORITHMS) do
      for _, bytes in ipairs(sizes) do
         local ts = {}
         for _ = 1, reps do
            dist.barrier()
            local t0 = progress.now()
            local hs = {}
            for k = 1, streak do
               hs[k] = dist.allreduceAsync(bufs[k]:narrow(1, 1, bytes / 4), 'avg', { algorithm = alg })
            end
            for k = 1, streak do hs[k]:wait() end
            ts[#ts + 1] = (progress.now() - t0) / streak
         end
         at = at + 1
         times[at] = median(ts)
      end
   end
   dist.allreduce(times, 'max', { algorithm = 'mpi' })
   local t = { ranks = dist.size(), nodes = dist.nodes(), rows = {}, path = 'perf.calibrate' }
   at = 0
   for _, alg in ipairs(calibrate.ALGORITHMS) do
      local row = {}
      for i = 1, #sizes do at = at + 1; row[i] = times[at] end
      t.rows[alg] = row
   end
   return t
end

function calibrate.save(t, path)
   local lines = { 'moontorch-dist-model 1', ('ranks %d nodes %d rows %d'):format(t.ranks, t.nodes, #t.rows.ring) }
   for _, alg in ipairs(calibrate.ALGORITHMS) do
      local vals = {}
      for i, v in ipairs(t.rows[alg]) do vals[i] = ('%.9g'):format(v) end
      lines[#lines + 1] = alg .. ' ' .. table.concat(vals, ' ')
   end
   local ok, _, err = require('moontorch.util.plot').save(path, table.concat(lines, '\n') .. '\n')
   if not ok then error('perf.calibrate: cannot write ' .. tostring(path) .. ': ' .. tostring(err), 2) end
end

return calibrate
