-- backend_spec.lua: the backend op tables. Every backend compiled in must fill every entry, so
-- no op can reach a NULL function pointer (csrc/core/dispatch.c, mt_backend_check).
require 'moontorch'
local ffi = require 'ffi'
local C = require('moontorch.internal').clib

describe('backend op tables', function()
   it('have every entry filled in', function()
      local st = C.mt_backend_check()
      assert.are.equal(0, st, st ~= 0 and ffi.string(C.mt_last_error()) or nil)
   end)
end)
