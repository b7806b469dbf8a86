-- install_spec.lua: what the rockspec installs, checked from the build at hand without compiling
-- again: `luarocks lint` accepts rocks/moontorch-scm-1.rockspec, its CMake variables are the ones
-- CMakeLists.txt reads, and `cmake --install` of the build into a scratch tree gives every Lua
-- module with cdefs.lua beside them, both libraries and the moontorch command, from which
-- `require 'moontorch'` and `require 'moontorch.models'` work in another directory
-- (rocks/tree.lua). Also: README's install command names Lua 5.1 (Debian's luarocks would build
-- for 5.2), and the rockspec's external dependencies name a missing C library before building.
-- `luarocks make` itself, a second compile, is rocks/luarocks_make_spec.lua in the training tier.
local util = require 'spec.util'
local tree = require 'spec.rocks.tree'
local q = tree.quote

local ROCKSPEC = 'rocks/moontorch-scm-1.rockspec'

describe('the rockspec', function()
   it('passes luarocks lint', function()
      local ok, out = tree.run(tree.LUAROCKS .. ' lint ' .. ROCKSPEC)
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

describe('the documented install command', function()
   it('is the one README.md and `make install` give, naming Lua 5.1', function()
      local cmd = tree.LUAROCKS .. ' make ' .. ROCKSPEC
      assert.truthy(util.read_bytes('README.md'):find(cmd, 1, true), 'README.md does not give `' .. cmd .. '`')
      local make = util.read_bytes('Makefile')
      assert.truthy(make:find('LUAROCKS%s*%?=%s*' .. tree.LUAROCKS:gsub('%p', '%%%0') .. '\n'),
         'the Makefile does not set LUAROCKS ?= ' .. tree.LUAROCKS)
      assert.truthy(make:find('$(LUAROCKS) make $(LUAROCKS_FLAGS) ' .. ROCKSPEC, 1, true),
         'make install does not run $(LUAROCKS) make')
   end)

   -- Debian's luarocks runs on lua-any's first interpreter: lua5.2 where lua5.1 is not installed
   it('builds for Lua 5.1 even when luarocks itself runs on Lua 5.2', function()
      local has52 = tree.run('command -v lua5.2 && command -v luarocks')
      if not has52 then
         pending('no lua5.2 interpreter here to run luarocks on')
         return
      end
      local lr52 = 'lua5.2 "$(command -v luarocks)"'
      local ok, out = tree.run(lr52 .. tree.LUAROCKS:gsub('^luarocks', '') .. ' config lua_version')
      assert(ok, out)
      assert.are.equal('5.1', out:match('^%s*(.-)%s*$'))
      -- and without the flag it would not: the failure README warns about
      local _, plain = tree.run(lr52 .. ' config lua_version')
      assert.are.equal('5.2', plain:match('^%s*(.-)%s*$'))
   end)
end)

describe('the external dependencies', function()
   local spec = {}
   assert(setfenv(assert(loadfile(ROCKSPEC)), spec))()
   local deps = spec.external_dependencies or {}
   local root = assert(io.popen('pwd')):read('*l')

   it('are the C libraries CMakeLists.txt requires, and CMake searches where LuaRocks found them', function()
      local names = {}
      for name, d in pairs(deps) do
         names[#names + 1] = name
         assert.truthy(d.header or d.library, name .. ' has neither a header nor a library to look for')
         assert.truthy(spec.build.variables.CMAKE_LIBRARY_PATH:find('$(' .. name .. '_LIBDIR)', 1, true), name)
      end
      table.sort(names)
      assert.are.same({ 'CJSON', 'JPEG', 'OPENBLAS', 'PNG', 'ZLIB' }, names)
      local cmake = util.read_bytes('CMakeLists.txt')
      for _, req in ipairs { 'NAMES openblas REQUIRED', 'cjson REQUIRED', 'ZLIB REQUIRED', 'JPEG REQUIRED',
         'PNG REQUIRED' } do
         assert.truthy(cmake:find(req, 1, true), 'CMakeLists.txt no longer has ' .. req .. ': update the rockspec')
      end
   end)

   -- each one made unfindable in turn (its folder pointed at a missing one): luarocks make stops
   -- at once, names it, and neither builds nor installs anything
   it('name a missing one before anything is built', function()
      local scratch = util.tmpdir()
      finally(function() os.execute('rm -rf ' .. q(scratch)) end)
      assert(tree.run(('mkdir -p %s/src && cp -r %s %s/src'):format(q(scratch), q(root .. '/rocks'), q(scratch))))
      for name, d in pairs(deps) do
         local var = name .. (d.header and '_INCDIR' or '_LIBDIR')
         local ok, out = tree.run(('cd %s/src && %s %s --tree=%s/tree make --deps-mode=none %s MT_CUDA=OFF %s=%s/none')
            :format(q(scratch), tree.CLEAN_ENV, tree.LUAROCKS, q(scratch), ROCKSPEC, var, q(scratch)))
         assert.is_false(ok, var .. ' pointing nowhere, luarocks make succeeded:\n' .. out)
         local what = d.header and 'header' or 'library'
         assert.truthy(out:find('Could not find ' .. what .. ' file for ' .. name, 1, true), name .. ':\n' .. out)
         assert.is_false(util.exists(scratch .. '/tree'), name .. ': luarocks make installed into the tree')
         assert.is_false(util.exists(scratch .. '/src/build.luarocks'), name .. ': luarocks make started a build')
      end
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
