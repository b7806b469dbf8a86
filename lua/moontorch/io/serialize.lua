-- serialize.lua: Torch7's serialization format (File:writeObject / readObject), binary and
-- ascii, and torch.save, torch.load, torch.serialize, torch.deserialize on top of it.
--   local s = require 'moontorch.io.serialize'
--   local bytes = s.encode(obj, 'binary')          -- what torch.serialize returns
--   local obj, nextpos = s.decode(bytes, 1, 'binary')
-- Writing follows Torch7 (shared tables, tensors, storages and functions are written once and
-- referred to by index afterwards; Lua functions as their bytecode and upvalues). Reading is
-- safe: csrc/io/t7.c checks the bytes and hands over a list of checked nodes; this file rebuilds
-- numbers, strings, booleans, tables, tensors and storages of moontorch's dtypes, nn modules
-- (classes named 'nn.*'; 'cudnn.X' loads as nn.X) and objects of other classes this process has
-- defined (torch.class). Functions run code when loaded, so they are refused unless the caller
-- passes { allowCode = true }, for trusted files only (LuaJIT does not check bytecode: a damaged
-- function can crash the process). Torch7's CUDA classes load as CPU tensors.
local ffi = require 'ffi'
local T = require 'moontorch.internal'
local class = require 'moontorch.class'
local fs = require 'moontorch.io.fs'
local C = T.clib

local M = {}
local TAG_NIL, TAG_NUMBER, TAG_STRING, TAG_TABLE, TAG_TORCH, TAG_BOOLEAN = 0, 1, 2, 3, 4, 5
local TAG_RECUR_FUNCTION = 8 -- what Torch7 writes for a function (6 and 7 are older forms)
local MAX_DEPTH = 200 -- as the reader's limit (csrc/io/t7.c)

-- ascii?, long size; or nil and the error message
local function check_mode(op, mode, reading)
   if mode == nil or mode == 'binary' then return false, 8 end
   if mode == 'ascii' then return true, 8 end
   if reading and (mode == 'b64' or mode == 'b32') then return false, mode == 'b32' and 4 or 8 end
   return nil, ('%s: format must be %s, got %s'):format(op, reading and "'binary', 'ascii', 'b32' or 'b64'"
      or "'binary' or 'ascii'", tostring(mode))
end

local function storage_key(h) return tonumber(ffi.cast('intptr_t', C.mt_tensor_storage_key(h))) end

---------------------------------------------------------------------------------------------
-- writing

local i32buf = ffi.new('int32_t[1]')
local dbuf = ffi.new('double[1]')
local i64buf = ffi.new('int64_t[?]', 2 * T.MAX_DIMS + 1)

local Writer = {}
Writer.__index = Writer

function Writer:int(v)
   local out = self.out
   if self.ascii then out[#out + 1] = ('%d\n'):format(v)
   else i32buf[0] = v; out[#out + 1] = ffi.string(i32buf, 4) end
end

function Writer:longs(list)
   local out = self.out
   if #list == 0 then return end
   if self.ascii then
      local parts = {}
      for i, v in ipairs(list) do parts[i] = ('%d'):format(v) end
      out[#out + 1] = table.concat(parts, ' ') .. '\n'
   else
      for i, v in ipairs(list) do i64buf[i - 1] = v end
      out[#out + 1] = ffi.string(i64buf, 8 * #list)
   end
end

function Writer:double(v)
   local out = self.out
   if self.ascii then out[#out + 1] = ('%.17g\n'):format(v)
   else dbuf[0] = v; out[#out + 1] = ffi.string(dbuf, 8) end
end

function Writer:string(s)
   self:int(#s)
   self.out[#self.out + 1] = s
   if self.ascii and #s > 0 then self.out[#self.out + 1] = '\n' end
end

-- the index of an object; true as second result when it was written before
function Writer:index(key)
   local i = self.refs[key]
   if i then return i, true end
   self.count = self.count + 1
   if self.referenced then self.refs[key] = self.count end
   return self.count, false
end

local ascii_fmt = { [tonumber(T.FLOAT)] = '%.9g', [tonumber(T.DOUBLE)] = '%.17g', [tonumber(T.HALF)] = '%.9g',
   [tonumber(T.BFLOAT16)] = '%.9g' }

-- a storage: the whole storage behind tensor handle h (on any device), as torch.<Name>Storage
function Writer:storage(h)
   local dtype, n = C.mt_tensor_dtype(h), C.mt_tensor_storage_numel(h)
   local index, seen = self:index(storage_key(h))
   self:int(TAG_TORCH)
   self:int(index)
   if seen then return end
   local d = T.dtypes[dtype + 1]
   self:string('V 1')
   self:string('torch.' .. d.name .. 'Storage')
   self:longs({ tonumber(n) })
   -- a CPU copy of the storage, elements 0 .. n-1
   local sizes, unit = ffi.new('int64_t[1]', n), ffi.new('int64_t[1]', 1)
   T.check(C.mt_tensor_as_strided(T.out_handle, h, 1, sizes, unit, 0), 'torch.serialize')
   local full = T.wrap_handle(T.out_handle[0])
   if C.mt_tensor_device(h) ~= T.CPU_DEVICE then
      local cpu = T.new_tensor(dtype, T.CPU_DEVICE, { tonumber(n) })
      T.check(C.mt_copy(cpu.h, full.h), 'torch.serialize')
      full = cpu
   end
   local esize = tonumber(C.mt_dtype_size(dtype))
   local out = self.out
   if n == 0 then return end
   if not self.ascii or dtype == T.BYTE or dtype == T.BOOL then -- bytes are raw in ascii files too
      out[#out + 1] = ffi.string(C.mt_tensor_data(full.h), tonumber(n) * esize)
      if self.ascii then out[#out + 1] = '\n' end
      return
   end
   local fmt, parts = ascii_fmt[tonumber(dtype)], {}
   if fmt then
      local f64 = full
      if dtype ~= T.DOUBLE and dtype ~= T.FLOAT then
         f64 = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { tonumber(n) })
         T.check(C.mt_copy(f64.h, full.h), 'torch.serialize')
      end
      -- floats by their bits first (T.read_f32): a file may hold any NaN
      local data = C.mt_tensor_data(f64.h)
      local read = C.mt_tensor_dtype(f64.h) == T.FLOAT and T.read_f32 or T.read_f64
      for i = 0, tonumber(n) - 1 do parts[i + 1] = fmt:format(read(data, i)) end
   else -- integers: int64 values print exactly with tostring ('123LL')
      local p = ffi.cast(d.ptr, C.mt_tensor_data(full.h))
      for i = 0, tonumber(n) - 1 do parts[i + 1] = tostring(ffi.cast('int64_t', p[i])):sub(1, -3) end
   end
   out[#out + 1] = table.concat(parts, ' ') .. '\n'
end

function Writer:tensor(t, key)
   local h = T.handle(t)
   local index, seen = self:index(tonumber(ffi.cast('intptr_t', T.handle(key))))
   self:int(TAG_TORCH)
   self:int(index)
   if seen then return end
   local nd = C.mt_tensor_ndim(h)
   self:string('V 1')
   self:string(T.typename(C.mt_tensor_dtype(h), T.CPU_DEVICE))
   self:int(nd)
   local sizes, strides = {}, {}
   for i = 1, nd do
      sizes[i] = tonumber(C.mt_tensor_size(h, i - 1))
      strides[i] = tonumber(C.mt_tensor_stride(h, i - 1))
   end
   self:longs(sizes)
   self:longs(strides)
   self:longs({ tonumber(C.mt_tensor_offset(h)) + 1 })
   self:storage(h)
end

-- keys in a stable order: numbers ascending, then strings, then the rest as pairs gives them
local key_rank = { number = 1, string = 2, boolean = 3 }
local function sorted_keys(t)
   local keys = {}
   for k in pairs(t) do keys[#keys + 1] = k end
   table.sort(keys, function(a, b)
      local ra, rb = key_rank[type(a)] or 4, key_rank[type(b)] or 4
      if ra ~= rb then return ra < rb end
      if ra <= 2 then return a < b end
      if ra == 3 then return (a and 1 or 0) < (b and 1 or 0) end
      return false
   end)
   return keys
end

local function writable_field(v)
   local tv = type(v)
   return tv == 'number' or tv == 'string' or tv == 'boolean' or tv == 'table' or T.is_tensor(v) or T.is_size(v)
      or M.storage_tensor_of(v) ~= nil -- Storage objects (cdata) are fields too: MultiCriterion's weights
end

-- a Lua function (Torch7's TYPE_RECUR_FUNCTION): its bytecode, then the list of its upvalues as
-- { name =, id =, value = } tables; upvalues shared between closures get the same id, so that
-- reading joins them again
function Writer:func(f, key, path, depth)
   local ok, code = pcall(string.dump, f)
   if not ok then
      error(('%s: cannot save a C function (at %s): only Lua functions have bytecode'):format(self.op, path), 0)
   end
   local index, seen = self:index(key)
   self:int(TAG_RECUR_FUNCTION)
   self:int(index)
   if seen then return end
   self:string(code)
   local ups = {}
   for i = 1, math.huge do
      local name, value = debug.getupvalue(f, i)
      if not name then break end
      local uid = debug.upvalueid(f, i)
      local id = self.upvalue_ids[uid]
      if not id then
         self.nupvalues = self.nupvalues + 1
         id = self.nupvalues
         self.upvalue_ids[uid] = id
      end
      ups[i] = { name = name, id = id, value = value }
   end
   -- the upvalues list, written by hand so the path names each upvalue (Torch7's error messages)
   self:int(TAG_TABLE)
   self:int((self:index(ups)))
   self:int(#ups)
   for i, u in ipairs(ups) do
      self:object(i, path, depth + 1)
      self:int(TAG_TABLE)
      self:int((self:index(u)))
      self:int(u.value == nil and 2 or 3)
      self:object('id', path, depth + 2); self:object(u.id, path, depth + 2)
      self:object('name', path, depth + 2); self:object(u.name, path, depth + 2)
      if u.value ~= nil then
         self:object('value', path, depth + 2)
         self:object(u.value, path .. '.' .. u.name, depth + 2)
      end
   end
end

function Writer:object(v, path, depth)
   if depth > MAX_DEPTH then error(('%s: objects nested deeper than %d at %s (a cycle with referenced=false?)')
      :format(self.op, MAX_DEPTH, path), 0) end
   local key = v -- what references are kept by: the object given, not what the hook makes of it
   if self.hook then
      v = self.hook(v)
      if key == nil or T.is_tensor(v) ~= T.is_tensor(key) then key = v end
   end
   local tv = type(v)
   if v == nil then self:int(TAG_NIL)
   elseif tv == 'number' then self:int(TAG_NUMBER); self:double(v)
   elseif tv == 'string' then self:int(TAG_STRING); self:string(v)
   elseif tv == 'boolean' then self:int(TAG_BOOLEAN); self:int(v and 1 or 0)
   elseif T.is_tensor(v) then self:tensor(v, key)
   elseif tv == 'function' then self:func(v, key, path, depth)
   elseif T.is_size(v) then -- Torch7's LongStorage size object
      local index, seen = self:index(v)
      self:int(TAG_TORCH)
      self:int(index)
      if seen then return end
      self:string('V 1')
      self:string('torch.LongStorage')
      self:longs({ #v })
      local vals = {}
      for i = 1, #v do vals[i] = v[i] end
      if #vals > 0 then
         if self.ascii then self:longs(vals)
         else
            local buf = ffi.new('int64_t[?]', #vals)
            for i, x in ipairs(vals) do buf[i - 1] = x end
            self.out[#self.out + 1] = ffi.string(buf, 8 * #vals)
         end
      end
   elseif M.storage_tensor_of(v) then self:storage(T.handle(M.storage_tensor_of(v)))
   elseif tv == 'table' then
      local cname = class.typename(v)
      local index, seen = self:index(type(key) == 'table' and key or v)
      self:int(cname and TAG_TORCH or TAG_TABLE)
      self:int(index)
      if seen then return end
      if cname then
         -- an object of a torch.class class: its fields, less what only lives in this process
         -- (functions, FFI data): Torch7 warns and skips what it cannot write, so do we. A class
         -- whose state is FFI data says what to write instead (obj:__t7write() -> a field table,
         -- read back by obj:__t7read(fields)).
         self:string('V 1')
         self:string(cname)
         local fields = {}
         local custom = type(v.__t7write) == 'function' and v:__t7write()
         for k, x in pairs(custom or v) do
            if writable_field(x) and writable_field(k) then fields[k] = x end
         end
         v = fields
         local fi = self:index(fields)
         self:int(TAG_TABLE)
         self:int(fi)
         path = path .. '<' .. cname .. '>'
      end
      local keys = sorted_keys(v)
      self:int(#keys)
      for _, k in ipairs(keys) do
         local kp = path .. '.' .. tostring(k)
         self:object(k, kp, depth + 1)
         self:object(v[k], kp, depth + 1)
      end
   else
      error(('%s: cannot save a %s (at %s): only numbers, strings, booleans, tables, Lua functions, tensors and '
         .. 'torch.class objects are written'):format(self.op, package.loaded.moontorch.type(v), path), 0)
   end
end

-- The bytes of obj in Torch7's format ('binary' or 'ascii'); referenced (default true): write
-- an object met again as a reference to its first copy; hook (optional): a function that every
-- object passes through before it is written (Torch7's writeObject hook: what it returns is
-- written, references still follow the objects given).
function M.encode(obj, mode, referenced, op, level, hook, name)
   op = op or 'torch.serialize'
   local ascii, msg = check_mode(op, mode)
   if ascii == nil then error(msg, level or 2) end
   if hook ~= nil and type(hook) ~= 'function' then
      error(('%s: the hook must be a function, got %s'):format(op, type(hook)), level or 2)
   end
   local w = setmetatable({ out = {}, ascii = ascii, refs = {}, count = 0, upvalue_ids = {}, nupvalues = 0,
      referenced = referenced ~= false, op = op, hook = hook }, Writer)
   local ok, err = pcall(w.object, w, obj, name or '<?>', 0)
   if not ok then error(err, level or 2) end
   return table.concat(w.out)
end

---------------------------------------------------------------------------------------------
-- reading

-- Storage objects, when the library has them (T.storage_of: 1-d tensor -> Storage,
-- T.storage_as_tensor: Storage -> its 1-d tensor); else storages are 1-d tensors here.
function M.storage_tensor_of(v)
   if not T.storage_as_tensor or T.is_tensor(v) or T.is_size(v) then return nil end
   local name = package.loaded.moontorch.typename(v)
   if name and name:match('^torch%.%w+Storage$') then return T.storage_as_tensor(v) end
   return nil
end

local K = { NIL = C.MT_T7_NIL, NUMBER = C.MT_T7_NUMBER, STRING = C.MT_T7_STRING, TABLE = C.MT_T7_TABLE,
   OBJECT = C.MT_T7_OBJECT, BOOLEAN = C.MT_T7_BOOLEAN, REF = C.MT_T7_REF, TENSOR = C.MT_T7_TENSOR,
   STORAGE = C.MT_T7_STORAGE, FUNCTION = C.MT_T7_FUNCTION }

-- the class for a class name in a file, or nil: nn modules (loading moontorch.nn when needed)
-- and any other class this process has defined
local function object_class(name)
   local alias = name:match('^cudnn%.(.+)$')
   if alias then name = 'nn.' .. alias end
   if name:match('^nn%.') and not class.metatable(name) then require 'moontorch.nn' end
   return class.metatable(name) and name
end

-- the options of a read: nil or { allowCode = boolean }; the checked allowCode
function M.read_options(op, opts, level)
   if opts == nil then return false end
   if type(opts) ~= 'table' then error(('%s: options must be a table such as {allowCode = true}, got %s')
      :format(op, type(opts)), level + 1) end
   for k in pairs(opts) do
      if k ~= 'allowCode' then error(('%s: unknown option %s (the one option is allowCode)'):format(op, tostring(k)),
         level + 1) end
   end
   if opts.allowCode ~= nil and type(opts.allowCode) ~= 'boolean' then
      error(('%s: allowCode must be true or false, got %s'):format(op, tostring(opts.allowCode)), level + 1)
   end
   return opts.allowCode == true
end

-- Rebuild the object that starts at byte `pos` (1-based) of `bytes`; returns it and the
-- position after it. `what` names the source in errors (a file name); errors point at the
-- caller's line (`level` 2) or further up. opts: nil or { allowCode = true } to load functions.
function M.decode(bytes, pos, mode, what, op, level, opts)
   op = op or 'torch.deserialize'
   level = level or 2
   local allow_code = M.read_options(op, opts, level)
   if type(bytes) ~= 'string' then error(op .. ': expected a string, got ' .. type(bytes), level) end
   local ascii, long_size = check_mode(op, mode, true)
   if ascii == nil then error(long_size, level) end
   pos = pos or 1
   what = what or 'string'
   local fp = ffi.new('mt_t7 *[1]')
   T.check(C.mt_t7_parse(fp, bytes, #bytes, pos - 1, ascii and 1 or 0, long_size, what), op, 't7', level)
   local f = ffi.gc(fp[0], C.mt_t7_free)
   local nodes, kids, dims = C.mt_t7_nodes(f), C.mt_t7_children(f), C.mt_t7_dims(f)
   local memo, loaded, joined = {}, {}, {}
   local function fail(i, msg)
      error(('%s: %s: byte %d: %s'):format(op, what, tonumber(nodes[tonumber(i)].offset), msg), 0)
   end
   local function str(nd) return bytes:sub(tonumber(nd.str) + 1, tonumber(nd.str + nd.len)) end

   -- storages that are some tensor's storage load as their 1-d tensor (or Storage object); a
   -- LongStorage on its own is Torch7's size object
   local backs = {}
   for i = 0, tonumber(C.mt_t7_count(f)) - 1 do
      local nd = nodes[i]
      if nd.kind == K.TENSOR and tonumber(nd.count) == 1 then
         local s = tonumber(kids[nd.first])
         if nodes[s].kind == K.REF then s = tonumber(nodes[s].first) end
         backs[s] = true
      end
   end

   local build
   local function storage(i) -- node i is a STORAGE: its 1-d tensor (shared by every user)
      local h = C.mt_t7_storage(f, i)
      C.mt_tensor_retain(h)
      return T.wrap_handle(h)
   end
   function build(i)
      i = tonumber(i)
      local nd = nodes[i]
      local kind = nd.kind
      if kind == K.NIL then return nil
      elseif kind == K.NUMBER then return nd.number
      elseif kind == K.BOOLEAN then return nd.number ~= 0
      elseif kind == K.STRING then return str(nd)
      elseif kind == K.REF then
         local target = tonumber(nd.first)
         if memo[target] == nil then return build(target) end
         return memo[target]
      end
      if memo[i] ~= nil then return memo[i] end
      if kind == K.TABLE then
         local t = {}
         memo[i] = t
         for c = 0, tonumber(nd.count) - 1, 2 do
            local k = build(kids[nd.first + c])
            if k == nil then fail(kids[nd.first + c], 'a table key is nil') end
            t[k] = build(kids[nd.first + c + 1])
         end
         return t
      elseif kind == K.STORAGE then
         local t = storage(i)
         local v = t
         if T.storage_of then v = T.storage_of(t)
         elseif not backs[i] and nd.dtype == T.LONG then
            v = T.LongStorage.new(t:totable())
         end
         memo[i] = v
         return v
      elseif kind == K.TENSOR then
         local sizes, strides = {}, {}
         for d = 0, nd.ndim - 1 do
            sizes[d + 1] = tonumber(dims[nd.dims + d])
            strides[d + 1] = tonumber(dims[nd.dims + nd.ndim + d])
         end
         local t
         if tonumber(nd.count) == 0 then -- no storage: an empty tensor of those sizes
            t = T.new_tensor(nd.dtype, T.CPU_DEVICE, nd.ndim == 0 and { 0 } or sizes)
         else
            local s = tonumber(kids[nd.first])
            if nodes[s].kind == K.REF then s = tonumber(nodes[s].first) end
            local st = build(s)
            if T.storage_of then st = T.storage_as_tensor(st) end
            local n, sz = T.sizes_buf(sizes)
            local _, stb = T.sizes_buf(strides, true)
            T.check(C.mt_tensor_as_strided(T.out_handle, st.h, n, sz, stb, nd.storage_offset), op, nil, 3)
            t = T.wrap_handle(T.out_handle[0])
         end
         memo[i] = t
         return t
      end
      if kind == K.FUNCTION then
         if not allow_code then
            fail(i, ('a Lua function: functions are not loaded unless the caller allows code, which runs when '
               .. 'called (%s(..., {allowCode = true}) loads them)'):format(op))
         end
         local fn, err = loadstring(str(nd))
         if not fn then fail(i, 'a function whose bytecode does not load: ' .. tostring(err)) end
         local tag = nd.number
         if tag ~= 6 then memo[i] = fn end
         local ups = build(kids[nd.first])
         for u, up in ipairs(ups) do
            if tag ~= 8 then debug.setupvalue(fn, u, up) -- older files: the values alone
            elseif type(up) ~= 'table' then fail(i, ('upvalue %d is not a {name, id, value} table'):format(u))
            else
               debug.setupvalue(fn, u, up.value)
               if up.id ~= nil then -- one upvalue shared by several closures: join them again
                  local other = joined[up.id]
                  if other then debug.upvaluejoin(fn, u, other[1], other[2])
                  else joined[up.id] = { fn, u } end
               end
            end
         end
         return fn
      end
      -- OBJECT: an nn module, or an object of another class this process defines, from its field table
      local name = str(nd)
      local cname = object_class(name)
      if not cname then
         fail(i, ('class %s is not defined here: tensors, storages, nn modules and classes made with torch.class '
            .. 'before loading are loaded'):format(name))
      end
      local obj = class.factory(cname)()
      memo[i] = obj
      local fields = build(kids[nd.first])
      if type(obj.__t7read) == 'function' then
         local ok, err = pcall(obj.__t7read, obj, fields)
         if not ok then fail(i, ('cannot rebuild a %s: %s'):format(cname, tostring(err))) end
      else
         for k, v in pairs(fields) do obj[k] = v end
      end
      loaded[#loaded + 1] = obj
      return obj
   end

   local ok, obj = pcall(build, 0)
   if not ok then error(obj, level) end
   local next_pos = tonumber(C.mt_t7_end(f)) + 1
   C.mt_t7_free(ffi.gc(f, nil))
   -- modules whose type named a CUDA tensor type now hold CPU tensors
   for _, m in ipairs(loaded) do
      if type(m._type) == 'string' then
         local dtype, device = T.parse_typename(m._type)
         if dtype and device ~= T.CPU_DEVICE then m._type = T.typename(dtype, T.CPU_DEVICE) end
      end
      if m.__afterLoad then m:__afterLoad() end
   end
   return obj, next_pos
end

---------------------------------------------------------------------------------------------
-- torch.*

local function install(torch)
   function torch.serialize(obj, mode)
      return (M.encode(obj, mode, true, 'torch.serialize', 3)) -- not a tail call: level 3 is the caller
   end

   -- opts: { allowCode = true } loads Lua functions (their code runs when called)
   function torch.deserialize(s, mode, opts)
      if type(s) ~= 'string' then error('torch.deserialize: expected a string, got ' .. torch.type(s), 2) end
      return (M.decode(s, 1, mode, 'string', 'torch.deserialize', 3, opts))
   end

   -- Torch7's storage forms: the binary serialization in a CharStorage, and back
   function torch.serializeToStorage(obj, mode)
      local bytes = M.encode(obj, mode, true, 'torch.serializeToStorage', 3)
      local s = torch.CharStorage(#bytes)
      if #bytes > 0 then ffi.copy(s:data(), bytes, #bytes) end
      return s
   end

   function torch.deserializeFromStorage(s, mode, opts)
      if torch.typename(s) ~= 'torch.CharStorage' then
         error('torch.deserializeFromStorage: expected a torch.CharStorage, got ' .. torch.type(s), 2)
      end
      return (M.decode(s:string(), 1, mode, 'storage', 'torch.deserializeFromStorage', 3, opts))
   end

   -- Written atomically: a temporary file beside filename, flushed, renamed over it.
   function torch.save(filename, obj, mode, referenced)
      if type(filename) ~= 'string' then error('torch.save: expected a file name, got ' .. torch.type(filename), 2) end
      if referenced ~= nil and type(referenced) ~= 'boolean' then
         error('torch.save: referenced must be true or false, got ' .. tostring(referenced), 2)
      end
      local bytes = M.encode(obj, mode, referenced, 'torch.save', 3)
      local ok, err = pcall(fs.write_atomic, filename, bytes)
      if not ok then error('torch.save: ' .. tostring(err), 2) end
   end

   -- opts: { allowCode = true } loads Lua functions (their code runs when called)
   function torch.load(filename, mode, opts)
      if type(filename) ~= 'string' then error('torch.load: expected a file name, got ' .. torch.type(filename), 2) end
      if type(opts) == 'boolean' then opts = nil end -- Torch7's third argument, referenced, changes nothing here
      local fh, err = io.open(filename, 'rb')
      if not fh then error('torch.load: cannot open ' .. tostring(err), 2) end
      local bytes = fh:read('*a')
      fh:close()
      return (M.decode(bytes, 1, mode, filename, 'torch.load', 3, opts))
   end
   torch.saveobj, torch.loadobj = torch.save, torch.load
end

return setmetatable(M, { __call = function(_, torch) install(torch) end })
