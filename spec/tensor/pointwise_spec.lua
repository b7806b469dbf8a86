-- pointwise_spec.lua: elementwise math, comparisons, copy/fill, masks and operators, each
-- checked on fresh random inputs against a float64 reference computed here in Lua.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local floor, abs = math.floor, math.abs

local FLOATS = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }
local INTS = { 'torch.IntTensor', 'torch.LongTensor' }
local EXACT = { atol = 0, rtol = 0 }

local function tol(typename) return util.tol[typename] or EXACT end
local function is_float(typename) return T.dtypes[T.parse_typename(typename) + 1].is_float end

---------------------------------------------------------------------------------------------
-- inputs: a tensor of a given shape and layout with its row-major reference values

-- value generators
local gens = {
   any = function() return 2 * math.random() - 1 end,
   pos = function() return 0.1 + 1.9 * math.random() end,           -- logs, roots
   nonzero = function() return (math.random() < 0.5 and -1 or 1) * (0.5 + 1.5 * math.random()) end,
   int = function() return floor(21 * math.random()) - 10 end,       -- -10..10
   intnz = function() local v = floor(9 * math.random()) + 1 return math.random() < 0.5 and -v or v end,
   small = function() return floor(7 * math.random()) - 3 end,        -- -3..3 (for eq)
   byte = function() return floor(16 * math.random()) end,
}

local function map(flat, f)
   local r = {}
   for i = 1, #flat do r[i] = f(flat[i]) end
   return r
end

local function each_index(shape, fn)
   local n = util.numel(shape)
   local idx = {}
   for i = 1, #shape do idx[i] = 1 end
   for _ = 1, n do
      fn(idx)
      for d = #shape, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= shape[d] then break end
         idx[d] = 1
      end
   end
end

local function offset(shape, idx)
   local o = 0
   for d = 1, #shape do o = o * shape[d] + (idx[d] - 1) end
   return o + 1
end

-- make(shape, typename, gen, layout): layout 'contig', 'transposed' (last two dims swapped in
-- memory), 'narrowed' (a slice of a wider tensor) or 'expanded' (dim 1 broadcast, read-only)
local function make(shape, typename, gen, layout)
   gen = gens[gen or 'any']
   layout = layout or 'contig'
   local nd = #shape
   if layout == 'transposed' and nd < 2 then layout = 'narrowed' end
   if layout == 'expanded' and (nd < 1 or shape[1] == 1) then layout = 'narrowed' end
   local base_shape, to_base = {}, nil
   for i = 1, nd do base_shape[i] = shape[i] end
   if layout == 'transposed' then
      base_shape[nd - 1], base_shape[nd] = shape[nd], shape[nd - 1]
      to_base = function(idx)
         local b = { unpack(idx) }
         b[nd - 1], b[nd] = idx[nd], idx[nd - 1]
         return b
      end
   elseif layout == 'narrowed' and nd == 1 then -- every other element of a n x 2 tensor
      base_shape = { shape[1], 2 }
      to_base = function(idx) return { idx[1], 2 } end
   elseif layout == 'narrowed' then
      base_shape[nd] = shape[nd] + 3
      to_base = function(idx)
         local b = { unpack(idx) }
         b[nd] = idx[nd] + 2
         return b
      end
   elseif layout == 'expanded' then
      base_shape[1] = 1
      to_base = function(idx)
         local b = { unpack(idx) }
         b[1] = 1
         return b
      end
   end
   local flat = {}
   for i = 1, util.numel(base_shape) do flat[i] = gen() end
   if typename == 'torch.BoolTensor' then flat = map(flat, function(x) return x ~= 0 and 1 or 0 end) end
   local base = T.from_flat(flat, base_shape, T.parse_typename(typename), T.CPU_DEVICE)
   if typename ~= 'torch.DoubleTensor' then flat = util.flat(base) end -- the values as stored
   if not to_base then return base, flat end
   local view
   if layout == 'transposed' then view = base:transpose(nd - 1, nd)
   elseif layout == 'narrowed' and nd == 1 then view = base:select(2, 2)
   elseif layout == 'narrowed' then view = base:narrow(nd, 3, shape[nd])
   else view = base:expand(unpack(shape)) end
   local ref = {}
   each_index(shape, function(idx) ref[#ref + 1] = flat[offset(base_shape, to_base(idx))] end)
   if util.numel(shape) > 1 then
      assert(not view:isContiguous(), 'test setup: expected a non-contiguous ' .. layout .. ' view')
   end
   return view, ref
end

-- reference for broadcasting f over shapes sa and sb
local function bcast_shape(sa, sb)
   local n = math.max(#sa, #sb)
   local r = {}
   for i = 1, n do
      local x, y = sa[i - (n - #sa)] or 1, sb[i - (n - #sb)] or 1
      r[i] = x == 1 and y or x
   end
   return r
end
local function bcast_ref(sa, fa, sb, fb, f)
   local shape = bcast_shape(sa, sb)
   local n = #shape
   local out = {}
   each_index(shape, function(idx)
      local ia, ib = {}, {}
      for d = 1, #sa do ia[d] = sa[d] == 1 and 1 or idx[d + n - #sa] end
      for d = 1, #sb do ib[d] = sb[d] == 1 and 1 or idx[d + n - #sb] end
      out[#out + 1] = f(fa[offset(sa, ia)], fb[offset(sb, ib)])
   end)
   return out, shape
end


local function assert_sizes(t, shape)
   assert.are.same(shape, T.sizes(t))
end

local function round_half_away(x) return x >= 0 and floor(x + 0.5) or -floor(-x + 0.5) end
local function trunc(x) return x >= 0 and floor(x) or -floor(-x) end
local function sign(x) return x > 0 and 1 or (x < 0 and -1 or 0) end

---------------------------------------------------------------------------------------------
describe('unary math', function()
   -- name, input generator, reference, float-only
   local cases = {
      { 'exp', 'any', math.exp, true }, { 'log', 'pos', math.log, true },
      { 'log1p', 'any', function(x) return math.log(1 + x) end, true },
      { 'expm1', 'any', function(x) return math.exp(x) - 1 end, true },
      { 'sqrt', 'pos', math.sqrt, true }, { 'rsqrt', 'pos', function(x) return 1 / math.sqrt(x) end, true },
      { 'tanh', 'any', math.tanh, true }, { 'sigmoid', 'any', function(x) return 1 / (1 + math.exp(-x)) end, true },
      { 'sin', 'any', math.sin, true }, { 'cos', 'any', math.cos, true },
      { 'cinv', 'nonzero', function(x) return 1 / x end, true },
      { 'reciprocal', 'nonzero', function(x) return 1 / x end, true },
      { 'abs', 'any', abs }, { 'sign', 'any', sign }, { 'neg', 'any', function(x) return -x end },
      { 'floor', 'any', floor }, { 'ceil', 'any', math.ceil }, { 'round', 'any', round_half_away },
      { 'square', 'any', function(x) return x * x end }, { 'relu', 'any', function(x) return math.max(x, 0) end },
   }
   local shapes = { { 7 }, { 3, 5 }, { 2, 3, 4 } }
   for _, c in ipairs(cases) do
      local name, gen, ref, float_only = c[1], c[2], c[3], c[4]
      it(name .. ': new, result and in-place forms on every float dtype and layout', function()
         for _, ty in ipairs(FLOATS) do
            for _, shape in ipairs(shapes) do
               for _, layout in ipairs { 'contig', 'transposed', 'narrowed' } do
                  local what = ('%s %s %s %s'):format(name, ty, table.concat(shape, 'x'), layout)
                  local x, fx = make(shape, ty, gen, layout)
                  local want = map(fx, ref)
                  local y = torch[name](x)
                  assert.are.equal(ty, y:type())
                  assert_sizes(y, shape)
                  util.assert_close(y, want, tol(ty), what .. ' new')
                  util.assert_close(x, fx, EXACT, what .. ' input untouched')
                  local res = torch.Tensor():type(ty)
                  assert.is_true(rawequal(res, torch[name](res, x)))
                  util.assert_close(res, want, tol(ty), what .. ' res')
                  assert.is_true(rawequal(x, x[name](x)))
                  util.assert_close(x, want, tol(ty), what .. ' in place')
               end
            end
         end
      end)
      if float_only then
         it(name .. ': refuses integer tensors with a clear message', function()
            util.assert_error(function() torch[name](torch.LongTensor(3)) end, name, 'int64', 'floating')
            util.assert_error(function() torch.IntTensor(2, 2)[name](torch.IntTensor(2, 2)) end, name, 'int32')
         end)
      end
   end

   it('integer unary ops (abs, neg, sign, square, floor, ceil, round, relu) are exact', function()
      local ints = {
         abs = abs, neg = function(x) return -x end, sign = sign, square = function(x) return x * x end,
         floor = floor, ceil = floor, round = floor, relu = function(x) return math.max(x, 0) end,
      }
      for name, ref in pairs(ints) do
         for _, ty in ipairs(INTS) do
            for _, layout in ipairs { 'contig', 'transposed' } do
               local x, fx = make({ 4, 5 }, ty, 'int', layout)
               util.assert_close(torch[name](x), map(fx, ref), EXACT, name .. ' ' .. ty)
               x[name](x)
               util.assert_close(x, map(fx, ref), EXACT, name .. ' in place ' .. ty)
            end
         end
      end
   end)

   it('large non-contiguous inputs (parallel chunks split inside rows)', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local x, fx = make({ 230, 301 }, ty, 'any', 'transposed')
         util.assert_close(torch.exp(x), map(fx, math.exp), tol(ty), 'exp large ' .. ty)
         local n, fn = make({ 150, 401 }, ty, 'any', 'narrowed')
         util.assert_close(torch.tanh(n), map(fn, math.tanh), tol(ty), 'tanh large ' .. ty)
      end
   end)
end)

---------------------------------------------------------------------------------------------
describe('scalar ops', function()
   it('mul, div, add, csub with a number, every dtype family', function()
      for _, ty in ipairs(FLOATS) do
         local x, fx = make({ 3, 4 }, ty, 'any', 'transposed')
         local v = 0.5 + math.random()
         util.assert_close(torch.mul(x, v), map(fx, function(a) return a * v end), tol(ty), 'mul ' .. ty)
         util.assert_close(torch.div(x, v), map(fx, function(a) return a / v end), tol(ty), 'div ' .. ty)
         util.assert_close(torch.add(x, v), map(fx, function(a) return a + v end), tol(ty), 'add ' .. ty)
         util.assert_close(torch.csub(x, v), map(fx, function(a) return a - v end), tol(ty), 'csub ' .. ty)
         local y = x:clone()
         assert.is_true(rawequal(y, y:mul(v)))
         util.assert_close(y, map(fx, function(a) return a * v end), tol(ty), 'mul in place ' .. ty)
      end
      for _, ty in ipairs(INTS) do
         local x, fx = make({ 5, 3 }, ty, 'int', 'narrowed')
         util.assert_close(torch.mul(x, 3), map(fx, function(a) return 3 * a end), EXACT, 'mul ' .. ty)
         util.assert_close(torch.div(x, 3), map(fx, function(a) return trunc(a / 3) end), EXACT, 'div ' .. ty)
         util.assert_close(torch.div(x, -4), map(fx, function(a) return trunc(a / -4) end), EXACT, 'div neg ' .. ty)
         util.assert_close(torch.add(x, 7), map(fx, function(a) return a + 7 end), EXACT, 'add ' .. ty)
      end
      local b, fb = make({ 9 }, 'torch.ByteTensor', 'byte')
      util.assert_close(b:clone():add(5), map(fb, function(a) return a + 5 end), EXACT, 'byte add')
   end)

   it('pow with a scalar exponent and with a scalar base', function()
      for _, ty in ipairs(FLOATS) do
         local x, fx = make({ 4, 3 }, ty, 'pos', 'transposed')
         util.assert_close(torch.pow(x, 2.5), map(fx, function(a) return a ^ 2.5 end), tol(ty), 'pow ' .. ty)
         util.assert_close(torch.pow(x, -1), map(fx, function(a) return 1 / a end), tol(ty), 'pow -1 ' .. ty)
         util.assert_close(torch.pow(2, x), map(fx, function(a) return 2 ^ a end), tol(ty), 'rpow ' .. ty)
         local y = x:clone():pow(3)
         util.assert_close(y, map(fx, function(a) return a ^ 3 end), tol(ty), 'pow in place ' .. ty)
      end
      for _, ty in ipairs(INTS) do
         local x, fx = make({ 6 }, ty, 'small')
         util.assert_close(torch.pow(x, 3), map(fx, function(a) return a ^ 3 end), EXACT, 'int pow ' .. ty)
         local e, fe = make({ 6 }, ty, 'byte')
         util.assert_close(torch.pow(2, e), map(fe, function(a) return 2 ^ a end), EXACT, 'int rpow ' .. ty)
      end
   end)

   it('clamp and cmax/cmin with numbers', function()
      for _, ty in ipairs(FLOATS) do
         local x, fx = make({ 5, 4 }, ty, 'any', 'narrowed')
         local clamp = function(a) return math.min(math.max(a, -0.25), 0.5) end
         util.assert_close(torch.clamp(x, -0.25, 0.5), map(fx, clamp), EXACT, 'clamp ' .. ty)
         util.assert_close(torch.cmax(x, 0.25), map(fx, function(a) return math.max(a, 0.25) end), EXACT, 'cmax ' .. ty)
         util.assert_close(torch.cmin(x, 0.25), map(fx, function(a) return math.min(a, 0.25) end), EXACT, 'cmin ' .. ty)
         local y = x:clone()
         assert.is_true(rawequal(y, y:clamp(-0.25, 0.5)))
         util.assert_close(y, map(fx, clamp), EXACT, 'clamp in place ' .. ty)
      end
      for _, ty in ipairs(INTS) do
         local x, fx = make({ 11 }, ty, 'int')
         util.assert_close(x:clamp(-3, 4), map(fx, function(a) return math.min(math.max(a, -3), 4) end), EXACT, ty)
      end
      util.assert_error(function() torch.clamp(torch.rand(3), 1, 0) end, 'clamp', 'lower bound')
   end)

   it('fmod with a number and with a tensor', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local x, fx = make({ 3, 5 }, ty, 'nonzero')
         local y, fy = make({ 3, 5 }, ty, 'nonzero', 'transposed')
         util.assert_close(torch.fmod(x, 0.75), map(fx, function(a) return math.fmod(a, 0.75) end), tol(ty), 'fmod n')
         local want = {}
         for i = 1, #fx do want[i] = math.fmod(fx[i], fy[i]) end
         util.assert_close(torch.fmod(x, y), want, tol(ty), 'fmod t ' .. ty)
      end
      -- integers too (C's %: the dividend's sign; more in tensor/trig_remainder_bits_spec.lua), a 0 divisor refused
      local l, fl = make({ 3, 5 }, 'torch.LongTensor', 'int')
      util.assert_close(torch.fmod(l, -3), map(fl, function(a) return math.fmod(a, -3) end), EXACT, 'fmod int64')
      util.assert_error(function() torch.fmod(torch.LongTensor(3):fill(1), 0) end, 'fmod', 'division by zero')
   end)
end)

---------------------------------------------------------------------------------------------
describe('binary ops with broadcasting', function()
   local shape_pairs = {
      { { 3, 4 }, { 3, 4 } }, { { 3, 4 }, { 4 } }, { { 2, 1, 5 }, { 3, 1 } }, { { 1 }, { 7 } }, { { 5, 1 }, { 1, 6 } },
   }
   local fcases = {
      { 'add', 'any', 'any', function(a, b) return a + b end },
      { 'csub', 'any', 'any', function(a, b) return a - b end },
      { 'cmul', 'any', 'any', function(a, b) return a * b end },
      { 'cdiv', 'any', 'nonzero', function(a, b) return a / b end },
      { 'cpow', 'pos', 'any', function(a, b) return a ^ b end },
      { 'cmax', 'any', 'any', math.max }, { 'cmin', 'any', 'any', math.min },
      { 'atan2', 'any', 'nonzero', function(a, b) return math.atan2(a, b) end },
   }
   for _, c in ipairs(fcases) do
      local name, ga, gb, ref = c[1], c[2], c[3], c[4]
      it(name .. ' on float dtypes: broadcasting, layouts, result and in-place forms', function()
         for _, ty in ipairs(FLOATS) do
            for k, sp in ipairs(shape_pairs) do
               local layout_a = ({ 'contig', 'transposed', 'narrowed', 'contig', 'expanded' })[k]
               local a, fa = make(sp[1], ty, ga, layout_a)
               local b, fb = make(sp[2], ty, gb, k % 2 == 0 and 'narrowed' or 'contig')
               local want, shape = bcast_ref(sp[1], fa, sp[2], fb, ref)
               local what = ('%s %s %s with %s'):format(name, ty, table.concat(sp[1], 'x'), table.concat(sp[2], 'x'))
               local r = torch[name](a, b)
               assert_sizes(r, shape)
               util.assert_close(r, want, tol(ty), what)
               local res = torch.Tensor():type(ty)
               assert.is_true(rawequal(res, torch[name](res, a, b)))
               util.assert_close(res, want, tol(ty), what .. ' (res)')
               if util.numel(shape) == util.numel(sp[1]) and layout_a ~= 'expanded' then
                  assert.is_true(rawequal(a, a[name](a, b)))
                  util.assert_close(a, want, tol(ty), what .. ' (in place)')
               end
            end
         end
      end)
   end

   it('integer add/csub/cmul/cdiv/cmax/cmin/cpow are exact; cdiv truncates like C', function()
      local icases = {
         add = function(a, b) return a + b end, csub = function(a, b) return a - b end,
         cmul = function(a, b) return a * b end, cdiv = function(a, b) return trunc(a / b) end,
         cmax = math.max, cmin = math.min,
      }
      for _, ty in ipairs(INTS) do
         for name, ref in pairs(icases) do
            local a, fa = make({ 4, 6 }, ty, 'int', 'transposed')
            local b, fb = make({ 6 }, ty, 'intnz')
            util.assert_close(torch[name](a, b), (bcast_ref({ 4, 6 }, fa, { 6 }, fb, ref)), EXACT, name .. ' ' .. ty)
         end
         local a, fa = make({ 8 }, ty, 'small')
         local e, fe = make({ 8 }, ty, 'byte')
         e:clamp(0, 6)
         local want = {}
         for i = 1, 8 do want[i] = fa[i] ^ math.min(fe[i], 6) end
         util.assert_close(torch.cpow(a, e), want, EXACT, 'cpow ' .. ty)
      end
      local a, fa = make({ 10 }, 'torch.ByteTensor', 'byte')
      local b, fb = make({ 10 }, 'torch.ByteTensor', 'byte')
      util.assert_close(torch.add(a, b), (bcast_ref({ 10 }, fa, { 10 }, fb, function(x, y) return x + y end)), EXACT,
         'byte add')
   end)

   it('add and csub with a scale: t:add(v, b), torch.add(a, v, b), res:add(a, v, b)', function()
      for _, ty in ipairs(FLOATS) do
         local a, fa = make({ 3, 4 }, ty, 'any')
         local b, fb = make({ 4 }, ty, 'any', 'narrowed')
         local v = 2 * math.random() - 1
         local want = bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x + v * y end)
         util.assert_close(torch.add(a, v, b), want, tol(ty), 'torch.add(a, v, b) ' .. ty)
         local res = torch.Tensor():type(ty)
         util.assert_close(torch.add(res, a, v, b), want, tol(ty), 'torch.add(res, a, v, b) ' .. ty)
         local r2 = torch.Tensor():type(ty)
         util.assert_close(r2:add(a, v, b), want, tol(ty), 'res:add(a, v, b) ' .. ty)
         local wsub = bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x - v * y end)
         util.assert_close(a:clone():csub(v, b), wsub, tol(ty), 't:csub(v, b) ' .. ty)
         local c = a:clone()
         assert.is_true(rawequal(c, c:add(v, b)))
         util.assert_close(c, want, tol(ty), 't:add(v, b) ' .. ty)
         util.assert_close(a:clone():add(b), (bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x + y end)),
            tol(ty), 't:add(b) ' .. ty)
      end
   end)

   it('lerp', function()
      local a, fa = make({ 3, 4 }, 'torch.DoubleTensor')
      local b, fb = make({ 3, 4 }, 'torch.DoubleTensor', 'any', 'transposed')
      local w = math.random()
      local want = {}
      for i = 1, #fa do want[i] = fa[i] + w * (fb[i] - fa[i]) end
      util.assert_close(torch.lerp(a, b, w), want, nil, 'lerp')
      util.assert_close(a:lerp(b, w), want, nil, 'lerp in place')
   end)

   it('errors: dtype mismatch, sizes that do not broadcast, in-place growth, float-only ops', function()
      local f, d = torch.FloatTensor(3, 4):fill(1), torch.DoubleTensor(3, 4):fill(1)
      util.assert_error(function() torch.add(f, d) end, 'add', 'float32', 'float64')
      util.assert_error(function() torch.cmul(f, d) end, 'cmul', 'float32', 'float64')
      util.assert_error(function() return f + torch.FloatTensor(5):fill(1) end, 'add', '3x4', '5')
      util.assert_error(function() torch.cmax(f, torch.FloatTensor(2, 4):fill(1)) end, 'cmax', '3x4', '2x4')
      util.assert_error(function() torch.FloatTensor(4):fill(1):add(f) end, 'add', 'in-place', '3x4')
      util.assert_error(function() torch.atan2(torch.IntTensor(3):fill(1), torch.IntTensor(3):fill(1)) end, 'atan2',
         'int32')
      util.assert_error(function() torch.exp(torch.DoubleTensor(), torch.FloatTensor(2):fill(1)) end, 'exp',
         'float64', 'float32')
      util.assert_error(function() torch.add(f, 'x') end, 'add', 'string')
   end)

   it('integer division by zero is an error, not a crash', function()
      local a = torch.LongTensor(5):fill(7)
      local b = torch.LongTensor(5):fill(2)
      b[{ 3 }] = 0
      util.assert_error(function() torch.cdiv(a, b) end, 'division by zero')
      util.assert_error(function() torch.div(torch.IntTensor(3):fill(1), 0) end, 'div', 'division by zero')
      util.assert_error(function() torch.div(torch.IntTensor(3):fill(1), 0.5) end, 'division by zero')
   end)
end)

---------------------------------------------------------------------------------------------
describe('comparisons', function()
   local refs = {
      eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end,
      lt = function(a, b) return a < b end, le = function(a, b) return a <= b end,
      gt = function(a, b) return a > b end, ge = function(a, b) return a >= b end,
   }
   local function b2n(f) return function(a, b) return f(a, b) and 1 or 0 end end
   local all = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
      'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' }

   for name, ref in pairs(refs) do
      it(name .. ' with a tensor (broadcast) and with a number gives a ByteTensor, every dtype', function()
         for _, ty in ipairs(all) do
            local gen = ty == 'torch.ByteTensor' and 'byte' or 'small'
            local a, fa = make({ 4, 5 }, ty, gen, 'transposed')
            local b, fb = make({ 5 }, ty, gen)
            local want = bcast_ref({ 4, 5 }, fa, { 5 }, fb, b2n(ref))
            local r = torch[name](a, b)
            assert.are.equal('torch.ByteTensor', r:type())
            util.assert_close(r, want, EXACT, name .. ' ' .. ty)
            util.assert_close(a[name](a, b), want, EXACT, name .. ' method ' .. ty)
            local res = torch.ByteTensor()
            assert.is_true(rawequal(res, torch[name](res, a, b)))
            util.assert_close(res, want, EXACT, name .. ' res ' .. ty)
            local v = fb[1]
            util.assert_close(torch[name](a, v), map(fa, function(x) return ref(x, v) and 1 or 0 end), EXACT,
               name .. ' scalar ' .. ty)
         end
      end)
   end

   it('integers compare exactly with a fractional number; floats with the number in their type', function()
      local x = torch.LongTensor { 1, 2, 3 }
      assert.are.same({ 1, 1, 0 }, x:lt(2.5):totable())
      assert.are.same({ 0, 0, 0 }, x:eq(2.5):totable())
      for _, ty in ipairs(FLOATS) do
         local f = torch.Tensor(4):type(ty):fill(0.1)
         assert.are.same({ 1, 1, 1, 1 }, f:eq(0.1):totable(), ty)
         assert.are.same({ 0, 0, 0, 0 }, f:lt(0.1):totable(), ty)
      end
   end)

   it('refuses a result neither a ByteTensor nor of the input\'s type', function()
      util.assert_error(function() torch.eq(torch.DoubleTensor(), torch.FloatTensor(2):fill(1), 1) end, 'eq',
         'ByteTensor', 'torch.FloatTensor', 'torch.DoubleTensor')
   end)
end)

---------------------------------------------------------------------------------------------
describe('addcmul and addcdiv', function()
   it('all forms, broadcasting, float dtypes', function()
      for _, ty in ipairs(FLOATS) do
         local x, fx = make({ 3, 4 }, ty, 'any', 'transposed')
         local t1, f1 = make({ 4 }, ty, 'any')
         local t2, f2 = make({ 3, 1 }, ty, 'nonzero')
         local v = 2 * math.random() - 1
         local function want(div, scale)
            local r = bcast_ref({ 4 }, f1, { 3, 1 }, f2, function(a, b) return div and a / b or a * b end)
            for i = 1, #r do r[i] = fx[i] + scale * r[i] end
            return r
         end
         local tl = { atol = tol(ty).atol * 4, rtol = tol(ty).rtol * 4 }
         util.assert_close(torch.addcmul(x, v, t1, t2), want(false, v), tl, 'addcmul ' .. ty)
         util.assert_close(torch.addcmul(x, t1, t2), want(false, 1), tl, 'addcmul v=1 ' .. ty)
         util.assert_close(torch.addcdiv(x, v, t1, t2), want(true, v), tl, 'addcdiv ' .. ty)
         local res = torch.Tensor():type(ty)
         util.assert_close(torch.addcdiv(res, x, v, t1, t2), want(true, v), tl, 'addcdiv res ' .. ty)
         local y = x:clone()
         assert.is_true(rawequal(y, y:addcmul(v, t1, t2)))
         util.assert_close(y, want(false, v), tl, 'addcmul in place ' .. ty)
      end
   end)

   it('addcmul on integers; addcdiv refuses them', function()
      local x, fx = make({ 6 }, 'torch.LongTensor', 'int')
      local a, fa = make({ 6 }, 'torch.LongTensor', 'int')
      local b, fb = make({ 6 }, 'torch.LongTensor', 'int')
      local want = {}
      for i = 1, 6 do want[i] = fx[i] + 3 * fa[i] * fb[i] end
      util.assert_close(torch.addcmul(x, 3, a, b), want, EXACT, 'int addcmul')
      util.assert_error(function() torch.addcdiv(x, 1, a, b) end, 'addcdiv', 'int64')
      util.assert_error(function() torch.addcmul(x, torch.FloatTensor(6):fill(1), b) end, 'addcmul', 'int64',
         'float32')
   end)
end)

---------------------------------------------------------------------------------------------
describe('fill and copy', function()
   it('fill and zero on every dtype, including non-contiguous views', function()
      local all = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
         'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.BoolTensor' }
      for _, ty in ipairs(all) do
         local base = torch.Tensor(6, 5):type(ty)
         base:fill(3)
         local v = base:t():narrow(1, 2, 3) -- 3x6 view: rows 2..4 of the transpose
         assert.is_true(rawequal(v, v:fill(1)))
         local got = util.flat(base)
         for i = 1, 6 do
            for j = 1, 5 do
               local want = (j >= 2 and j <= 4) and 1 or 3
               if ty == 'torch.BoolTensor' then want = 1 end
               assert.are.equal(want, got[(i - 1) * 5 + j], ty)
            end
         end
         base:zero()
         for _, x in ipairs(util.flat(base)) do assert.are.equal(0, x) end
      end
      local h = torch.HalfTensor(3):fill(0.1)
      util.assert_close(h, { 0.0999755859375, 0.0999755859375, 0.0999755859375 }, EXACT, 'half rounding of 0.1')
   end)

   -- float16 <-> float32 copies of contiguous runs take F16C where the CPU has it, strided ones
   -- the scalar code: both must give the IEEE answer, computed here from the bit fields
   it('converts every float16 to float32 and random float32 bits to float16 exactly (F16C and scalar)', function()
      local ffi = require 'ffi'
      local function half_value(b) -- the exact value of half bits b, as a double
         local sgn = b >= 0x8000 and -1 or 1
         local e, m = floor(b / 1024) % 32, b % 1024
         if e == 31 then return m == 0 and sgn * math.huge or 0 / 0 end
         if e == 0 then return sgn * m * 2 ^ -24 end
         return sgn * (1 + m / 1024) * 2 ^ (e - 15)
      end
      local function to_half_bits(v) -- round-to-nearest-even float16 bits of the double v
         if v ~= v then return nil end
         local sbit = (v < 0 or 1 / v < 0) and 0x8000 or 0
         local a = abs(v)
         if a >= 65520 then return sbit + 0x7c00 end
         local _, ex = math.frexp(a) -- a = f * 2^ex, f in [0.5, 1)
         local q = math.max(ex - 11, -24) -- the ulp's exponent in this binade (subnormals: 2^-24)
         local r = a / 2 ^ q
         local n = floor(r)
         local d = r - n
         if d > 0.5 or (d == 0.5 and n % 2 == 1) then n = n + 1 end
         -- n * 2^q is the rounded value; rebuild its bits (n may have carried into a new binade)
         if n == 0 then return sbit end
         local v2 = n * 2 ^ q
         if v2 >= 65520 then return sbit + 0x7c00 end
         local _, e2 = math.frexp(v2)
         if e2 - 1 < -14 then return sbit + n end -- subnormal: mantissa counts 2^-24
         return sbit + (e2 - 1 + 15) * 1024 + (v2 / 2 ^ (e2 - 1) - 1) * 1024
      end
      local n = 65536
      local h = torch.HalfTensor(2, n)
      local hp = h:data()
      for i = 0, n - 1 do hp[i], hp[n + i] = i, i end
      local dense, strided = torch.FloatTensor(n), torch.FloatTensor(n, 2)
      dense:copy(h[1])
      strided:select(2, 1):copy(h[2])
      local dp, sp = dense:data(), strided:data()
      -- a NaN is checked on its bits and never read as a float: LuaJIT takes some negative NaN
      -- payloads for GC objects, and a collection that meets one crashes (docs/design.md)
      local dbits, sbits = ffi.cast('uint32_t *', dp), ffi.cast('uint32_t *', sp)
      for i = 0, n - 1 do
         local want = half_value(i)
         if want ~= want then
            for _, b in ipairs { dbits[i], sbits[2 * i] } do
               assert(b % 0x80000000 > 0x7f800000, ('half bits 0x%04x should give NaN, got 0x%08x'):format(i, b))
            end
         else
            for _, got in ipairs { dp[i], sp[2 * i] } do
               if got ~= want then error(('half bits 0x%04x: want %.17g, got %.17g'):format(i, want, got)) end
            end
         end
      end
      -- float32 -> float16 on random bit patterns of every exponent, plus the edges
      local m = 40000
      local f = torch.FloatTensor(m)
      local fb = ffi.cast('uint32_t *', f:data())
      local edges = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x477fefff, 0x477ff000, 0x33000000,
         0x33000001, 0x387fc000, 0x38800000, 0x7fc00001, 0x7f800001 }
      for i = 0, m - 1 do fb[i] = edges[i + 1] or math.random(0, 0xffffffff) end
      local hd, hs = torch.HalfTensor(m), torch.HalfTensor(m, 3)
      hd:copy(f)
      hs:select(2, 2):copy(f)
      local hdp, hsp = hd:data(), hs:data()
      for i = 0, m - 1 do
         -- a NaN is told by its bits: LuaJIT may read some NaN floats as a tagged non-number
         local is_nan = fb[i] % 0x80000000 > 0x7f800000
         local want = not is_nan and to_half_bits(f[i + 1]) or nil
         for _, got in ipairs { hdp[i], hsp[3 * i + 1] } do
            if want == nil then -- NaN stays a NaN
               assert(got % 0x8000 > 0x7c00, ('float bits 0x%08x: want a NaN, got 0x%04x'):format(fb[i], got))
            elseif got ~= want then
               error(('float bits 0x%08x (%.9g): want half 0x%04x, got 0x%04x'):format(fb[i], f[i + 1], want, got))
            end
         end
      end
   end)

   it('converts between every pair of dtypes (ints truncate, bool is nonzero)', function()
      local all = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
         'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.BoolTensor' }
      for _, sty in ipairs(all) do
         local gen = (sty == 'torch.ByteTensor' or sty == 'torch.BoolTensor') and 'byte' or
            (is_float(sty) and 'any' or 'int')
         local src, fs = make({ 4, 3 }, sty, gen, 'transposed')
         for _, dty in ipairs(all) do
            local dst = torch.Tensor(4, 3):type(dty)
            assert.is_true(rawequal(dst, dst:copy(src)))
            local want
            if dty == 'torch.BoolTensor' then want = map(fs, function(x) return x ~= 0 and 1 or 0 end)
            elseif dty == 'torch.ByteTensor' then want = map(fs, function(x) return trunc(x) % 256 end)
            elseif not is_float(dty) then want = map(fs, trunc)
            else want = fs end
            local tl = is_float(dty) and tol(dty) or EXACT
            util.assert_close(dst, want, tl, sty .. ' -> ' .. dty)
         end
      end
   end)

   it('broadcasts the source, and copies same-count different shapes in row-major order', function()
      local src, fs = make({ 4 }, 'torch.DoubleTensor')
      local dst = torch.DoubleTensor(3, 4):copy(src)
      local want = {}
      for i = 1, 3 do for j = 1, 4 do want[#want + 1] = fs[j] end end
      util.assert_close(dst, want, EXACT, 'broadcast copy')
      -- 3x4 transposed view into 2x6 and 12: row-major order of the view
      local v, fv = make({ 3, 4 }, 'torch.FloatTensor', 'any', 'transposed')
      util.assert_close(torch.DoubleTensor(2, 6):copy(v), fv, EXACT, 'reshaped copy')
      util.assert_close(torch.DoubleTensor(12):copy(v), fv, EXACT, 'flattened copy')
      -- into a non-contiguous destination of a different shape
      local base = torch.DoubleTensor(6, 2):zero()
      base:t():copy(v)
      local got = util.flat(base:t())
      util.assert_close(got, fv, EXACT, 'copy into transposed destination')
      util.assert_error(function() torch.DoubleTensor(5):copy(torch.DoubleTensor(2, 3)) end, 'copy', '2x3', '5')
   end)

   it('masked_fill with byte and bool masks, broadcast masks; errors name the mask', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.LongTensor' } do
         for _, mty in ipairs { 'torch.ByteTensor', 'torch.BoolTensor' } do
            local t, ft = make({ 3, 5 }, ty, is_float(ty) and 'any' or 'int', 'transposed')
            local m, fm = make({ 5 }, mty, 'byte')
            fm = map(fm, function(x) return x % 2 end)
            m:copy(torch.DoubleTensor(fm))
            assert.is_true(rawequal(t, t:maskedFill(m, -7)))
            local want = bcast_ref({ 3, 5 }, ft, { 5 }, fm, function(x, k) return k ~= 0 and -7 or x end)
            util.assert_close(t, want, EXACT, 'maskedFill ' .. ty .. ' ' .. mty)
         end
      end
      util.assert_error(function() torch.rand(3):maskedFill(torch.FloatTensor(3):fill(1), 0) end, 'maskedFill',
         'float32')
      util.assert_error(function() torch.rand(3):maskedFill(torch.ByteTensor(4):fill(1), 0) end, 'maskedFill', '4',
         '3')
   end)

   it('maskedSelect returns the selected elements in row-major order', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.IntTensor' } do
         for _, shape in ipairs { { 4, 6 }, { 180, 230 } } do
            local t, ft = make(shape, ty, is_float(ty) and 'any' or 'int', 'transposed')
            local m, fm = make(shape, 'torch.ByteTensor', 'byte', 'narrowed')
            local want = {}
            for i = 1, #ft do if fm[i] % 3 ~= 0 then want[#want + 1] = ft[i] end end
            local mask = torch.ne(torch.fmod(m:double(), 3), 0)
            local r = t:maskedSelect(mask)
            assert.are.equal(ty, r:type())
            assert.are.equal(1, r:dim())
            util.assert_close(r, want, EXACT, 'maskedSelect ' .. ty)
            local res = torch.Tensor():type(ty)
            util.assert_close(torch.maskedSelect(res, t, mask), want, EXACT, 'maskedSelect res ' .. ty)
         end
      end
      local t = torch.rand(3)
      util.assert_error(function() torch.maskedSelect(t, t, torch.ByteTensor(3):fill(1)) end, 'maskedSelect')
   end)

   it('arange (through torch.range) and into non-contiguous tensors', function()
      local start, step = math.random() * 4 - 2, 0.25 + math.random()
      local r = torch.range(torch.DoubleTensor(), start, start + 9 * step, step)
      local want = {}
      for i = 0, 9 do want[i + 1] = start + i * step end
      util.assert_close(r, want, nil, 'range')
      local base = torch.DoubleTensor(4, 3)
      T.clib.mt_arange(base:t().h, 1, 1)
      util.assert_close(base:t(), { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, EXACT, 'arange row-major into a view')
   end)
end)

---------------------------------------------------------------------------------------------
describe('operators', function()
   it('+ - / with tensors and numbers on either side, unary minus; new tensors', function()
      for _, ty in ipairs(FLOATS) do
         local a, fa = make({ 3, 4 }, ty, 'nonzero')
         local b, fb = make({ 4 }, ty, 'nonzero', 'narrowed')
         local v = 0.5 + math.random()
         local tl = tol(ty)
         util.assert_close(a + b, (bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x + y end)), tl, '+ ' .. ty)
         util.assert_close(a - b, (bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x - y end)), tl, '- ' .. ty)
         util.assert_close(a / b, (bcast_ref({ 3, 4 }, fa, { 4 }, fb, function(x, y) return x / y end)), tl, '/ ' .. ty)
         util.assert_close(a + v, map(fa, function(x) return x + v end), tl, 't+n ' .. ty)
         util.assert_close(v + a, map(fa, function(x) return x + v end), tl, 'n+t ' .. ty)
         util.assert_close(a - v, map(fa, function(x) return x - v end), tl, 't-n ' .. ty)
         util.assert_close(v - a, map(fa, function(x) return v - x end), tl, 'n-t ' .. ty)
         util.assert_close(a / v, map(fa, function(x) return x / v end), tl, 't/n ' .. ty)
         util.assert_close(v / a, map(fa, function(x) return v / x end), tl, 'n/t ' .. ty)
         util.assert_close(a * v, map(fa, function(x) return x * v end), tl, 't*n ' .. ty)
         util.assert_close(v * a, map(fa, function(x) return x * v end), tl, 'n*t ' .. ty)
         util.assert_close(-a, map(fa, function(x) return -x end), tl, '-t ' .. ty)
         util.assert_close(a, fa, EXACT, 'operands untouched ' .. ty)
         assert.are.equal(ty, (v - a):type())
      end
      local i, fi = make({ 5 }, 'torch.LongTensor', 'intnz')
      util.assert_close(7 / i, map(fi, function(x) return trunc(7 / x) end), EXACT, 'n/t integer')
   end)

   it('* on two tensors: dot, mv, mm as in Torch7', function()
      local x, fx = make({ 5 }, 'torch.DoubleTensor')
      local y, fy = make({ 5 }, 'torch.DoubleTensor', 'any', 'narrowed')
      local dot = 0
      for i = 1, 5 do dot = dot + fx[i] * fy[i] end
      local got = x * y
      assert.are.equal('number', type(got))
      assert.is_true(abs(got - dot) < 1e-12)
      local m, fm = make({ 3, 5 }, 'torch.DoubleTensor')
      local mv = {}
      for r = 1, 3 do
         local s = 0
         for c = 1, 5 do s = s + fm[(r - 1) * 5 + c] * fx[c] end
         mv[r] = s
      end
      util.assert_close(m * x, mv, nil, 'mv')
      local n, fn = make({ 5, 2 }, 'torch.DoubleTensor')
      local mm = {}
      for r = 1, 3 do
         for c = 1, 2 do
            local s = 0
            for k = 1, 5 do s = s + fm[(r - 1) * 5 + k] * fn[(k - 1) * 2 + c] end
            mm[#mm + 1] = s
         end
      end
      util.assert_close(m * n, mm, nil, 'mm')
      util.assert_error(function() return torch.rand(2, 2, 2) * torch.rand(2) end, 'mul', '3-d')
   end)

   it('== is identity (same tensor), t:eq(u) is elementwise', function()
      local a = torch.rand(3)
      local b = a:clone()
      assert.is_true(a == a)
      assert.is_false(a == b)
      assert.is_true(a ~= b)
      assert.is_false(a == nil)
      assert.is_false(a == 3)
      assert.are.same({ 1, 1, 1 }, a:eq(b):totable())
      local t = { [a] = 1 }
      assert.are.equal(1, t[a])
      util.assert_error(function() return a + {} end, 'add', 'table')
   end)
end)
