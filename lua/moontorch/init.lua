-- moontorch: Torch7-style tensors over a C core (CPU and CUDA), driven through LuaJIT's FFI.
--   local torch = require 'moontorch'
local ffi = require 'ffi'

local torch = {}
-- Registered before the parts load, so any of them may require 'moontorch' itself.
package.loaded.moontorch = torch

local T = require 'moontorch.Tensor' -- fills in moontorch.internal, the library's own helpers
local C = T.C

-- Each part adds methods and torch.* functions; one file per concern.
local parts = {
   'tensor_new',      -- constructors, factories, totable
   'tensor_view',     -- view/reshape/narrow/select/transpose/permute/expand/squeeze/..., copy, type conversion
   'tensor_index',    -- t[i], t[{{1,2},3}], t[mask]
   'tensor_gather',   -- index, indexSelect, indexAdd, indexFill, gather, scatter, cat
   'tensor_print',    -- tostring(t)
   'tensor_math',     -- pointwise math, comparisons, operators
   'tensor_intops',   -- remainder, cremainder, cfmod, bit ops and shifts
   'tensor_random',   -- manualSeed, rand, randn, uniform, normal, bernoulli
   'tensor_sampling', -- logNormal, multinomial, multinomialAliasSetup, multinomialAlias
   'tensor_reduce',   -- sum, mean, max, min, var, std, norm, argmax, sort, topk
   'tensor_scan',     -- cumsum, cumprod
   'tensor_linalg',   -- mm, bmm, addmm, addmv, dot, mv
   'cuda',            -- torch.cuda.*, t:cuda()
}
for _, name in ipairs(parts) do
   require('moontorch.' .. name)(torch, T)
end

torch.version = ffi.string(C.mt_version())

-- Torch7's class system: torch.class('nn.Linear', 'nn.Module') -> class, parent
torch.class = require 'moontorch.class'
function torch.isTypeOf(obj, typeSpec) return torch.class.isTypeOf(obj, typeSpec) end
function torch.getmetatable(name) return torch.class.metatable(name) end
function torch.factory(name) return torch.class.factory(name) end

function torch.setnumthreads(n)
   if type(n) ~= 'number' or n < 1 then T.argerror('setnumthreads', 'expected a positive number, got ' .. tostring(n)) end
   C.mt_set_num_threads(n)
end
function torch.getnumthreads() return C.mt_get_num_threads() end

-- Memory held by tensors on the CPU (bytes): allocated, peak, ...
function torch.memoryStats()
   local s = ffi.new('mt_memory_stats')
   T.check(C.mt_memory_stats_get(-1, s))
   return { allocated = tonumber(s.allocated), reserved = tonumber(s.reserved), peak = tonumber(s.peak_allocated),
      peakReserved = tonumber(s.peak_reserved), allocs = tonumber(s.num_allocs) }
end

return torch
