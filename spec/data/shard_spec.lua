-- shard_spec.lua: packed shards (csrc/data/shard.c) through the FFI: round trips of random
-- records, the on-disk layout checked by an independent Lua reader (with its own CRC-32), the
-- errors for corrupt, truncated and hostile files, and the writer's atomic publication.
local ffi = require 'ffi'
local bit = require 'bit'
require 'moontorch'
local util = require 'spec.util'
local C = require('moontorch.internal').clib

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local read_bytes = util.read_bytes
local write_bytes = util.write_bytes
local exists = util.exists
local function lasterr() return ffi.string(C.mt_last_error()) end
local function check(rc) if rc ~= 0 then error(lasterr(), 2) end end

---------------------------------------------------------------------------------------------
-- an independent reference: CRC-32 (the zlib/PNG polynomial) and little-endian fields in Lua

local crc_table = {}
for i = 0, 255 do
   local c = i
   for _ = 1, 8 do
      if bit.band(c, 1) ~= 0 then c = bit.bxor(bit.rshift(c, 1), 0xEDB88320) else c = bit.rshift(c, 1) end
   end
   crc_table[i] = c
end
local function crc32(s)
   local c = -1
   for i = 1, #s do c = bit.bxor(crc_table[bit.band(bit.bxor(c, s:byte(i)), 0xFF)], bit.rshift(c, 8)) end
   return bit.bxor(c, -1) % 2 ^ 32
end
local function le(s, pos, n) -- unsigned little-endian integer of n bytes at 1-based pos
   local v = 0
   for k = n - 1, 0, -1 do v = v * 256 + s:byte(pos + k) end
   return v
end
local function le_bytes(v, n)
   local t = {}
   for k = 1, n do
      t[k] = string.char(v % 256)
      v = math.floor(v / 256)
   end
   return table.concat(t)
end
local function splice(s, pos, repl) return s:sub(1, pos - 1) .. repl .. s:sub(pos + #repl) end

-- re-seal a modified file: fresh index CRC and header CRC, so that deeper checks are reached
local function reseal(s)
   local ioff, isize = le(s, 25, 8), le(s, 33, 8)
   s = splice(s, 41, le_bytes(crc32(s:sub(ioff + 1, ioff + isize)), 4))
   return splice(s, 45, le_bytes(crc32(s:sub(1, 44)), 4))
end

---------------------------------------------------------------------------------------------
-- shards through the C API

local function random_string(n, lo, hi)
   local t = {}
   for i = 1, n do t[i] = string.char(math.random(lo or 0, hi or 255)) end
   return table.concat(t)
end

local function random_records(n)
   local recs = {}
   for i = 1, n do
      local len = math.random(0, 9) == 0 and 0 or math.random(1, 3000)
      recs[i] = { bytes = random_string(len), label = math.random(0, 999),
         name = ('%d/%s.jpg'):format(i, random_string(math.random(0, 12), 1, 255)) }
   end
   return recs
end

local function write_shard(path, recs)
   local wp = ffi.new('mt_shard_writer *[1]')
   check(C.mt_shard_writer_open(wp, path))
   for _, r in ipairs(recs) do check(C.mt_shard_writer_add(wp[0], r.bytes, #r.bytes, r.label, r.name)) end
   check(C.mt_shard_writer_commit(wp[0]))
end

-- a shard handle from a file or from bytes in memory; nil and the message on failure
local function open_shard(path)
   local sp = ffi.new('mt_shard *[1]')
   if C.mt_shard_open(sp, path) ~= 0 then
      assert(sp[0] == nil, 'a failed open handed back a shard')
      return nil, lasterr()
   end
   return ffi.gc(sp[0], C.mt_shard_close)
end
local function parse_shard(bytes, name)
   local sp = ffi.new('mt_shard *[1]')
   if C.mt_shard_parse(sp, bytes, #bytes, name) ~= 0 then return nil, lasterr() end
   return ffi.gc(sp[0], C.mt_shard_close)
end

local function read_record(s, i)
   local len = ffi.new('uint32_t[1]')
   check(C.mt_shard_entry(s, i, nil, len, nil, nil))
   local buf = ffi.new('uint8_t[?]', math.max(len[0], 1))
   if C.mt_shard_read(s, i, buf, len[0]) ~= 0 then return nil, lasterr() end
   return ffi.string(buf, len[0])
end

local function assert_records(s, recs, what)
   assert.are.equal(#recs, tonumber(C.mt_shard_count(s)), what .. ': record count')
   local off, len, label, name = ffi.new('uint64_t[1]'), ffi.new('uint32_t[1]'), ffi.new('int32_t[1]'),
      ffi.new('const char *[1]')
   for i, r in ipairs(recs) do
      check(C.mt_shard_entry(s, i - 1, off, len, label, name))
      assert.are.equal(#r.bytes, len[0], what .. ': length of record ' .. i)
      assert.are.equal(r.label, label[0], what .. ': label of record ' .. i)
      assert.are.equal(r.name, ffi.string(name[0]), what .. ': name of record ' .. i)
      assert(read_record(s, i - 1) == r.bytes, what .. ': bytes of record ' .. i)
   end
end

---------------------------------------------------------------------------------------------

describe('shards', function()
   it('the reference CRC-32 gives the standard check value', function()
      assert.are.equal(0xCBF43926, crc32('123456789'))
   end)

   it('round-trips many random records (labels, names, empty records), from a file and from memory', function()
      local recs = random_records(300)
      local path = tmp('round.mts')
      write_shard(path, recs)
      assert_records(assert(open_shard(path)), recs, 'file')
      assert_records(assert(parse_shard(read_bytes(path), 'mem')), recs, 'memory')
   end)

   it('writes the documented little-endian layout (checked by a Lua reader)', function()
      local recs = random_records(40)
      local path = tmp('layout.mts')
      write_shard(path, recs)
      local s = read_bytes(path)
      assert.are.equal('MTSHARD\0', s:sub(1, 8))
      assert.are.equal(1, le(s, 9, 4))
      assert.are.equal(32, le(s, 13, 4))
      assert.are.equal(#recs, le(s, 17, 8))
      local ioff, isize = le(s, 25, 8), le(s, 33, 8)
      assert.are.equal(#s, ioff + isize)
      assert.are.equal(crc32(s:sub(ioff + 1)), le(s, 41, 4))
      assert.are.equal(crc32(s:sub(1, 44)), le(s, 45, 4))
      local blob = ioff + 32 * #recs
      local pos = 64
      for i, r in ipairs(recs) do
         local e = ioff + 32 * (i - 1) + 1
         local off, len = le(s, e, 8), le(s, e + 8, 4)
         assert.are.equal(pos, off, 'records lie back to back')
         assert.are.equal(#r.bytes, len)
         assert.are.equal(r.label, le(s, e + 12, 4))
         assert.are.equal(crc32(r.bytes), le(s, e + 16, 4))
         assert.are.equal(r.bytes, s:sub(off + 1, off + len))
         local noff, nlen = le(s, e + 20, 4), le(s, e + 24, 4)
         assert.are.equal(r.name, s:sub(blob + noff + 1, blob + noff + nlen))
         pos = pos + len
      end
      assert.are.equal(ioff, pos)
   end)

   it('a flipped byte in a record fails that read, naming shard, record, name and offset; others still read', function()
      local recs = random_records(20)
      for _, r in ipairs(recs) do if #r.bytes == 0 then r.bytes = 'x' end end
      local path = tmp('flip.mts')
      write_shard(path, recs)
      local s = read_bytes(path)
      local k = math.random(1, #recs)
      local e = le(s, 25, 8) + 32 * (k - 1) + 1
      local off, len = le(s, e, 8), le(s, e + 8, 4)
      local p = off + math.random(1, len)
      write_bytes(path, splice(s, p, string.char(bit.bxor(s:byte(p), bit.lshift(1, math.random(0, 7))))))
      local sh = assert(open_shard(path)) -- the index is intact: open succeeds
      for i, r in ipairs(recs) do
         local got, err = read_record(sh, i - 1)
         if i == k then
            assert(got == nil, 'the corrupt record read without error')
            local frags = { path, ('record %d'):format(k - 1), r.name, ('byte offset %d'):format(off), 'CRC' }
            for _, frag in ipairs(frags) do
               assert(err:find(frag, 1, true), ('%q lacks %q'):format(err, frag))
            end
         else
            assert(got == r.bytes, 'record ' .. i .. ' should still read')
         end
      end
   end)

   describe('open rejects', function()
      local good, path
      before_each(function()
         path = tmp('bad.mts')
         write_shard(path, random_records(12))
         good = read_bytes(path)
      end)
      local function rejects(bytes, ...)
         write_bytes(path, bytes)
         local s, err = open_shard(path)
         assert(s == nil, 'open accepted a bad shard')
         for _, frag in ipairs { path, ... } do
            assert(err:find(frag, 1, true), ('%q lacks %q'):format(err, frag))
         end
         -- the in-memory reader agrees
         local m, merr = parse_shard(bytes, path)
         assert(m == nil and merr == err, 'parse disagrees with open: ' .. tostring(merr))
      end

      it('a truncated file, at every kind of cut', function()
         rejects(good:sub(1, #good - 1), 'truncated')
         rejects(good:sub(1, math.random(64, #good - 1)), 'truncated')
         rejects(good:sub(1, math.random(0, 63)), 'truncated')
         rejects(good .. 'x', 'truncated or extended')
      end)
      it('a wrong magic', function()
         rejects('NOTSHARD' .. good:sub(9), 'bad magic at byte offset 0')
      end)
      it('a corrupted header field', function()
         local p = math.random(17, 40)
         rejects(splice(good, p, string.char((good:byte(p) + math.random(1, 255)) % 256)), 'header checksum',
            'byte offset 44')
      end)
      it('a version it does not know', function()
         rejects(reseal(splice(good, 9, le_bytes(2, 4))), 'unsupported version 2', 'byte offset 8')
      end)
      it('a corrupted index', function()
         local ioff = le(good, 25, 8)
         local p = ioff + math.random(1, #good - ioff)
         rejects(splice(good, p, string.char(bit.bxor(good:byte(p), 0x10))), 'index checksum mismatch',
            ('byte offset %d'):format(ioff))
      end)
      it('a record outside the record area, even with valid checksums', function()
         local ioff = le(good, 25, 8)
         local k = math.random(0, 11)
         local e = ioff + 32 * k + 1
         rejects(reseal(splice(good, e + 8, le_bytes(ioff, 4))), ('record %d'):format(k), 'outside the record area',
            ('index entry at byte offset %d'):format(ioff + 32 * k))
         rejects(reseal(splice(good, e, le_bytes(2 ^ 64 - 16, 8))), 'outside the record area')
         rejects(reseal(splice(good, e, le_bytes(3, 8))), 'outside the record area')
      end)
      it('a name outside the names blob, and a count beyond the index', function()
         local ioff = le(good, 25, 8)
         local e = ioff + 32 * 5 + 1
         rejects(reseal(splice(good, e + 24, le_bytes(2 ^ 32 - 1, 4))), 'record 5', 'names blob')
         rejects(reseal(splice(good, e + 20, le_bytes(2 ^ 32 - 2, 4))), 'record 5', 'names blob')
         rejects(reseal(splice(good, 17, le_bytes(2 ^ 40, 8))), 'records', 'do not fit')
      end)
      it('a negative label', function()
         local ioff = le(good, 25, 8)
         rejects(reseal(splice(good, ioff + 32 * 2 + 13, le_bytes(2 ^ 32 - 7, 4))), 'record 2', 'negative label -7')
      end)
      it('a missing file and a folder', function()
         local s, err = open_shard(tmp('missing.mts'))
         assert(s == nil and err:find('missing.mts', 1, true) and err:find('cannot open', 1, true), err)
         s, err = open_shard(tmpdir)
         assert(s == nil and err:find(tmpdir, 1, true), err)
      end)
   end)

   it('hostile bytes never crash the in-memory reader', function()
      local recs = random_records(8)
      local path = tmp('fuzz.mts')
      write_shard(path, recs)
      local good = read_bytes(path)
      for _ = 1, 300 do
         local s = good
         for _ = 1, math.random(1, 4) do
            local p = math.random(1, #s)
            s = splice(s, p, string.char(math.random(0, 255)))
         end
         if math.random() < 0.5 then s = reseal(s) end
         local sh = parse_shard(s, 'fuzz')
         if sh then
            for i = 0, tonumber(C.mt_shard_count(sh)) - 1 do read_record(sh, i) end
         end
      end
   end)

   it('the writer publishes nothing before commit, and abort leaves nothing behind', function()
      local path = tmp('atomic.mts')
      local old = random_records(3)
      write_shard(path, old)
      local wp = ffi.new('mt_shard_writer *[1]')
      check(C.mt_shard_writer_open(wp, path))
      local recs = random_records(5)
      for _, r in ipairs(recs) do check(C.mt_shard_writer_add(wp[0], r.bytes, #r.bytes, r.label, r.name)) end
      local tmpfile = ('atomic.mts.tmp.%d'):format(require('moontorch.io.fs').getpid())
      assert(exists(tmp(tmpfile)), 'the temporary file should exist while writing')
      assert_records(assert(open_shard(path)), old, 'the old shard while the new one is written')
      check(C.mt_shard_writer_commit(wp[0]))
      assert(not exists(tmp(tmpfile)), 'commit left the temporary file')
      assert_records(assert(open_shard(path)), recs, 'after commit')

      check(C.mt_shard_writer_open(wp, path))
      check(C.mt_shard_writer_add(wp[0], 'abc', 3, 1, 'x'))
      assert(exists(tmp(tmpfile)))
      C.mt_shard_writer_abort(wp[0])
      assert(not exists(tmp(tmpfile)), 'abort left the temporary file')
      assert_records(assert(open_shard(path)), recs, 'after abort')
   end)

   it('rejects bad arguments with clear messages', function()
      local wp = ffi.new('mt_shard_writer *[1]')
      local path = tmp('args.mts')
      check(C.mt_shard_writer_open(wp, path))
      assert.are_not.equal(0, C.mt_shard_writer_add(wp[0], 'abc', 3, -1, 'neg'))
      assert(lasterr():find('label -1', 1, true), lasterr())
      assert.are_not.equal(0, C.mt_shard_writer_add(wp[0], nil, 3, 0, 'null'))
      assert(lasterr():find('NULL', 1, true), lasterr())
      check(C.mt_shard_writer_add(wp[0], 'abcdef', 6, 4, 'ok'))
      check(C.mt_shard_writer_commit(wp[0]))
      assert.are_not.equal(0, C.mt_shard_writer_open(wp, tmp('no/such/dir/x.mts')))
      assert(lasterr():find('no/such/dir/x.mts', 1, true), lasterr())

      local s = assert(open_shard(path))
      local small = ffi.new('uint8_t[4]')
      assert.are_not.equal(0, C.mt_shard_read(s, 0, small, 4))
      assert(lasterr():find('6 bytes', 1, true), lasterr())
      assert.are_not.equal(0, C.mt_shard_read(s, 1, small, 4))
      assert(lasterr():find('record 1 out of range', 1, true), lasterr())
      assert.are_not.equal(0, C.mt_shard_entry(s, -1, nil, nil, nil, nil))
      assert.are.equal(0, tonumber(C.mt_shard_count(nil)))
   end)
end)
