-- moontorch: Torch7-style tensors over a C core (CPU and CUDA), driven through LuaJIT's FFI.
--   local torch = require 'moontorch'
local ffi = require 'ffi'

local torch = {}
table.unpack = table.unpack or unpack -- Lua 5.2+ code runs under LuaJIT
-- Registered before the parts load, so any of them may require 'moontorch' itself.
package.loaded.moontorch = torch

local T = require 'moontorch.tensor.Tensor' -- fills in moontorch.internal, the library's own helpers
local C = T.clib

-- Each part adds methods and torch.* functions; one file per concern.
local parts = {
   'tensor.constructors',      -- constructors, factories, totable
   'tensor.view',              -- view/reshape/narrow/select/transpose/permute/expand/squeeze/..., copy, type conversion
   'tensor.channels_last',     -- channelsLast, isChannelsLast (NHWC storage of 4-d tensors)
   'tensor.indexing',          -- t[i], t[{{1,2},3}], t[mask]
   'tensor.index_ops',         -- index, indexSelect, indexAdd, indexFill, gather, scatter, cat
   'tensor.print',             -- tostring(t)
   'tensor.pointwise',         -- pointwise math, comparisons, operators
   'tensor.integer_ops',       -- remainder, cremainder, cfmod, bit ops and shifts
   'tensor.random',            -- manualSeed, rand, randn, uniform, normal, bernoulli
   'tensor.sampling',          -- logNormal, multinomial, multinomialAliasSetup, multinomialAlias
   'tensor.reduce',            -- sum, mean, max, min, var, std, norm, argmax, sort, topk
   'tensor.scan',              -- cumsum, cumprod
   'tensor.linalg',            -- mm, bmm, addmm, addmv, dot, mv
   'tensor.lapack',            -- gesv, gels, trtrs, inverse, potrf/potrs/potri, pstrf, qr, eig, symeig, svd
   'tensor.matrix',            -- cross, diag, tril, triu, renorm
   'tensor.order_statistics',  -- kthvalue, median, mode, nonzero, histc, bhistc
   'tensor.conv',              -- conv2, xcorr2, conv3, xcorr3
   'tensor.split',             -- split, chunk, repeatTensor
   'tensor.forms',             -- Torch7's other spellings: x:zeros(...), torch.numel(x), mod/cmod, cdata
   'tensor.cuda',              -- torch.cuda.*, t:cuda()
   -- Torch7's utilities (utility.md, timer.md, cmdline.md, tester.md)
   'util.objects',             -- torch.pointer, getenv/setenv, isequal, getconstructortable, setheaptracking, ...
   'util.timer',               -- torch.Timer, torch.tic/toc
   'util.cmdline',             -- torch.CmdLine
   'util.tester',              -- torch.Tester, torch.TestSuite
   'tensor.storage',           -- torch.FloatStorage & co, t:storage(), storages mapping files
   'io.file',                  -- torch.File, DiskFile, MemoryFile, PipeFile
   'io.serialize',             -- torch.save/load/serialize/deserialize (Torch7's .t7 format)
}
for _, name in ipairs(parts) do
   require('moontorch.' .. name)(torch, T)
end

torch.version = ffi.string(C.mt_version())

-- Torch7's class system: torch.class('nn.Linear', 'nn.Module') -> class, parent
torch.class = require 'moontorch.class'
function torch.isTypeOf(obj, typeSpec)
   if T.is_tensor(obj) then return torch.class.isTypeOf(obj, typeSpec, { obj:type() }) end
   return torch.class.isTypeOf(obj, typeSpec)
end
-- a tensor type's own method table (see T.type_methods), else a torch.class class
function torch.getmetatable(name)
   local ty = T.tensor_types[name]
   if ty then return T.type_methods(ty.dtype, ty.device) end
   return torch.class.metatable(name)
end
function torch.factory(name) return torch.class.factory(name) end
torch.newmetatable = torch.class.newmetatable
torch.setmetatable = torch.class.setmetatable

function torch.setnumthreads(n)
   if type(n) ~= 'number' or n < 1 then
      T.argerror('setnumthreads', 'expected a positive number, got ' .. tostring(n))
   end
   C.mt_set_num_threads(n)
end
function torch.getnumthreads() return C.mt_get_num_threads() end

-- convBackend([mode]) -> the previous mode: how float32 CPU convolutions run. 'native' (the
-- default): im2col + GEMM or Winograd; 'onednn': oneDNN in its own blocked layouts (reordered to and from NCHW);
-- 'onednn_nchw': oneDNN on the NCHW tensors as they are (both an error in a build without it;
-- see torch.hasOneDNN); 'auto': the three are timed once per shape, pass and thread count, and
-- the fastest kept (like cuda.convAlgorithm's 'search'). Results agree within float32 rounding,
-- but a timed choice may differ between runs, so 'auto' is not bit-reproducible (and not the
-- default). Without an argument, only reads.
local CONV_BACKENDS = { auto = C.MT_CONV_BACKEND_AUTO, native = C.MT_CONV_BACKEND_NATIVE,
   onednn = C.MT_CONV_BACKEND_ONEDNN, onednn_nchw = C.MT_CONV_BACKEND_ONEDNN_NCHW }
local conv_backend_names = {}
for name, v in pairs(CONV_BACKENDS) do conv_backend_names[tonumber(v)] = name end
local prevbuf = ffi.new('int[1]')
function torch.convBackend(mode)
   if mode == nil then return conv_backend_names[C.mt_cpu_get_conv_backend()] end
   if CONV_BACKENDS[mode] == nil then
      error(("convBackend: mode must be 'auto', 'native', 'onednn' or 'onednn_nchw', got %s"):format(tostring(mode)), 2)
   end
   if mode:match('^onednn') and not torch.hasOneDNN() then
      error("convBackend: this build has no oneDNN (install libdnnl-dev and rebuild)", 2)
   end
   T.check(C.mt_cpu_set_conv_backend(CONV_BACKENDS[mode], prevbuf))
   return conv_backend_names[prevbuf[0]]
end
function torch.hasOneDNN() return C.mt_cpu_onednn_available() ~= 0 end

-- Memory held by tensors on the CPU (bytes): allocated, peak, ...
function torch.memoryStats()
   local s = ffi.new('mt_memory_stats')
   T.check(C.mt_memory_stats_get(-1, s))
   return { allocated = tonumber(s.allocated), reserved = tonumber(s.reserved), peak = tonumber(s.peak_allocated),
      peakReserved = tonumber(s.peak_reserved), allocs = tonumber(s.num_allocs) }
end

return torch
