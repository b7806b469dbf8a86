-- train.meter: counting what an epoch reports.
local meter = {}

-- numbers of rows whose target is among the k highest scores, for each k of ks (ascending)
function meter.topk(scores, target, ks)
   local kmax = math.min(ks[#ks], scores:size(2))
   local _, idx = scores:topk(kmax, 2, true, true)
   -- counted as Long: a ByteTensor sum wraps at 256
   local hit = idx:eq(target:view(-1, 1):expandAs(idx)):long()
   local out = {}
   for i, k in ipairs(ks) do out[i] = hit:narrow(2, 1, math.min(k, kmax)):sum() end
   return out
end

return meter
