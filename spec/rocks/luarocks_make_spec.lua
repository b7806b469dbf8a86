-- luarocks_make_spec.lua: README's `luarocks --lua-version=5.1 make rocks/moontorch-scm-1.rockspec`
-- into a fresh tree, as a user installs moontorch, gives the tree rocks/tree.lua checks: every
-- module (moontorch.models included), cdefs.lua, both libraries and the moontorch command,
-- working from another directory. It compiles the library once more (CPU-only, MT_CUDA=OFF, to
-- keep it short); the sources are copied first so luarocks' build.luarocks/ never lands in the
-- checkout.
-- ctest: train
local util = require 'spec.util'
local tree = require 'spec.rocks.tree'
local q = tree.quote

describe('install with luarocks make', function()
   local root = assert(io.popen('pwd')):read('*l')
   local scratch, dest, installed
   local jobs = tonumber((io.popen('nproc'):read('*l'))) or 2

   setup(function()
      scratch = util.tmpdir()
      dest = scratch .. '/tree'
      local src = scratch .. '/src'
      local parts = {}
      for _, p in ipairs { 'CMakeLists.txt', 'cmake', 'csrc', 'kernels', 'lua', 'bin', 'rocks' } do
         if util.exists(root .. '/' .. p) then parts[#parts + 1] = q(root .. '/' .. p) end
      end
      assert(tree.run('mkdir -p ' .. q(src) .. ' && cp -r ' .. table.concat(parts, ' ') .. ' ' .. q(src)))
      local ok, log = tree.run(('cd %s && %s CMAKE_BUILD_PARALLEL_LEVEL=%d %s --tree=%s make '
         .. '--deps-mode=none rocks/moontorch-scm-1.rockspec MT_CUDA=OFF')
         :format(q(src), tree.CLEAN_ENV, jobs, tree.LUAROCKS, q(dest)))
      installed = ok
      if not ok then io.stderr:write('luarocks make failed:\n', tree.tail(log), '\n') end
   end)

   teardown(function() if scratch then os.execute('rm -rf ' .. q(scratch)) end end)

   it('installs every Lua module, cdefs.lua, both libraries and the moontorch command', function()
      assert(installed, 'luarocks make failed (log above)')
      tree.check_files(root, dest)
   end)

   it("lets `require 'moontorch'` work from another directory and compute", function()
      assert(installed, 'luarocks make failed (log above)')
      tree.check_require(dest, scratch)
   end)

   it("has the model definitions: `require 'moontorch.models'` from the tree builds and runs one", function()
      assert(installed, 'luarocks make failed (log above)')
      tree.check_models(dest, scratch)
   end)

   it('runs a script with the installed moontorch command', function()
      assert(installed, 'luarocks make failed (log above)')
      tree.check_command(dest, scratch)
   end)
end)
