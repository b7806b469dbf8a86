-- Tensor.lua: the tensor object (an FFI metatype over one owned C handle), its type table
-- (torch.FloatTensor, ...), construction, and the tensor helpers of moontorch.internal that
-- the other files use (handles, dtypes, new tensors). Dimensions and indices are 1-based here
-- and 0-based in C.
local ffi = require 'ffi'
local T = require 'moontorch.internal' -- this file adds the tensor pieces to it
local C, check = T.clib, T.check

local methods = {}    -- tensor methods: t:size(), t:add(...), ...
T.tensor_methods = methods

---------------------------------------------------------------------------------------------
-- dtypes and Torch7 type names, all learnt from the library (its one list, MT_DTYPES)
local dtypes = {}
for id = 0, C.MT_NUM_DTYPES - 1 do
   local ctype = ffi.string(C.mt_dtype_ctype(id))
   dtypes[id + 1] = {
      id = id,
      name = ffi.string(C.mt_dtype_torch_name(id)),
      ctype = ctype,
      ptr = ffi.typeof(ctype .. '*'),
      is_float = C.mt_dtype_is_floating(id) ~= 0,
   }
end
T.dtypes = dtypes
T.dtype_by_name = {}
for _, d in ipairs(dtypes) do T.dtype_by_name[d.name] = d end
-- dtype ids named after Torch7's types (T.FLOAT is the id of torch.FloatTensor's float32)
T.FLOAT = C.MT_F32
T.DOUBLE = C.MT_F64
T.HALF = C.MT_F16
T.BFLOAT16 = C.MT_BF16
T.INT = C.MT_I32
T.LONG = C.MT_I64
T.BYTE = C.MT_U8
T.BOOL = C.MT_BOOL
T.CHAR = C.MT_I8
T.SHORT = C.MT_I16
T.CPU_DEVICE = -1

-- 'torch.FloatTensor', 'torch.CudaTensor', 'torch.CudaDoubleTensor' (cutorch's names)
function T.typename(dtype, device)
   local name = dtypes[dtype + 1].name
   if device < 0 then return 'torch.' .. name .. 'Tensor' end
   if name == 'Float' then return 'torch.CudaTensor' end
   return 'torch.Cuda' .. name .. 'Tensor'
end

function T.parse_typename(s)
   if type(s) ~= 'string' then return nil end
   local name = s:match('^torch%.Cuda(%w-)Tensor$')
   if name then
      if name == '' then name = 'Float' end
      local d = T.dtype_by_name[name]
      return d and d.id, 0
   end
   name = s:match('^torch%.(%w+)Tensor$')
   local d = name and T.dtype_by_name[name]
   if d then return d.id, -1 end
end

---------------------------------------------------------------------------------------------
-- memory pressure: the Lua GC sees a tensor as a few bytes, so collect when C memory grows.
local GC_FLOOR = 256 * 1024 * 1024
local gc_limit = {}
local function pressure(device)
   local live = tonumber(C.mt_memory_allocated(device))
   local limit = gc_limit[device] or GC_FLOOR
   if live > limit then
      collectgarbage('collect')
      live = tonumber(C.mt_memory_allocated(device))
      gc_limit[device] = math.max(GC_FLOOR, 2 * live)
   end
end

---------------------------------------------------------------------------------------------
-- the metatype
local ref_t = ffi.typeof('mt_tensor_ref')
local index_hook -- set by indexing.lua: t[i], t[{...}]
local newindex_hook

-- Per-type method tables ("faces", T.type_methods): torch.getmetatable('torch.FloatTensor')
-- is a table of its own that reads through to the shared methods (T.tensor_methods); what
-- code stores in it (Torch7 code adds methods to a type's metatable) applies to tensors of
-- that type only. Lookups stay one table read while no face overrides a shared method
-- (faces_override); new names are looked up after the shared ones.
local faces = {}          -- [dtype + 1] (CPU) and [dtype + 1 + FACE_CUDA] (CUDA) -> face
local FACE_CUDA = 64
local faces_override = false
local function face_key(dtype, device) return dtype + 1 + (device >= 0 and FACE_CUDA or 0) end
function T.type_methods(dtype, device)
   local key = face_key(dtype, device)
   local f = faces[key]
   if f then return f end
   f = setmetatable({}, {
      __index = methods,
      __newindex = function(tbl, k, v)
         if methods[k] ~= nil then faces_override = true end
         rawset(tbl, k, v)
      end,
   })
   faces[key] = f
   return f
end

local mt = {}
mt.__index = function(self, k)
   if faces_override then
      local h = self.h
      if h ~= nil then
         local f = faces[face_key(C.mt_tensor_dtype(h), C.mt_tensor_device(h))]
         local m = f and rawget(f, k)
         if m ~= nil then return m end
      end
   end
   local m = methods[k]
   if m ~= nil then return m end
   if type(k) == 'string' then
      local h = self.h
      if h ~= nil then
         local f = faces[face_key(C.mt_tensor_dtype(h), C.mt_tensor_device(h))]
         m = f and rawget(f, k)
         if m ~= nil then return m end
      end
   elseif index_hook then
      return index_hook(self, k)
   end
   error("moontorch: tensor has no method or field '" .. tostring(k) .. "'", 2)
end
mt.__newindex = function(self, k, v)
   if newindex_hook and type(k) ~= 'string' then return newindex_hook(self, k, v) end
   error("moontorch: cannot set field '" .. tostring(k) .. "' of a tensor", 2)
end
mt.__gc = function(self)
   if self.h ~= nil then
      C.mt_tensor_release(self.h)
      self.h = nil
   end
end
T.tensor_metatable = mt
function T.set_index_hooks(get, set) index_hook, newindex_hook = get, set end

ffi.metatype(ref_t, mt)

-- Take ownership of a fresh C handle (one reference) as a Lua tensor.
function T.wrap_handle(h)
   local t = ref_t(h)
   pressure(C.mt_tensor_device(h))
   return t
end

function T.is_tensor(x) return type(x) == 'cdata' and ffi.istype(ref_t, x) end

-- The handle, or an error if the tensor was freed or is not a tensor.
function T.handle(t, what)
   if not T.is_tensor(t) then
      error((what or 'argument') .. ': expected a tensor, got ' .. type(t), 3)
   end
   local h = t.h
   if h == nil then error((what or 'tensor') .. ': tensor was freed', 3) end
   return h
end

-- where C ops return a new handle (LuaJIT runs one Lua thread: no sharing)
local outp = ffi.new('mt_tensor*[1]')
T.out_handle = outp

-- A new uninitialised contiguous tensor.
function T.new_tensor(dtype, device, sizes)
   local n, buf = T.sizes_buf(sizes)
   check(C.mt_tensor_new(outp, dtype, device, n, buf))
   return T.wrap_handle(outp[0])
end

-- An empty result tensor (size 0) of a dtype/device, for ops that resize their output.
local zero = { 0 }
function T.empty_tensor(dtype, device) return T.new_tensor(dtype, device, zero) end

-- The sizes of a tensor as a Lua array.
function T.sizes(t)
   local h = T.handle(t)
   local s = {}
   for i = 1, C.mt_tensor_ndim(h) do s[i] = tonumber(C.mt_tensor_size(h, i - 1)) end
   return s
end

-- out delivered into res (resized to out's sizes, then copied) when res is given, else out
-- itself: the result-first form of functions that compute into a fresh tensor, so that res
-- may alias an input.
function T.deliver_result(res, out)
   if res == nil then return out end
   check(C.mt_tensor_resize(res.h, T.sizes_buf(T.sizes(out))))
   check(C.mt_copy(res.h, out.h))
   return res
end

-- The strides of a tensor as a Lua array (as C has them: T.sizes' companion).
function T.strides(t)
   local h = T.handle(t)
   local s = {}
   for i = 1, C.mt_tensor_ndim(h) do s[i] = tonumber(C.mt_tensor_stride(h, i - 1)) end
   return s
end

---------------------------------------------------------------------------------------------
-- LongStorage: Torch7's size object (a 1-based array with a few methods)
local LongStorage = {}
LongStorage.__index = LongStorage
T.LongStorage = LongStorage
function LongStorage.new(t)
   if type(t) == 'number' then
      local s = {}
      for i = 1, t do s[i] = 0 end
      t = s
   end
   local s = {}
   for i, v in ipairs(t or {}) do s[i] = v end
   return setmetatable(s, LongStorage)
end
function LongStorage:size() return #self end
function LongStorage:totable()
   local r = {}
   for i, v in ipairs(self) do r[i] = v end
   return r
end
function LongStorage:__tostring()
   local parts = {}
   for i, v in ipairs(self) do parts[i] = tostring(v) end
   return table.concat(parts, '\n') .. '\n[torch.LongStorage of size ' .. #self .. ']'
end
function LongStorage.__eq(a, b)
   if #a ~= #b then return false end
   for i = 1, #a do if a[i] ~= b[i] then return false end end
   return true
end
-- Size objects (t:size()) and LongStorages (storage.lua, once loaded) both stand for sizes.
function T.is_size(x)
   if getmetatable(x) == LongStorage then return true end
   return T.is_storage ~= nil and T.is_storage(x) and C.mt_tensor_dtype(x.h) == T.LONG
end

---------------------------------------------------------------------------------------------
-- basic metadata methods
-- Torch7's empty tensor (torch.Tensor()) has no dimensions. The C core keeps it 1-d of size 0
-- (an empty tensor with no dimensions would be a 1-element scalar there), and the methods
-- that show dimensions to Lua code report none for it: dim() 0, size() and stride() empty.
local function ndim(h)
   local n = C.mt_tensor_ndim(h)
   if n == 1 and C.mt_tensor_size(h, 0) == 0 then return 0 end
   return n
end
function methods.dim(t) return ndim(T.handle(t, 'dim')) end
methods.nDimension = methods.dim

function methods.size(t, d)
   local h = T.handle(t, 'size')
   if d == nil then return LongStorage.new(ndim(h) == 0 and {} or T.sizes(t)) end
   local n = ndim(h)
   if d < 0 then d = d + n + 1 end
   if d < 1 or d > n then error(('size: dimension %d out of range for a %d-dimensional tensor'):format(d, n), 2) end
   return tonumber(C.mt_tensor_size(h, d - 1))
end

function methods.stride(t, d)
   local h = T.handle(t, 'stride')
   local n = ndim(h)
   if d == nil then
      local s = {}
      for i = 1, n do s[i] = tonumber(C.mt_tensor_stride(h, i - 1)) end
      return LongStorage.new(s)
   end
   if d < 0 then d = d + n + 1 end
   if d < 1 or d > n then error(('stride: dimension %d out of range for a %d-dimensional tensor'):format(d, n), 2) end
   return tonumber(C.mt_tensor_stride(h, d - 1))
end

function methods.nElement(t) return tonumber(C.mt_tensor_numel(T.handle(t, 'nElement'))) end
methods.numel = methods.nElement
function methods.isContiguous(t) return C.mt_tensor_is_contiguous(T.handle(t, 'isContiguous')) == 1 end
function methods.storageOffset(t) return tonumber(C.mt_tensor_offset(T.handle(t, 'storageOffset'))) + 1 end
function methods.dtype(t) return C.mt_tensor_dtype(T.handle(t, 'dtype')) end
function methods.device(t) return C.mt_tensor_device(T.handle(t, 'device')) end
-- cutorch: 1-based, 0 on CPU... see cuda()
function methods.getDevice(t) return C.mt_tensor_device(T.handle(t, 'getDevice')) + 1 end
function methods.isCuda(t) return C.mt_tensor_device(T.handle(t, 'isCuda')) >= 0 end
function methods.type(t, typename)
   local h = T.handle(t, 'type')
   if typename == nil then return T.typename(C.mt_tensor_dtype(h), C.mt_tensor_device(h)) end
   return T.convert_to_typename(t, typename)
end

-- t:free(): release the C memory now; later use raises 'tensor was freed'.
function methods.free(t)
   if t.h ~= nil then
      C.mt_tensor_release(t.h)
      t.h = nil
   end
end

-- Raw data pointer (CPU tensors), typed for the dtype.
function methods.data(t)
   local h = T.handle(t, 'data')
   if C.mt_tensor_device(h) >= 0 then
      error('data: the tensor is on a CUDA device; call :float() or :cpu() first', 2)
   end
   return ffi.cast(dtypes[C.mt_tensor_dtype(h) + 1].ptr, C.mt_tensor_data(h))
end

-- dtype/device conversion with a copy (or self when nothing changes)
function T.convert(t, dtype, device)
   local h = T.handle(t, 'type')
   if C.mt_tensor_dtype(h) == dtype and C.mt_tensor_device(h) == device then return t end
   local r = T.new_tensor(dtype, device, T.sizes(t))
   check(C.mt_copy(r.h, h))
   return r
end
-- t:type(typename) converts through T.convert_to_typename, defined in cuda.lua since a CUDA
-- type goes to the current device there

return T
