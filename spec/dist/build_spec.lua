-- build_spec.lua: the distributed layer's library is built beside the core one and reports
-- the transports CMake found: MPI exactly when Open MPI's compiler wrapper is installed (the
-- MT_MPI=AUTO rule; never in a build configured with MT_MPI=OFF), with the library's own version
-- string; a transport that is missing answers with an error that says how to get it.
local ffi = require 'ffi'

local function have_mpi()
   local f = io.popen('command -v mpicc 2>/dev/null')
   local out = f:read('*a')
   f:close()
   return out ~= ''
end

-- MT_MPI as the build was configured: its CMakeCache.txt beside the library, AUTO without one
-- (an installed tree)
local function mt_mpi_setting()
   local dir = require('moontorch.lib').path:match('^(.*)/[^/]*$') or '.'
   local f = io.open(dir .. '/CMakeCache.txt', 'r')
   if not f then return 'AUTO' end
   local text = f:read('*a')
   f:close()
   return text:match('\nMT_MPI:STRING=(%w+)') or 'AUTO'
end

describe('moontorch.dist library', function()
   local dlib = require 'moontorch.dist.lib'
   local C = require('moontorch.internal').clib

   it('loads beside libmoontorch.so', function()
      assert.truthy(dlib.path:match('libmoontorch_dist%.so$'))
   end)

   it('reports MPI when Open MPI is installed, with its version', function()
      local t = dlib.transports()
      if have_mpi() and mt_mpi_setting() ~= 'OFF' then
         assert.is_string(t.mpi)
         assert.truthy(t.mpi:match('Open MPI'), t.mpi)
      else
         assert.is_false(t.mpi)
      end
   end)

   it('names the missing transport and the fix', function()
      local buf = ffi.new('char[64]')
      local bits = dlib.C.mt_dist_transports()
      if bit.band(bits, C.MT_DIST_NCCL) == 0 then
         assert.equal(C.MT_ERR_UNSUPPORTED, dlib.C.mt_dist_transport_version(C.MT_DIST_NCCL, buf, 64))
         assert.truthy(ffi.string(C.mt_last_error()):match('no NCCL'))
      end
      assert.equal(C.MT_ERR_ARG, dlib.C.mt_dist_transport_version(99, buf, 64))
      assert.truthy(ffi.string(C.mt_last_error()):match('unknown transport 99'))
   end)
end)
