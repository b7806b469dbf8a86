-- install_spec.lua: what the rockspec installs, checked from the build at hand without compiling
-- again: `luarocks lint` accepts rocks/moontorch-scm-1.rockspec, its CMake variables are the ones
-- CMakeLists.txt reads, and `cmake --install` of the build into a scratch tree gives every Lua
-- module with cdefs.lua beside them, both libraries and the moontorch command, from which
-- `require 'moontorch'` works in another directory (rocks/tree.lua). `luarocks make` itself, a
-- second compile, is rocks/luarocks_make_spec.lua in the training tier.
local util = require 'spec.util'
local tree = require 'spec.rocks.tree'
local q = tree.quote

local ROCKSPEC = 'rocks/moontorch-scm-1.rockspec'

describe('the rockspec', function()
   it('passes luarocks lint', function()
      local ok, out = tree.run('luarocks --lua-version=5.1 lint ' .. ROCKSPEC)
      assert(ok, 'luarocks lint ' .. ROCKSPEC .. ':\n' .. out)
   end)

   it('builds with CMake, handing it the folders and the CUDA switch CMakeLists.txt reads', function()
      local spec = {}
      assert(setfenv(assert(loadfile(ROCKSPEC)), spec))()
      assert.are.equal('cmake', spec.build.type)
      local cmake = util.read_bytes('CMakeLists.txt')
      for _, var in ipairs { 'LUADIR', 'LIBDIR', 'BINDIR', 'MT_CUDA' } do
         assert.are.equal('$(' .. var .. ')', spec.build.variables[var], var)
         assert.truthy(cmake:find('set(' .. var .. ' ', 1, true), 'CMakeLists.txt has no cache variable ' .. var)
      end
      assert.are.equal('moontorch', spec.package)
   end)
end)

describe('cmake --install of the build', function()
   local root = assert(io.popen('pwd')):read('*l')
   local build = os.getenv('MOONTORCH_BUILD') or (root .. '/build')
   local scratch = util.tmpdir()
   local dest = scratch .. '/tree'
   local ok, log = tree.run(('%s cmake --install %s --prefix %s'):format(tree.CLEAN_ENV, q(build), q(dest)))

   teardown(function() os.execute('rm -rf ' .. q(scratch)) end)

   it('installs every Lua module, cdefs.lua, both libraries and the moontorch command', function()
      assert(ok, 'cmake --install failed:\n' .. tree.tail(log))
      tree.check_files(root, dest)
   end)

   it("lets `require 'moontorch'` work from another directory and compute", function()
      assert(ok, 'cmake --install failed (see the first test)')
      tree.check_require(dest, scratch)
   end)

   it("has the model definitions: `require 'moontorch.models'` from the tree builds and runs one", function()
      assert(ok, 'cmake --install failed (see the first test)')
      tree.check_models(dest, scratch)
   end)

   it('runs a script with the installed moontorch command', function()
      assert(ok, 'cmake --install failed (see the first test)')
      tree.check_command(dest, scratch)
   end)
end)
