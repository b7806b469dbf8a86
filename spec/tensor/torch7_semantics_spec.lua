-- torch7_semantics_spec.lua: Torch7 behaviours that ordinary Torch7 code relies on: t.new,
-- per-type metatables, element-order pointwise ops, 1-d select giving numbers, comparison
-- results, numbers through torch.<math fn>, torch.class forms, empty tensors, the integer
-- types and the RNG state and generators. Inputs are fresh random values (spec/util.lua).
local torch = require 'moontorch'
local util = require 'spec.util'

local CPU_TYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' }

describe('t.new and per-type metatables', function()
   it('t.new() gives an empty tensor of the same type, t:new() a tensor on t\'s storage', function()
      for _, ty in ipairs(CPU_TYPES) do
         local t = util.rand_tensor({ 3, 5 }, ty, 0, 9)
         local e = t.new()
         assert.equal(ty, e:type())
         assert.equal(0, e:nElement())
         -- t:new() is torch.XTensor(t): same storage, sizes, strides and offset (Torch7's constructor)
         local tn = t:narrow(2, 2, 3)
         for _, a in ipairs { tn:new(), tn.new(tn) } do
            assert.equal(ty, a:type())
            assert.is_false(a == tn)
            assert.is_true(a:isSetTo(tn))
            a[2][3] = 7
            assert.equal(7, t[2][4])
         end
         local s = t.new(4, 3)
         assert.equal(ty, s:type())
         assert.same({ 4, 3 }, s:size():totable())
         local u = t:new(2, 7)
         assert.same({ 2, 7 }, u:size():totable())
         local v = t.new(torch.LongStorage { 5 })
         assert.same({ 5 }, v:size():totable())
         local w = t:new({ { 1, 2 }, { 3, 4 } })
         assert.equal(ty, w:type())
         assert.same({ { 1, 2 }, { 3, 4 } }, w:totable())
      end
   end)

   it('getmetatable gives each type its own method table', function()
      local F = torch.getmetatable('torch.FloatTensor')
      local D = torch.getmetatable('torch.DoubleTensor')
      assert.is_table(F)
      assert.is_not.equal(F, D)
      assert.equal(torch.getmetatable('torch.FloatTensor'), F)
      assert.is_function(F.add)
      assert.is_function(D.size)
      for _, ty in ipairs(CPU_TYPES) do assert.is_table(torch.getmetatable(ty)) end
      assert.is_table(torch.getmetatable('torch.CudaTensor'))
      assert.is_table(torch.getmetatable('torch.CudaDoubleTensor'))

      local k = math.random(1000)
      F.semSpecNew = function(self, x) return self:sum() + x + k end
      local f, vals = util.rand_tensor({ 4, 3 }, 'torch.FloatTensor')
      local s = 0
      for _, v in ipairs(vals) do s = s + v end
      util.assert_close({ f:semSpecNew(2) }, { s + 2 + k }, { atol = 1e-4 }, 'added method')
      local d = util.rand_tensor({ 2 }, 'torch.DoubleTensor')
      util.assert_error(function() return d:semSpecNew(1) end, 'semSpecNew')
      -- overriding a shared method on one type leaves the others alone
      D.semSpecSize = nil
      local old = D.nElement
      D.nElement = function() return -k end
      assert.equal(-k, d:nElement())
      assert.equal(12, f:nElement())
      D.nElement = nil
      assert.equal(old, D.nElement)
      assert.equal(2, d:nElement())
      F.semSpecNew = nil
      util.assert_error(function() return f:semSpecNew(1) end, 'semSpecNew')
   end)
end)

describe('pointwise ops on equal element counts', function()
   local function flat_ref(x, y, f)
      local r = {}
      for i = 1, #x do r[i] = f(x[i], y[i]) end
      return r
   end
   it('work in element order with the first operand\'s shape when shapes do not broadcast', function()
      local cases = { { { 2, 3 }, { 3, 2 } }, { { 6 }, { 2, 3 } }, { { 3, 5 }, { 15 } }, { { 5, 3 }, { 3, 5 }, true } }
      for _, c in ipairs(cases) do
         local a, av = util.rand_tensor(c[1], 'torch.DoubleTensor')
         local b, bv = util.rand_tensor(c[2], 'torch.DoubleTensor')
         if c[3] then -- a transposed (non-viewable) second operand goes through a copy
            b = b:t()
            bv = util.flat(b)
         end
         local r = torch.add(a, b)
         assert.same(c[1], r:size():totable())
         util.assert_close(r, flat_ref(av, bv, function(x, y) return x + y end), nil, 'add')
         util.assert_close(torch.cmul(a, b), flat_ref(av, bv, function(x, y) return x * y end), nil, 'cmul')
         util.assert_close(torch.cdiv(a, b), flat_ref(av, bv, function(x, y) return x / y end), nil, 'cdiv')
         util.assert_close(torch.lt(a, b), flat_ref(av, bv, function(x, y) return x < y and 1 or 0 end), nil, 'lt')
         local c3, cv = util.rand_tensor(c[2], 'torch.DoubleTensor')
         util.assert_close(torch.addcmul(a, 0.5, b, c3), flat_ref(av, flat_ref(bv, cv, function(x, y) return x * y end),
            function(x, y) return x + 0.5 * y end), nil, 'addcmul')
         local x = a:clone()
         x:add(b)
         assert.same(c[1], x:size():totable())
         util.assert_close(x, flat_ref(av, bv, function(p, q) return p + q end), nil, 'in-place add')
      end
   end)
   it('follow element order even where the shapes would broadcast (Torch7\'s rule wins)', function()
      for _, c in ipairs { { { 3, 1 }, { 1, 3 } }, { { 3 }, { 3, 1 } }, { { 1, 4 }, { 4 } } } do
         local a, av = util.rand_tensor(c[1], 'torch.DoubleTensor')
         local b, bv = util.rand_tensor(c[2], 'torch.DoubleTensor', 1, 2)
         for _, op in ipairs { 'add', 'cdiv', 'cmax' } do
            local f = ({ add = function(x, y) return x + y end, cdiv = function(x, y) return x / y end,
               cmax = math.max })[op]
            local r = torch[op](a, b)
            assert.same(c[1], r:size():totable())
            util.assert_close(r, flat_ref(av, bv, f), nil, op)
            local res = torch.DoubleTensor(7)
            torch[op](res, a, b)
            assert.same(c[1], res:size():totable())
         end
         local x = a:clone():cmul(b)
         assert.same(c[1], x:size():totable())
         util.assert_close(x, flat_ref(av, bv, function(p, q) return p * q end), nil, 'in-place cmul')
         assert.same(c[1], a:clone():copy(b):size():totable())
      end
   end)
   it('broadcast (numpy\'s rules) where the element counts differ', function()
      local a, av = util.rand_tensor({ 3, 1 }, 'torch.DoubleTensor')
      local b, bv = util.rand_tensor({ 1, 4 }, 'torch.DoubleTensor')
      local r = torch.add(a, b)
      assert.same({ 3, 4 }, r:size():totable())
      local rv = util.flat(r)
      for i = 1, 3 do for j = 1, 4 do util.assert_close({ rv[(i - 1) * 4 + j] }, { av[i] + bv[j] }) end end
   end)
   it('reject different element counts that do not broadcast', function()
      util.assert_error(function() return torch.add(torch.rand(2, 3), torch.rand(4)) end, 'add', 'broadcast')
      util.assert_error(function() return torch.cmul(torch.rand(5), torch.rand(2, 3)) end, 'cmul')
   end)
end)

describe('1-d select', function()
   it('t:select(1, i) and t[i] on a 1-d tensor give numbers', function()
      for _, ty in ipairs(CPU_TYPES) do
         local n = math.random(3, 9)
         local t = util.rand_tensor({ n }, ty, 0, 100)
         local vals = util.flat(t) -- as stored (float32 rounding)
         for i = 1, n do
            assert.equal('number', type(t:select(1, i)))
            assert.equal(vals[i], t:select(1, i))
            assert.equal(vals[i], t[i])
            assert.equal(vals[n + 1 - i], t:select(1, -i))
         end
         util.assert_error(function() return t:select(1, n + 1) end, 'select', 'out of range')
         -- a row of a matrix is still a view
         local m = util.rand_tensor({ 2, n }, ty, 0, 100)
         local mv = util.flat(m)
         local row = m:select(1, 2)
         assert.is_true(torch.isTensor(row))
         assert.equal(mv[n + 3], row:select(1, 3))
      end
   end)
end)

describe('comparison results and numbers through torch functions', function()
   local cmp = { eq = function(x, y) return x == y end, ne = function(x, y) return x ~= y end,
      lt = function(x, y) return x < y end, le = function(x, y) return x <= y end,
      gt = function(x, y) return x > y end, ge = function(x, y) return x >= y end }
   it('res:gt(a, b) writes a result of the input\'s type or a ByteTensor', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.IntTensor', 'torch.LongTensor' } do
         local a = util.rand_tensor({ 3, 5 }, ty, -3, 3)
         local b = util.rand_tensor({ 3, 5 }, ty, -3, 3)
         local av, bv = util.flat(a), util.flat(b)
         local v = bv[math.random(#bv)]
         for name, f in pairs(cmp) do
            local want, wants = {}, {}
            for i = 1, #av do
               want[i] = f(av[i], bv[i]) and 1 or 0
               wants[i] = f(av[i], v) and 1 or 0
            end
            for _, rty in ipairs { ty, 'torch.ByteTensor' } do
               local res = torch[rty:match('torch%.(.*)')]()
               assert.equal(res, res[name](res, a, b))
               assert.equal(rty, res:type())
               assert.same({ 3, 5 }, res:size():totable())
               util.assert_close(res, want, nil, name .. ' into ' .. rty)
               torch[name](res, a, v)
               util.assert_close(res, wants, nil, name .. ' scalar into ' .. rty)
            end
            assert.equal('torch.ByteTensor', a[name](a, b):type())
         end
         local other = ty == 'torch.DoubleTensor' and torch.FloatTensor() or torch.DoubleTensor()
         util.assert_error(function() return other:gt(a, b) end, 'gt', 'ByteTensor')
      end
   end)

   it('torch.<unary fn>(number) returns a number', function()
      local x = (math.random() - 0.5) * 8
      local p = math.random() * 5 + 0.1
      local sig = function(v) return 1 / (1 + math.exp(-v)) end
      local refs = {
         abs = { x, math.abs(x) }, neg = { x, -x }, sqrt = { p, math.sqrt(p) }, rsqrt = { p, 1 / math.sqrt(p) },
         exp = { x, math.exp(x) }, log = { p, math.log(p) }, tanh = { x, math.tanh(x) }, sigmoid = { x, sig(x) },
         floor = { x, math.floor(x) }, ceil = { x, math.ceil(x) }, log1p = { p, math.log(1 + p) },
         expm1 = { x, math.exp(x) - 1 }, square = { x, x * x }, cinv = { x, 1 / x }, sin = { x, math.sin(x) },
         cos = { x, math.cos(x) }, relu = { x, math.max(x, 0) }, sign = { x, x > 0 and 1 or -1 },
      }
      for name, r in pairs(refs) do
         local got = torch[name](r[1])
         assert.equal('number', type(got), name)
         util.assert_close({ got }, { r[2] }, { atol = 1e-12, rtol = 1e-12 }, 'torch.' .. name)
      end
      assert.equal(2, torch.round(2.4))
      assert.equal(3, torch.round(2.5))
      assert.equal(-3, torch.round(-2.5))
      assert.equal(3, torch.abs(-3))
      assert.equal(2, torch.sqrt(4))
      util.assert_close({ torch.pow(p, x) }, { p ^ x }, nil, 'pow')
      assert.equal(math.min(math.max(x, -1), 1), torch.clamp(x, -1, 1))
      util.assert_error(function() return torch.log('x') end, 'log')
   end)
end)

describe('torch.class forms, isTypeOf, table.unpack, randperm', function()
   local function uniq(prefix) return prefix .. math.random(1, 1e9) end
   it('torch.class(name [, parent] [, module]) and (name, module)', function()
      local base = uniq('Sem')
      local Base = torch.class(base)              -- a global
      function Base:__init(x) self.x = x end
      function Base:get() return self.x end
      local k = math.random(100)
      assert.equal(k, rawget(_G, base)(k):get())
      local mod = {}
      local B2 = torch.class(uniq('semmod.Leaf'), mod)  -- name with a table: defined in the table
      local leafname = next(mod)
      assert.is_not_nil(leafname)
      function B2:__init() self.y = k end
      assert.equal(k, mod[leafname]().y)
      local mod2 = {}
      local childname = uniq('semmod.Child')
      local Child, parent = torch.class(childname, base, mod2)
      assert.equal(Base, parent)
      function Child:__init(x) parent.__init(self, 2 * x) end
      local c = mod2[childname:match('%.(.*)')](k)
      assert.equal(2 * k, c:get())
      assert.equal(childname, torch.type(c))
      util.assert_error(function() torch.class(uniq('S'), 3) end, 'torch.class')
      -- isTypeOf: names, classes, constructors, patterns; plain names must match whole
      assert.is_true(torch.isTypeOf(c, base))
      assert.is_true(torch.isTypeOf(c, Base))
      assert.is_true(torch.isTypeOf(c, mod2[childname:match('%.(.*)')]))
      assert.is_true(torch.isTypeOf(c, '^semmod%.Ch'))
      assert.is_true(torch.isTypeOf(c, 'Sem%d+'))
      assert.is_false(torch.isTypeOf(c, 'semmod.Chi'))
      assert.is_false(torch.isTypeOf(rawget(_G, base)(1), childname))
      assert.is_false(torch.isTypeOf(c, '^nn%.'))
      local t = torch.FloatTensor(2)
      assert.is_true(torch.isTypeOf(t, 'torch.FloatTensor'))
      assert.is_true(torch.isTypeOf(t, torch.FloatTensor))
      assert.is_true(torch.isTypeOf(t, 'torch.*Tensor'))
      assert.is_false(torch.isTypeOf(t, 'torch.DoubleTensor'))
      assert.is_false(torch.isTypeOf(3, 'number'))
   end)
   it('table.unpack and randperm in the default type', function()
      local a, b, c = table.unpack { 3, 1, 2 }
      assert.same({ 3, 1, 2 }, { a, b, c })
      local n = math.random(5, 40)
      local old = torch.getdefaulttensortype()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         torch.setdefaulttensortype(ty)
         local p = torch.randperm(n)
         assert.equal(ty, p:type())
         local seen, sum = {}, 0
         for _, v in ipairs(util.flat(p)) do
            assert.is_true(v >= 1 and v <= n and not seen[v])
            seen[v] = true
            sum = sum + v
         end
         assert.equal(n * (n + 1) / 2, sum)
      end
      torch.setdefaulttensortype(old)
   end)
end)

describe('empty tensors (Torch7: no dimensions)', function()
   it('torch.Tensor(), t.new() and size-0 vectors have dim 0 and an empty size', function()
      for _, e in ipairs { torch.Tensor(), torch.DoubleTensor(0), torch.IntTensor():new(),
         torch.FloatTensor(torch.LongStorage {}), torch.rand(3):narrow(1, 2, 0) } do
         assert.equal(0, e:dim())
         assert.equal(0, e:nDimension())
         assert.equal(0, e:nElement())
         assert.equal(0, #e:size())
         assert.equal('torch.LongStorage', torch.type(e:size()))
         assert.equal(0, #e:stride())
         assert.same({}, e:totable())
         util.assert_error(function() return e:size(1) end, 'size', 'out of range')
         assert.truthy(tostring(e):find('with no dimension', 1, true))
      end
      -- resizing or viewing to an empty tensor's size keeps it empty (not a 1-element scalar)
      local e = torch.Tensor()
      local n = math.random(2, 9)
      local x = torch.rand(n)
      x:resize(e:size())
      assert.equal(0, x:nElement())
      assert.equal(0, x:dim())
      assert.equal(0, torch.Tensor():view(e:size()):nElement())
      x:resize(n):uniform()
      assert.equal(n, x:nElement())
      -- a zero size among others keeps its dimensions; a 1-element 0-d scalar stays one
      assert.equal(2, torch.Tensor(3, 0):dim())
      local v = math.random()
      local s = torch.DoubleTensor({ v }):view(torch.LongStorage {})
      assert.equal(0, s:dim())
      assert.equal(1, s:nElement())
      assert.equal(v, s:totable())
      local r = torch.DoubleTensor(5):resizeAs(s)
      assert.equal(1, r:nElement())
   end)
end)

describe('integer tensor types', function()
   local INTS = { { 'torch.CharTensor', 'char', -128, 127 }, { 'torch.ShortTensor', 'short', -32768, 32767 },
      { 'torch.IntTensor', 'int', -2 ^ 31, 2 ^ 31 - 1 }, { 'torch.LongTensor', 'long', -2 ^ 53, 2 ^ 53 },
      { 'torch.ByteTensor', 'byte', 0, 255 } }
   local function wrap(v, lo, hi) -- C's conversion to a narrower integer type: modulo 2^bits
      local span = hi - lo + 1
      return (v - lo) % span + lo
   end
   it('exist with Torch7 names, conversions and element sizes', function()
      for _, it_ in ipairs(INTS) do
         local ty, m = it_[1], it_[2]
         local t = torch[ty:match('torch%.(.*)')](3, 4)
         assert.equal(ty, t:type())
         assert.equal(ty, torch.DoubleTensor(2):fill(1)[m](torch.DoubleTensor(2):fill(1)):type())
         for _, conv in ipairs { 'char', 'short', 'int', 'long', 'byte', 'float', 'double' } do
            assert.is_function(t[conv])
         end
         assert.equal(ty, torch.getmetatable(ty).__typename)
      end
      local T = require 'moontorch.internal'
      assert.equal('torch.CudaCharTensor', T.typename(T.CHAR, 0))
   end)
   it('keep values in range, wrap like C and divide towards zero', function()
      for _, it_ in ipairs(INTS) do
         local ty, m, lo, hi = it_[1], it_[2], it_[3], it_[4]
         local small = math.min(hi, 100)
         local a = util.rand_tensor({ 3, 7 }, ty, math.max(lo, -100), small)
         local av = util.flat(a)
         local d = a:double()
         -- conversions from double truncate toward zero
         local src = util.rand_tensor({ 9 }, 'torch.DoubleTensor', math.max(lo, -100), small)
         local sv = util.flat(src)
         local want = {}
         for i, v in ipairs(sv) do want[i] = v < 0 and math.ceil(v) or math.floor(v) end
         util.assert_close(src[m](src), want, { atol = 0, rtol = 0 }, ty .. ' from double')
         -- integer division truncates (C, as Torch7); divisor != 0
         local q = math.random(2, 7)
         local dv = {}
         for i, v in ipairs(av) do
            local r = v / q
            dv[i] = r < 0 and math.ceil(r) or math.floor(r)
         end
         util.assert_close(torch.div(a, q), dv, { atol = 0, rtol = 0 }, ty .. ' div')
         -- sums accumulate in 64 bits; elementwise sums wrap like C
         local s = 0
         for _, v in ipairs(av) do s = s + v end
         assert.equal(s, a:sum())
         if hi < 2 ^ 31 then
            local w = {}
            for i, v in ipairs(av) do w[i] = wrap(v * 2 + hi, lo, hi) end
            util.assert_close(torch.add(torch.mul(a, 2), hi), w, { atol = 0, rtol = 0 }, ty .. ' wraps')
         end
         -- matrix product, max, sort against double references
         local b = util.rand_tensor({ 7, 2 }, ty, math.max(lo, -3), math.min(hi, 4))
         util.assert_close(torch.mm(torch.clamp(a, math.max(lo, -5), 5), b):double(),
            torch.mm(torch.clamp(d, math.max(lo, -5), 5), b:double()), { atol = 0, rtol = 0 }, ty .. ' mm')
         assert.equal(d:max(), a:max())
         util.assert_close(a:view(21):sort(), d:view(21):sort(), { atol = 0, rtol = 0 }, ty .. ' sort')
         -- comparisons and printing
         util.assert_close(a:gt(0), d:gt(0), nil, ty .. ' gt')
         assert.truthy(tostring(a):find(ty, 1, true))
      end
   end)
   it('round-trip through safetensors checkpoints', function()
      local ckpt = require 'moontorch.checkpoint'
      local dir = util.tmpdir()
      local c = util.rand_tensor({ 5, 3 }, 'torch.CharTensor', -128, 128)
      local s = util.rand_tensor({ 7 }, 'torch.ShortTensor', -32768, 32768)
      ckpt.save(dir .. '/i.safetensors', { c = c, s = s })
      local back = ckpt.load(dir .. '/i.safetensors')
      local r = back.tensors or back
      assert.equal('torch.CharTensor', r.c:type())
      assert.equal('torch.ShortTensor', r.s:type())
      util.assert_close(r.c, c, { atol = 0, rtol = 0 }, 'int8')
      util.assert_close(r.s, s, { atol = 0, rtol = 0 }, 'int16')
      os.execute(('rm -rf %q'):format(dir))
   end)
end)

describe('RNG state and generators', function()
   local function seed() return math.random(1, 2 ^ 40) end
   it('getRNGState is a ByteTensor copy; setRNGState replays the stream', function()
      torch.manualSeed(seed())
      torch.rand(math.random(1, 20))
      local st = torch.getRNGState()
      assert.equal('torch.ByteTensor', st:type())
      local copy = st:clone()
      local a = util.flat(torch.randn(17))
      local u = torch.uniform()
      assert.same(util.flat(copy), util.flat(st)) -- a copy: drawing does not change it
      assert.equal(st, torch.setRNGState(st))
      util.assert_close(torch.randn(17), a, { atol = 0, rtol = 0 }, 'replayed randn')
      assert.equal(u, torch.uniform())
      util.assert_error(function() torch.setRNGState(torch.ByteTensor(3)) end, 'setRNGState', 'ByteTensor')
      util.assert_error(function() torch.setRNGState(torch.FloatTensor(16)) end, 'setRNGState')
   end)

   it('generators have their own seeds and streams', function()
      local s = seed()
      local g1, g2 = torch.Generator(), torch.Generator()
      assert.equal('torch.Generator', torch.type(g1))
      torch.manualSeed(g1, s)
      torch.manualSeed(g2, s)
      assert.equal(s, torch.initialSeed(g1))
      torch.manualSeed(s + 1)
      assert.equal(s + 1, torch.initialSeed())
      -- the same seed gives the same stream as the default generator with that seed
      local x1 = { torch.random(g1), torch.uniform(g1, -2, 3), torch.normal(g1, 1, 2), torch.random(g1, 5, 9) }
      torch.manualSeed(s)
      local x0 = { torch.random(), torch.uniform(-2, 3), torch.normal(1, 2), torch.random(5, 9) }
      assert.same(x0, x1)
      assert.is_true(x1[2] >= -2 and x1[2] < 3 and x1[4] >= 5 and x1[4] <= 9 and x1[1] >= 1 and x1[1] <= 2 ^ 32)
      -- g2 was not advanced by g1's draws
      local x2 = { torch.random(g2), torch.uniform(g2, -2, 3), torch.normal(g2, 1, 2), torch.random(g2, 5, 9) }
      assert.same(x1, x2)
      -- tensor forms and factories take the generator too
      local n = math.random(5, 30)
      torch.manualSeed(g1, s)
      local a = torch.DoubleTensor(n):uniform(g1, -1, 1)
      local b = torch.DoubleTensor(n):normal(g1, 0, 3)
      local r = torch.rand(g1, 2, n)
      local p = torch.randperm(g1, n)
      torch.manualSeed(s)
      util.assert_close(torch.DoubleTensor(n):uniform(-1, 1), a, { atol = 0, rtol = 0 }, 'uniform(gen)')
      util.assert_close(torch.DoubleTensor(n):normal(0, 3), b, { atol = 0, rtol = 0 }, 'normal(gen)')
      util.assert_close(torch.rand(2, n), r, { atol = 0, rtol = 0 }, 'rand(gen)')
      util.assert_close(torch.randperm(n), p, { atol = 0, rtol = 0 }, 'randperm(gen)')
      for _, v in ipairs(util.flat(a)) do assert.is_true(v >= -1 and v < 1) end
      -- a generator's state round-trips on its own
      local st = torch.getRNGState(g2)
      local v = torch.DoubleTensor(n):bernoulli(g2, 0.5)
      torch.setRNGState(g2, st)
      util.assert_close(torch.DoubleTensor(n):bernoulli(g2, 0.5), v, { atol = 0, rtol = 0 }, 'bernoulli(gen)')
      local s2 = torch.seed(g2)
      assert.is_number(s2)
      assert.equal(s2, torch.initialSeed(g2))
      assert.equal(s + 1 ~= s2 and s or s, torch.initialSeed(g1)) -- g1 keeps its own
   end)
end)

describe('elementSize, equal, range/linspace/logspace methods', function()
   it('elementSize is the bytes per element', function()
      local sizes = { Double = 8, Float = 4, Half = 2, BFloat16 = 2, Long = 8, Int = 4, Short = 2, Char = 1, Byte = 1 }
      for name, n in pairs(sizes) do assert.equal(n, torch[name .. 'Tensor'](2):elementSize(), name) end
   end)
   it('t:range, t:linspace and t:logspace write t', function()
      local a = math.random() * 4 - 2
      local step = math.random() * 0.7 + 0.1
      local b = a + step * math.random(3, 11) + step / 3
      local want = {}
      for v = a, b + 1e-12, step do want[#want + 1] = v end
      local t = torch.DoubleTensor(2, 2)
      assert.equal(t, t:range(a, b, step))
      util.assert_close(t, want, { atol = 1e-12 }, 'range')
      assert.equal(torch.getdefaulttensortype(), torch.range(1, 4):type())
      local lo, hi = math.random(-9, 0), math.random(1, 9)
      local it_ = torch.IntTensor():range(lo, hi)
      assert.equal(hi - lo + 1, it_:nElement())
      assert.equal(lo, it_[1])
      local n = math.random(3, 12)
      local l = torch.DoubleTensor():linspace(a, b, n)
      local lw, pw = {}, {}
      for i = 1, n do
         lw[i] = a + (b - a) * (i - 1) / (n - 1)
         pw[i] = 10 ^ lw[i]
      end
      util.assert_close(l, lw, { atol = 1e-12 }, 'linspace')
      util.assert_close(torch.DoubleTensor(1):logspace(a, b, n), pw, { rtol = 1e-12 }, 'logspace')
   end)
   it('equal compares sizes and values', function()
      local a = util.rand_tensor({ 3, 4 }, 'torch.DoubleTensor')
      local b = a:clone()
      assert.is_true(a:equal(b))
      assert.is_true(torch.equal(a, b))
      b[{ math.random(3), math.random(4) }] = 5
      assert.is_false(a:equal(b))
      assert.is_false(a:equal(a:view(4, 3)))
   end)
end)
