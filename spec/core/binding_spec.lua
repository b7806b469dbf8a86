-- binding_spec.lua: the FFI binding is generated from csrc/moontorch.h; check that every
-- function it declares resolves in the built library and that the error path works end to end.
local ffi = require 'ffi'
local torch = require 'moontorch'
local C = require('moontorch.internal').clib

local function header_block()
   local f = assert(io.open('csrc/moontorch.h', 'rb'))
   local text = f:read('*a')
   f:close()
   return assert(text:match('/%* MT_FFI_BEGIN %*/(.-)/%* MT_FFI_END %*/'), 'FFI markers missing')
end

describe('binding', function()
   it('declares every public function of the header and each one resolves', function()
      local names = {}
      for name in header_block():gmatch('[%w_%*]+%s+%**(mt_[%w_]+)%s*%(') do names[#names + 1] = name end
      assert.is_true(#names > 60, 'found only ' .. #names .. ' functions in the header')
      -- the distributed layer's functions (mt_dist_*, the parameter server's mt_ps_*) live in
      -- its own library, libmoontorch_dist.so
      local dist = require('moontorch.dist.lib')
      for _, name in ipairs(names) do
         local lib, libname = C, 'libmoontorch'
         if name:match('^mt_dist_') or name:match('^mt_ps_') then lib, libname = dist.C, 'libmoontorch_dist' end
         local ok, fn = pcall(function() return lib[name] end)
         assert(ok, 'symbol missing from ' .. libname .. ': ' .. name .. ' (' .. tostring(fn) .. ')')
      end
   end)

   it('reports C errors as Lua errors naming the operation and sizes', function()
      local out = ffi.new('mt_tensor*[1]')
      local sizes = ffi.new('int64_t[2]', 2, -3)
      assert.are.equal(C.MT_ERR_SHAPE, C.mt_tensor_new(out, 0, -1, 2, sizes))
      local msg = ffi.string(C.mt_last_error())
      assert.truthy(msg:find('tensor', 1, true) and msg:find('-3', 1, true), msg)
      local ok, err = pcall(torch.Tensor, 2, -3)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('negative', 1, true), err)
   end)

   it('refuses an invalid dtype and too many dimensions', function()
      local out = ffi.new('mt_tensor*[1]')
      local sizes = ffi.new('int64_t[9]', 1, 1, 1, 1, 1, 1, 1, 1, 1)
      assert.are.equal(C.MT_ERR_DTYPE, C.mt_tensor_new(out, 42, -1, 1, sizes))
      assert.are.equal(C.MT_ERR_SHAPE, C.mt_tensor_new(out, 0, -1, 9, sizes))
      assert.truthy(ffi.string(C.mt_last_error()):find('at most 8', 1, true))
   end)
end)
