-- file_memory.lua: torch.MemoryFile, a file in a CharStorage (a ByteStorage where the dtype
-- list has no Char) that grows as it is written and always ends with a NUL byte after the
-- data; f:storage() hands out that storage itself (data size + 1 elements). The typed reads
-- and writes are torch.File's (file.lua).
local ffi = require 'ffi'
local class = require 'moontorch.class'

return function(torch, T, File)
   local C = T.clib
   local MemoryFile = class('torch.MemoryFile', 'torch.File', torch)
   local char_type = T.dtype_by_name.Char and 'torch.CharStorage' or 'torch.ByteStorage'

   local function base(self) return ffi.cast('uint8_t*', C.mt_tensor_data(self._s.h)) end

   -- torch.MemoryFile(['r' | 'w' | 'rw']) or torch.MemoryFile(storage [, mode]) over a storage
   -- whose last byte is NUL (the data is everything before it)
   function MemoryFile:__init(a, mode)
      local s
      if T.is_storage(a) then
         s = a
         if s:type() ~= char_type and s:type() ~= 'torch.ByteStorage' then
            error(('torch.MemoryFile: expected a %s, got a %s'):format(char_type, s:type()), 4)
         end
         if #s == 0 or s[#s] ~= 0 then
            error('torch.MemoryFile: the storage must end with a NUL byte (its data is what comes before)', 4)
         end
      else
         if a ~= nil and mode ~= nil then error('torch.MemoryFile: expected a storage, got a ' .. torch.type(a), 4) end
         mode = a
         s = torch[char_type:match('%.(.*)$')](1)
         s[1] = 0
      end
      mode = mode or 'rw'
      if mode ~= 'r' and mode ~= 'w' and mode ~= 'rw' then
         error(("torch.MemoryFile: mode must be 'r', 'w' or 'rw', got '%s'"):format(tostring(mode)), 4)
      end
      self._s, self._size, self._pos = s, #s - 1, 0
      self:_setup('MemoryFile', 'memory', mode ~= 'w', mode ~= 'r', false)
   end

   function MemoryFile:_rawread(p, n)
      local k = math.min(n, self._size - self._pos)
      if k > 0 then ffi.copy(p, base(self) + self._pos, k) end
      self._pos = self._pos + k
      return k
   end

   function MemoryFile:_rawwrite(p, n)
      local need = self._pos + n + 1 -- and the NUL
      if need > #self._s then self._s:resize(math.max(need, math.floor(#self._s * 1.5))) end
      local b = base(self)
      if n > 0 then ffi.copy(b + self._pos, p, n) end
      self._pos = self._pos + n
      if self._pos > self._size then
         self._size = self._pos
         b[self._size] = 0
      end
      return n
   end

   function MemoryFile:_getc()
      if self._pos >= self._size then return -1 end
      local c = base(self)[self._pos]
      self._pos = self._pos + 1
      return c
   end
   function MemoryFile:_ungetc() self._pos = self._pos - 1 end
   function MemoryFile:_tell() return self._pos end
   function MemoryFile:_seek(pos)
      if pos > self._size then return false end
      self._pos = pos
      return true
   end
   function MemoryFile:_seekend() self._pos = self._size return true end
   function MemoryFile:_flush() end
   function MemoryFile:_close() self._s = nil end

   -- the storage holding the data and its NUL (not a copy)
   function MemoryFile:storage()
      self:_usable('storage', 2)
      if #self._s ~= self._size + 1 then self._s:resize(self._size + 1) end
      return self._s
   end
end
