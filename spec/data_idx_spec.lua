-- data_idx_spec.lua: the IDX reader (moontorch.data.idx) on small generated files, plain and
-- gzip, every element type, and the errors for corrupt and truncated files.
local torch = require 'moontorch'
local ffi = require 'ffi'
local util = require 'spec.util'
local idx = require 'moontorch.data.idx'

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute(('mkdir -p %q'):format(tmpdir))
local function tmp(name) return tmpdir .. '/' .. name end

local function write_bytes(path, s)
   local f = assert(io.open(path, 'wb'))
   f:write(s)
   f:close()
end
local function read_bytes(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end
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
