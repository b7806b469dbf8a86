-- file_spec.lua: Torch7's files (file.md, diskfile.md, memoryfile.md, pipefile.md): random data
-- of every storage type round trips in binary and ascii through DiskFile and MemoryFile in the
-- three read forms; what DiskFile writes is checked by an independent reader (Python's numpy,
-- native and big endian, 4-byte longs; Python's %-formatting for the ascii text); PipeFile reads
-- printf's output and writes to cat; errors name the file and position.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local util = require 'spec.util'

local py = util.python

-- the storage types that files read and write: every dtype but Bool (readBool/writeBool are ints)
local kinds = {}
for _, d in ipairs(T.dtypes) do if d.id ~= T.BOOL then kinds[#kinds + 1] = d end end

local function rand_values(d, n)
   local v = {}
   if d.is_float then
      for i = 1, n do v[i] = (2 * math.random() - 1) * 10 ^ (math.random() * 8 - 4) end
   else
      local r = ({ uint8_t = { 0, 255 }, int8_t = { -128, 127 }, int16_t = { -32768, 32767 },
         int32_t = { -2 ^ 31, 2 ^ 31 - 1 }, int64_t = { -2 ^ 52, 2 ^ 52 } })[d.ctype]
      for i = 1, n do v[i] = math.floor(r[1] + (r[2] - r[1] + 1) * math.random()) end
   end
   return util.flat(torch.DoubleTensor(v):type(T.typename(d.id, T.CPU_DEVICE)):double())
end

local function exact(got, want, what)
   if torch.isStorage(got) then got = got:totable() end
   util.assert_close(got, want, { atol = 0, rtol = 0 }, what)
end

-- numpy's name for a dtype's binary layout (BFloat16 has none: decoded from uint16 below)
local npdt = { Float = 'f4', Double = 'f8', Half = 'f2', Int = 'i4', Long = 'i8', Byte = 'u1', Char = 'i1',
   Short = 'i2', BFloat16 = 'bf16' }

local NP_READ = [[
import sys, numpy as np
path, endian = sys.argv[1], sys.argv[2]
data, pos = open(path, 'rb').read(), 0
for seg in sys.argv[3:]:
    kind, n = seg.split(':'); n = int(n)
    if kind == 'bf16':
        u = np.frombuffer(data, dtype=endian + 'u2', count=n, offset=pos).astype(np.uint32) << 16
        vals, size = u.view(np.float32).astype(np.float64).tolist(), 2
    else:
        dt = np.dtype(endian + kind)
        vals, size = np.frombuffer(data, dtype=dt, count=n, offset=pos).tolist(), dt.itemsize
        vals = [float(x) if dt.kind == 'f' else x for x in vals]
    pos += n * size
    print(' '.join(repr(x) for x in vals))
print('END', pos, len(data))
]]

-- exact decimal forms of Lua numbers, for passing them to Python
local function lits(v)
   local r = {}
   for i, x in ipairs(v) do r[i] = ('%.17g'):format(x) end
   return table.concat(r, ' ')
end

local function numbers(line)
   local r = {}
   for w in line:gmatch('%S+') do r[#r + 1] = tonumber(w) end
   return r
end

describe('files', function()
   local dir
   setup(function() dir = util.tmpdir() end)
   teardown(function() os.execute(('rm -rf %q'):format(dir)) end)

   -- write a scalar and a storage of every type, then read them back in the three forms
   local function round_trip(open_w, open_r, mode, what)
      local data, split = {}, {}
      local f = open_w()
      f[mode](f)
      for _, d in ipairs(kinds) do
         local vals = rand_values(d, math.random(5, 13))
         -- the storage is read back in two parts, the first k values, then the rest
         local k = math.random(1, #vals - 1)
         -- ascii bytes and chars are raw, and a read ends by eating the newline after it
         -- (Torch7's format): a part that starts with a byte 10 would lose it. Any other 10
         -- stays, and round trips.
         if mode == 'ascii' and vals[k + 1] == 10 and (d.name == 'Byte' or d.name == 'Char') then
            vals[k + 1] = 11
         end
         data[d.name], split[d.name] = vals, k
         f['write' .. d.name](f, vals[1])
         assert.are.equal(#vals, f['write' .. d.name](f, torch[d.name .. 'Storage'](vals)))
      end
      f:writeBool(true)
      f:writeBool(false)
      f = open_r(f)
      f[mode](f)
      for _, d in ipairs(kinds) do
         local vals, name = data[d.name], what .. ' ' .. mode .. ' ' .. d.name
         assert.are.equal(vals[1], f['read' .. d.name](f), name .. ' scalar')
         -- the storage in two parts: readT(n), then readT(storage)
         local k = split[d.name]
         local first = f['read' .. d.name](f, k)
         assert.are.equal('torch.' .. d.name .. 'Storage', torch.type(first))
         local rest = torch[d.name .. 'Storage'](#vals - k)
         assert.are.equal(#vals - k, f['read' .. d.name](f, rest))
         local got = first:totable()
         for _, v in ipairs(rest:totable()) do got[#got + 1] = v end
         exact(got, vals, name)
      end
      assert.is_true(f:readBool())
      assert.is_false(f:readBool())
      assert.is_false(f:hasError())
      f:close()
   end

   for _, mode in ipairs { 'binary', 'ascii' } do
      it('round trips every type in ' .. mode .. ' through DiskFile and MemoryFile', function()
         local path = dir .. '/rt.' .. mode
         round_trip(function() return torch.DiskFile(path, 'w') end,
            function(f) f:close(); return torch.DiskFile(path, 'r') end, mode, 'DiskFile')
         round_trip(function() return torch.DiskFile(path .. '.rw', 'rw') end,
            function(f) f:seek(1); return f end, mode, 'DiskFile rw')
         round_trip(function() return torch.MemoryFile() end,
            function(f) f:seek(1); return f end, mode, 'MemoryFile')
         -- a MemoryFile over the storage of another
         local m = torch.MemoryFile('w')
         m[mode](m)
         local vals = rand_values(T.dtype_by_name.Double, 9)
         m:writeDouble(torch.DoubleStorage(vals))
         local s = m:storage()
         assert.are.equal(0, s[#s])
         local r = torch.MemoryFile(s, 'r')
         r[mode](r)
         exact(r:readDouble(9), vals, 'MemoryFile(storage)')
      end)
   end

   it('writes binary numpy reads, in native and big endian, and 4-byte longs', function()
      for _, order in ipairs { 'native', 'big' } do
         local path = dir .. '/np.' .. order
         local f = torch.DiskFile(path, 'w'):binary()
         if order == 'big' then f:bigEndianEncoding() else f:nativeEndianEncoding() end
         local segs, data = {}, {}
         for _, d in ipairs(kinds) do
            local vals = rand_values(d, math.random(4, 9))
            f['write' .. d.name](f, torch[d.name .. 'Storage'](vals))
            segs[#segs + 1] = npdt[d.name] .. ':' .. #vals
            data[#data + 1] = vals
         end
         f:close()
         local out = py(NP_READ, path, order == 'big' and '>' or '=', unpack(segs))
         local lines = {}
         for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
         for i, d in ipairs(kinds) do exact(numbers(lines[i]), data[i], order .. ' ' .. d.name .. ' via numpy') end
         local pos, len = lines[#kinds + 1]:match('END (%d+) (%d+)')
         assert.are.equal(pos, len, 'numpy consumed the whole file')
         -- and back: the same file read with the same encoding
         local r = torch.DiskFile(path, 'r'):binary()
         if order == 'big' then r:bigEndianEncoding() end
         for i, d in ipairs(kinds) do
            exact(r['read' .. d.name](r, #data[i]), data[i], order .. ' read back ' .. d.name)
         end
         r:close()
      end
      -- numpy writes big-endian doubles, DiskFile reads them
      local vals = rand_values(T.dtype_by_name.Double, 11)
      local path = dir .. '/np.be'
      local words = {}
      for i, v in ipairs(vals) do words[i] = ('%.17g'):format(v) end
      py("import sys, numpy as np\nnp.array([float(x) for x in sys.argv[2:]], dtype='>f8').tofile(sys.argv[1])\n",
         path, table.concat(words, "' '"))
      exact(torch.DiskFile(path):binary():bigEndianEncoding():readDouble(11), vals, 'numpy big-endian doubles')
      -- longs as 4 bytes (files from 32-bit longs)
      local ints = rand_values(T.dtype_by_name.Int, 7)
      local lp = dir .. '/long4'
      local f = torch.DiskFile(lp, 'w'):binary():longSize(4)
      f:writeLong(torch.LongStorage(ints))
      f:close()
      exact(numbers(py(NP_READ, lp, '<', 'i4:7'):match('[^\n]+')), ints, 'longSize(4) as int32')
      exact(torch.DiskFile(lp):binary():longSize(4):readLong(7), ints, 'longSize(4) read back')
   end)

   it('writes ascii in the text format of Torch7 (C printf %d, %.9g, %.17g, raw bytes)', function()
      local path = dir .. '/fmt.txt'
      local dv = rand_values(T.dtype_by_name.Double, 5)
      local fv = rand_values(T.dtype_by_name.Float, 4)
      local iv = rand_values(T.dtype_by_name.Int, 3)
      local f = torch.DiskFile(path, 'w')
      f:writeDouble(torch.DoubleStorage(dv))
      f:writeFloat(torch.FloatStorage(fv))
      f:writeInt(iv[1])
      f:noAutoSpacing()
      f:writeInt(torch.IntStorage(iv))
      f:autoSpacing()
      f:writeByte(torch.ByteStorage():string('xyz'))
      f:close()
      local want = py([[
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
c = [int(x) for x in sys.argv[3].split()]
sys.stdout.write(' '.join('%.17g' % x for x in a) + '\n' + ' '.join('%.9g' % x for x in b) + '\n'
                 + '%d\n' % c[0] + ''.join('%d' % x for x in c) + 'xyz\n')
]], lits(dv), lits(fv), table.concat(iv, ' '))
      assert.are.equal(want, util.read_bytes(path))
   end)

   it('reads strings, seeks, and reports positions', function()
      local path = dir .. '/str.txt'
      local f = torch.DiskFile(path, 'w')
      local words = {}
      for i = 1, 5 do words[i] = ('w%d_%d'):format(i, math.random(1, 1e6)) end
      assert.are.equal(#words[1] + 1, f:writeString(words[1] .. '\n'))
      f:writeString(words[2] .. '\n' .. words[3])
      f:close()
      f = torch.DiskFile(path, 'r')
      assert.are.equal(words[1], f:readString('*l'))
      assert.are.equal(#words[1] + 2, f:position())
      assert.are.equal(words[2]:sub(1, 3), f:readString(3))
      assert.are.equal(words[2]:sub(4) .. '\n' .. words[3], f:readString('*a'))
      f:seek(2)
      assert.are.equal(words[1]:sub(2), f:readString('*l'))
      f:seekEnd()
      assert.are.equal(#words[1] + #words[2] + #words[3] + 3, f:position())
      util.assert_error(function() f:readString('*l') end, 'readString', 'nothing left', path)
      util.assert_error(function() f:readString('*n') end, "'*a', '*l'")
      f:close()
   end)

   it('PipeFile reads printf output and writes into cat', function()
      local ints = rand_values(T.dtype_by_name.Int, 6)
      local p = torch.PipeFile(("printf '%%s\\ntail line' '%s'"):format(table.concat(ints, ' ')), 'r')
      exact(p:readInt(6), ints, 'printf ints')
      assert.are.equal('tail line', p:readString('*a'))
      p:close()
      local path = dir .. '/piped.bin'
      local w = torch.PipeFile(('cat > %q'):format(path), 'w'):binary()
      local vals = rand_values(T.dtype_by_name.Double, 8)
      w:writeDouble(torch.DoubleStorage(vals))
      assert.are.equal(65, w:position())
      w:close()
      exact(torch.DiskFile(path):binary():readDouble(8), vals, 'through cat')
      util.assert_error(function() torch.PipeFile('true', 'rw') end, 'PipeFile', "'r' or 'w'")
      util.assert_error(function() torch.PipeFile('exit 3', 'r'):close() end, 'exit status 3')
      local q = torch.PipeFile('printf 12', 'r')
      util.assert_error(function() q:seek(1) end, 'seek', 'PipeFile')
   end)

   it('fails clearly: bad mode, missing file, reading past the end, wrong storage types', function()
      util.assert_error(function() torch.File() end, 'abstract', 'torch.DiskFile')
      util.assert_error(function() torch.DiskFile(dir .. '/x', 'a') end, 'DiskFile', "'r', 'w' or 'rw'", "'a'")
      util.assert_error(function() torch.DiskFile(dir .. '/none/file') end, dir .. '/none/file', 'No such file')
      assert.is_nil(torch.DiskFile(dir .. '/none/file', 'r', true))
      local path = dir .. '/short.bin'
      local f = torch.DiskFile(path, 'w'):binary()
      f:writeInt(torch.IntStorage(rand_values(T.dtype_by_name.Int, 3)))
      util.assert_error(function() f:readInt() end, 'readInt', 'not open for reading', path)
      util.assert_error(function() f:writeInt(torch.FloatStorage(2)) end, 'writeInt', 'torch.IntStorage',
         'torch.FloatStorage')
      f:close()
      util.assert_error(function() f:writeInt(1) end, 'closed')
      f = torch.DiskFile(path, 'r'):binary()
      util.assert_error(function() f:writeInt(1) end, 'not open for writing')
      util.assert_error(function() f:readInt(torch.DoubleStorage(3)) end, 'readInt', 'torch.IntStorage',
         'torch.DoubleStorage')
      util.assert_error(function() f:readInt(5) end, 'readInt', 'read 3 of 5', path, 'at byte 13')
      -- quiet: a short storage and the error flag
      f:seek(1)
      f:quiet()
      local s = f:readInt(7)
      assert.are.equal(3, #s)
      assert.is_true(f:hasError())
      f:clearError()
      assert.is_false(f:hasError())
      assert.is_nil(f:readInt())
      assert.is_true(f:hasError())
      f:pedantic()
      f:close()
      -- ascii: a number that is not there
      local m = torch.MemoryFile()
      m:writeString('12 abc')
      m:seek(1)
      assert.are.equal(12, m:readInt())
      util.assert_error(function() m:readDouble() end, 'readDouble', 'read 0 of 1', 'MemoryFile')
      util.assert_error(function() torch.MemoryFile(torch.ByteStorage():string('no nul')) end, 'NUL')
   end)

   it('writeObject/readObject go through moontorch.io.serialize', function()
      if not pcall(require, 'moontorch.io.serialize') then
         pending('needs moontorch.io.serialize')
         return
      end
      for _, mode in ipairs { 'binary', 'ascii' } do
         local obj = { math.random(), 'text' .. math.random(1, 100), { x = math.random() } }
         local m = torch.MemoryFile()
         m[mode](m)
         m:writeObject(obj)
         m:writeInt(77)
         m:seek(1)
         assert.are.same(obj, m:readObject())
         assert.are.equal(77, m:readInt())
      end
   end)
end)
