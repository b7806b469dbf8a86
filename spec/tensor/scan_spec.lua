-- scan_spec.lua: cumsum and cumprod on every dtype, every dim of 1-d to 3-d odd-sized inputs, in
-- contiguous and transposed layouts, against a float64 reference computed here; result-first
-- and method forms, integer wrap-around, bad dims and overlapping results.
local torch = require 'moontorch'
local util = require 'spec.util'
local floor = math.floor

local EXACT = { atol = 0, rtol = 0 }
local ALL = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.BoolTensor' }

-- the reference: scan the row-major values `flat` of a tensor of `shape` along `dim`
local function ref_scan(flat, shape, dim, prod, wrap)
   local stride = 1
   for d = #shape, dim + 1, -1 do stride = stride * shape[d] end
   local n, out = shape[dim], {}
   for i = 1, #flat do
      local pos = floor((i - 1) / stride) % n -- index along dim (0-based)
      local prev = pos > 0 and out[i - stride] or (prod and 1 or 0)
      local v = prod and prev * flat[i] or prev + flat[i]
      out[i] = wrap and wrap(v) or v
   end
   return out
end

local function values(ty, prod)
   if ty == 'torch.BoolTensor' then return function() return math.random() < 0.8 and 1 or 0 end end
   if ty == 'torch.ByteTensor' then return function() return floor(math.random() * (prod and 4 or 200)) end end
   if ty == 'torch.IntTensor' or ty == 'torch.LongTensor' then
      return function() return floor(math.random() * (prod and 7 or 2001)) - (prod and 3 or 1000) end
   end
   if prod then return function() return (math.random() < 0.5 and -1 or 1) * (0.5 + math.random()) end end
   return function() return 4 * math.random() - 2 end
end

local wraps = {
   ['torch.ByteTensor'] = function(v) return v % 256 end,
   ['torch.BoolTensor'] = function(v) return v ~= 0 and 1 or 0 end,
}

-- a random tensor of shape, optionally a non-contiguous view (last two dims stored swapped)
local function make(shape, ty, gen, transposed)
   local n = util.numel(shape)
   local flat = {}
   for i = 1, n do flat[i] = gen() end
   local t
   if transposed and #shape >= 2 then
      local s = { unpack(shape) }
      s[#s - 1], s[#s] = s[#s], s[#s - 1]
      t = torch.DoubleTensor(flat):view(torch.LongStorage(s)):type(ty):transpose(#s - 1, #s)
      assert(not t:isContiguous())
   else
      t = torch.DoubleTensor(flat):view(torch.LongStorage(shape)):type(ty)
   end
   return t, util.flat(t)
end

local function tol(ty, n)
   local t = util.tol[ty]
   if not t then return EXACT end
   return { atol = t.atol * n, rtol = t.rtol * n }
end

describe('cumsum and cumprod', function()
   for _, name in ipairs { 'cumsum', 'cumprod' } do
      local prod = name == 'cumprod'
      it(name .. ': every dtype, dim and layout, against float64', function()
         for _, ty in ipairs(ALL) do
            for _, shape in ipairs { { 7 }, { 3, 5 }, { 3, 5, 4 } } do
               for _, transposed in ipairs { false, true } do
                  local x, fx = make(shape, ty, values(ty, prod), transposed)
                  for dim = 1, #shape do
                     local what = ('%s %s %s dim %d%s'):format(name, ty, table.concat(shape, 'x'), dim,
                        transposed and ' transposed' or '')
                     local want = ref_scan(fx, shape, dim, prod, wraps[ty])
                     local y = torch[name](x, dim)
                     assert.are.equal(ty, y:type())
                     assert.are.same(shape, y:size():totable())
                     util.assert_close(y, want, tol(ty, shape[dim]), what)
                     util.assert_close(x:clone()[name](x:clone(), dim), want, tol(ty, shape[dim]), what .. ' method')
                  end
                  util.assert_close(x, fx, EXACT, 'input untouched')
                  -- default dim 1, result-first forms, in place on itself
                  local want1 = ref_scan(fx, shape, 1, prod, wraps[ty])
                  util.assert_close(torch[name](x), want1, tol(ty, shape[1]), name .. ' default dim ' .. ty)
                  util.assert_close(x[name](x), want1, tol(ty, shape[1]), name .. ' x:' .. name .. '() ' .. ty)
                  local res = torch.Tensor():type(ty)
                  assert.is_true(rawequal(res, torch[name](res, x, #shape)))
                  util.assert_close(res, ref_scan(fx, shape, #shape, prod, wraps[ty]), tol(ty, shape[#shape]),
                     name .. ' res ' .. ty)
                  local z = x:clone()
                  z[name](z, z, 1)
                  util.assert_close(z, want1, tol(ty, shape[1]), name .. ' onto itself ' .. ty)
               end
            end
         end
      end)
   end

   it('integers wrap around like two\'s complement', function()
      util.assert_close(torch.cumprod(torch.IntTensor { 65536, 65536, 3 }), { 65536, 0, 0 }, EXACT, 'int32 wrap')
      util.assert_close(torch.cumsum(torch.IntTensor { 2147483647, 1, 1 }), { 2147483647, -2147483648, -2147483647 },
         EXACT, 'int32 sum wrap')
      util.assert_close(torch.cumsum(torch.ByteTensor { 200, 100, 1 }), { 200, 44, 45 }, EXACT, 'uint8 wrap')
   end)

   it('refuses bad dims, non-tensors and results that overlap the input in another layout', function()
      local x = torch.DoubleTensor(3, 5):uniform()
      util.assert_error(function() torch.cumsum(x, 3) end, 'cumsum', 'dimension 3', '3x5')
      util.assert_error(function() torch.cumprod(x, 0) end, 'cumprod', 'dimension 0')
      util.assert_error(function() torch.cumsum(x, 1.5) end, 'cumsum', 'integer dimension')
      util.assert_error(function() torch.cumsum('x') end, 'cumsum', 'expected a tensor')
      util.assert_error(function() torch.cumsum(x:narrow(2, 2, 3), x:narrow(2, 1, 3), 2) end, 'cumsum', 'shares memory')
      util.assert_error(function() torch.cumsum(torch.FloatTensor(), x) end, 'cumsum', 'float64')
   end)
end)
