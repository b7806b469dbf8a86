-- file_disk.lua: torch.DiskFile (a file on disk) and torch.PipeFile (a command's input or
-- output), both C stdio streams driven through the FFI; the typed reads and writes are
-- torch.File's (file.lua). A stream is closed by close() or when the object is collected.
local ffi = require 'ffi'
local bit = require 'bit'
local class = require 'moontorch.class'

-- void* for FILE*: LuaJIT converts between them, so this works whoever declared stdio first
for _, decl in ipairs {
   'void *fopen(const char *path, const char *mode);', 'int fclose(void *f);',
   'size_t fread(void *p, size_t size, size_t n, void *f);',
   'size_t fwrite(const void *p, size_t size, size_t n, void *f);',
   'int fseeko(void *f, int64_t off, int whence);', 'int64_t ftello(void *f);', 'int fflush(void *f);',
   'int fgetc(void *f);', 'int ungetc(int c, void *f);', 'int setvbuf(void *f, char *buf, int mode, size_t size);',
   'void *popen(const char *cmd, const char *mode);', 'int pclose(void *f);',
   'char *strerror(int errnum);',
} do pcall(ffi.cdef, decl) end
local C = ffi.C
local SEEK_SET, SEEK_CUR, SEEK_END, IONBF = 0, 1, 2, 2

return function(torch, T, File)
   local DiskFile = class('torch.DiskFile', 'torch.File', torch)

   local function open_error(op, what, name, mode)
      return ("%s: cannot open %s '%s' in mode '%s': %s"):format(op, what, name, mode,
         ffi.string(C.strerror(ffi.errno())))
   end

   -- torch.DiskFile(path [, 'r' | 'w' | 'rw' [, quiet]]): nil instead of an error when quiet
   function DiskFile:__init(name, mode, quiet)
      mode = mode or 'r'
      if type(name) ~= 'string' then error('torch.DiskFile: expected a file name, got ' .. type(name), 4) end
      if mode ~= 'r' and mode ~= 'w' and mode ~= 'rw' then
         error(("torch.DiskFile: mode must be 'r', 'w' or 'rw', got '%s'"):format(tostring(mode)), 4)
      end
      local fp
      if mode == 'rw' then
         fp = C.fopen(name, 'r+b')
         if fp == nil then -- create it, then open it for both
            local w = C.fopen(name, 'wb')
            if w ~= nil then C.fclose(w); fp = C.fopen(name, 'r+b') end
         end
      else
         fp = C.fopen(name, mode == 'r' and 'rb' or 'wb')
      end
      if fp == nil then
         if quiet then self._failed = true return end
         error(open_error('torch.DiskFile', 'file', name, mode), 4)
      end
      self._fp = ffi.gc(fp, C.fclose)
      self:_setup('DiskFile', name, mode ~= 'w', mode ~= 'r', quiet)
   end

   -- stdio needs a flush or a seek between reading and writing the same stream
   local function turn(self, dir)
      if self._last and self._last ~= dir then
         if dir == 'r' then C.fflush(self._fp) else C.fseeko(self._fp, 0, SEEK_CUR) end
      end
      self._last = dir
   end
   function DiskFile:_rawread(p, n) turn(self, 'r'); return C.fread(p, 1, n, self._fp) end
   function DiskFile:_rawwrite(p, n) turn(self, 'w'); return C.fwrite(p, 1, n, self._fp) end
   function DiskFile:_getc() turn(self, 'r'); return C.fgetc(self._fp) end
   function DiskFile:_ungetc(c) C.ungetc(c, self._fp) end
   function DiskFile:_tell() return tonumber(C.ftello(self._fp)) end
   function DiskFile:_seek(pos) self._last = nil; return C.fseeko(self._fp, pos, SEEK_SET) == 0 end
   function DiskFile:_seekend() self._last = nil; return C.fseeko(self._fp, 0, SEEK_END) == 0 end
   function DiskFile:_flush() C.fflush(self._fp) end
   function DiskFile:_close()
      local fp = self._fp
      ffi.gc(fp, nil)
      self._fp = nil
      C.fclose(fp)
   end

   -- byte order of binary numbers (DiskFile and PipeFile)
   local little = ffi.abi('le')
   function DiskFile:isLittleEndianCPU() return little end
   function DiskFile:isBigEndianCPU() return not little end
   function DiskFile:nativeEndianEncoding() self._native = true return self end
   function DiskFile:littleEndianEncoding() self._native = little return self end
   function DiskFile:bigEndianEncoding() self._native = not little return self end
   function DiskFile:noBuffer()
      self:_usable('noBuffer', 2)
      if C.setvbuf(self._fp, nil, IONBF, 0) ~= 0 then
         error('noBuffer: cannot disable buffering of ' .. self:_where(), 2)
      end
      return self
   end
   function DiskFile:name() return self._name end

   ------------------------------------------------------------------------------------------
   -- torch.PipeFile(command [, 'r' | 'w' [, quiet]]): reads the command's output or writes its
   -- input. Pipes cannot seek; position() counts the bytes that went through.
   local PipeFile = class('torch.PipeFile', 'torch.DiskFile', torch)

   function PipeFile:__init(cmd, mode, quiet)
      mode = mode or 'r'
      if type(cmd) ~= 'string' then error('torch.PipeFile: expected a command, got ' .. type(cmd), 4) end
      if mode ~= 'r' and mode ~= 'w' then
         error(("torch.PipeFile: mode must be 'r' or 'w', got '%s'"):format(tostring(mode)), 4)
      end
      io.stdout:flush() -- the command shares our stdout: what we printed goes first
      local fp = C.popen(cmd, mode)
      if fp == nil then
         if quiet then self._failed = true return end
         error(open_error('torch.PipeFile', 'a pipe to', cmd, mode), 4)
      end
      self._fp = ffi.gc(fp, C.pclose)
      self._count = 0
      self:_setup('PipeFile', cmd, mode == 'r', mode == 'w', quiet)
   end

   function PipeFile:_rawread(p, n)
      local got = C.fread(p, 1, n, self._fp)
      self._count = self._count + tonumber(got)
      return got
   end
   function PipeFile:_rawwrite(p, n)
      local put = C.fwrite(p, 1, n, self._fp)
      self._count = self._count + tonumber(put)
      return put
   end
   function PipeFile:_getc()
      local c = C.fgetc(self._fp)
      if c >= 0 then self._count = self._count + 1 end
      return c
   end
   function PipeFile:_ungetc(c)
      C.ungetc(c, self._fp)
      self._count = self._count - 1
   end
   function PipeFile:_tell() return self._count end
   function PipeFile:_seek() return false end
   function PipeFile:_seekend() return false end
   -- close() waits for the command and fails (unless quiet) when it did not exit with 0
   function PipeFile:_close()
      local fp = self._fp
      ffi.gc(fp, nil)
      self._fp = nil
      local status = C.pclose(fp)
      if status ~= 0 then
         self._error = true
         if not self._quiet then
            error(("close: the command of PipeFile '%s' ended with exit status %d"):format(self._name,
               bit.rshift(status, 8)), 3)
         end
      end
   end

   -- quiet constructors answer nil instead of a file they could not open
   for _, cls in ipairs { 'torch.DiskFile', 'torch.PipeFile' } do
      local ctor = torch[cls:match('%.(.*)$')]
      local meta = getmetatable(ctor)
      local make = meta.__call
      meta.__call = function(c, ...)
         local f = make(c, ...)
         if f._failed then return nil end
         return f
      end
   end
end
