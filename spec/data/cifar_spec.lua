-- cifar_spec.lua: the CIFAR binary reader (moontorch.data.cifar, csrc/data/cifar.c) on
-- random records written here, plain and gzip, CIFAR-10 and CIFAR-100, the standard folder
-- layouts, and the errors for malformed files.
local ffi = require 'ffi'
require 'moontorch'
local util = require 'spec.util' -- seeds math.random and prints the seed
local cifar = require 'moontorch.data.cifar'
local T = require 'moontorch.internal'
local C = T.clib

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local write_bytes = util.write_bytes
local read_bytes = util.read_bytes
local function gzip(path) -- the system's gzip, independent of the reader's zlib use
   local rc = os.execute(('gzip -kf %q'):format(path))
   assert(rc == 0 or rc == true, 'gzip failed')
   return path .. '.gz'
end

-- n random records: the file's bytes, labels (0-based, per record a list) and pixel strings
local function make_records(n, nlabels, limits)
   local chunks, labels, pixels = {}, {}, {}
   for i = 1, n do
      local l, b = {}, {}
      for k = 1, nlabels do l[k] = math.random(0, limits[k] - 1) end
      for k = 1, 3072 do b[k] = string.char(math.random(0, 255)) end
      labels[i], pixels[i] = l, table.concat(b)
      chunks[i] = string.char(unpack(l)) .. pixels[i]
   end
   return table.concat(chunks), labels, pixels
end

-- the image tensor against the pixel strings: whole bytes, and the plane/row/column layout
-- through the tensor API (image i, channel c, row y, column x is byte 1024c + 32y + x)
local function check_images(images, pixels, what)
   local n = #pixels
   assert.are.same({ n, 3, 32, 32 }, images:size():totable())
   assert.are.equal('torch.ByteTensor', images:type())
   assert.are.equal(table.concat(pixels), ffi.string(images:contiguous():data(), n * 3072), what)
   for _ = 1, 20 do
      local i, c, y, x = math.random(n), math.random(0, 2), math.random(0, 31), math.random(0, 31)
      local off = 1024 * c + 32 * y + x + 1
      assert.are.equal(pixels[i]:byte(off), images[i][c + 1][y + 1][x + 1], what)
   end
end

describe('cifar.load', function()
   it('reads CIFAR-10 records, plain and gzip', function()
      local n = math.random(2, 9)
      local bytes, labels, pixels = make_records(n, 1, { 10 })
      local path = tmp('c10.bin')
      write_bytes(path, bytes)
      for _, p in ipairs({ path, gzip(path) }) do
         local images, y = cifar.load(p)
         check_images(images, pixels, p)
         assert.are.equal('torch.LongTensor', y:type())
         assert.are.same({ n }, y:size():totable())
         for i = 1, n do assert.are.equal(labels[i][1] + 1, y[i], p) end
      end
   end)

   it('reads CIFAR-100 coarse and fine labels', function()
      local n = math.random(2, 9)
      local bytes, labels, pixels = make_records(n, 2, { 20, 100 })
      local path = tmp('c100.bin')
      write_bytes(path, bytes)
      for _, p in ipairs({ path, gzip(path) }) do
         local images, y = cifar.load(p, { cifar100 = true })
         check_images(images, pixels, p)
         assert.are.same({ n, 2 }, y:size():totable())
         for i = 1, n do
            assert.are.equal(labels[i][1] + 1, y[i][1], p)
            assert.are.equal(labels[i][2] + 1, y[i][2], p)
         end
      end
   end)

   it('parses from memory in C with 0-based int64 labels', function()
      local bytes, labels, pixels = make_records(3, 2, { 20, 100 })
      local ip, lp = ffi.new('mt_tensor*[1]'), ffi.new('mt_tensor*[1]')
      assert.are.equal(0, C.mt_cifar_parse(ip, lp, bytes, #bytes, 2, 'mem'))
      local images, y = T.wrap_handle(ip[0]), T.wrap_handle(lp[0])
      check_images(images, pixels, 'mem')
      assert.are.equal('torch.LongTensor', y:type())
      for i = 1, 3 do assert.are.same(labels[i], { y[i][1], y[i][2] }) end
   end)
end)

describe('cifar.loadDir', function()
   -- write a split as files, return the concatenated expectations
   local function write_split(dir, names, nlabels, limits)
      local all_labels, all_pixels = {}, {}
      for _, name in ipairs(names) do
         local bytes, labels, pixels = make_records(math.random(1, 4), nlabels, limits)
         write_bytes(dir .. '/' .. name, bytes)
         for i = 1, #labels do
            all_labels[#all_labels + 1], all_pixels[#all_pixels + 1] = labels[i], pixels[i]
         end
      end
      return all_labels, all_pixels
   end

   it('reads the CIFAR-10 batches in order, also from the unpacked archive folder', function()
      local root = tmp('c10dir')
      local dir = root .. '/cifar-10-batches-bin'
      os.execute(('mkdir -p %q'):format(dir))
      local names = {}
      for i = 1, 5 do names[i] = 'data_batch_' .. i .. '.bin' end
      local trl, trp = write_split(dir, names, 1, { 10 })
      local tel, tep = write_split(dir, { 'test_batch.bin' }, 1, { 10 })
      gzip(dir .. '/test_batch.bin') -- a .gz beside the plain file is not read twice
      for _, d in ipairs({ dir, root, dir .. '/' }) do
         local train, test = cifar.loadDir(d)
         check_images(train.images, trp, d)
         check_images(test.images, tep, d)
         assert.are.same({ #trl }, train.labels:size():totable())
         for i = 1, #trl do assert.are.equal(trl[i][1] + 1, train.labels[i]) end
         for i = 1, #tel do assert.are.equal(tel[i][1] + 1, test.labels[i]) end
      end
   end)

   it('reads CIFAR-100 train.bin and test.bin (gzip too)', function()
      local dir = tmp('c100dir')
      os.execute(('mkdir -p %q'):format(dir))
      local trl, trp = write_split(dir, { 'train.bin' }, 2, { 20, 100 })
      local tel, tep = write_split(dir, { 'test.bin' }, 2, { 20, 100 })
      gzip(dir .. '/test.bin')
      os.remove(dir .. '/test.bin')
      local train, test = cifar.loadDir(dir)
      check_images(train.images, trp, 'train')
      check_images(test.images, tep, 'test')
      for i = 1, #trl do
         assert.are.same({ trl[i][1] + 1, trl[i][2] + 1 }, { train.labels[i][1], train.labels[i][2] })
      end
      for i = 1, #tel do assert.are.same({ tel[i][1] + 1, tel[i][2] + 1 }, { test.labels[i][1], test.labels[i][2] }) end
   end)

   it('says what it looked for in a folder without CIFAR files', function()
      local dir = tmp('empty_dir')
      os.execute(('mkdir -p %q'):format(dir))
      local ok, err = pcall(cifar.loadDir, dir)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(dir, 1, true))
      assert.truthy(tostring(err):find('data_batch_1..5.bin', 1, true))
   end)
end)

describe('cifar errors', function()
   local function expect(pattern, ...)
      local ok, err = pcall(cifar.load, ...)
      assert.is_false(ok, 'expected an error matching ' .. pattern)
      err = tostring(err)
      local path = ...
      assert.truthy(err:find(path, 1, true), 'message does not name the file: ' .. err)
      assert.truthy(err:find(pattern), ('message %q does not match %q'):format(err, pattern))
   end

   it('names file, size and offset for a partial record, plain and gzip', function()
      local bytes = make_records(3, 1, { 10 })
      local path = tmp('partial.bin')
      write_bytes(path, bytes .. 'abcde')
      expect('9224 bytes are not a whole number of 3073%-byte CIFAR%-10 records %(3 records, then 5 bytes of an '
         .. 'incomplete one at byte offset 9219%)', path)
      expect('at byte offset 9219', gzip(path))
      -- the same bytes read as CIFAR-100 (3074-byte records) do not divide either
      write_bytes(path, bytes)
      expect('3074%-byte CIFAR%-100 records', path, { cifar100 = true })
   end)

   it('names record and offset of an out-of-range label', function()
      local bytes = make_records(4, 1, { 10 })
      local bad = bytes:sub(1, 2 * 3073) .. string.char(10) .. bytes:sub(2 * 3073 + 2)
      local path = tmp('badlabel.bin')
      write_bytes(path, bad)
      expect('record 3 of 4 %(byte offset 6146%): label 10 is out of range 0%.%.9 for CIFAR%-10', path)
      expect('record 3 of 4 %(byte offset 6146%)', gzip(path))

      bytes = make_records(3, 2, { 20, 100 })
      write_bytes(path, bytes:sub(1, 3074) .. string.char(20) .. bytes:sub(3076))
      expect('record 2 of 3 %(byte offset 3074%): coarse label 20 is out of range 0%.%.19', path, { cifar100 = true })
      write_bytes(path, bytes:sub(1, 3075) .. string.char(100) .. bytes:sub(3077))
      expect('record 2 of 3 %(byte offset 3075%): fine label 100 is out of range 0%.%.99', path, { cifar100 = true })
   end)

   it('rejects an empty file, a cut gzip stream and a missing file', function()
      local path = tmp('empty.bin')
      write_bytes(path, '')
      expect('no records', path)
      local bytes = make_records(5, 1, { 10 })
      write_bytes(tmp('cut.bin'), bytes)
      local gz = read_bytes(gzip(tmp('cut.bin')))
      write_bytes(tmp('cut.bin.gz'), gz:sub(1, math.floor(#gz * 0.7)))
      expect('gzip stream is cut short at compressed byte ' .. math.floor(#gz * 0.7), tmp('cut.bin.gz'))
      expect('cannot open', tmp('missing.bin'))
      expect('is a directory', tmpdir)
   end)

   it('refuses bad arguments in C without crashing', function()
      local ip, lp = ffi.new('mt_tensor*[1]'), ffi.new('mt_tensor*[1]')
      local bytes = make_records(1, 1, { 10 })
      for _, nl in ipairs({ 0, 3, -1 }) do
         assert.are.equal(C.MT_ERR_ARG, C.mt_cifar_parse(ip, lp, bytes, #bytes, nl, 'mem'))
         assert.truthy(ffi.string(C.mt_last_error()):find('nlabels is ' .. nl, 1, true))
         assert.is_true(ip[0] == nil and lp[0] == nil)
      end
      assert.are.equal(C.MT_ERR_ARG, C.mt_cifar_parse(nil, lp, bytes, #bytes, 1, 'mem'))
      assert.are.equal(C.MT_ERR_ARG, C.mt_cifar_parse(ip, lp, nil, 5, 1, 'mem'))
      assert.are.equal(C.MT_ERR_ARG, C.mt_cifar_load(ip, lp, nil, 1))
      assert.are.equal(C.MT_ERR_ARG, C.mt_cifar_load(ip, lp, tmp('x'), 7))
      local ok, err = pcall(cifar.load, 42)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('expected a file name'))
   end)
end)
