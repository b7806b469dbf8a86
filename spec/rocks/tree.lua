-- tree.lua: checks of an installed moontorch tree (share/lua/5.1, lib/lua/5.1, bin), shared by
-- rocks/install_spec.lua (cmake --install of the build at hand) and rocks/luarocks_make_spec.lua
-- (luarocks make into a fresh tree): the files the rockspec promises are there, and a luajit
-- that sees only the tree requires moontorch (and moontorch.models) from another directory and
-- computes.
local util = require 'spec.util'

local M = {}

function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local q = M.quote

-- Builds run clean: a MOONTORCH_BUILD from ctest must not point them at the checkout's build,
-- and make test-asan's preloaded sanitizer runtimes must not reach cmake, make or gcc.
M.CLEAN_ENV = 'env -u MOONTORCH_BUILD -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS'
-- Runs from a tree only lose MOONTORCH_BUILD: a tree installed from the sanitizer build needs
-- the runtimes make test-asan preloads.
M.RUN_ENV = 'env -u MOONTORCH_BUILD'

-- The install command as README.md gives it (and the Makefile's LUAROCKS): Debian's luarocks
-- builds for the Lua it runs on, 5.2 where lua5.1 is not installed, so the version is named.
M.LUAROCKS = 'luarocks --lua-version=5.1'

-- run a shell command; returns ok, its output (stdout and stderr)
function M.run(cmd)
   local f = assert(io.popen('(' .. cmd .. ') 2>&1; echo "__rc=$?"'))
   local out = f:read('*a')
   f:close()
   local rc = tonumber(out:match('__rc=(%d+)%s*$'))
   return rc == 0, (out:gsub('__rc=%d+%s*$', ''))
end

function M.tail(s, n)
   local lines = {}
   for line in s:gmatch('[^\n]*') do lines[#lines + 1] = line end
   return table.concat(lines, '\n', math.max(1, #lines - (n or 40)))
end

-- the files under dir, relative to it, sorted
local function listing(dir)
   local ok, out = M.run(('cd %s && find . -type f | sort'):format(q(dir)))
   assert(ok, out)
   local files = {}
   for line in out:gmatch('[^\n]+') do files[#files + 1] = line:sub(3) end
   return files
end

-- every file the install promises is in the tree: each Lua module of the checkout, the generated
-- cdefs.lua beside them, both libraries on the tree's cpath, the moontorch command
function M.check_files(root, tree)
   local lua = tree .. '/share/lua/5.1/moontorch/'
   local missing = {}
   local sources = listing(root .. '/lua/moontorch')
   assert(#sources > 100, 'the checkout lists only ' .. #sources .. ' Lua files')
   for _, f in ipairs(sources) do
      if not util.exists(lua .. f) then missing[#missing + 1] = lua .. f end
   end
   for _, f in ipairs { lua .. 'cdefs.lua', tree .. '/lib/lua/5.1/libmoontorch.so',
      tree .. '/lib/lua/5.1/libmoontorch_dist.so', tree .. '/bin/moontorch' } do
      if not util.exists(f) then missing[#missing + 1] = f end
   end
   assert(#missing == 0, 'not installed:\n  ' .. table.concat(missing, '\n  '))
   -- and nothing stray: only the modules and cdefs.lua under share/lua
   local installed = listing(lua)
   assert(#installed == #sources + 1, ('%d files installed under %s for %d sources and cdefs.lua'):format(#installed,
      lua, #sources))
end

-- luajit with only the tree's paths (plus the defaults), started from another directory
function M.in_tree(tree, scratch, script)
   local path = scratch .. '/check.lua'
   util.write_bytes(path, script)
   local lua = tree .. '/share/lua/5.1'
   return M.run(('cd / && %s LUA_PATH=%s LUA_CPATH=%s luajit %s'):format(M.RUN_ENV,
      q(lua .. '/?.lua;' .. lua .. '/?/init.lua;;'), q(tree .. '/lib/lua/5.1/?.so;;'), q(path)))
end

-- `require 'moontorch'` from / loads the tree's library and sums random numbers as plain Lua does
function M.check_require(tree, scratch)
   local ok, out = M.in_tree(tree, scratch, ([[
      math.randomseed(%d)
      local torch = require 'moontorch'
      local lib = require 'moontorch.lib'
      local n, ref, vals = 37, 0, {}
      for i = 1, n do vals[i] = math.random() * 2 - 1; ref = ref + vals[i] end
      local t = torch.DoubleTensor(vals)
      local got = t:sum()
      if type(got) ~= 'number' then got = got:totable() end
      print('LIB ' .. lib.path)
      print(('SUM %%.17g %%.17g'):format(got, ref))
      print('SIZE ' .. t:size(1) .. ' ' .. t:type())
      local dist = require 'moontorch.dist'
      print('DIST ' .. tostring(dist.size()))
   ]]):format(util.seed % 2147483647))
   assert(ok, 'luajit failed:\n' .. out)
   local libpath = out:match('LIB ([^\n]+)')
   assert(libpath and libpath:sub(1, #tree) == tree,
      'loaded the library from ' .. tostring(libpath) .. ', not the tree')
   local got, ref = out:match('SUM (%S+) (%S+)')
   util.assert_close({ tonumber(got) }, { tonumber(ref) }, { atol = 1e-12, rtol = 1e-12 }, 'sum')
   assert(out:find('SIZE 37 torch.DoubleTensor', 1, true), out)
   assert(out:find('DIST 1', 1, true), 'moontorch.dist from the tree, one process:\n' .. out)
end

-- `require 'moontorch.models'` from / loads the tree's copy (not the checkout's), and a model it
-- builds by name runs forward: the recipes' models are part of the installed library
function M.check_models(tree, scratch)
   local n = math.random(2, 5)
   local ok, out = M.in_tree(tree, scratch, ([[
      local torch = require 'moontorch'
      local models = require 'moontorch.models'
      print('SRC ' .. debug.getinfo(models.create, 'S').source)
      local net = models.create('small_cnn', { nClasses = 10, width = 4 })
      net:evaluate()
      local y = net:forward(torch.randn(%d, 1, 28, 28))
      print('OUT ' .. y:size(1) .. 'x' .. y:size(2))
   ]]):format(n))
   assert(ok, "require 'moontorch.models' from the tree failed:\n" .. out)
   local src = out:match('SRC @([^\n]+)')
   assert(src and src:sub(1, #tree) == tree, 'moontorch.models came from ' .. tostring(src) .. ', not the tree')
   assert(out:find(('OUT %dx10'):format(n), 1, true), 'small_cnn forward from the tree:\n' .. out)
end

-- the tree's moontorch command runs a script with torch loaded
function M.check_command(tree, scratch)
   local a, b = math.random(2, 9), math.random(2, 9)
   util.write_bytes(scratch .. '/script.lua', ([[
      local a = torch.DoubleTensor(%d, %d):fill(1)
      print('OK ' .. a:size(1) .. 'x' .. a:size(2) .. ' ' .. tostring(torch.isTensor(a)) .. ' ' .. a:sum())
   ]]):format(a, b))
   local ok, out = M.run(('cd / && %s -u LUA_PATH -u LUA_CPATH %s %s'):format(M.RUN_ENV,
      q(tree .. '/bin/moontorch'), q(scratch .. '/script.lua')))
   assert(ok, 'moontorch failed:\n' .. out)
   assert(out:find(('OK %dx%d true %d'):format(a, b, a * b), 1, true), out)
end

return M
