-- install_spec.lua: `luarocks make rocks/moontorch-scm-1.rockspec` into a fresh tree gives a
-- moontorch that works from anywhere: Lua modules with cdefs.lua beside them, libmoontorch.so on
-- package.cpath, and the moontorch command. Built CPU-only (MT_CUDA=OFF) to keep it short; the
-- sources are copied first so luarocks' build.luarocks/ never lands in the checkout.
local util = require 'spec.util'

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Children run clean: a MOONTORCH_BUILD from ctest must not point them at the checkout's build,
-- and make test-asan's preloaded sanitizer runtimes must not reach cmake, make or gcc.
local CLEAN_ENV = 'env -u MOONTORCH_BUILD -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS'

-- run a shell command; returns ok, its output (stdout and stderr)
local function run(cmd)
   local f = assert(io.popen('(' .. cmd .. ') 2>&1; echo "__rc=$?"'))
   local out = f:read('*a')
   f:close()
   local rc = tonumber(out:match('__rc=(%d+)%s*$'))
   return rc == 0, out:gsub('__rc=%d+%s*$', '')
end

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

local function tail(s, n)
   local lines = {}
   for line in s:gmatch('[^\n]*') do lines[#lines + 1] = line end
   return table.concat(lines, '\n', math.max(1, #lines - (n or 40)))
end

describe('install with luarocks', function()
   local root = assert(io.popen('pwd')):read('*l')
   local tmp, tree, installed
   local jobs = tonumber((io.popen('nproc'):read('*l'))) or 2

   setup(function()
      tmp = assert(io.popen('mktemp -d /tmp/moontorch-install.XXXXXX')):read('*l')
      tree = tmp .. '/tree'
      local src = tmp .. '/src'
      local parts = {}
      for _, p in ipairs { 'CMakeLists.txt', 'cmake', 'csrc', 'kernels', 'lua', 'bin', 'rocks' } do
         if exists(root .. '/' .. p) then parts[#parts + 1] = q(root .. '/' .. p) end
      end
      assert(run('mkdir -p ' .. q(src) .. ' && cp -r ' .. table.concat(parts, ' ') .. ' ' .. q(src)))
      local ok, log = run(('cd %s && %s CMAKE_BUILD_PARALLEL_LEVEL=%d luarocks --lua-version=5.1 --tree=%s make '
         .. '--deps-mode=none rocks/moontorch-scm-1.rockspec MT_CUDA=OFF'):format(q(src), CLEAN_ENV, jobs, q(tree)))
      installed = ok
      if not ok then io.stderr:write('luarocks make failed:\n', tail(log), '\n') end
   end)

   teardown(function()
      if tmp and tmp:match('^/tmp/moontorch%-install%.') then os.execute('rm -rf ' .. q(tmp)) end
   end)

   -- luajit with only the tree's paths (plus the defaults), started from another directory
   local function in_tree(script)
      local f = assert(io.open(tmp .. '/check.lua', 'w'))
      f:write(script)
      f:close()
      local lua = tree .. '/share/lua/5.1'
      return run(('cd / && %s LUA_PATH=%s LUA_CPATH=%s luajit %s'):format(CLEAN_ENV,
         q(lua .. '/?.lua;' .. lua .. '/?/init.lua;;'), q(tree .. '/lib/lua/5.1/?.so;;'), q(tmp .. '/check.lua')))
   end

   it('installs the modules, cdefs.lua, libmoontorch.so and the moontorch command', function()
      assert(installed, 'luarocks make failed (log above)')
      local lua = tree .. '/share/lua/5.1/moontorch/'
      for _, f in ipairs { 'init.lua', 'lib.lua', 'Tensor.lua', 'cdefs.lua' } do
         assert(exists(lua .. f), 'not installed: ' .. lua .. f)
      end
      assert(exists(tree .. '/lib/lua/5.1/libmoontorch.so'), 'libmoontorch.so not on the tree\'s cpath')
      if exists(root .. '/bin/moontorch') then
         assert(exists(tree .. '/bin/moontorch'), 'the moontorch command was not installed')
      end
   end)

   it("lets `require 'moontorch'` work from another directory and compute", function()
      assert(installed, 'luarocks make failed (log above)')
      -- random data generated in the child; the reference sum is computed there in plain Lua
      local ok, out = in_tree(([[
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
      ]]):format(util.seed % 2147483647))
      assert(ok, 'luajit failed:\n' .. out)
      local libpath = out:match('LIB ([^\n]+)')
      assert(libpath and libpath:sub(1, #tree) == tree, 'loaded the library from ' .. tostring(libpath) .. ', not the tree')
      local got, ref = out:match('SUM (%S+) (%S+)')
      util.assert_close({ tonumber(got) }, { tonumber(ref) }, { atol = 1e-12, rtol = 1e-12 }, 'sum')
      assert.truthy(out:find('SIZE 37 torch.DoubleTensor', 1, true), out)
   end)

   local with_command = exists(root .. '/bin/moontorch') and it or pending
   with_command('runs a script with the installed moontorch command', function()
      assert(installed, 'luarocks make failed (log above)')
      local f = assert(io.open(tmp .. '/script.lua', 'w'))
      f:write([[
         local a = torch.DoubleTensor({ { 1, 2 }, { 3, 4 } })
         print('OK ' .. a:size(1) .. 'x' .. a:size(2) .. ' ' .. tostring(torch.isTensor(a)))
      ]])
      f:close()
      local ok, out = run(('cd / && %s -u LUA_PATH -u LUA_CPATH %s %s'):format(CLEAN_ENV,
         q(tree .. '/bin/moontorch'), q(tmp .. '/script.lua')))
      assert(ok, 'moontorch failed:\n' .. out)
      assert.truthy(out:find('OK 2x2 true', 1, true), out)
   end)
end)
