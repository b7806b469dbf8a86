-- dist/lib.lua: loads libmoontorch_dist.so, the distributed layer's own library (MPI and NCCL
-- are linked there, never into libmoontorch.so), from beside libmoontorch.so. The cdefs are the
-- core's: csrc/moontorch.h declares the mt_dist_* and mt_ps_* functions too.
local ffi = require 'ffi'
local bit = require 'bit'
local T = require 'moontorch.internal'
local lib = require 'moontorch.lib'

local M = {}

local dir = lib.path:match('^(.*)/[^/]*$') or '.'
local path = dir .. '/libmoontorch_dist.so'
local ok, handle = pcall(ffi.load, path)
if not ok then
   error('moontorch.dist: cannot load ' .. path .. ' (' .. tostring(handle) .. '); it is built beside '
      .. 'libmoontorch.so by `make`', 0)
end
M.C = handle
M.path = path

-- transports this build has: { mpi = 'Open MPI v4.1.4, ...' or false, nccl = 'NCCL 2.x.y' or false }
function M.transports()
   local bits = handle.mt_dist_transports()
   local buf = ffi.new('char[512]')
   local function version(flag)
      if bit.band(bits, flag) == 0 then return false end
      T.check(handle.mt_dist_transport_version(flag, buf, 512), 'dist.transports')
      return ffi.string(buf)
   end
   return { mpi = version(T.clib.MT_DIST_MPI), nccl = version(T.clib.MT_DIST_NCCL) }
end

-- dist.topk's selection methods by name (csrc/moontorch.h's MT_TOPK_*), for topk and rgc alike
local C = T.clib
M.TOPK_METHODS = {}
for _, name in ipairs(require('moontorch.dist.compressors').TOPK_METHODS) do
   M.TOPK_METHODS[name] = C['MT_TOPK_' .. name:upper()]
end

-- the pairs a selection of n elements at density may return (room for them; at least 1): k =
-- max(1, ceil(density * n)), or up to floor(k * (1 + slack)) for the ranged methods
function M.topkCapacity(n, density, method, slack)
   local k = math.max(1, math.ceil(density * n))
   if method ~= 'threshold' and method ~= 'sampled' then return k end
   return math.max(1, math.min(n, math.floor(k * (1 + slack))))
end

return M
