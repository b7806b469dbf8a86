-- idx.lua: reader (and a small writer, for tests and tools) for the IDX files MNIST and
-- Fashion-MNIST ship in, plain or gzip-compressed.
--   local idx = require 'moontorch.data.idx'
--   local images = idx.read('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz')
-- Format: 0x00 0x00, a type byte, a dimension count, then that many big-endian int32 sizes, then
-- the elements row-major and big-endian. zlib's gzread reads plain files unchanged, so one path
-- serves both; every short read is reported with the file name and the byte offset it hit.
local ffi = require 'ffi'
local torch = require 'moontorch'

pcall(ffi.cdef, [[
   typedef struct gzFile_s *gzFile;
   gzFile gzopen(const char *path, const char *mode);
   int gzread(gzFile file, void *buf, unsigned int len);
   int gzwrite(gzFile file, const void *buf, unsigned int len);
   int gzclose(gzFile file);
   const char *gzerror(gzFile file, int *errnum);
]])

local ok, z = pcall(ffi.load, 'z')
if not ok then ok, z = pcall(ffi.load, 'libz.so.1') end
if not ok then error('moontorch.data.idx: cannot load zlib (libz.so.1): ' .. tostring(z)) end

local idx = {}

-- IDX type byte -> element size, moontorch tensor type, C type read from the file
local types = {
   [0x08] = { size = 1, tensor = 'ByteTensor', ctype = 'uint8_t' },
   [0x09] = { size = 1, tensor = 'IntTensor', ctype = 'int8_t' },
   [0x0B] = { size = 2, tensor = 'IntTensor', ctype = 'int16_t' },
   [0x0C] = { size = 4, tensor = 'IntTensor', ctype = 'int32_t' },
   [0x0D] = { size = 4, tensor = 'FloatTensor', ctype = 'float' },
   [0x0E] = { size = 8, tensor = 'DoubleTensor', ctype = 'double' },
}
idx.types = types

local CHUNK = 2 ^ 30 -- gzread takes an unsigned int length; read in chunks well below that

-- read exactly n bytes into buf; on a short read, raise an error naming file and offset
local function read_exact(f, path, buf, n, offset, what)
   local done = 0
   while done < n do
      local want = math.min(n - done, CHUNK)
      local got = z.gzread(f, ffi.cast('uint8_t*', buf) + done, want)
      if got < 0 then
         local errnum = ffi.new('int[1]')
         local msg = ffi.string(z.gzerror(f, errnum))
         z.gzclose(f)
         error(('idx: %s: read error at byte offset %d while reading %s: %s'):format(path, offset + done, what, msg), 0)
      end
      if got == 0 then
         z.gzclose(f)
         error(('idx: %s: truncated at byte offset %d while reading %s (%d of %d bytes present)')
            :format(path, offset + done, what, done, n), 0)
      end
      done = done + got
   end
end

local function be_u32(b, i) return ((b[i] * 256 + b[i + 1]) * 256 + b[i + 2]) * 256 + b[i + 3] end

-- Read an IDX file (plain or .gz); returns a tensor with the file's dimensions.
-- Unsigned bytes become a ByteTensor, signed integers an IntTensor, floats Float/DoubleTensor.
function idx.read(path)
   if type(path) ~= 'string' then error('idx.read: expected a file name, got ' .. type(path), 2) end
   local f = z.gzopen(path, 'rb')
   if f == nil then error(('idx: cannot open %s'):format(path), 2) end
   local head = ffi.new('uint8_t[4]')
   read_exact(f, path, head, 4, 0, 'the magic number')
   if head[0] ~= 0 or head[1] ~= 0 then
      z.gzclose(f)
      error(('idx: %s: bad magic number at byte offset 0 (0x%02x%02x%02x%02x; an IDX file starts with two zero bytes)')
         :format(path, head[0], head[1], head[2], head[3]), 0)
   end
   local ty = types[head[2]]
   if not ty then
      z.gzclose(f)
      error(('idx: %s: unknown element type 0x%02x at byte offset 2'):format(path, head[2]), 0)
   end
   local ndim = head[3]
   if ndim == 0 then
      z.gzclose(f)
      error(('idx: %s: zero dimensions at byte offset 3'):format(path), 0)
   end
   local dimbuf = ffi.new('uint8_t[?]', 4 * ndim)
   read_exact(f, path, dimbuf, 4 * ndim, 4, 'the dimension sizes')
   local sizes, n = {}, 1
   for d = 1, ndim do
      sizes[d] = be_u32(dimbuf, 4 * (d - 1))
      n = n * sizes[d]
   end
   if n > 2 ^ 40 then
      z.gzclose(f)
      error(('idx: %s: implausible size %s at byte offset 4'):format(path, table.concat(sizes, 'x')), 0)
   end
   local offset = 4 + 4 * ndim
   local out = torch[ty.tensor](torch.LongStorage(sizes))
   if n > 0 then
      if ty.tensor == 'ByteTensor' then
         read_exact(f, path, out:data(), n, offset, 'the data')
      else
         local raw = ffi.new('uint8_t[?]', n * ty.size)
         read_exact(f, path, raw, n * ty.size, offset, 'the data')
         local dst, sz = out:data(), ty.size
         local tmp = ffi.new(ty.ctype .. '[1]')
         local tb = ffi.cast('uint8_t*', tmp)
         for i = 0, n - 1 do -- big-endian to host order (x86/ARM are little-endian)
            local base = i * sz
            for k = 0, sz - 1 do tb[k] = raw[base + sz - 1 - k] end
            dst[i] = tmp[0]
         end
      end
   end
   -- anything after the data means the header does not describe the file
   local extra = ffi.new('uint8_t[1]')
   local more = z.gzread(f, extra, 1)
   z.gzclose(f)
   if more ~= 0 then
      error(('idx: %s: unexpected data after byte offset %d (header says %s elements of %d bytes)')
         :format(path, offset + n * ty.size, table.concat(sizes, 'x'), ty.size), 0)
   end
   return out
end

-- Write a ByteTensor (or a Lua array of 0..255 with sizes) as an IDX unsigned-byte file;
-- gzip-compressed when the name ends in .gz. Used by tests and to make small datasets.
function idx.write(path, t)
   if not torch.isTensor(t) then error('idx.write: expected a tensor', 2) end
   local b = t:contiguous():byte()
   local sizes = b:size():totable()
   local gz = path:match('%.gz$') ~= nil
   local f = z.gzopen(path, gz and 'wb6' or 'wbT') -- 'T': plain, no gzip wrapper
   if f == nil then error('idx.write: cannot create ' .. path, 2) end
   local head = ffi.new('uint8_t[?]', 4 + 4 * #sizes)
   head[2], head[3] = 0x08, #sizes
   for d, s in ipairs(sizes) do
      local o = 4 + 4 * (d - 1)
      head[o], head[o + 1], head[o + 2], head[o + 3] =
         math.floor(s / 2 ^ 24) % 256, math.floor(s / 2 ^ 16) % 256, math.floor(s / 256) % 256, s % 256
   end
   local okw = z.gzwrite(f, head, 4 + 4 * #sizes) == 4 + 4 * #sizes
   local n = b:nElement()
   if okw and n > 0 then okw = z.gzwrite(f, b:data(), n) == n end
   if z.gzclose(f) ~= 0 or not okw then error('idx.write: failed writing ' .. path, 2) end
end

return idx
