-- nan_reads_spec.lua: NaNs of any sign and payload, put into tensors through their bits, come
-- back to Lua as numbers (NaN) through every read the library does: t[i], storage[i], totable,
-- tostring, ascii files and serialization, scalar reductions. Debian's LuaJIT takes a double NaN
-- with the sign set and some payloads for a GC object (docs/design.md); read raw, such a value
-- has type 'table' or 'userdata' and crashes the next collection. type(v) == 'number' is the
-- deterministic check; collectgarbage() after each read is the crash check.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'

local N = 2 * math.random(100, 200)

-- random NaN bit patterns: float32 (as uint32), float64 (as hi/lo uint32 pairs), float16
local function f32_nan() -- sign either way, exponent all ones, mantissa nonzero
   return (math.random(0, 1) == 1 and 0xff800000 or 0x7f800000) + math.random(1, 0x7fffff)
end
local function f16_nan()
   return (math.random(0, 1) == 1 and 0xfc00 or 0x7c00) + math.random(1, 0x3ff)
end

local function nan_tensor(ty)
   local t = torch[ty](N)
   local p = t:data()
   if ty == 'FloatTensor' then
      local w = ffi.cast('uint32_t*', p)
      for i = 0, N - 1 do w[i] = f32_nan() end
      -- every pattern LuaJIT mistakes (negative quiet NaNs whose top payload bits pick a tag)
      for i = 0, math.min(N, 16) - 1 do w[i] = 0xffc00000 + i * 0x40000 end
   elseif ty == 'DoubleTensor' then
      local w = ffi.cast('uint32_t*', p)
      local hi = ffi.abi('le') and 1 or 0
      for i = 0, N - 1 do
         w[2 * i + hi] = (math.random(0, 1) == 1 and 0xfff00000 or 0x7ff00000) + math.random(1, 0xfffff)
         w[2 * i + 1 - hi] = math.random(0, 0xffffffff)
      end
      for i = 0, math.min(N, 16) - 1 do w[2 * i + hi], w[2 * i + 1 - hi] = 0xfff80000 + i * 0x8000, 0 end
   else
      local w = ffi.cast('uint16_t*', p)
      for i = 0, N - 1 do w[i] = f16_nan() end
   end
   return t
end

local function is_lua_nan(v, what)
   assert.are.equal('number', type(v), what)
   assert(v ~= v, what .. ': expected NaN, got ' .. tostring(v))
end

local TYPES = { 'FloatTensor', 'DoubleTensor', 'HalfTensor' }

describe('NaNs with any sign and payload', function()
   for _, ty in ipairs(TYPES) do
      it(ty .. ': t[i] and storage[i] give Lua NaNs', function()
         local t = nan_tensor(ty)
         local s = t:storage()
         local keep = {}
         for i = 1, N do
            local v, w = t[i], s[i]
            is_lua_nan(v, ('t[%d]'):format(i))
            is_lua_nan(w, ('storage[%d]'):format(i))
            keep[#keep + 1] = { v, w }
         end
         collectgarbage()
         collectgarbage()
         for i, k in ipairs(keep) do is_lua_nan(k[1], 'kept ' .. i) end
      end)

      it(ty .. ': totable, tostring and scalar reductions', function()
         local t = nan_tensor(ty)
         local tab = t:totable()
         assert.are.equal(N, #tab)
         for i = 1, N do is_lua_nan(tab[i], 'totable ' .. i) end
         collectgarbage()
         local s = tostring(t:view(2, N / 2))
         assert(s:find('nan'), s:sub(1, 200))
         collectgarbage()
         is_lua_nan(t:sum(), 'sum')
         is_lua_nan(t:max(), 'max')
         is_lua_nan(t:min(), 'min')
         if ty ~= 'HalfTensor' then is_lua_nan(t:dot(t), 'dot') end
         collectgarbage()
      end)

      it(ty .. ': ascii files and ascii serialization', function()
         local t = nan_tensor(ty)
         local f = torch.MemoryFile('rw'):ascii()
         f:writeObject(t)
         f:seek(1)
         local back = f:readObject()
         f:close()
         assert.are.equal(N, back:nElement())
         for i = 1, N do is_lua_nan(back[i], 'file ' .. i) end
         local des = torch.deserialize(torch.serialize(t, 'ascii'), 'ascii')
         for i = 1, N do is_lua_nan(des[i], 'serialize ' .. i) end
         collectgarbage()
      end)
   end

   it('finite values read as before (a spot check beside the NaNs)', function()
      local t, flat = util.rand_tensor({ N }, 'torch.FloatTensor', -1e3, 1e3)
      local d, dflat = util.rand_tensor({ N }, 'torch.DoubleTensor', -1e3, 1e3)
      for i = 1, N do
         assert.are.equal(flat[i], t[i])
         assert.are.equal(dflat[i], d[i])
      end
      t[1], d[1] = -math.huge, math.huge
      assert.are.equal(-math.huge, t[1])
      assert.are.equal(math.huge, d:storage()[1])
   end)
end)
