-- checkpoint_spec.lua: safetensors files (csrc/io/safetensors.c, lua/moontorch/checkpoint.lua)
local ffi = require 'ffi'
local torch = require 'moontorch'
local checkpoint = require 'moontorch.checkpoint'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute('mkdir -p ' .. tmpdir)
local function tmp(name) return tmpdir .. '/' .. name end

local function read_all(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end
local function write_all(path, s)
   local f = assert(io.open(path, 'wb'))
   f:write(s)
   f:close()
end

-- a file from a header text and data bytes; hlen overrides the length field
local function u64le(n)
   local b = {}
   for i = 1, 8 do b[i] = string.char(n % 256) n = math.floor(n / 256) end
   return table.concat(b)
end
local function craft(name, header, data, hlen)
   local path = tmp(name)
   write_all(path, u64le(hlen or #header) .. header .. (data or ''))
   return path
end

local function assert_same(a, b, what)
   assert.are.same(T.sizes(b), T.sizes(a), what .. ': sizes')
   assert.are.equal(b:dtype(), a:dtype(), what .. ': dtype')
   util.assert_close(a, b, { atol = 0, rtol = 0 }, what)
end

local PY = util.PY
local function have_torch_python()
   return os.execute(PY .. ' -c "import torch" >/dev/null 2>&1') == 0
end

-- random tensors of every dtype, in several shapes, some non-contiguous
local function random_set()
   local ts = {}
   local specs = {
      { 'f32', 'torch.FloatTensor', { 3, 5 } }, { 'f64', 'torch.DoubleTensor', { 2, 3, 4 } },
      { 'f16', 'torch.HalfTensor', { 7 } }, { 'bf16', 'torch.BFloat16Tensor', { 3, 1, 2 } },
      { 'i32', 'torch.IntTensor', { 4, 3 }, -1e9, 1e9 }, { 'i64', 'torch.LongTensor', { 5 }, -1e15, 1e15 },
      { 'u8', 'torch.ByteTensor', { 2, 9 }, 0, 256 }, { 'bool', 'torch.BoolTensor', { 3, 3 }, 0, 2 },
      { 'odd', 'torch.DoubleTensor', { 1, 1, 13, 1 } },
   }
   for _, s in ipairs(specs) do ts[s[1]] = util.rand_tensor(s[3], s[2], s[4] or -100, s[5] or 100) end
   ts.transposed = util.rand_tensor({ 4, 6 }, 'torch.FloatTensor'):t()
   ts.narrowed = util.rand_tensor({ 5, 7 }, 'torch.DoubleTensor'):narrow(2, 2, 3)
   ts.expanded = util.rand_tensor({ 3, 1 }, 'torch.FloatTensor'):expand(3, 4)
   ts.empty = torch.FloatTensor(0)
   local scalar = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, {})
   scalar:fill(math.random() * 10 - 5)
   ts.scalar = scalar
   return ts
end

describe('checkpoint: round trip', function()
   it('saves and loads random tensors of every dtype and layout bit for bit', function()
      for rep = 1, 3 do
         local ts = random_set()
         local path = tmp('rt' .. rep .. '.safetensors')
         checkpoint.save(path, ts)
         local back, meta = checkpoint.load(path)
         local n = 0
         for k, v in pairs(ts) do
            n = n + 1
            assert.is_truthy(back[k], 'missing ' .. k)
            assert_same(back[k], v, k)
            assert.is_true(back[k]:isContiguous())
         end
         for k in pairs(back) do assert.is_truthy(ts[k], 'extra tensor ' .. k) end
         assert.are.equal(14, n)
         assert.are.same({}, meta)
      end
   end)

   it('writes no scratch: the file is the header plus exactly the tensor bytes', function()
      local ts = { a = util.rand_tensor({ 100, 30 }, 'torch.FloatTensor'),
         b = util.rand_tensor({ 17 }, 'torch.DoubleTensor') }
      local path = tmp('size.safetensors')
      checkpoint.save(path, ts)
      local s = read_all(path)
      local hlen = 0
      for i = 8, 1, -1 do hlen = hlen * 256 + s:byte(i) end
      assert.are.equal(0, hlen % 8)
      assert.are.equal(8 + hlen + 100 * 30 * 4 + 17 * 8, #s)
   end)

   it('round-trips metadata: strings as they are, numbers and tables as JSON', function()
      local meta = {
         epoch = math.random(1, 1000), name = 'résumé "quoted"\n\ttab', lr = math.random(),
         flags = { true, false },
         optim = { learningRate = math.random(), momentum = 0.9, nested = { k = { 1, 2.5, -3 } } },
         text = '{"not": "decoded"}',
      }
      local path = tmp('meta.safetensors')
      checkpoint.save(path, { w = util.rand_tensor({ 2, 2 }) }, meta)
      local _, back = checkpoint.load(path)
      assert.are.same(meta, back)
      assert.are.equal('string', type(back.text))
   end)

   it('rejects bad arguments with named errors', function()
      local w = util.rand_tensor({ 2 })
      util.assert_error(function() checkpoint.save(tmp('x'), { w = 3 }) end, 'checkpoint.save', 'w is a number')
      util.assert_error(function() checkpoint.save(tmp('x'), { __metadata__ = w }) end, '__metadata__', 'reserved')
      util.assert_error(function() checkpoint.save(tmp('x'), { [1] = w }) end, 'names must be strings')
      util.assert_error(function() checkpoint.save(tmp('x'), { w = w }, { bad = 0 / 0 }) end, 'bad', 'nan')
      util.assert_error(function() checkpoint.save(tmp('x'), { w = w }, { f = print }) end, 'f is a function')
      util.assert_error(function() checkpoint.save(tmpdir .. '/no/such/dir/x.safetensors', { w = w }) end,
         'checkpoint.save', 'cannot create')
      util.assert_error(function() checkpoint.load(tmp('missing.safetensors')) end, 'checkpoint.load',
         'missing.safetensors', 'cannot open')
   end)
end)

describe('checkpoint: corrupt files give named errors', function()
   local good_header = '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
   local data16 = string.rep('\0\0\128\63', 4) -- four 1.0f

   it('reads a well-formed hand-made file', function()
      local t = checkpoint.load(craft('good.safetensors', good_header, data16))
      util.assert_close(t.w, { 1, 1, 1, 1 }, { atol = 0, rtol = 0 }, 'w')
   end)

   it('checks the header length against the file', function()
      util.assert_error(function() checkpoint.load(craft('short.safetensors', '', '', 0):sub(1)) end, 'header length 0')
      local p = tmp('tiny.safetensors')
      write_all(p, 'abc')
      util.assert_error(function() checkpoint.load(p) end, 'tiny.safetensors', 'file is 3 bytes')
      util.assert_error(function() checkpoint.load(craft('hl.safetensors', good_header, data16, 5000)) end,
         'hl.safetensors', 'header length 5000 at byte 0 exceeds the ' .. (#good_header + 16) .. ' bytes')
      util.assert_error(function() checkpoint.load(craft('huge.safetensors', good_header, data16, 2 ^ 62)) end,
         'exceeds')
   end)

   it('rejects bad JSON and a non-object header', function()
      util.assert_error(function() checkpoint.load(craft('json.safetensors', '{"w":{"dtype":"F32",', data16)) end,
         'json.safetensors', 'not valid JSON')
      util.assert_error(function() checkpoint.load(craft('arr.safetensors', '[1, 2]  ', '')) end,
         "does not start with '{'")
      util.assert_error(function() checkpoint.load(craft('trail.safetensors', '{} x', '')) end, 'unexpected data after')
   end)

   it('rejects offsets out of range, overlaps and dtype/shape mismatches', function()
      util.assert_error(function()
         checkpoint.load(craft('oob.safetensors', '{"w":{"dtype":"F32","shape":[1024],"data_offsets":[0,4096]}}',
            data16))
      end, 'oob.safetensors', "tensor 'w' data_offsets [0, 4096] exceed the 16 bytes after the header")
      util.assert_error(function()
         checkpoint.load(craft('mism.safetensors', '{"w":{"dtype":"F64","shape":[2,2],"data_offsets":[0,16]}}', data16))
      end, "tensor 'w' data_offsets [0, 16] hold 16 bytes but F64 2x2 needs 32")
      util.assert_error(function()
         checkpoint.load(craft('ovl.safetensors',
            '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},'
               .. '"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', data16))
      end, 'overlap', "'a'", "'b'")
      util.assert_error(function()
         checkpoint.load(craft('rev.safetensors', '{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}', data16))
      end, 'end before they begin')
      util.assert_error(function()
         checkpoint.load(craft('neg.safetensors', '{"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}}', data16))
      end, 'shape entry 0')
      util.assert_error(function()
         checkpoint.load(craft('frac.safetensors', '{"w":{"dtype":"F32","shape":[4],"data_offsets":[0.5,16]}}', data16))
      end, 'data_offsets is not a pair')
      util.assert_error(function()
         checkpoint.load(craft('dt.safetensors', '{"w":{"dtype":"U16","shape":[8],"data_offsets":[0,16]}}', data16))
      end, "unsupported dtype 'U16'")
      util.assert_error(function()
         checkpoint.load(craft('dup.safetensors',
            '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
               .. '"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', data16))
      end, "'w' appears twice")
      util.assert_error(function()
         checkpoint.load(craft('meta.safetensors', '{"__metadata__":{"a":1}}', ''))
      end, "__metadata__ value of 'a' is not a string")
      util.assert_error(function()
         checkpoint.load(craft('big.safetensors',
            '{"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,16]}}', data16))
      end, 'too large')
   end)

   it('never accepts a random truncation of a valid file silently', function()
      local path = tmp('trunc-src.safetensors')
      checkpoint.save(path, random_set())
      local s = read_all(path)
      for _ = 1, 20 do
         local cut = math.random(0, #s - 1)
         local p = tmp('trunc.safetensors')
         write_all(p, s:sub(1, cut))
         local ok, err = pcall(checkpoint.load, p)
         assert.is_false(ok, 'truncated at ' .. cut .. ' loaded')
         assert.is_truthy(tostring(err):find('trunc.safetensors', 1, true), err)
      end
   end)
end)

describe('checkpoint: atomic writes', function()
   it('a save that fails while writing leaves the old file and no temporary behind', function()
      local dir = tmp('atomic')
      os.execute('rm -rf ' .. dir .. ' && mkdir -p ' .. dir)
      local path = dir .. '/ck.safetensors'
      local old = { w = util.rand_tensor({ 3, 3 }) }
      checkpoint.save(path, old)
      local before = read_all(path)
      -- a child process limited to 64 KiB files (SIGXFSZ ignored, so write fails with EFBIG)
      local script = tmp('atomic_child.lua')
      write_all(script, ([[
         package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
         local torch = require 'moontorch'
         local ok, err = pcall(require('moontorch.checkpoint').save, %q, { big = torch.DoubleTensor(100000):fill(1) })
         io.write(ok and 'saved' or tostring(err))
      ]]):format(path))
      local build = os.getenv('MOONTORCH_BUILD') or ''
      local cmd = ("sh -c \"trap '' XFSZ; ulimit -f 64; MOONTORCH_BUILD='%s' luajit '%s'\" 2>&1"):format(build, script)
      local h = io.popen(cmd)
      local out = h:read('*a')
      h:close()
      assert.is_truthy(out:find('checkpoint.save', 1, true), out)
      assert.is_truthy(out:find('write failed', 1, true) or out:find('close failed', 1, true), out)
      assert.are.equal(before, read_all(path))
      local ls = io.popen('ls ' .. dir):read('*a')
      assert.are.equal('ck.safetensors\n', ls)
      assert_same(checkpoint.load(path).w, old.w, 'old file')
   end)

   it('a successful save replaces the file', function()
      local path = tmp('replace.safetensors')
      checkpoint.save(path, { a = util.rand_tensor({ 4 }) })
      local new = util.rand_tensor({ 2, 5 }, 'torch.FloatTensor')
      checkpoint.save(path, { b = new })
      local back = checkpoint.load(path)
      assert.is_nil(back.a)
      assert_same(back.b, new, 'b')
   end)
end)

describe('checkpoint: writers killed mid-save', function()
   pcall(ffi.cdef, 'int open(const char *path, int flags, ...); int flock(int fd, int op); int close(int fd);')
   local function listing(dir)
      local names = {}
      for name in io.popen('ls -A ' .. dir):lines() do names[#names + 1] = name end
      table.sort(names)
      return names
   end

   it('leave no temporaries after the next save, which spares live writers\' ones', function()
      local dir = tmp('killed')
      os.execute('rm -rf ' .. dir .. ' && mkdir -p ' .. dir)
      local path = dir .. '/ck.safetensors'
      local good = { w = util.rand_tensor({ 5, 7 }) }
      checkpoint.save(path, good)
      -- a child saving a 16 MiB checkpoint over and over, every element of save i equal to i
      local script = tmp('killed_child.lua')
      write_all(script, ([[
         package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
         local torch = require 'moontorch'
         local save = require('moontorch.checkpoint').save
         local big = torch.FloatTensor(4 * 2 ^ 20)
         for i = 1, 1000 do save(%q, { big = big:fill(i) }) end
      ]]):format(path))
      -- 20 times: start it, wait for its temporary, kill -9 it a few ms later; count the kills
      -- that left a temporary behind (the litter a later save must clear)
      local build = os.getenv('MOONTORCH_BUILD') or ''
      local out = io.popen(([[sh -c '
         n=0
         for i in $(seq 20); do
            MOONTORCH_BUILD="%s" luajit "%s" 2>>"%s.log" & p=$!
            t=0
            while [ ! -e "%s.tmp.$p" ] && [ $t -lt 300 ]; do sleep 0.01; t=$((t+1)); done
            sleep 0.0$((i %% 4))
            kill -9 $p; wait $p 2>/dev/null
            [ -e "%s.tmp.$p" ] && n=$((n+1))
         done
         echo litter $n' 2>&1]]):format(build, script, dir, path, path)):read('*a')
      local litter = tonumber(out:match('litter (%d+)'))
      local log = io.open(dir .. '.log') and read_all(dir .. '.log') or ''
      -- (how many kills land inside a write depends on the machine's speed: under the sanitizers
      -- about a third; one is enough for the cleanup below to have something to clear)
      assert.is_truthy(litter and litter >= 1, 'kills that left a temporary: ' .. out .. log)
      -- the file is whole: the first save's, or one of the children's
      local back = checkpoint.load(path)
      if back.w then assert_same(back.w, good.w, 'the first save')
      else
         local big = back.big
         assert.are.equal(4 * 2 ^ 20, big:nElement())
         assert.are.equal(big:min(), big:max(), 'a child save is one value throughout')
      end
      -- a live writer's temporaries: one named after a living pid (1), one after a dead pid but
      -- locked, as a writer on another host sharing the folder holds it
      local dead = tonumber(io.popen('sh -c \'echo $$\''):read('*a'))
      write_all(path .. '.tmp.1', 'live')
      local fd = ffi.C.open(path .. '.tmp.' .. dead, 66, ffi.cast('int', 438)) -- O_RDWR | O_CREAT, 0666
      assert.is_true(fd >= 0)
      assert.are.equal(0, ffi.C.flock(fd, 6)) -- LOCK_EX | LOCK_NB
      local newer = { w = util.rand_tensor({ 3, 2 }) }
      checkpoint.save(path, newer)
      assert.are.same({ 'ck.safetensors', 'ck.safetensors.tmp.1', 'ck.safetensors.tmp.' .. dead }, listing(dir))
      assert_same(checkpoint.load(path).w, newer.w, 'the newer save')
      ffi.C.close(fd) -- that writer dies: the next save clears its temporary
      checkpoint.save(path, good)
      assert.are.same({ 'ck.safetensors', 'ck.safetensors.tmp.1' }, listing(dir))
      assert_same(checkpoint.load(path).w, good.w, 'the last save')
      os.remove(path .. '.tmp.1')
   end)
end)

describe('checkpoint: PyTorch interop', function()
   it('reads the fixture written by spec/fixtures/gen_safetensors.py', function()
      local tensors, meta = checkpoint.load('spec/fixtures/safetensors_torch.safetensors')
      local n = 0
      for line in io.lines('spec/fixtures/safetensors_torch.txt') do
         local parts = {}
         for w in line:gmatch('%S+') do parts[#parts + 1] = w end
         if parts[1] == 'meta' then
            assert.are.equal(parts[3], meta[parts[2]])
         else
            n = n + 1
            local name, dt, nd = parts[1], parts[2], tonumber(parts[3])
            local t = tensors[name]
            assert.is_truthy(t, name)
            local shape, vals = {}, {}
            for i = 1, nd do shape[i] = tonumber(parts[3 + i]) end
            for i = 4 + nd, #parts do vals[#vals + 1] = tonumber(parts[i]) end
            assert.are.same(shape, T.sizes(t), name)
            local want = ({ F32 = T.FLOAT, F64 = T.DOUBLE, F16 = T.HALF, BF16 = T.BFLOAT16, I32 = T.INT, I64 = T.LONG,
               U8 = T.BYTE, BOOL = T.BOOL })[dt]
            assert.are.equal(want, t:dtype(), name)
            util.assert_close(#vals > 0 and util.flat(t) or {}, vals, { atol = 0, rtol = 0 }, name)
         end
      end
      assert.are.equal(10, n)
   end)

   it('writes files that PyTorch reads back (checked by gen_safetensors.py --check)', function()
      if not have_torch_python() then
         pending('no python3 with torch')
         return
      end
      local ts = random_set()
      ts.scalar = nil -- the text format below is per element; keep shapes non-0-d
      local path, txt = tmp('py.safetensors'), tmp('py.txt')
      checkpoint.save(path, ts, { epoch = '12', format = 'pt' })
      local lines = {}
      local names = {
         [T.FLOAT] = 'F32', [T.DOUBLE] = 'F64', [T.HALF] = 'F16', [T.BFLOAT16] = 'BF16',
         [T.INT] = 'I32', [T.LONG] = 'I64', [T.BYTE] = 'U8', [T.BOOL] = 'BOOL' }
      for k, t in pairs(ts) do
         local parts = { k, names[t:dtype()], tostring(#T.sizes(t)) } -- C's dims (an empty tensor is 1-d there)
         for _, s in ipairs(T.sizes(t)) do parts[#parts + 1] = tostring(s) end
         for _, v in ipairs(util.flat(t)) do parts[#parts + 1] = ('%.17g'):format(v) end
         lines[#lines + 1] = table.concat(parts, ' ')
      end
      lines[#lines + 1] = 'meta epoch 12'
      lines[#lines + 1] = 'meta format pt'
      write_all(txt, table.concat(lines, '\n') .. '\n')
      local h = io.popen(('%s spec/fixtures/gen_safetensors.py --check %s %s 2>&1'):format(PY, path, txt))
      local out = h:read('*a')
      h:close()
      assert.is_truthy(out:find('^ok 13 tensors'), out)
   end)
end)
