-- storage.lua: Torch7's storages: torch.FloatStorage, torch.ByteStorage, ... (one class per
-- dtype of the library's list), views into another storage, storages that map a file, and
-- t:storage(). A storage is an FFI object holding one C tensor handle: a 1-d tensor over its
-- whole C storage from offset 0 (csrc/core/storage.c makes views, maps and in-place resizes).
--   T.storage_of(t)     the Storage sharing tensor t's memory
--   T.storage_as_tensor(s)   a new 1-d tensor over all of storage s
-- The size object that t:size() returns (Tensor.lua) stays a plain Lua table; it also calls
-- itself 'torch.LongStorage', and everything that takes sizes takes either.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, outp, is_int = T.clib, T.check, T.out_handle, T.is_int

   ffi.cdef 'typedef struct mt_storage_ref { mt_tensor *h; } mt_storage_ref;'
   local ref_t = ffi.typeof('mt_storage_ref')
   local idx = ffi.new('int64_t[1]')
   local dbl = ffi.new('double[1]')
   local sz, st = ffi.new('int64_t[1]'), ffi.new('int64_t[1]', 1)

   local Storage = {}     -- methods of every storage
   local function is_storage(x) return type(x) == 'cdata' and ffi.istype(ref_t, x) end
   T.is_storage = is_storage

   -- the handle of a live storage, or 'op: expected a storage, got <type>'
   local function sh(s, op, level)
      if not is_storage(s) then
         error(('%s: expected a storage, got %s'):format(op, torch.type(s)), (level or 2) + 1)
      end
      return s.h
   end
   local function numel(h) return tonumber(C.mt_tensor_storage_numel(h)) end
   local function typename(h)
      return (T.typename(C.mt_tensor_dtype(h), C.mt_tensor_device(h)):gsub('Tensor$', 'Storage'))
   end

   -- Own a fresh handle (a 1-d tensor over a whole storage) as a Storage.
   local function own(h) return ref_t(h) end

   function T.storage_of(t)
      local h = T.handle(t, 'storage')
      sz[0] = C.mt_tensor_storage_numel(h)
      check(C.mt_tensor_as_strided(outp, h, 1, sz, st, 0), 'storage', nil, 3)
      return own(outp[0])
   end

   function T.storage_as_tensor(s)
      local h = sh(s, 'storage')
      sz[0] = C.mt_tensor_storage_numel(h)
      check(C.mt_tensor_as_strided(outp, h, 1, sz, st, 0), 'storage', nil, 3)
      return T.wrap_handle(outp[0])
   end
   local stensor = T.storage_as_tensor

   -- element access: typed pointers on the CPU, the C accessors elsewhere (CUDA, half)
   local direct = {}
   for _, d in ipairs(T.dtypes) do direct[d.id] = d.id ~= T.HALF and d.id ~= T.BFLOAT16 and d.ptr or nil end

   local function check_index(h, i, level)
      local n = numel(h)
      if not is_int(i) or i < 1 or i > n then
         error(('%s: index %s out of range for a storage of size %d'):format(typename(h), tostring(i), n), level + 1)
      end
   end
   -- A header another Storage object resized is stale; resizing to the same size refreshes it.
   local function fresh(h)
      local n = C.mt_tensor_storage_numel(h)
      if C.mt_tensor_size(h, 0) ~= n then check(C.mt_storage_resize(h, n)) end
   end

   local function get(s, i)
      local h = s.h
      check_index(h, i, 3)
      local dt = C.mt_tensor_dtype(h)
      local p = direct[dt]
      if p and C.mt_tensor_device(h) < 0 then
         local data = C.mt_tensor_data(h)
         -- floats by their bits first: see T.read_f32
         if dt == T.FLOAT then return T.read_f32(data, i - 1) end
         if dt == T.DOUBLE then return T.read_f64(data, i - 1) end
         return tonumber(ffi.cast(p, data)[i - 1])
      end
      fresh(h)
      idx[0] = i - 1
      check(C.mt_tensor_get_item(h, idx, dbl))
      return dbl[0]
   end
   local function set(s, i, v)
      local h = s.h
      check_index(h, i, 3)
      if type(v) == 'boolean' then v = v and 1 or 0 end
      if type(v) ~= 'number' then error(('%s: cannot store a %s'):format(typename(h), type(v)), 3) end
      local dt = C.mt_tensor_dtype(h)
      local p = direct[dt]
      if p and C.mt_tensor_device(h) < 0 then
         if dt == T.BOOL then v = v ~= 0 and 1 or 0 end
         ffi.cast(p, C.mt_tensor_data(h))[i - 1] = v
         return
      end
      fresh(h)
      idx[0] = i - 1
      check(C.mt_tensor_set_item(h, idx, v))
   end

   local mt = {}
   mt.__index = function(s, k)
      if type(k) == 'number' then return get(s, k) end
      local m = Storage[k]
      if m ~= nil then return m end
      if k == '_t' then return stensor(s) end -- older code reads the storage's tensor this way
      error(("%s has no method or field '%s'"):format(typename(s.h), tostring(k)), 2)
   end
   mt.__newindex = function(s, k, v)
      if type(k) ~= 'number' then error(("cannot set field '%s' of a storage"):format(tostring(k)), 2) end
      set(s, k, v)
   end
   mt.__len = function(s) return numel(s.h) end
   mt.__eq = function(a, b)
      return is_storage(a) and is_storage(b) and C.mt_tensor_storage_key(a.h) == C.mt_tensor_storage_key(b.h)
   end
   mt.__gc = function(s)
      if s.h ~= nil then
         C.mt_tensor_release(s.h)
         s.h = nil
      end
   end
   mt.__tostring = function(s)
      local t = stensor(s)
      return (T.format_values and T.format_values(t) or '') .. '[' .. typename(s.h) .. ' of size ' .. numel(s.h) .. ']'
   end
   ffi.metatype(ref_t, mt)

   ------------------------------------------------------------------------------------------
   -- methods
   function Storage.size(s) return numel(sh(s, 'size')) end
   function Storage.type(s) return typename(sh(s, 'type')) end
   function Storage.elementSize(s) return tonumber(C.mt_dtype_size(C.mt_tensor_dtype(sh(s, 'elementSize')))) end
   function Storage.tensor(s) return stensor(s) end
   function T.storage_dtype(s) return C.mt_tensor_dtype(sh(s, 'storage')) end

   function Storage.resize(s, n)
      local h = sh(s, 'resize')
      if not is_int(n) or n < 0 then error(('resize: expected a size >= 0, got %s'):format(tostring(n)), 2) end
      check(C.mt_storage_resize(h, n), 'resize', 'storage resize')
      return s
   end

   function Storage.fill(s, v)
      sh(s, 'fill')
      if type(v) ~= 'number' then error('fill: expected a number, got ' .. type(v), 2) end
      check(C.mt_fill(stensor(s).h, v), 'fill')
      return s
   end

   -- copy(src): any storage type (converting), or a size object, of the same size
   function Storage.copy(s, src)
      local h = sh(s, 'copy')
      if T.is_size(src) and not is_storage(src) then src = torch.LongStorage(src) end
      if not is_storage(src) then error('copy: expected a storage, got ' .. torch.type(src), 2) end
      local n, m = numel(h), numel(src.h)
      if n ~= m then
         error(('copy: %s of size %d cannot take the %d elements of a %s'):format(typename(h), n, m,
            typename(src.h)), 2)
      end
      local dst_t, src_t = stensor(s), stensor(src) -- named: an unnamed one may be collected early
      check(C.mt_copy(dst_t.h, src_t.h), 'copy')
      return s
   end

   function Storage.totable(s)
      local h = sh(s, 'totable')
      local r = {}
      for i = 1, numel(h) do r[i] = get(s, i) end
      return r
   end

   function Storage.data(s)
      local h = sh(s, 'data')
      if C.mt_tensor_device(h) >= 0 then error('data: the storage is on a CUDA device', 2) end
      return ffi.cast(T.dtypes[C.mt_tensor_dtype(h) + 1].ptr, C.mt_tensor_data(h))
   end

   -- string(): the bytes as a Lua string; string(str): resize to #str and copy str in. Byte and
   -- Char storages (the one-byte integer types) only, as in Torch7.
   function Storage.string(s, str)
      local h = sh(s, 'string')
      local d = T.dtypes[C.mt_tensor_dtype(h) + 1]
      if d.is_float or d.id == T.BOOL or C.mt_dtype_size(d.id) ~= 1 or C.mt_tensor_device(h) >= 0 then
         error('string: only CPU ByteStorage and CharStorage hold strings, not a ' .. typename(h), 2)
      end
      if str == nil then return ffi.string(C.mt_tensor_data(h), numel(h)) end
      if type(str) ~= 'string' then error('string: expected a string, got ' .. type(str), 2) end
      check(C.mt_storage_resize(h, #str), 'string', 'storage resize')
      if #str > 0 then ffi.copy(C.mt_tensor_data(h), str, #str) end
      return s
   end

   -- 'memory', 'view' or 'file' (what csrc/core/storage.c made it)
   local kinds = { [C.MT_STORAGE_MEMORY] = 'memory', [C.MT_STORAGE_VIEW] = 'view', [C.MT_STORAGE_FILE] = 'file' }
   function Storage.kind(s) return kinds[C.mt_storage_kind(sh(s, 'kind'))] end

   ------------------------------------------------------------------------------------------
   -- constructors: torch.FloatStorage([n] | table | storage [, offset [, size]] |
   -- filename [, shared [, size [, sharedMem]]])
   local function new(dtype, n, level)
      sz[0] = n
      check(C.mt_tensor_new(outp, dtype, T.CPU_DEVICE, 1, sz), nil, nil, level + 1)
      local s = own(outp[0])
      if n > 0 then check(C.mt_fill(s.h, 0)) end -- Torch7 leaves it uninitialised; zeros are one valid choice
      return s
   end

   local function constructor(dtype, name)
      return function(a, b, c, shm)
         if a == nil then return new(dtype, 0, 2) end
         if type(a) == 'number' then
            if not is_int(a) or a < 0 then error(('%s: expected a size >= 0, got %s'):format(name, tostring(a)), 2) end
            return new(dtype, a, 2)
         end
         if is_storage(a) then
            if C.mt_tensor_dtype(a.h) ~= dtype then
               error(('%s: cannot view a %s (the storage must be of the same type)'):format(name, typename(a.h)), 2)
            end
            local off = b or 1
            if not is_int(off) then error(name .. ': offset must be an integer, got ' .. tostring(off), 2) end
            local n = c or numel(a.h) - (off - 1)
            if not is_int(n) then error(name .. ': size must be an integer, got ' .. tostring(n), 2) end
            check(C.mt_storage_view(outp, a.h, off - 1, n), name, 'storage view')
            return own(outp[0])
         end
         if type(a) == 'string' then
            -- shared memory: a file in /dev/shm (where Linux's shm_open keeps its objects), shared and
            -- removed when the storage is freed, as Torch7's THMapAllocator does
            if shm then a = '/dev/shm/' .. a:gsub('^/+', '') end
            local n = c or -1
            if not is_int(n) or (c ~= nil and n < 0) then
               error(name .. ': size must be an integer >= 0, got ' .. tostring(c), 2)
            end
            check(C.mt_storage_map_file(outp, a, dtype, shm and 2 or b and 1 or 0, n), name, 'storage')
            return own(outp[0])
         end
         if type(a) == 'table' then
            local n = #a
            local s = new(dtype, n, 2)
            for i = 1, n do
               local v = a[i]
               if type(v) ~= 'number' and type(v) ~= 'boolean' then
                  error(('%s: table entry %d is a %s, not a number'):format(name, i, type(v)), 2)
               end
               set(s, i, v)
            end
            return s
         end
         error(('%s: cannot make a storage from a %s'):format(name, torch.type(a)), 2)
      end
   end

   T.storage_types = {}
   for _, d in ipairs(T.dtypes) do
      local name = 'torch.' .. d.name .. 'Storage'
      local make = constructor(d.id, name)
      local ty = setmetatable({ dtype = d.id, __typename = name },
         { __call = function(_, ...) return make(...) end, __tostring = function() return name end })
      T.storage_types[name] = ty
      torch[d.name .. 'Storage'] = ty
   end

   -- torch.Storage: the storage type of the default tensor type; its fields are the methods
   torch.Storage = setmetatable({}, {
      __index = Storage,
      __call = function(_, ...)
         return T.storage_types[torch.getdefaulttensortype():gsub('Tensor$', 'Storage')](...)
      end,
   })

   local typename_of = torch.typename
   function torch.typename(x)
      if is_storage(x) then return typename(x.h) end
      return typename_of(x)
   end

   -- a storage, or a size object (t:size(): Torch7's LongStorage); T.is_size also takes both
   local LongStorage = T.LongStorage
   function torch.isStorage(x) return is_storage(x) or getmetatable(x) == LongStorage end

   T.tensor_methods.storage = function(t) return T.storage_of(t) end
end
