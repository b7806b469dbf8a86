-- dist/topk.lua: the selection step of residual gradient compression (RedSync; Deep Gradient
-- Compression): the elements of largest magnitude of a float32 tensor as (index, value), on the
-- CPU or on v's CUDA device (idx and val are then on that device too): csrc/dist/topk.c checks,
-- csrc/cpu/dist_topk.c and kernels/dist_topk.cu select.
--
--   local topk = require 'moontorch.dist.topk'
--   local idx, val = topk(v, 0.001, {method = 'sampled', slack = 0.2})
--
-- k = max(1, ceil(density * v:nElement())). idx: int32 tensor of 1-based flat indices,
-- ascending; val: float32 tensor, v's values there; both on v's device (torch.IntTensor and
-- torch.FloatTensor for a CPU v, torch.CudaIntTensor and torch.CudaTensor for a CUDA one).
-- Methods (csrc/cpu/dist_topk.c):
--   exact      exactly the k largest |v|, ties to the lower index
--   threshold  every |v| >= a threshold, k to floor(k*(1+slack)) elements (exactly k when ties
--              at the k-th magnitude make that range unreachable)
--   trimmed    exactly k: candidates above mean + r*(max-mean), then exact on them
--   sampled    threshold's contract, DGC's way: a threshold from a sample of v and one pass
--              gathering every |v| >= it (a miss moves it once; a second miss: exact)
-- NaN counts as the largest magnitude, so it is always selected.
local ffi = require 'ffi'
require 'moontorch'
local T = require 'moontorch.internal'
local dlib = require 'moontorch.dist.lib'

local C, D = T.clib, dlib.C
local methods = dlib.TOPK_METHODS
local count = ffi.new('int64_t[1]')

local function topk(v, density, opts)
   local op = 'dist.topk'
   T.expect_tensor(v, op, 'v (a FloatTensor)')
   if type(density) ~= 'number' or not (density > 0 and density <= 1) then
      T.argerror(op, 'density must be a number in (0, 1], got ' .. tostring(density))
   end
   opts = opts or {}
   if type(opts) ~= 'table' then T.argerror(op, 'opts must be a table, got ' .. type(opts)) end
   for k in pairs(opts) do
      if k ~= 'method' and k ~= 'slack' then
         T.argerror(op, ("unknown option '%s' (method, slack)"):format(tostring(k)))
      end
   end
   local name = opts.method or 'exact'
   local m = methods[name]
   if not m then
      T.argerror(op, ("unknown method '%s' (exact, threshold, trimmed or sampled)"):format(tostring(name)))
   end
   local slack = opts.slack or 0.2
   if type(slack) ~= 'number' or not (slack >= 0) then -- luacheck: ignore 581 (rejects NaN)
      T.argerror(op, 'slack must be a number >= 0, got ' .. tostring(slack))
   end
   local cap = dlib.topkCapacity(v:nElement(), density, name, slack)
   -- the outputs live where v does: a CUDA v is selected on its device, nothing crosses to the host
   local dev = C.mt_tensor_device(T.handle(v, op))
   local idx, val = T.new_tensor(C.MT_I32, dev, { cap }), T.new_tensor(C.MT_F32, dev, { cap })
   T.check(D.mt_dist_topk(T.handle(v, op), density, m, slack, idx.h, val.h, count), op)
   local c = tonumber(count[0])
   if c == 0 then return T.empty_tensor(C.MT_I32, dev), T.empty_tensor(C.MT_F32, dev) end
   idx = idx:narrow(1, 1, c)
   idx:add(1)
   return idx, val:narrow(1, 1, c)
end

return topk
