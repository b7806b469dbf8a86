-- bench/timing.lua: the medians every benchmark reports. Run benchmarks from the repository root
-- (`require 'bench.timing'` is found through ./?.lua).
--   median(t)                          median of the numbers in t (t is left as it was)
--   time_ms(fn, reps [, warmup [, sync]])
--                                      fn called warmup times (default 1), then reps timed calls;
--                                      the median in ms. sync (a function) runs after each call,
--                                      inside the timing: a device synchronize for CUDA.
local progress = require 'moontorch.util.progress'

local M = {}

function M.median(t)
   local s = {}
   for i, v in ipairs(t) do s[i] = v end
   assert(#s > 0, 'bench.timing.median: no samples')
   table.sort(s)
   local n = #s
   return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

function M.time_ms(fn, reps, warmup, sync)
   for _ = 1, warmup or 1 do fn() end
   if sync then sync() end
   local t = {}
   for i = 1, reps do
      local t0 = progress.now()
      fn()
      if sync then sync() end
      t[i] = (progress.now() - t0) * 1000
   end
   return M.median(t)
end

return M
