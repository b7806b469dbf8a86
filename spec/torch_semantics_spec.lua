-- torch_semantics_spec.lua: Torch7 behaviours that ordinary Torch7 code relies on: t.new,
-- per-type metatables, element-order pointwise ops, 1-d select giving numbers, comparison
-- results, numbers through torch.<math fn>, torch.class forms, empty tensors, the integer
-- types and the RNG state and generators. Inputs are fresh random values (spec/util.lua).
local torch = require 'moontorch'
local util = require 'spec.util'

local CPU_TYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' }

describe('t.new and per-type metatables', function()
   it('t.new() and t:new() give an empty tensor of the same type', function()
      for _, ty in ipairs(CPU_TYPES) do
         local t = util.rand_tensor({ 3, 5 }, ty, 0, 9)
         for _, e in ipairs { t.new(), t:new() } do
            assert.equal(ty, e:type())
            assert.equal(0, e:nElement())
            assert.is_false(e == t)
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
   it('broadcast where shapes allow (broadcasting wins)', function()
      local a, av = util.rand_tensor({ 3, 1 }, 'torch.DoubleTensor')
      local b, bv = util.rand_tensor({ 1, 3 }, 'torch.DoubleTensor')
      local r = torch.add(a, b)
      assert.same({ 3, 3 }, r:size():totable())
      local rv = util.flat(r)
      for i = 1, 3 do for j = 1, 3 do util.assert_close({ rv[(i - 1) * 3 + j] }, { av[i] + bv[j] }) end end
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
