-- file.lua: Torch7's abstract torch.File: the typed reads and writes (readFloat(), readFloat(n),
-- readFloat(storage), writeFloat(x | storage), ... for every storage type), strings, booleans,
-- the binary and ascii encodings, error handling (pedantic or quiet) and objects. A concrete
-- file gives the byte-level operations:
--   f:_rawread(ptr, n) -> bytes read      f:_rawwrite(ptr, n) -> bytes written
--   f:_getc() -> byte or -1               f:_ungetc(c)
--   f:_tell() -> 0-based position         f:_seek(pos0) / f:_seekend() -> success
--   f:_flush()   f:_close()
-- DiskFile and PipeFile (file_disk.lua) are C stdio through the FFI, MemoryFile
-- (file_memory.lua) a CharStorage that grows. This is Lua rather than C because every type
-- takes one generic path driven by the dtype table, and stdio already buffers.
--
-- The ascii encoding is Torch7's DiskFile text: integers as %d, float/half as %.9g, double as
-- %.17g, bytes and chars raw; with autoSpacing a space between the numbers of one write and a
-- newline after each write, and a read skips that newline.
local ffi = require 'ffi'
local class = require 'moontorch.class'

for _, decl in ipairs {
   'double strtod(const char *s, char **end);', 'float strtof(const char *s, char **end);',
   'long long strtoll(const char *s, char **end, int base);', 'char *strerror(int errnum);',
} do pcall(ffi.cdef, decl) end

return function(torch, T)
   local C = T.clib
   local is_storage, is_int = T.is_storage, T.is_int
   class.namespace('torch', torch)
   local File = class('torch.File')

   ------------------------------------------------------------------------------------------
   -- state and errors
   function File:__init()
      error('torch.File is abstract: open a torch.DiskFile, torch.MemoryFile or torch.PipeFile', 4)
   end

   function File:_setup(kind, name, readable, writable, quiet)
      self._kind, self._name = kind, name
      self._readable, self._writable = readable, writable
      self._quiet = quiet and true or false
      self._binary, self._autospacing, self._error = false, true, false
      self._native, self._longsize, self._referenced = true, 0, true
   end

   function File:_where()
      local ok, pos = pcall(self._tell, self)
      local at = ok and pos and (' at byte %d'):format(pos + 1) or ''
      return ("%s '%s'%s"):format(self._kind, self._name, at)
   end

   -- a read or write that fell short: an error, or the error flag in quiet mode
   function File:_fail(op, msg, level)
      self._error = true
      if not self._quiet then error(('%s: %s in %s'):format(op, msg, self:_where()), level + 1) end
   end

   function File:_usable(op, level, reading, writing)
      if self._closed then error(("%s: %s '%s' is closed"):format(op, self._kind, self._name), level + 1) end
      if reading and not self._readable then
         error(("%s: %s '%s' is not open for reading"):format(op, self._kind, self._name), level + 1)
      end
      if writing and not self._writable then
         error(("%s: %s '%s' is not open for writing"):format(op, self._kind, self._name), level + 1)
      end
   end

   local function flag(name, field, value)
      File[name] = function(self)
         self[field] = value
         return self
      end
   end
   flag('binary', '_binary', true); flag('ascii', '_binary', false)
   flag('autoSpacing', '_autospacing', true); flag('noAutoSpacing', '_autospacing', false)
   flag('quiet', '_quiet', true); flag('pedantic', '_quiet', false)
   flag('clearError', '_error', false)
   function File:isQuiet() return self._quiet end
   function File:isBinary() return self._binary end
   function File:isAutoSpacing() return self._autospacing end
   function File:hasError() return self._error end
   function File:isReadable() return self._readable end
   function File:isWritable() return self._writable end
   function File:isOpened() return not self._closed end
   function File:referenced(ref)
      if type(ref) ~= 'boolean' then error('referenced: expected true or false, got ' .. tostring(ref), 2) end
      self._referenced = ref
      return self
   end
   function File:isReferenced() return self._referenced end

   -- longSize(n): longs take n bytes in binary files (0: native, 8 here; 4: files from 32-bit longs)
   function File:longSize(n)
      n = n or 0
      if n ~= 0 and n ~= 4 and n ~= 8 then error('longSize: expected 0, 4 or 8, got ' .. tostring(n), 2) end
      self._longsize = n
      return self
   end

   function File:synchronize()
      self:_usable('synchronize', 2)
      self:_flush()
      return self
   end

   function File:position()
      self:_usable('position', 2)
      return self:_tell() + 1
   end

   function File:seek(pos)
      self:_usable('seek', 2)
      if not is_int(pos) or pos < 1 then error('seek: position must be an integer >= 1, got ' .. tostring(pos), 2) end
      if not self:_seek(pos - 1) then self:_fail('seek', ('unable to seek to position %d'):format(pos), 2) end
      return self
   end

   function File:seekEnd()
      self:_usable('seekEnd', 2)
      if not self:_seekend() then self:_fail('seekEnd', 'unable to seek to the end', 2) end
      return self
   end

   function File:close()
      self:_usable('close', 2)
      self:_close()
      self._closed = true
      return self
   end

   ------------------------------------------------------------------------------------------
   -- one value type per dtype: how it is laid out in binary and written in ascii
   local kinds = {}
   for _, d in ipairs(T.dtypes) do
      if d.id ~= T.BOOL then
         local es = tonumber(C.mt_dtype_size(d.id))
         kinds[#kinds + 1] = {
            name = d.name, dtype = d.id, es = es,
            raw = not d.is_float and es == 1,            -- bytes and chars: raw in ascii too
            float = d.is_float,
            via_float = d.id == T.HALF or d.id == T.BFLOAT16, -- ascii through float values
            fmt = d.is_float and (es == 8 and '%.17g' or '%.9g') or nil,
            long = d.id == T.LONG,
            ptr = d.ptr,
            storage = 'torch.' .. d.name .. 'Storage',
         }
      end
   end

   -- reverse the bytes of each of n elements of es bytes at p (byte pointer)
   local function swap(p, es, n)
      for b = 0, n - 1 do
         local q = p + b * es
         for i = 0, es / 2 - 1 do q[i], q[es - 1 - i] = q[es - 1 - i], q[i] end
      end
   end

   -- the next number token in ascii (fscanf's rules: leading whitespace skipped, the longest
   -- prefix that reads as a number taken, one character of lookahead); nil when none
   local function isdigit(c) return c >= 48 and c <= 57 end
   local function isspace(c) return c == 32 or (c >= 9 and c <= 13) end
   local function scan(f, float)
      local c = f:_getc()
      while isspace(c) do c = f:_getc() end
      local b, digits = {}, 0
      if c == 43 or c == 45 then b[#b + 1] = c; c = f:_getc() end
      if float and (c == 105 or c == 73 or c == 110 or c == 78) then -- inf, infinity, nan
         while (c >= 65 and c <= 90) or (c >= 97 and c <= 122) do b[#b + 1] = c; c = f:_getc() end
         if c >= 0 then f:_ungetc(c) end
         local tok = string.char(unpack(b))
         local w = tok:lower():gsub('^[+-]', '')
         if w == 'inf' or w == 'infinity' or w == 'nan' then return tok end
         return nil
      end
      while isdigit(c) do b[#b + 1] = c; digits = digits + 1; c = f:_getc() end
      if float then
         if c == 46 then
            b[#b + 1] = c; c = f:_getc()
            while isdigit(c) do b[#b + 1] = c; digits = digits + 1; c = f:_getc() end
         end
         if digits > 0 and (c == 101 or c == 69) then
            b[#b + 1] = c; c = f:_getc()
            if c == 43 or c == 45 then b[#b + 1] = c; c = f:_getc() end
            while isdigit(c) do b[#b + 1] = c; c = f:_getc() end
         end
      end
      if c >= 0 then f:_ungetc(c) end
      if digits == 0 then return nil end
      return string.char(unpack(b))
   end

   local function byte_ptr(s) return ffi.cast('uint8_t*', C.mt_tensor_data(s.h)) end

   -- read n elements of kind k into storage s (CPU, of k's dtype); returns how many were read
   function File:_read(op, k, s, n)
      if n == 0 then return 0 end
      local got
      if self._binary then
         local p = byte_ptr(s)
         if k.long and self._longsize == 4 then
            local buf = ffi.new('int32_t[?]', n)
            got = math.floor(tonumber(self:_rawread(buf, 4 * n)) / 4)
            if not self._native then swap(ffi.cast('uint8_t*', buf), 4, got) end
            local q = ffi.cast('int64_t*', p)
            for i = 0, got - 1 do q[i] = buf[i] end
         else
            got = math.floor(tonumber(self:_rawread(p, k.es * n)) / k.es)
            if not self._native and k.es > 1 then swap(p, k.es, got) end
         end
      elseif k.raw then
         got = tonumber(self:_rawread(byte_ptr(s), n))
      else
         local target = k.via_float and torch.FloatStorage(n) or s
         local p = ffi.cast(k.via_float and 'float*' or k.ptr, C.mt_tensor_data(target.h))
         local conv = (k.long and C.strtoll) or (k.float and (k.es == 8 and C.strtod or C.strtof)) or tonumber
         got = 0
         for i = 0, n - 1 do
            local tok = scan(self, k.float)
            if not tok then break end
            if k.long then p[i] = conv(tok, nil, 10)
            elseif conv == tonumber then p[i] = tonumber(tok)
            else p[i] = conv(tok, nil) end
            got = i + 1
         end
         if k.via_float then s:copy(target) end
      end
      if not self._binary and self._autospacing then
         local c = self:_getc()
         if c ~= 10 and c >= 0 then self:_ungetc(c) end
      end
      if got < n then self:_fail(op, ('read %d of %d %s values'):format(got, n, k.name), 3) end
      return got
   end

   -- write the n elements of storage s (CPU, of k's dtype); returns how many were written
   function File:_write(op, k, s, n)
      local put
      if self._binary then
         local p = byte_ptr(s)
         if k.long and self._longsize == 4 then
            local q, buf = ffi.cast('int64_t*', p), ffi.new('int32_t[?]', n)
            for i = 0, n - 1 do buf[i] = q[i] end
            if not self._native then swap(ffi.cast('uint8_t*', buf), 4, n) end
            put = math.floor(tonumber(self:_rawwrite(buf, 4 * n)) / 4)
         elseif self._native or k.es == 1 then
            put = math.floor(tonumber(self:_rawwrite(p, k.es * n)) / k.es)
         else
            local buf = ffi.new('uint8_t[?]', k.es * n)
            ffi.copy(buf, p, k.es * n)
            swap(buf, k.es, n)
            put = math.floor(tonumber(self:_rawwrite(buf, k.es * n)) / k.es)
         end
      else
         local text
         if k.raw then
            text = ffi.string(byte_ptr(s), n)
         else
            local src = k.via_float and torch.FloatStorage(n):copy(s) or s
            local data = C.mt_tensor_data(src.h)
            local p = ffi.cast(k.via_float and 'float*' or k.ptr, data)
            -- floats by their bits first (T.read_f32): the values may have come from a file
            local read = k.float and ((k.via_float or k.es == 4) and T.read_f32 or T.read_f64)
            local parts = {}
            for i = 0, n - 1 do
               if k.fmt then parts[i + 1] = k.fmt:format(read and read(data, i) or tonumber(p[i]))
               elseif k.long then parts[i + 1] = tostring(p[i]):sub(1, -3) -- int64 prints as 123LL
               else parts[i + 1] = ('%d'):format(tonumber(p[i])) end
            end
            text = table.concat(parts, self._autospacing and ' ' or '')
         end
         if self._autospacing and n > 0 then text = text .. '\n' end
         local w = tonumber(self:_rawwrite(text, #text))
         put = w == #text and n or 0
      end
      if put < n then self:_fail(op, ('wrote %d of %d %s values'):format(put, n, k.name), 3) end
      return put
   end

   -- readT() -> number; readT(n) -> a TStorage of what was read; readT(storage) -> count.
   -- writeT(number) and writeT(storage) -> count written.
   for _, k in ipairs(kinds) do
      local rname, wname = 'read' .. k.name, 'write' .. k.name
      local function new_storage(n) return T.storage_types[k.storage](n) end
      local function expect(op, s, level)
         if T.is_size(s) and not is_storage(s) then s = torch.LongStorage(s) end
         if not is_storage(s) or T.storage_dtype(s) ~= k.dtype then
            error(('%s: expected a %s, got a %s'):format(op, k.storage, torch.type(s)), level + 1)
         end
         if s:type() ~= k.storage then error(('%s: the %s is not on the CPU'):format(op, s:type()), level + 1) end
         return s
      end
      File[rname] = function(self, a)
         self:_usable(rname, 2, true)
         if a == nil then
            local s = new_storage(1)
            if self:_read(rname, k, s, 1) == 1 then return s[1] end
            return nil
         elseif type(a) == 'number' then
            if not is_int(a) or a < 0 then
               error(('%s: expected a count >= 0, got %s'):format(rname, tostring(a)), 2)
            end
            local s = new_storage(a)
            local got = self:_read(rname, k, s, a)
            if got < a then s:resize(got) end
            return s
         end
         local s = expect(rname, a, 2)
         return self:_read(rname, k, s, #s)
      end
      File[wname] = function(self, a)
         self:_usable(wname, 2, false, true)
         if type(a) == 'number' then
            local s = new_storage(1)
            s[1] = a
            return self:_write(wname, k, s, 1)
         end
         if a == nil then error(('%s: expected a number or a %s, got nil'):format(wname, k.storage), 2) end
         local s = expect(wname, a, 2)
         return self:_write(wname, k, s, #s)
      end
   end

   -- booleans travel as ints: 1 for true, 0 otherwise
   function File:readBool()
      local v = self:readInt()
      if v == nil then return nil end
      return v == 1
   end
   function File:writeBool(v) return self:writeInt(v == true and 1 or 0) end

   ------------------------------------------------------------------------------------------
   -- strings
   local CHUNK = 65536
   function File:readString(fmt)
      self:_usable('readString', 2, true)
      local out = {}
      if fmt == '*a' or (type(fmt) == 'string' and fmt:sub(1, 2) == '*a') then
         local buf = ffi.new('uint8_t[?]', CHUNK)
         repeat
            local got = tonumber(self:_rawread(buf, CHUNK))
            out[#out + 1] = ffi.string(buf, got)
         until got < CHUNK
      elseif fmt == '*l' or (type(fmt) == 'string' and fmt:sub(1, 2) == '*l') then
         local c = self:_getc()
         if c < 0 then
            self:_fail('readString', 'nothing left to read', 2)
            return ''
         end
         local line = {}
         while c >= 0 and c ~= 10 do -- the newline ends the line and is dropped
            line[#line + 1] = c
            if #line == 4096 then out[#out + 1] = string.char(unpack(line)); line = {} end
            c = self:_getc()
         end
         out[#out + 1] = string.char(unpack(line))
         return table.concat(out)
      elseif is_int(fmt) and fmt >= 0 then
         if fmt == 0 then return '' end
         local buf = ffi.new('uint8_t[?]', fmt)
         out[1] = ffi.string(buf, tonumber(self:_rawread(buf, fmt)))
      else
         error("readString: format must be '*a', '*l' or a byte count, got " .. tostring(fmt), 2)
      end
      local s = table.concat(out)
      if #s == 0 then self:_fail('readString', 'nothing left to read', 2) end
      return s
   end

   function File:writeString(str)
      self:_usable('writeString', 2, false, true)
      if type(str) ~= 'string' then error('writeString: expected a string, got ' .. type(str), 2) end
      local w = tonumber(self:_rawwrite(str, #str))
      if w < #str then self:_fail('writeString', ('wrote %d of %d bytes'):format(w, #str), 2) end
      return w
   end

   ------------------------------------------------------------------------------------------
   -- objects: the bytes come from moontorch.io.serialize (Torch7's format), in this file's mode
   local function serializer(op)
      local ok, ser = pcall(require, 'moontorch.io.serialize')
      if not ok then
         error(op .. ': object serialization needs the moontorch.io.serialize module: ' .. tostring(ser), 3)
      end
      return ser
   end

   -- writeObject(obj [, debugname [, hook]]): hook(x) is called on every object written and what
   -- it returns is written instead (Torch7's hook; debugname is Torch7's name of obj in errors)
   function File:writeObject(obj, debugname, hook)
      self:_usable('writeObject', 2, false, true)
      if debugname ~= nil and type(debugname) ~= 'string' then
         error('writeObject: the debug name must be a string, got ' .. type(debugname), 2)
      end
      if hook ~= nil and type(hook) ~= 'function' then
         error('writeObject: the hook must be a function, got ' .. type(hook), 2)
      end
      local bytes = serializer('writeObject').encode(obj, self._binary and 'binary' or 'ascii', self._referenced,
         'writeObject', 3, hook, debugname)
      self:writeString(bytes)
      return self
   end

   -- readObject([{allowCode = true}]): Lua functions in the object load only with allowCode
   function File:readObject(opts)
      self:_usable('readObject', 2, true)
      local ser = serializer('readObject')
      ser.read_options('readObject', opts, 2)
      local start = self:_tell()
      local bytes = self:readString('*a')
      if #bytes == 0 then return nil end
      local obj, next_pos = ser.decode(bytes, 1, self._binary and 'binary' or 'ascii', self._name, 'readObject', 3,
         opts)
      if not self:_seek(start + next_pos - 1) then
         self:_fail('readObject', 'cannot return to the end of the object (the file cannot seek)', 2)
      end
      return obj
   end

   -- the concrete files
   require('moontorch.io.file_disk')(torch, T, File)
   require('moontorch.io.file_memory')(torch, T, File)
end
