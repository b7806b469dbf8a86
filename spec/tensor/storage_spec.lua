-- storage_spec.lua: Torch7's storages (storage.md) for every dtype of the library's list:
-- constructors, element access, views that share memory, copies across types, resize, string,
-- t:storage() and tensors over storages, LongStorage as sizes, and storages mapping files
-- (read against files Python wrote, written through and read back by Python).
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local ffi = require 'ffi'
local util = require 'spec.util'

-- n random values exactly representable in dtype d (ints in its range, floats rounded to it)
local function rand_values(d, n)
   local v = {}
   if d.is_float then
      for i = 1, n do v[i] = (2 * math.random() - 1) * 10 ^ (math.random() * 6 - 3) end
   else
      local r = ({ uint8_t = { 0, 255 }, int8_t = { -128, 127 }, int16_t = { -32768, 32767 },
         int32_t = { -2 ^ 31, 2 ^ 31 - 1 }, int64_t = { -2 ^ 52, 2 ^ 52 } })[d.ctype] or { 0, 1 }
      local lo, hi = r[1], r[2]
      if d.id == T.BOOL then lo, hi = 0, 1 end
      for i = 1, n do v[i] = math.random(0, 2 ^ 30) % (hi - lo + 1) + lo end
      if d.ctype == 'int64_t' or d.ctype == 'int32_t' then
         for i = 1, n do v[i] = math.floor(lo + (hi - lo) * math.random()) end
      end
   end
   -- the dtype's own rounding decides the reference
   return util.flat(torch.DoubleTensor(v):type(T.typename(d.id, T.CPU_DEVICE)):double())
end

-- run a Python script (given as text) with arguments; its stdout
local py = util.python

local function exact_list(got, want, what) util.assert_close(got, want, { atol = 0, rtol = 0 }, what) end

local function storage_of(d) return torch[d.name .. 'Storage'] end

describe('storages', function()
   it('exist for every dtype, built from sizes and tables, with Torch7 element access', function()
      for _, d in ipairs(T.dtypes) do
         local S = storage_of(d)
         assert(S, 'torch.' .. d.name .. 'Storage missing')
         local n = math.random(3, 9)
         local vals = rand_values(d, n)
         local s = S(vals)
         local what = 'torch.' .. d.name .. 'Storage'
         assert.are.equal(what, torch.type(s))
         assert.is_true(torch.isStorage(s))
         assert.are.equal(n, #s)
         assert.are.equal(n, s:size())
         assert.are.equal(ffi.sizeof(d.ctype), s:elementSize())
         util.assert_close(s:totable(), vals, { atol = 0, rtol = 0 }, what .. ' from a table')
         local k = math.random(1, n)
         local x = rand_values(d, 1)[1]
         s[k] = x
         assert.are.equal(x, s[k])
         assert.are.equal(7, #S(7))
         assert.are.equal(0, #S())
         util.assert_error(function() return s[n + 1] end, what, 'index ' .. (n + 1), 'size ' .. n)
         util.assert_error(function() return s[0] end, 'index 0')
         util.assert_error(function() s[1.5] = 1 end, 'index 1.5')
         util.assert_error(function() return S(-2) end, what, '-2')
         local shown = tostring(s)
         assert(shown:find('[' .. what .. ' of size ' .. n .. ']', 1, true), shown)
         -- n values and the footer, after a common scale line ("1e-02 *") when Torch7 prints one
         local scaled = shown:find('^%d+e[-+]%d+ %*\n') and 1 or 0
         assert.are.equal(n + 1 + scaled, select(2, shown:gsub('\n', '\n')) + 1, shown)
      end
   end)

   it('fill, resize (keeping the prefix), and data() pointers', function()
      local vals = rand_values(T.dtype_by_name.Double, 11)
      local s = torch.DoubleStorage(vals)
      local x = math.random()
      assert.are.equal(s, s:fill(x))
      for i = 1, 11 do assert.are.equal(x, s[i]) end
      s = torch.DoubleStorage(vals)
      s:resize(1000)
      assert.are.equal(1000, #s)
      for i = 1, 11 do assert.are.equal(vals[i], s[i]) end
      s:resize(5)
      assert.are.same({ vals[1], vals[2], vals[3], vals[4], vals[5] }, s:totable())
      local p = s:data()
      p[2] = x
      assert.are.equal(x, s[3])
   end)

   it('copy converts between every pair of types', function()
      local ints = {}
      for i = 1, 7 do ints[i] = math.random(0, 100) end
      for _, a in ipairs(T.dtypes) do
         for _, b in ipairs(T.dtypes) do
            local src = storage_of(a)(ints)
            local dst = storage_of(b)(7):copy(src)
            local want = {}
            for i = 1, 7 do
               local v = util.flat(torch.DoubleTensor({ ints[i] }):type(T.typename(a.id, T.CPU_DEVICE)))[1]
               want[i] = util.flat(torch.DoubleTensor({ v }):type(T.typename(b.id, T.CPU_DEVICE)))[1]
            end
            util.assert_close(dst:totable(), want, { atol = 0, rtol = 0 }, a.name .. ' -> ' .. b.name)
         end
      end
      util.assert_error(function() torch.FloatStorage(3):copy(torch.IntStorage(4)) end, 'copy', 'size 3', '4 elements')
      util.assert_error(function() torch.FloatStorage(3):copy({ 1, 2, 3 }) end, 'copy', 'expected a storage')
   end)

   it('views share memory with the storage they view', function()
      local n = math.random(9, 15)
      local vals = rand_values(T.dtype_by_name.Float, n)
      local s = torch.FloatStorage(vals)
      local off, len = math.random(2, 4), math.random(3, 5)
      local v = torch.FloatStorage(s, off, len)
      assert.are.equal(len, #v)
      assert.are.equal('view', v:kind())
      for i = 1, len do assert.are.equal(vals[off + i - 1], v[i]) end
      local x = rand_values(T.dtype_by_name.Float, 1)[1]
      v[2] = x
      assert.are.equal(x, s[off + 1])
      s[off] = -x
      assert.are.equal(-x, v[1])
      -- default size: to the end; the view keeps its storage alive
      local tail = torch.FloatStorage(s, off)
      assert.are.equal(n - off + 1, #tail)
      s = nil -- luacheck: ignore 311 (drops the storage so that collectgarbage() could free it)
      collectgarbage()
      assert.are.equal(x, tail[2])
      util.assert_error(function() return torch.FloatStorage(tail, 2, 100) end, 'outside', 'size ' .. #tail)
      util.assert_error(function() return torch.DoubleStorage(tail) end, 'torch.DoubleStorage', 'torch.FloatStorage')
      util.assert_error(function() tail:resize(50) end, 'resize', 'views another')
   end)

   it('string() reads and writes bytes', function()
      local bytes = {}
      for i = 1, 37 do bytes[i] = math.random(0, 255) end
      bytes[5] = 0
      local str = string.char(unpack(bytes))
      local s = torch.ByteStorage():string(str)
      assert.are.equal(37, #s)
      for i = 1, 37 do assert.are.equal(bytes[i], s[i]) end
      assert.are.equal(str, s:string())
      util.assert_error(function() torch.FloatStorage(2):string() end, 'string', 'torch.FloatStorage')
   end)

   it('t:storage() shares the tensor memory; tensors view storages with offset, sizes, strides', function()
      local t, flat = util.rand_tensor({ 3, 5 }, 'torch.DoubleTensor')
      local s = t:storage()
      assert.are.equal('torch.DoubleStorage', torch.type(s))
      util.assert_close(s:totable(), flat, { atol = 0, rtol = 0 }, 'storage of a tensor')
      local x = math.random()
      s[7] = x
      assert.are.equal(x, t[2][2])
      -- a narrowed tensor has the whole storage and its offset
      local n = t:narrow(1, 2, 2)
      assert.are.equal(15, #n:storage())
      assert.are.equal(6, n:storageOffset())
      assert.is_true(n:storage() == s)
      -- torch.DoubleTensor(storage, offset, sizes, strides): element (i, j) at offset + (i-1)*st1 + (j-1)*st2
      local v = torch.DoubleTensor(s, 3, torch.LongStorage { 2, 3 }, torch.LongStorage { 4, 2 })
      for i = 1, 2 do
         for j = 1, 3 do assert.are.equal(s[3 + (i - 1) * 4 + (j - 1) * 2], v[i][j]) end
      end
      local u = torch.DoubleTensor():set(s, 2, { 4 })
      assert.are.equal(2, u:storageOffset())
      for i = 1, 4 do assert.are.equal(s[i + 1], u[i]) end
      u[1] = -x
      assert.are.equal(-x, t[1][2])
      local w = torch.DoubleTensor():set(u)
      assert.is_true(w:isSetTo(u))
      -- a tensor over a view storage
      local vs = torch.DoubleStorage(s, 4, 6)
      local tv = torch.DoubleTensor(vs)
      assert.are.equal(6, tv:nElement())
      assert.are.equal(s[4], tv[1])
      util.assert_error(function() return torch.IntTensor(s) end, 'torch.IntTensor', 'torch.DoubleTensor')
      util.assert_error(function() return torch.DoubleTensor(s, 10, { 10 }) end, 'storage')
   end)

   it('resizing a storage in place is seen by the tensors on it', function()
      local s = torch.FloatStorage(rand_values(T.dtype_by_name.Float, 3))
      local t = torch.FloatTensor(s)
      s:resize(301)
      local x = rand_values(T.dtype_by_name.Float, 1)[1]
      s[2] = x
      assert.are.equal(x, t[2])
      assert.are.equal(301, #t:storage())
   end)

   util.gpu_it('CUDA tensors have CUDA storages: element access and in-place resize', function()
      local t, flat = util.rand_tensor({ 7 }, 'torch.DoubleTensor')
      local c = t:type('torch.CudaDoubleTensor')
      local s = c:storage()
      assert.are.equal('torch.CudaDoubleStorage', torch.type(s))
      exact_list(s:totable(), flat, 'CUDA storage')
      local x = math.random()
      s[2] = x
      assert.are.equal(x, c[2])
      s:resize(1001)
      assert.are.equal(1001, #s)
      assert.are.equal(flat[1], s[1])
      assert.are.equal(flat[1], c[1]) -- the tensor sees the storage's new memory
   end)

   it('LongStorage is a storage and stands for sizes everywhere', function()
      local sz = { math.random(2, 4), math.random(2, 5) }
      local ls = torch.LongStorage(sz)
      assert.are.equal('torch.LongStorage', torch.type(ls))
      assert.is_true(torch.isStorage(ls))
      assert.are.same(sz, torch.FloatTensor(ls):size():totable())
      assert.are.same(sz, torch.zeros(ls):size():totable())
      assert.are.same(sz, torch.randn(ls):size():totable())
      assert.are.same(sz, torch.FloatTensor(sz[1] * sz[2]):view(ls):size():totable())
      assert.are.same(sz, torch.FloatTensor():resize(ls):size():totable())
      assert.are.same(sz, torch.FloatTensor(ls):size():totable())
      -- t:size() stays the cheap size object, also called torch.LongStorage
      local size = torch.FloatTensor(ls):size()
      assert.are.equal('torch.LongStorage', torch.type(size))
      assert.are.equal(2, #size)
      assert.are.equal(sz[2], size[2])
      assert.is_true(size == torch.FloatTensor(sz[1], sz[2]):size())
      assert(tostring(size):find('[torch.LongStorage of size 2]', 1, true))
      -- a LongStorage gives sizes to a LongTensor too (README, Conventions); set() shares it
      assert.are.same(sz, torch.LongTensor(ls):size():totable())
      local lt = torch.LongTensor():set(ls)
      lt[1] = 99
      assert.are.equal(99, ls[1])
      assert.are.same(sz, torch.LongStorage(size):totable())
   end)

   it('maps files: reads what Python wrote, private changes stay, shared changes write through', function()
      local dir = util.tmpdir()
      local path = dir .. '/map.f64'
      local n = math.random(17, 33)
      local vals = rand_values(T.dtype_by_name.Double, n)
      local lits = {}
      for i, v in ipairs(vals) do lits[i] = ('%.17g'):format(v) end
      py('import sys, struct\nv = [float(x) for x in sys.argv[2:]]\n'
         .. 'open(sys.argv[1], "wb").write(struct.pack("<%dd" % len(v), *v))\n',
         path, table.concat(lits, "' '"))
      local m = torch.DoubleStorage(path)
      assert.are.equal('file', m:kind())
      util.assert_close(m:totable(), vals, { atol = 0, rtol = 0 }, 'mapped file')
      -- private: the storage changes, the file does not
      m[1] = 12345.5
      assert.are.equal(12345.5, m[1])
      local again = torch.DoubleStorage(path, false, 4)
      assert.are.equal(4, #again)
      assert.are.equal(vals[1], again[1])
      -- shared: writes reach the file
      local sh = torch.DoubleStorage(path, true)
      local newv = rand_values(T.dtype_by_name.Double, n)
      for i = 1, n do sh[i] = newv[i] end
      sh = nil -- luacheck: ignore 311 (drops the mapping so that collectgarbage() can unmap it)
      collectgarbage()
      local out = py('import sys, struct\nd = open(sys.argv[1], "rb").read()\n'
         .. 'print(" ".join(repr(x) for x in struct.unpack("<%dd" % (len(d) // 8), d)))\n', path)
      local got = {}
      for w in out:gmatch('%S+') do got[#got + 1] = tonumber(w) end
      util.assert_close(got, newv, { atol = 0, rtol = 0 }, 'written through')
      -- shared with a size creates the file
      local fresh = dir .. '/new.i32'
      local ns = torch.IntStorage(fresh, true, 5):fill(7)
      assert.are.equal(5, #ns)
      ns = nil -- luacheck: ignore 311 (drops the mapping so that collectgarbage() can unmap it)
      collectgarbage()
      assert.are.equal(string.rep('\7\0\0\0', 5), util.read_bytes(fresh))
      -- sharedMem: a shared-memory object (Linux keeps them in /dev/shm)
      local shm = ('mt_storage_spec_%d'):format(math.random(1, 1e9))
      local sm = torch.FloatStorage(shm, true, 3, true)
      local sv = rand_values(T.dtype_by_name.Float, 3)
      for i = 1, 3 do sm[i] = sv[i] end
      exact_list(torch.FloatStorage('/dev/shm/' .. shm):totable(), sv, 'shared memory object')
      sm = nil -- luacheck: ignore 311 (the shared-memory storage owns its file: freeing it removes the file)
      collectgarbage()
      collectgarbage()
      assert.is_false(util.exists('/dev/shm/' .. shm), 'a freed shared-memory storage leaves its file')
      util.assert_error(function() return torch.FloatStorage(dir .. '/missing.bin') end, 'missing.bin', 'No such file')
      util.assert_error(function() return torch.DoubleStorage(path, false, n + 1) end, 'map.f64', 'bytes')
      util.assert_error(function() m:resize(3) end, 'maps a file')
      os.execute(('rm -rf %q'):format(dir))
   end)

   it('removes a shared-memory file only when the last user of the storage is freed', function()
      local shm = ('mt_storage_spec_%d'):format(math.random(1, 1e9))
      local path = '/dev/shm/' .. shm
      local n = math.random(5, 50)
      local s = torch.DoubleStorage(shm, true, n, true)
      local t = torch.DoubleTensor(s, 1, torch.LongStorage { n }) -- a tensor holds the storage too
      local other = torch.DoubleStorage(path, true, n) -- an ordinary shared map of the same file
      local v = math.random() + 0.5
      t:fill(v)
      assert.are.equal(v, other[math.random(1, n)])
      s = nil -- luacheck: ignore 311 (the tensor still holds the storage)
      collectgarbage()
      collectgarbage()
      assert.is_true(util.exists(path), 'the file went while a tensor still used the storage')
      t = nil -- luacheck: ignore 311 (now the storage is free)
      collectgarbage()
      collectgarbage()
      assert.is_false(util.exists(path), 'the file stayed after the storage was freed')
      other[1] = -v -- the other map stays valid without the name
      assert.are.equal(-v, other[1])
   end)

   it('torch.pointer of a storage is the same for every Storage object over it', function()
      local t = torch.DoubleTensor(math.random(2, 9)):uniform()
      local p = torch.pointer(t:storage())
      assert.are.equal(p, torch.pointer(t:storage()))
      assert.are.equal(p, torch.pointer(t:narrow(1, 2, 1):storage()))
      assert.are_not.equal(p, torch.pointer(t:clone():storage()))
      local s = torch.FloatStorage(3)
      assert.are.equal(torch.pointer(s), torch.pointer(s))
      assert.are_not.equal(torch.pointer(s), torch.pointer(torch.FloatStorage(3)))
   end)
end)
