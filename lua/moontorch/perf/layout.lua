-- perf/layout.lua: how dist.DataParallel cuts its flat gradient into buckets, in one place so
-- that the performance model and DataParallel cannot disagree (dist/buckets.lua uses it).
local M = {}

-- Greedy packing of consecutive units (already last first) into buckets of <= capBytes.
-- bucket = { lo =, hi =, bytes =, units = { unit indices } }; each unit gets .bucket.
function M.layout(units, elementSize, capBytes)
   local list, cur = {}, nil
   for u, unit in ipairs(units) do
      local bytes = (unit.hi - unit.lo) * elementSize
      if cur and cur.bytes + bytes > capBytes then cur = nil end
      if not cur then
         cur = { lo = unit.lo, hi = unit.hi, bytes = 0, units = {} }
         list[#list + 1] = cur
      end
      cur.lo, cur.hi = math.min(cur.lo, unit.lo), math.max(cur.hi, unit.hi)
      cur.bytes = cur.bytes + bytes
      cur.units[#cur.units + 1] = u
      unit.bucket = #list
   end
   return list
end

return M
