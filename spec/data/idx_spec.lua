-- idx_spec.lua: the IDX reader (moontorch.data.idx, csrc/data/idx.c) on generated files, plain and
-- gzip, every element type (also from an independent Python writer), the Fashion-MNIST files
-- against Python's gzip, and the errors for corrupt, truncated and impossible files.
local torch = require 'moontorch'
local ffi = require 'ffi'
local util = require 'spec.util'
local idx = require 'moontorch.data.idx'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local write_bytes = util.write_bytes
local read_bytes = util.read_bytes
local function gzip(path) -- the system's gzip, independent of the reader's zlib binding
   local rc = os.execute(('gzip -kf %q'):format(path))
   assert(rc == 0 or rc == true, 'gzip failed')
   return path .. '.gz'
end

local function be32(n)
   return string.char(math.floor(n / 2 ^ 24) % 256, math.floor(n / 2 ^ 16) % 256, math.floor(n / 256) % 256, n % 256)
end
local function header(typebyte, sizes)
   local s = string.char(0, 0, typebyte, #sizes)
   for _, n in ipairs(sizes) do s = s .. be32(n) end
   return s
end
-- big-endian bytes of a C value
local function be_bytes(ctype, v)
   local buf = ffi.new(ctype .. '[1]', v)
   local p = ffi.cast('uint8_t*', buf)
   local out = {}
   for k = ffi.sizeof(ctype) - 1, 0, -1 do out[#out + 1] = string.char(p[k]) end
   return table.concat(out)
end

local function random_bytes(n)
   local t = {}
   for i = 1, n do t[i] = math.random(0, 255) end
   return t
end

describe('idx.read', function()
   for _, sizes in ipairs({ { 7 }, { 3, 5, 4 }, { 2, 1, 3, 6 } }) do
      it(('reads unsigned bytes %s, plain and gzip'):format(table.concat(sizes, 'x')), function()
         local vals = random_bytes(util.numel(sizes))
         local chars = {}
         for i, v in ipairs(vals) do chars[i] = string.char(v) end
         local path = tmp('u8.idx')
         write_bytes(path, header(0x08, sizes) .. table.concat(chars))
         for _, p in ipairs({ path, gzip(path) }) do
            local t = idx.read(p)
            assert.are.equal('torch.ByteTensor', t:type())
            assert.are.same(sizes, t:size():totable())
            util.assert_close(t, vals, { atol = 0, rtol = 0 }, p)
         end
      end)
   end

   local typed = {
      { 0x09, 'int8_t', 'torch.IntTensor', -128, 127 },
      { 0x0B, 'int16_t', 'torch.IntTensor', -32768, 32767 },
      { 0x0C, 'int32_t', 'torch.IntTensor', -2 ^ 31, 2 ^ 31 - 1 },
      { 0x0D, 'float', 'torch.FloatTensor' },
      { 0x0E, 'double', 'torch.DoubleTensor' },
   }
   for _, ty in ipairs(typed) do
      it(('reads big-endian %s elements into a %s'):format(ty[2], ty[3]), function()
         local sizes = { 3, 5 }
         local vals, body = {}, {}
         for i = 1, 15 do
            local v
            if ty[4] then v = math.random(ty[4], ty[5])
            else v = (math.random() - 0.5) * 10 ^ math.random(-3, 3) end
            if ty[2] == 'float' then v = tonumber(ffi.new('float', v)) end
            vals[i], body[i] = v, be_bytes(ty[2], v)
         end
         local path = tmp('typed.idx')
         write_bytes(path, header(ty[1], sizes) .. table.concat(body))
         for _, p in ipairs({ path, gzip(path) }) do
            local t = idx.read(p)
            assert.are.equal(ty[3], t:type())
            assert.are.same(sizes, t:size():totable())
            util.assert_close(t, vals, { atol = 0, rtol = 0 }, p)
         end
      end)
   end

   it('round-trips through idx.write, plain and gzip', function()
      local src = torch.ByteTensor(4, 9, 3):random(0, 255)
      for _, name in ipairs({ 'w.idx', 'w.idx.gz' }) do
         idx.write(tmp(name), src:transpose(1, 3)) -- non-contiguous input
         local back = idx.read(tmp(name))
         assert.are.same({ 3, 9, 4 }, back:size():totable())
         util.assert_close(back, src:transpose(1, 3):contiguous(), { atol = 0, rtol = 0 }, name)
      end
      -- the .gz one really is gzip (magic 1f 8b), the other is plain IDX
      assert.are.equal('\31\139', read_bytes(tmp('w.idx.gz')):sub(1, 2))
      assert.are.equal('\0\0\8\3', read_bytes(tmp('w.idx')):sub(1, 4))
   end)

   it('reads the Fashion-MNIST files when installed', function()
      local p = '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz'
      local f = io.open(p, 'rb')
      if not f then return end
      f:close()
      local y = idx.read(p)
      assert.are.same({ 10000 }, y:size():totable())
      assert.are.equal(0, y:min())
      assert.are.equal(9, y:max())
   end)
end)

describe('idx.read errors', function()
   local function expect(path, pattern)
      local ok, err = pcall(idx.read, path)
      assert.is_false(ok, 'expected an error for ' .. path)
      err = tostring(err)
      assert.truthy(err:find(path, 1, true), 'message does not name the file: ' .. err)
      assert.truthy(err:find(pattern), ('message %q does not match %q'):format(err, pattern))
   end

   it('names file and offset for truncated data, plain and gzip', function()
      local path = tmp('trunc.idx')
      local body = {}
      for i = 1, 7 do body[i] = string.char(math.random(0, 255)) end
      write_bytes(path, header(0x08, { 5, 4 }) .. table.concat(body)) -- 20 elements promised, 7 present
      expect(path, 'truncated at byte offset 19')
      expect(gzip(path), 'truncated at byte offset 19')
   end)

   it('names file and offset for a truncated header', function()
      local path = tmp('trunc_head.idx')
      write_bytes(path, string.char(0, 0, 8, 3) .. be32(5) .. string.char(0, 1))
      expect(path, 'truncated at byte offset 10 while reading the dimension sizes')
      write_bytes(path, string.char(0, 0))
      expect(path, 'truncated at byte offset 2 while reading the magic number')
   end)

   it('reports a cut gzip stream with its offset', function()
      local path = tmp('cut.idx')
      local vals = random_bytes(3000)
      local chars = {}
      for i, v in ipairs(vals) do chars[i] = string.char(v) end
      write_bytes(path, header(0x08, { 3000 }) .. table.concat(chars))
      local gz = read_bytes(gzip(path))
      write_bytes(tmp('cut.idx.gz'), gz:sub(1, math.floor(#gz / 2)))
      expect(tmp('cut.idx.gz'), 'byte offset %d+')
   end)

   it('rejects a bad magic number, an unknown type and trailing data', function()
      local path = tmp('bad.idx')
      write_bytes(path, string.char(1, 0, 8, 1) .. be32(1) .. 'x')
      expect(path, 'bad magic number at byte offset 0')
      write_bytes(path, string.char(0, 0, 0x42, 1) .. be32(1) .. 'x')
      expect(path, 'unknown element type 0x42 at byte offset 2')
      write_bytes(path, header(0x08, { 2 }) .. 'abc')
      expect(path, 'unexpected data after byte offset 10')
   end)

   it('names a missing file', function()
      expect(tmp('does_not_exist.idx'), 'cannot open')
   end)
end)

---------------------------------------------------------------------------------------------
-- the C parser (csrc/data/idx.c) against independent writers and the real Fashion-MNIST files

local T = require 'moontorch.internal'
local C = T.clib

local function run(cmd)
   local p = assert(io.popen(cmd .. ' 2>&1; echo "rc=$?"'))
   local out = p:read('*a')
   p:close()
   local rc = tonumber(out:match('rc=(%d+)%s*$'))
   return out:gsub('rc=%d+%s*$', ''), rc
end

-- write a random IDX file with spec/fixtures/write_idx.py; returns its values
local function python_idx(path, code, sizes)
   local out, rc = run(('%s spec/fixtures/write_idx.py %q %d %d %s'):format(util.PY, path, code,
      math.random(0, 2 ^ 30), table.concat(sizes, ' ')))
   assert(rc == 0, out)
   local vals = {}
   for line in out:gmatch('[^\n]+') do vals[#vals + 1] = assert(tonumber(line), line) end
   return vals
end

local typenames = { [8] = 'torch.ByteTensor', [9] = 'torch.IntTensor', [11] = 'torch.IntTensor',
   [12] = 'torch.IntTensor', [13] = 'torch.FloatTensor', [14] = 'torch.DoubleTensor' }

describe('idx C parser', function()
   it('reads every type from an independent writer: plain, gzip and two gzip members', function()
      for _, code in ipairs({ 8, 9, 11, 12, 13, 14 }) do
         local sizes = {}
         for d = 1, math.random(1, 4) do sizes[d] = math.random(1, 6) end
         if code == 8 then sizes = { 2, 1, 2, 1, 3, 1, 2, 2 } end -- all eight dimensions
         for _, ext in ipairs({ '.idx', '.idx.gz', '.idx.2.gz' }) do
            local path = tmp('py' .. code .. ext)
            local vals = python_idx(path, code, sizes)
            local t = idx.read(path)
            assert.are.equal(typenames[code], t:type(), path)
            assert.are.same(sizes, t:size():totable(), path)
            util.assert_close(t, vals, { atol = 0, rtol = 0 }, path)
         end
      end
   end)

   it('parses bytes from a string or a ByteTensor as idx.read does', function()
      local path = tmp('mem.idx.gz')
      local vals = python_idx(path, 11, { 4, 5 })
      local s = read_bytes(path)
      local bt = torch.ByteTensor(#s)
      ffi.copy(bt:data(), s, #s)
      for _, src in ipairs({ s, bt }) do
         local t = idx.parse(src, 'from memory')
         assert.are.same({ 4, 5 }, t:size():totable())
         util.assert_close(t, vals, { atol = 0, rtol = 0 }, 'parse')
      end
      local ok, err = pcall(idx.parse, s:sub(1, 20), 'the cut one')
      assert.is_false(ok)
      assert.truthy(tostring(err):find('idx: the cut one: ', 1, true), err)
      ok, err = pcall(idx.parse, 42)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('expected a string or a ByteTensor'), err)
   end)

   it('reads empty dimensions', function()
      local path = tmp('empty_dim.idx')
      write_bytes(path, header(0x0D, { 3, 0, 4 }))
      local t = idx.read(path)
      assert.are.equal('torch.FloatTensor', t:type())
      assert.are.same({ 3, 0, 4 }, t:size():totable())
      -- a zero size makes a large product empty, and data after it is still too much; an
      -- unaddressable product is refused even beside a 0 (no view could handle the shape)
      write_bytes(path, header(0x08, { 2 ^ 31, 0, 2 ^ 28 }))
      assert.are.same({ 2 ^ 31, 0, 2 ^ 28 }, idx.read(path):size():totable())
      write_bytes(path, header(0x08, { 2 ^ 32 - 1, 0, 2 ^ 32 - 1 }))
      local ok, err = pcall(idx.read, path)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('sizes 4294967295x0x4294967295 at byte offset 4 describe more elements'), err)
      write_bytes(path, header(0x08, { 0, 7 }) .. 'x')
      ok, err = pcall(idx.read, path)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('unexpected data after byte offset 12'), err)
   end)

   it('matches Python on the Fashion-MNIST files', function()
      local dir = '/usr/share/datasets/fashion-mnist'
      local f = io.open(dir .. '/t10k-labels-idx1-ubyte.gz', 'rb')
      if not f then
         pending('Fashion-MNIST is not installed under ' .. dir)
         return
      end
      f:close()
      local files = {
         { 'train-images-idx3-ubyte.gz', { 60000, 28, 28 } }, { 'train-labels-idx1-ubyte.gz', { 60000 } },
         { 't10k-images-idx3-ubyte.gz', { 10000, 28, 28 } }, { 't10k-labels-idx1-ubyte.gz', { 10000 } },
      }
      for _, spec in ipairs(files) do
         local path = dir .. '/' .. spec[1]
         local raw = tmp('fm.raw')
         -- Python's gzip module: header fields, and the payload after the header
         local out, rc = run(([[/usr/bin/python3 -c "
import gzip, struct, sys
b = gzip.open(sys.argv[1]).read()
nd = b[3]
print(b[2], *struct.unpack('>%%dI' %% nd, b[4:4 + 4 * nd]))
open(sys.argv[2], 'wb').write(b[4 + 4 * nd:])" %q %q]]):format(path, raw))
         assert.are.equal(0, rc, out)
         local t = idx.read(path)
         assert.are.equal('torch.ByteTensor', t:type())
         assert.are.equal('8 ' .. table.concat(spec[2], ' '), out:match('^[^\n]*'))
         assert.are.same(spec[2], t:size():totable())
         local payload = read_bytes(raw)
         assert.are.equal(#payload, t:nElement())
         assert.is_true(payload == ffi.string(t:data(), t:nElement()), path .. ': data differs from Python\'s')
         if #spec[2] == 1 then -- Fashion-MNIST is balanced: every class has N/10 labels
            local counts = {}
            for i = 0, 9 do counts[i + 1] = t:eq(i):sum() end
            for i = 1, 10 do assert.are.equal(spec[2][1] / 10, counts[i], path) end
         end
      end
   end)
end)

describe('idx C parser errors', function()
   local function expect(path, pattern)
      local ok, err = pcall(idx.read, path)
      assert.is_false(ok, 'expected an error for ' .. path)
      err = tostring(err)
      assert.truthy(err:find(path, 1, true), 'message does not name the file: ' .. err)
      assert.truthy(err:find(pattern), ('message %q does not match %q'):format(err, pattern))
   end
   local function gzip_bytes(name, s)
      write_bytes(tmp(name), s)
      return read_bytes(gzip(tmp(name)))
   end

   it('reports huge dimensions without allocating them', function()
      local path = tmp('huge.idx')
      write_bytes(path, header(0x08, { 60000, 60000, 60000 }) .. 'abc')
      expect(path, 'truncated at byte offset 19 while reading the data %(3 of 216000000000000 bytes present%)')
      expect(gzip(path), 'truncated at byte offset 19 while reading the data')
      write_bytes(path, header(0x0E, { 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1 }))
      expect(path,
         'sizes 4294967295x4294967295x4294967295 at byte offset 4 describe more elements than can be addressed')
      write_bytes(path, header(0x0E, { 2 ^ 31, 2 ^ 30 })) -- 2^61 elements of 8 bytes: 2^64 bytes
      expect(path, 'more elements than can be addressed')
   end)

   it('rejects zero and more than eight dimensions', function()
      local path = tmp('dims.idx')
      write_bytes(path, string.char(0, 0, 8, 0) .. 'x')
      expect(path, 'zero dimensions at byte offset 3')
      write_bytes(path, header(0x08, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }) .. 'x')
      expect(path, '9 dimensions at byte offset 3; at most 8')
   end)

   it('checks gzip files as strictly as plain ones', function()
      local body = header(0x0C, { 3 }) .. be32(7) .. be32(8) .. be32(9)
      local gz = gzip_bytes('g.idx', body)
      local path = tmp('g_bad.idx.gz')
      write_bytes(path, gzip_bytes('g2.idx', body .. 'xy'))
      expect(path, 'unexpected data after byte offset 20')
      write_bytes(path, gzip_bytes('g3.idx', string.char(1, 2, 3, 4)))
      expect(path, 'bad magic number at byte offset 0')
      write_bytes(path, gz .. 'junk')
      expect(path, '4 unexpected bytes after the gzip stream at compressed byte offset ' .. #gz)
      write_bytes(path, gz:sub(1, #gz - 4)) -- the size field of the trailer is missing
      expect(path, 'the gzip stream is cut short at compressed byte ' .. (#gz - 4) .. ', after all 20 bytes of data')
      local crc = gz:byte(#gz - 7)
      write_bytes(path, gz:sub(1, #gz - 8) .. string.char((crc + 1) % 256) .. gz:sub(#gz - 6))
      expect(path,
         'corrupt gzip data at compressed byte offset %d+ %(decompressed byte offset 20%): incorrect data check')
      -- a reserved deflate block type in the first byte after the gzip header (and file name)
      local start = gz:byte(4) == 8 and gz:find('\0', 11, true) + 1 or 11
      write_bytes(path, gz:sub(1, start - 1) .. '\255' .. gz:sub(start + 1))
      expect(path, 'corrupt gzip data at compressed byte offset %d+ %(decompressed byte offset 0%): invalid block type')
   end)

   it('names an empty file, a directory, and NULL arguments', function()
      local path = tmp('empty.idx')
      write_bytes(path, '')
      expect(path, 'truncated at byte offset 0 while reading the magic number %(0 of 4 bytes present%)')
      expect(tmpdir, 'cannot open .*: is a directory')
      local outp = T.out_handle
      assert.are.equal(C.MT_ERR_ARG, C.mt_idx_parse(nil, 'abcd', 4, 'x'))
      assert.are.equal(C.MT_ERR_ARG, C.mt_idx_parse(outp, nil, 4, 'x'))
      assert.truthy(ffi.string(C.mt_last_error()):find('buffer is NULL'))
      assert.are.equal(C.MT_ERR_ARG, C.mt_idx_load(outp, nil))
      assert.is_true(outp[0] == nil)
      assert.are.equal(C.MT_ERR_FORMAT, C.mt_idx_parse(outp, nil, 0, nil))
      assert.truthy(ffi.string(C.mt_last_error()):find('idx: <memory>: truncated at byte offset 0', 1, true))
   end)
end)
