-- idx.lua: reader (and a small writer, for tests and tools) for the IDX files MNIST and
-- Fashion-MNIST ship in, plain or gzip-compressed.
--   local idx = require 'moontorch.data.idx'
--   local images = idx.read('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz')
--   local t = idx.parse(bytes, 'name for errors')   -- from a Lua string or a ByteTensor
-- Format: 0x00 0x00, a type byte, a dimension count, then that many big-endian int32 sizes, then
-- the elements row-major and big-endian. Parsing is done in C (csrc/data/idx.c), which checks
-- the header before allocating and reports short or over-long data with the file name and the
-- byte offset (in the decompressed stream) where it went wrong.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local idx = {}

-- IDX type byte -> element size in the file, the tensor type it is read into
local types = {
   [0x08] = { size = 1, tensor = 'ByteTensor', ctype = 'uint8_t' },
   [0x09] = { size = 1, tensor = 'IntTensor', ctype = 'int8_t' },
   [0x0B] = { size = 2, tensor = 'IntTensor', ctype = 'int16_t' },
   [0x0C] = { size = 4, tensor = 'IntTensor', ctype = 'int32_t' },
   [0x0D] = { size = 4, tensor = 'FloatTensor', ctype = 'float' },
   [0x0E] = { size = 8, tensor = 'DoubleTensor', ctype = 'double' },
}
idx.types = types

-- Read an IDX file (plain or .gz); returns a tensor with the file's dimensions.
-- Unsigned bytes become a ByteTensor, signed integers an IntTensor, floats Float/DoubleTensor.
function idx.read(path)
   if type(path) ~= 'string' then error('idx.read: expected a file name, got ' .. type(path), 2) end
   local outp = T.out_handle
   if C.mt_idx_load(outp, path) ~= 0 then T.raise() end
   return T.wrap_handle(outp[0])
end

-- Parse the bytes of an IDX file (plain or gzip) held in a Lua string or a ByteTensor; `what`
-- names them in error messages.
function idx.parse(bytes, what)
   local ptr, len
   if type(bytes) == 'string' then
      ptr, len = bytes, #bytes
   elseif torch.isTensor(bytes) and bytes:type() == 'torch.ByteTensor' then
      bytes = bytes:contiguous()
      ptr, len = bytes:data(), bytes:nElement()
   else
      error('idx.parse: expected a string or a ByteTensor, got ' .. (torch.typename(bytes) or type(bytes)), 2)
   end
   if what ~= nil and type(what) ~= 'string' then error('idx.parse: the name must be a string', 2) end
   local outp = T.out_handle
   if C.mt_idx_parse(outp, ptr, len, what or '<string>') ~= 0 then T.raise() end
   return T.wrap_handle(outp[0])
end

-- the writer goes through zlib's gz* functions, which write plain files too
local zlib
local function z()
   if zlib then return zlib end
   pcall(ffi.cdef, [[
      typedef struct gzFile_s *gzFile;
      gzFile gzopen(const char *path, const char *mode);
      int gzwrite(gzFile file, const void *buf, unsigned int len);
      int gzclose(gzFile file);
   ]])
   local ok, lib = pcall(ffi.load, 'z')
   if not ok then ok, lib = pcall(ffi.load, 'libz.so.1') end
   if not ok then error('moontorch.data.idx: cannot load zlib (libz.so.1): ' .. tostring(lib), 0) end
   zlib = lib
   return lib
end

-- Write a ByteTensor (or a Lua array of 0..255 with sizes) as an IDX unsigned-byte file;
-- gzip-compressed when the name ends in .gz. Used by tests and to make small datasets.
function idx.write(path, t)
   if not torch.isTensor(t) then error('idx.write: expected a tensor', 2) end
   local b = t:contiguous():byte()
   local sizes = b:size():totable()
   local gz = path:match('%.gz$') ~= nil
   local zl = z()
   local f = zl.gzopen(path, gz and 'wb6' or 'wbT') -- 'T': plain, no gzip wrapper
   if f == nil then error('idx.write: cannot create ' .. path, 2) end
   local head = ffi.new('uint8_t[?]', 4 + 4 * #sizes)
   head[2], head[3] = 0x08, #sizes
   for d, s in ipairs(sizes) do
      local o = 4 + 4 * (d - 1)
      head[o], head[o + 1], head[o + 2], head[o + 3] =
         math.floor(s / 2 ^ 24) % 256, math.floor(s / 2 ^ 16) % 256, math.floor(s / 256) % 256, s % 256
   end
   local okw = zl.gzwrite(f, head, 4 + 4 * #sizes) == 4 + 4 * #sizes
   local n = b:nElement()
   if okw and n > 0 then okw = zl.gzwrite(f, b:data(), n) == n end
   if zl.gzclose(f) ~= 0 or not okw then error('idx.write: failed writing ' .. path, 2) end
end

return idx
