-- trig_remainder_bits_spec.lua: the inverse and hyperbolic trigonometric ops, trunc/frac, remainder and
-- fmod (numbers and tensors, negative operands, integer dtypes), bit ops and shifts on every
-- integer dtype, each on fresh random inputs against a float64 (or exact 64-bit integer)
-- reference computed here, in contiguous and non-contiguous layouts, with result-first and
-- in-place forms and the errors for bad dtypes and shapes.
local torch = require 'moontorch'
local util = require 'spec.util'
local ffi = require 'ffi'
local bit = require 'bit'
local floor = math.floor

local FLOATS = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }
local EXACT = { atol = 0, rtol = 0 }
local function tol(ty) return util.tol[ty] or EXACT end

local function map(flat, f)
   local r = {}
   for i = 1, #flat do r[i] = f(flat[i]) end
   return r
end
local function map2(fa, fb, f)
   local r = {}
   for i = 1, #fa do r[i] = f(fa[i], fb[i]) end
   return r
end

-- a random r x c tensor of type ty from gen, in a layout: 'contig' or 'transposed' (a
-- non-contiguous view); returns it and its row-major values as stored
local function make(r, c, ty, gen, layout)
   local flat = {}
   for i = 1, r * c do flat[i] = gen() end
   local t
   if layout == 'transposed' then
      t = torch.Tensor(flat):type(ty):view(c, r):t()
      assert(not t:isContiguous())
   else
      t = torch.Tensor(flat):type(ty):view(r, c)
   end
   return t, util.flat(t)
end
local function uni(lo, hi) return function() return lo + (hi - lo) * math.random() end end
local function int(lo, hi) return function() return lo + floor((hi - lo + 1) * math.random()) end end
local function nonzero_int(m)
   return function()
      local v = 1 + floor(m * math.random())
      return math.random() < 0.5 and -v or v
   end
end

local function trunc(x) return x >= 0 and floor(x) or -floor(-x) end
local function lua_fmod(a, b) return math.fmod(a, b) end
local function lua_rem(a, b) -- remainder with b's sign, from the exact fmod
   local r = math.fmod(a, b)
   if r ~= 0 and (r < 0) ~= (b < 0) then r = r + b end
   return r
end

---------------------------------------------------------------------------------------------
describe('trigonometric, hyperbolic and rounding ops', function()
   local cases = {
      acos = { math.acos, uni(-0.99, 0.99) }, asin = { math.asin, uni(-0.99, 0.99) }, atan = { math.atan, uni(-4, 4) },
      tan = { math.tan, uni(-1.2, 1.2) }, sinh = { math.sinh, uni(-3, 3) }, cosh = { math.cosh, uni(-3, 3) },
      trunc = { trunc, uni(-5, 5) }, frac = { function(x) return x - trunc(x) end, uni(-5, 5) },
   }
   for name, c in pairs(cases) do
      it(name .. ': new, result-first and in-place forms, every float dtype, both layouts', function()
         for _, ty in ipairs(FLOATS) do
            for _, layout in ipairs { 'contig', 'transposed' } do
               local what = name .. ' ' .. ty .. ' ' .. layout
               local x, fx = make(5, 7, ty, c[2], layout)
               local want = map(fx, c[1])
               local y = torch[name](x)
               assert.are.equal(ty, y:type())
               assert.are.same({ 5, 7 }, y:size():totable())
               util.assert_close(y, want, tol(ty), what .. ' new')
               util.assert_close(x, fx, EXACT, what .. ' input untouched')
               local res = torch.Tensor():type(ty)
               assert.is_true(rawequal(res, torch[name](res, x)))
               util.assert_close(res, want, tol(ty), what .. ' res')
               assert.is_true(rawequal(x, x[name](x)))
               util.assert_close(x, want, tol(ty), what .. ' in place')
            end
         end
      end)
   end
   it('refuse integer tensors naming the op and the dtype', function()
      for name in pairs(cases) do
         util.assert_error(function() torch[name](torch.LongTensor(3)) end, name, 'int64', 'floating')
         util.assert_error(function() torch.IntTensor(2):fill(1)[name](torch.IntTensor(2)) end, name, 'int32')
      end
   end)
end)

---------------------------------------------------------------------------------------------
describe('remainder and fmod', function()
   it('with a number: float dtypes, negative dividends and divisors', function()
      for _, ty in ipairs(FLOATS) do
         for _, layout in ipairs { 'contig', 'transposed' } do
            for _, v in ipairs { 1.75, -1.75, 0.6 } do
               local x, fx = make(5, 7, ty, uni(-6, 6), layout)
               local what = ('%s %s %g'):format(ty, layout, v)
               v = util.flat(torch.DoubleTensor { v }:type(ty))[1] -- the divisor as the dtype holds it
               util.assert_close(torch.remainder(x, v), map(fx, function(a) return lua_rem(a, v) end), tol(ty),
                  'remainder ' .. what)
               util.assert_close(torch.fmod(x, v), map(fx, function(a) return lua_fmod(a, v) end), tol(ty),
                  'fmod ' .. what)
               local res = torch.Tensor():type(ty)
               assert.is_true(rawequal(res, torch.remainder(res, x, v)))
               util.assert_close(res, map(fx, function(a) return lua_rem(a, v) end), tol(ty), 'remainder res ' .. what)
               x:remainder(v)
               util.assert_close(x, map(fx, function(a) return lua_rem(a, v) end), tol(ty),
                  'remainder in place ' .. what)
            end
         end
      end
      -- the sign rules of Torch7's documentation, exactly
      local x = torch.Tensor { -3, 3 }
      util.assert_close(torch.fmod(x, 2), { -1, 1 }, EXACT, 'fmod 2')
      util.assert_close(torch.fmod(x, -2), { -1, 1 }, EXACT, 'fmod -2')
      util.assert_close(torch.remainder(x, 2), { 1, 1 }, EXACT, 'remainder 2')
      util.assert_close(torch.remainder(x, -2), { -1, -1 }, EXACT, 'remainder -2')
   end)

   it('with a tensor: cremainder and cfmod, float and integer dtypes, both layouts', function()
      local types = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.IntTensor',
         'torch.LongTensor' }
      for _, ty in ipairs(types) do
         local isint = ty == 'torch.IntTensor' or ty == 'torch.LongTensor'
         for _, layout in ipairs { 'contig', 'transposed' } do
            local what = ty .. ' ' .. layout
            local x, fx = make(5, 7, ty, isint and int(-50, 50) or uni(-6, 6), layout)
            local y, fy = make(5, 7, ty, isint and nonzero_int(9) or function()
               local v = 0.5 + 2 * math.random()
               return math.random() < 0.5 and -v or v
            end, layout == 'contig' and 'transposed' or 'contig')
            local rem, fm = map2(fx, fy, lua_rem), map2(fx, fy, lua_fmod)
            util.assert_close(torch.cremainder(x, y), rem, tol(ty), 'cremainder ' .. what)
            util.assert_close(torch.cfmod(x, y), fm, tol(ty), 'cfmod ' .. what)
            util.assert_close(x:clone():cfmod(y), fm, tol(ty), 'cfmod in place ' .. what)
            local res = torch.Tensor():type(ty)
            res:cremainder(x, y)
            util.assert_close(res, rem, tol(ty), 'res:cremainder ' .. what)
            assert.is_true(rawequal(res, torch.cfmod(res, x, y)))
            util.assert_close(res, fm, tol(ty), 'torch.cfmod(res) ' .. what)
            x:cremainder(y)
            util.assert_close(x, rem, tol(ty), 'cremainder in place ' .. what)
         end
      end
   end)

   it('integer dtypes with a number (which is cast to the dtype, as Torch7)', function()
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' } do
         local lo = ty == 'torch.ByteTensor' and 0 or -100
         local x, fx = make(3, 9, ty, int(lo, 100), 'transposed')
         for _, v in ipairs { 7, -7, 3.9 } do
            if not (ty == 'torch.ByteTensor' and v < 0) then
               local iv = trunc(v)
               util.assert_close(torch.remainder(x, v), map(fx, function(a) return lua_rem(a, iv) end), EXACT,
                  'remainder ' .. ty .. ' ' .. v)
               util.assert_close(torch.fmod(x, v), map(fx, function(a) return lua_fmod(a, iv) end), EXACT,
                  'fmod ' .. ty .. ' ' .. v)
            end
         end
      end
   end)

   it('division by zero: NaN for floats, an error for integers (never a crash)', function()
      local r = util.flat(torch.remainder(torch.Tensor { 1, -2 }, 0))
      assert.is_true(r[1] ~= r[1] and r[2] ~= r[2], 'remainder by 0 is NaN')
      r = util.flat(torch.cfmod(torch.FloatTensor { 1, -2 }, torch.FloatTensor { 0, 0 }))
      assert.is_true(r[1] ~= r[1] and r[2] ~= r[2], 'cfmod by 0 is NaN')
      local l = torch.LongTensor { 5, 6, 7 }
      util.assert_error(function() torch.remainder(l, 0) end, 'remainder', 'division by zero')
      util.assert_error(function() torch.fmod(torch.IntTensor { 5 }, 0.5) end, 'fmod', 'division by zero')
      util.assert_error(function() l:cremainder(torch.LongTensor { 1, 0, 2 }) end, 'cremainder', 'division by zero',
         'int64')
      util.assert_error(function() torch.cfmod(l, torch.LongTensor { 1, 0, 2 }) end, 'cfmod', 'division by zero')
      util.assert_close(l, { 5, 6, 7 }, EXACT, 'refused in-place op left its tensor alone')
      -- the most negative integer modulo -1 is 0 (C leaves it undefined)
      local m = torch.IntTensor { -2147483648, 9 }
      util.assert_close(torch.cremainder(m, torch.IntTensor { -1, -1 }), { 0, 0 }, EXACT, 'INT_MIN % -1')
   end)

   it('bad operands: dtype mismatch, shapes that do not broadcast, non-tensors', function()
      util.assert_error(function() torch.cremainder(torch.DoubleTensor(3), torch.FloatTensor(3)) end, 'cremainder',
         'dtype mismatch')
      util.assert_error(function() torch.cfmod(torch.Tensor(3):fill(1), torch.Tensor(4):fill(1)) end, 'cfmod')
      util.assert_error(function() torch.remainder(torch.Tensor(3), 'x') end, 'remainder', 'string')
      util.assert_error(function() torch.remainder({}, 2) end, 'remainder', 'expected a tensor')
   end)
end)

---------------------------------------------------------------------------------------------
describe('bit ops and shifts', function()
   local INTS = { i32 = 'torch.IntTensor', i64 = 'torch.LongTensor', u8 = 'torch.ByteTensor' }
   local BITS = { i32 = 32, i64 = 64, u8 = 8 }
   -- exact values of a tensor: int64 cdata for LongTensor, Lua numbers otherwise
   local function exact(t)
      local c = t:contiguous()
      local p, out = c:data(), {}
      for i = 0, c:nElement() - 1 do out[i + 1] = p[i] end
      return out
   end
   local function same(got, want, what)
      assert.are.equal(#want, #got, what)
      for i = 1, #want do
         if got[i] ~= want[i] then
            error(('%s: element %d is %s, expected %s'):format(what, i, tostring(got[i]), tostring(want[i])), 2)
         end
      end
   end
   -- references on the dtype's bit pattern
   local function ref(k, op, a, b)
      local bits = BITS[k]
      if k == 'i64' then a, b = ffi.cast('int64_t', a), ffi.cast('int64_t', b) end
      local r
      if op == 'and' then r = bit.band(a, b)
      elseif op == 'or' then r = bit.bor(a, b)
      elseif op == 'xor' then r = bit.bxor(a, b)
      else
         local n = tonumber(b)
         if n < 0 or n >= bits then r = k == 'i64' and ffi.cast('int64_t', 0) or 0
         elseif op == 'lshift' then r = bit.lshift(a, n)
         else r = bit.rshift(a, n) end
      end
      if k == 'u8' then r = bit.band(r, 255) end
      return r
   end
   local function gen(k)
      if k == 'u8' then return int(0, 255) end
      if k == 'i32' then return int(-2 ^ 31, 2 ^ 31 - 1) end
      return int(-2 ^ 50, 2 ^ 50)
   end
   local names = { ['and'] = 'bitand', ['or'] = 'bitor', xor = 'bitxor', lshift = 'lshift', rshift = 'rshift' }

   it('with a tensor on every integer dtype and both layouts, all three forms', function()
      for k, ty in pairs(INTS) do
         for _, layout in ipairs { 'contig', 'transposed' } do
            for op, name in pairs(names) do
               local cname = 'c' .. name
               local shift = op == 'lshift' or op == 'rshift'
               local x = make(5, 7, ty, gen(k), layout)
               local y = make(5, 7, ty, shift and int(0, BITS[k] + 2) or gen(k), layout == 'contig' and 'transposed'
                  or 'contig')
               if k == 'i64' and not shift then y = y:mul(977) end -- bits above 2^53 too
               local ex, ey = exact(x), exact(y)
               local want = {}
               for i = 1, #ex do want[i] = ref(k, op, ex[i], ey[i]) end
               local what = cname .. ' ' .. ty .. ' ' .. layout
               same(exact(torch[cname](x, y)), want, what)
               local res = torch.Tensor():type(ty)
               assert.is_true(rawequal(res, torch[cname](res, x, y)))
               same(exact(res), want, what .. ' res')
               same(exact(x:clone()[cname](x:clone(), y)), want, what .. ' in place')
            end
         end
      end
   end)

   it('with a number on every integer dtype', function()
      for k, ty in pairs(INTS) do
         local x = make(3, 11, ty, gen(k), 'transposed')
         local ex = exact(x)
         for op, name in pairs(names) do
            local shift = op == 'lshift' or op == 'rshift'
            local v = shift and floor(math.random() * (BITS[k] - 1)) + 1 or (k == 'u8' and 90 or 12345)
            local want = {}
            for i = 1, #ex do want[i] = ref(k, op, ex[i], v) end
            same(exact(torch[name](x, v)), want, name .. ' ' .. ty .. ' ' .. v)
            local z = torch.Tensor():type(ty)
            z[name](z, x, v)
            same(exact(z), want, 'z:' .. name .. '(x, v) ' .. ty)
            local c = x:clone()
            c[name](c, v)
            same(exact(c), want, name .. ' in place ' .. ty)
         end
      end
   end)

   it('bool tensors: and, or, xor', function()
      local a = torch.ByteTensor(13):random(0, 1):type('torch.BoolTensor')
      local b = torch.ByteTensor(13):random(0, 1):type('torch.BoolTensor')
      local fa, fb = util.flat(a), util.flat(b)
      util.assert_close(torch.cbitand(a, b), map2(fa, fb, bit.band), EXACT, 'bool and')
      util.assert_close(torch.cbitor(a, b), map2(fa, fb, bit.bor), EXACT, 'bool or')
      util.assert_close(torch.cbitxor(a, b), map2(fa, fb, bit.bxor), EXACT, 'bool xor')
   end)

   it('floating tensors: shifts scale by powers of two, bit ops are refused', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local x, fx = make(4, 5, ty, uni(-3, 3), 'transposed')
         util.assert_close(torch.lshift(x, 3), map(fx, function(a) return a * 8 end), tol(ty), 'lshift ' .. ty)
         util.assert_close(torch.rshift(x, 2), map(fx, function(a) return a / 4 end), tol(ty), 'rshift ' .. ty)
         local n, fn = make(4, 5, ty, int(-2, 4), 'contig')
         util.assert_close(torch.clshift(x, n), map2(fx, fn, function(a, b) return a * 2 ^ b end), tol(ty), 'clshift')
         util.assert_close(torch.crshift(x, n), map2(fx, fn, function(a, b) return a / 2 ^ b end), tol(ty), 'crshift')
         local c = x:clone()
         c:lshift(1)
         util.assert_close(c, map(fx, function(a) return a * 2 end), tol(ty), 'lshift in place ' .. ty)
         for _, name in ipairs { 'bitand', 'bitor', 'bitxor' } do
            util.assert_error(function() torch[name](x, 3) end, name, 'integer dtypes only', ty == 'torch.FloatTensor'
               and 'float32' or 'float64')
            util.assert_error(function() x['c' .. name](x, x) end, 'c' .. name, 'integer dtypes only')
         end
      end
   end)

   it('bad operands: mixed dtypes, shapes that do not broadcast', function()
      util.assert_error(function() torch.cbitand(torch.IntTensor(3), torch.LongTensor(3)) end, 'cbitand',
         'dtype mismatch')
      util.assert_error(function() torch.clshift(torch.LongTensor(3):zero(), torch.LongTensor(2):zero()) end,
         'clshift')
      util.assert_error(function() torch.LongTensor(3):zero():bitor('a') end, 'bitor', 'number')
   end)
end)
