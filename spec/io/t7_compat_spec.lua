-- t7_compat_spec.lua: reading Torch7 files assembled byte by byte from the format's description
-- (binary, 4-byte longs, Torch7's ascii text, files from before class versions, cutorch and
-- cudnn classes) and clear errors for damaged or unsafe files (csrc/io/t7.c). A ResNet-50 round
-- trip is in io/t7_models_spec.lua.
local torch = require 'moontorch'
require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local ffi = require 'ffi'

local tmp = util.tmp_namer()

-- little-endian packers, as Torch7's binary DiskFile writes on x86
local function pack(ctype, v, n) return ffi.string(ffi.new(ctype .. '[1]', v), n) end
local function int(v) return pack('int32_t', v, 4) end
local function long(v) return pack('int64_t', v, 8) end
local function long4(v) return pack('int32_t', v, 4) end
local function double(v) return pack('double', v, 8) end
local function float(v) return pack('float', v, 4) end
local function chars(s) return int(#s) .. s end
local function number(v) return int(1) .. double(v) end
local function string_(s) return int(2) .. chars(s) end
local function boolean(b) return int(5) .. int(b and 1 or 0) end
local function table_(index, pairs_) -- pairs_: list of {key bytes, value bytes}
   local out = { int(3), int(index), int(#pairs_) }
   for _, kv in ipairs(pairs_) do out[#out + 1] = kv[1] .. kv[2] end
   return table.concat(out)
end
local function torch_(index, class, body, legacy)
   return int(4) .. int(index) .. (legacy and '' or chars('V 1')) .. chars(class) .. body
end
local function tensor(index, class, sizes, strides, offset, storage, L)
   L = L or long
   local out = { int(#sizes) }
   for _, s in ipairs(sizes) do out[#out + 1] = L(s) end
   for _, s in ipairs(strides) do out[#out + 1] = L(s) end
   out[#out + 1] = L(offset)
   return torch_(index, class, table.concat(out) .. storage)
end
local function storage(index, class, values, packer, L)
   local out = { (L or long)(#values) }
   for _, v in ipairs(values) do out[#out + 1] = packer(v) end
   return torch_(index, class, table.concat(out))
end

-- element (i, j) of a 2-d view of a flat list: offset (1-based), strides
local function at(flat, offset, strides, i, j) return flat[offset + (i - 1) * strides[1] + (j - 1) * strides[2]] end

local function assert_view(t, flat, sizes, strides, offset, what)
   assert.are.same(sizes, T.sizes(t), what .. ': sizes')
   for i = 1, sizes[1] do
      for j = 1, sizes[2] do
         assert.are.equal(at(flat, offset, strides, i, j), t[i][j], ('%s[%d][%d]'):format(what, i, j))
      end
   end
end

describe('reading Torch7 files assembled from the format', function()
   it('reads a binary file: numbers, strings, booleans, a strided float tensor, a shared double storage', function()
      local fl = {}
      for i = 1, 9 do fl[i] = math.floor((math.random() - 0.5) * 2 ^ 20) / 64 end -- exact in float
      local dl = util.rand_flat(6, -1e3, 1e3)
      local bytes = table_(1, {
         { string_('x'), tensor(2, 'torch.FloatTensor', { 2, 3 }, { 1, 2 }, 3,
            storage(3, 'torch.FloatStorage', fl, float)) },
         { string_('d1'), tensor(4, 'torch.DoubleTensor', { 2, 2 }, { 2, 1 }, 1,
            storage(5, 'torch.DoubleStorage', dl, double)) },
         -- a second tensor on storage 5: only its reference index is written
         { string_('d2'), tensor(6, 'torch.DoubleTensor', { 2, 2 }, { 1, 2 }, 3, int(4) .. int(5)) },
         { number(1), string_('one\0\n') }, { number(-2.5), boolean(true) },
         { string_('no'), boolean(false) }, { string_('pi'), number(math.pi) },
         { string_('nest'), table_(7, { { number(1), table_(8, {}) }, { number(2), int(3) .. int(8) } }) },
      })
      local back = torch.deserialize(bytes)
      assert.are.equal('torch.FloatTensor', back.x:type())
      assert_view(back.x, fl, { 2, 3 }, { 1, 2 }, 3, 'x')
      assert_view(back.d1, dl, { 2, 2 }, { 2, 1 }, 1, 'd1')
      assert_view(back.d2, dl, { 2, 2 }, { 1, 2 }, 3, 'd2')
      back.d1[2][1] = 99 -- d1 and d2 share the storage: element 3
      assert.are.equal(99, back.d2[1][1])
      assert.are.equal('one\0\n', back[1])
      assert.are.equal(true, back[-2.5])
      assert.are.equal(false, back.no)
      assert.are.equal(math.pi, back.pi)
      assert.are.equal(back.nest[1], back.nest[2])
   end)

   it("reads 4-byte longs with format 'b32' and class names from before versions", function()
      local il = {}
      for i = 1, 7 do il[i] = math.random(-2 ^ 31, 2 ^ 31 - 1) end
      local bytes = tensor(1, 'torch.IntTensor', { 3, 2 }, { 2, 1 }, 2,
         storage(2, 'torch.IntStorage', il, function(v) return pack('int32_t', v, 4) end, long4), long4)
      local t = torch.deserialize(bytes, 'b32')
      assert_view(t, il, { 3, 2 }, { 2, 1 }, 2, 'b32')
      local legacy = torch_(1, 'torch.LongTensor', int(1) .. long(3) .. long(1) .. long(1) ..
         torch_(2, 'torch.LongStorage', long(3) .. long(-5) .. long(2 ^ 40) .. long(7), true), true)
      assert.are.same({ -5, 2 ^ 40, 7 }, torch.deserialize(legacy):totable())
   end)

   it("reads Torch7's ascii text", function()
      local v = util.rand_flat(4, -10, 10)
      local txt = table.concat({
         '3', '1', '3', -- table #1 of 3 pairs
         '2', '1', 'w', '4', '2', '3', 'V 1', '18', 'torch.DoubleTensor',
         '2', '2 2', '2 1', '1', '4', '3', '3', 'V 1', '19', 'torch.DoubleStorage', '4',
         ('%.17g %.17g %.17g %.17g'):format(v[1], v[2], v[3], v[4]),
         '2', '4', 'name', '2', '9', 'two\nlines',
         '1', '3', '5', '1',
      }, '\n') .. '\n'
      local back = torch.deserialize(txt, 'ascii')
      assert_view(back.w, v, { 2, 2 }, { 2, 1 }, 1, 'ascii w')
      assert.are.equal('two\nlines', back.name)
      assert.are.equal(true, back[3])
      -- ByteStorage elements are raw bytes in ascii files
      local raw = '4\n1\n3\nV 1\n16\ntorch.ByteTensor\n1\n3\n1\n1\n4\n2\n3\nV 1\n17\ntorch.ByteStorage\n3\n\0\n\255\n'
      assert.are.same({ 0, 10, 255 }, torch.deserialize(raw, 'ascii'):totable())
   end)

   it('loads cutorch tensors as CPU tensors and cudnn modules as nn ones', function()
      local w, b = util.rand_flat(6, -1, 1), util.rand_flat(2, -1, 1)
      local function fstore(i, vals) return storage(i, 'torch.CudaStorage', vals, float) end
      local bytes = torch_(1, 'cudnn.Linear', table_(2, {
         { string_('weight'), tensor(3, 'torch.CudaTensor', { 2, 3 }, { 3, 1 }, 1, fstore(4, w)) },
         { string_('bias'), tensor(5, 'torch.CudaTensor', { 2 }, { 1 }, 1, fstore(6, b)) },
         { string_('gradWeight'), tensor(7, 'torch.CudaTensor', { 2, 3 }, { 3, 1 }, 1, fstore(8, w)) },
         { string_('gradBias'), tensor(9, 'torch.CudaTensor', { 2 }, { 1 }, 1, fstore(10, b)) },
         { string_('output'), tensor(11, 'torch.CudaTensor', {}, {}, 1, int(0)) },
         { string_('gradInput'), tensor(12, 'torch.CudaTensor', {}, {}, 1, int(0)) },
         { string_('train'), boolean(true) }, { string_('_type'), string_('torch.CudaTensor') },
      }))
      local m = torch.deserialize(bytes)
      assert.are.equal('nn.Linear', torch.type(m))
      assert.are.equal('torch.FloatTensor', m.weight:type())
      assert.are.equal('torch.FloatTensor', m._type)
      local x = util.rand_flat(3, -1, 1)
      local y = m:forward(torch.FloatTensor(x))
      for i = 1, 2 do
         local want = b[i]
         for j = 1, 3 do want = want + w[(i - 1) * 3 + j] * x[j] end
         assert.is_true(math.abs(y[i] - want) < 1e-5, ('output %d: %g, expected %g'):format(i, y[i], want))
      end
   end)
end)

describe('damaged and unsafe files', function()
   local good = table_(1, {
      { string_('t'), tensor(2, 'torch.FloatTensor', { 2, 2 }, { 2, 1 }, 1,
         storage(3, 'torch.FloatStorage', { 1, 2, 3, 4 }, float)) },
      { number(5), table_(4, { { boolean(true), string_('yes') } }) },
   })

   it('fails with a clear error at every truncation of a valid file, in both formats', function()
      assert.are.equal(4, torch.deserialize(good).t[2][2])
      for n = 0, #good - 1 do
         util.assert_error(function() torch.deserialize(good:sub(1, n)) end, 'torch.deserialize: string: byte ')
      end
      local txt = torch.serialize(torch.deserialize(good), 'ascii')
      for n = 0, #txt - 1, 3 do
         local ok, err = pcall(torch.deserialize, txt:sub(1, n), 'ascii')
         -- a cut inside the last number may still read as a shorter number; anything else fails
         assert.is_true(ok or tostring(err):find('torch.deserialize: string: byte ', 1, true) ~= nil, tostring(err))
      end
   end)

   it('refuses functions of every kind unless code is allowed', function()
      for _, tag in ipairs { 6, 7, 8 } do
         -- tag 6 has no reference index; its upvalue table is then object 2
         local fn = tag == 6 and int(6) .. chars('\27LJ') .. table_(2, {}) or int(tag) .. int(2) .. chars('\27LJ')
            .. table_(3, {})
         local bytes = table_(1, { { string_('f'), fn } })
         util.assert_error(function() torch.deserialize(bytes) end, 'byte 21', 'functions are not loaded',
            'allowCode = true')
         -- allowed, the bytes are loaded as code: these are not valid bytecode
         util.assert_error(function() torch.deserialize(bytes, nil, { allowCode = true }) end, 'byte 21',
            'bytecode does not load')
      end
      -- a function's upvalues must be a table
      util.assert_error(function() torch.deserialize(int(8) .. int(1) .. chars('\27LJ') .. number(1)) end,
         'upvalues are not a table')
   end)

   it('refuses lengths and counts beyond the bytes left', function()
      util.assert_error(function() torch.deserialize(int(2) .. int(2 ^ 31 - 1) .. 'abc') end, 'byte 8',
         'needs 2147483647 bytes, 3 are left')
      util.assert_error(function() torch.deserialize(int(2) .. int(-3) .. 'abc') end, 'negative length')
      util.assert_error(function() torch.deserialize(int(3) .. int(1) .. int(2 ^ 30)) end, 'table of 1073741824 pairs')
      util.assert_error(function() torch.deserialize(torch_(1, 'torch.DoubleStorage', long(2 ^ 60))) end,
         'storage of 1152921504606846976 float64 elements')
      util.assert_error(function() torch.deserialize(torch_(1, 'torch.DoubleStorage', long(-1))) end, 'negative')
   end)

   it('refuses bad references, unknown tags and classes, and deep nesting', function()
      util.assert_error(function() torch.deserialize(table_(1, { { number(1), int(3) .. int(5) } })) end,
         'byte 28', 'bad reference index 5')
      util.assert_error(function() torch.deserialize(table_(1, { { number(1), int(4) .. int(1) } })) end,
         'another type')
      util.assert_error(function() torch.deserialize(int(9)) end, 'unknown type tag 9')
      util.assert_error(function()
         torch.deserialize(table_(1, { { number(1), torch_(2, 'foo.Bar', table_(3, {})) } }))
      end, 'byte 24', 'class foo.Bar is not defined here')
      util.assert_error(function() torch.deserialize(torch_(1, 'nn.NoSuchLayer', table_(2, {}))) end, 'nn.NoSuchLayer')
      util.assert_error(function() torch.deserialize(torch_(1, 'foo Bar', table_(2, {}))) end,
         'class name has a byte 32')
      util.assert_error(function() torch.deserialize(torch_(1, 'foo\0', table_(2, {}))) end,
         'class name has a byte 0')
      util.assert_error(function() torch.deserialize(torch_(1, 'torch.ComplexTensor', '')) end, 'no such dtype')
      util.assert_error(function() torch.deserialize(torch_(1, 'torch.File', number(1))) end, 'no field table')
      util.assert_error(function() torch.deserialize(torch_(1, 'bad name!', '')) end, 'class name')
      local deep = ''
      for i = 1, 300 do deep = deep .. int(3) .. int(i) .. int(1) .. number(1) end
      util.assert_error(function() torch.deserialize(deep) end, 'nested deeper than')
   end)

   it('refuses tensors that do not fit their storage', function()
      local function fstore(n)
         local v = {}
         for i = 1, n do v[i] = i end
         return storage(2, 'torch.FloatStorage', v, float)
      end
      util.assert_error(function()
         torch.deserialize(tensor(1, 'torch.FloatTensor', { 2, 3 }, { 3, 1 }, 2, fstore(6)))
      end, 'reaches element 7 of a storage of 6')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.FloatTensor', { 2 }, { -1 }, 2, fstore(6))) end,
         'out of range')
      util.assert_error(function()
         torch.deserialize(tensor(1, 'torch.FloatTensor', { 2 ^ 40, 2 ^ 40 }, { 2 ^ 40, 2 ^ 40 }, 1, fstore(6)))
      end, 'overflows')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.FloatTensor', { 1, 1, 1, 1, 1, 1, 1, 1, 1 },
         { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 1, fstore(1))) end, '9 dimensions')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.DoubleTensor', { 2 }, { 1 }, 1, fstore(6))) end,
         'float64 tensor has a float32 storage')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.FloatTensor', { 2 }, { 1 }, 1, int(0))) end,
         'no storage')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.FloatTensor', { 1 }, { 1 }, 0, fstore(0))) end,
         'offset 0 is below 1')
      util.assert_error(function() torch.deserialize(tensor(1, 'torch.FloatTensor', {}, {}, 2, fstore(1))) end,
         'reaches element 2 of a storage of 1')
      util.assert_error(function() torch.deserialize(torch_(1, 'torch.BoolStorage', long(2) .. '\1\2')) end,
         'not 0 or 1')
   end)

   it('names the file and the byte in torch.load errors', function()
      local path = tmp('broken.t7')
      util.write_bytes(path, good:sub(1, 50))
      util.assert_error(function() torch.load(path) end, 'torch.load: ' .. path .. ': byte ')
      util.write_bytes(path, 'garbage\n')
      util.assert_error(function() torch.load(path, 'ascii') end, path, 'byte 0', "'garbage'")
      util.assert_error(function() torch.load(path, 'b16') end, "'binary', 'ascii', 'b32' or 'b64'")
   end)
end)
