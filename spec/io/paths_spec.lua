-- paths_spec.lua: the part of Torch7's paths package in lua/moontorch/io/paths.lua, on a fresh
-- random folder tree.
local paths = require 'moontorch.io.paths'
local util = require 'spec.util'

describe('paths', function()
   it('tells files from folders and lists a folder', function()
      local dir = util.tmpdir()
      local sub = dir .. '/d' .. math.random(1, 1e6)
      assert.is_true(paths.mkdir(sub))
      assert.is_false(paths.mkdir(sub)) -- already there
      local names = {}
      for i = 1, math.random(2, 6) do
         names[i] = ('f%d_%d.t7'):format(i, math.random(1, 1e6))
         util.write_bytes(sub .. '/' .. names[i], 'x')
      end
      assert.is_true(paths.dirp(sub))
      assert.is_false(paths.filep(sub))
      assert.is_true(paths.filep(sub .. '/' .. names[1]))
      assert.is_false(paths.dirp(sub .. '/' .. names[1]))
      assert.is_false(paths.filep(sub .. '/missing'))
      local listed = paths.dir(sub)
      table.sort(names)
      table.insert(names, 1, '..')
      table.insert(names, 1, '.')
      table.sort(listed)
      assert.are.same(names, listed)
      local seen = {}
      for f in paths.files(sub, '%.t7$') do seen[#seen + 1] = f end
      assert.are.equal(#names - 2, #seen)
      assert.is_nil(paths.dir(sub .. '/missing'))
      assert.is_false(paths.rmdir(sub)) -- not empty
      for i = 3, #names do os.remove(sub .. '/' .. names[i]) end
      assert.is_true(paths.rmdir(sub))
      assert.is_false(paths.dirp(sub))
      util.assert_error(function() paths.filep(3) end, 'paths.filep', 'expected a path string')
   end)

   it('splits and joins path names as Torch7 did', function()
      local a, b = 'a' .. math.random(1, 1e6), 'b' .. math.random(1, 1e6)
      local p = '/' .. a .. '/' .. b .. '.t7'
      assert.are.equal('/' .. a, paths.dirname(p))
      assert.are.equal('/', paths.dirname('/' .. a))
      assert.are.equal('.', paths.dirname(b))
      assert.are.equal('/' .. a, paths.dirname('/' .. a .. '/' .. b .. '/'))
      assert.are.equal(b .. '.t7', paths.basename(p))
      assert.are.equal(b, paths.basename(p, 't7'))
      assert.are.equal(b, paths.basename(p, '.t7'))
      assert.are.equal(b .. '.t7', paths.basename(p, 'lua'))
      assert.are.equal('t7', paths.extname(p))
      assert.is_nil(paths.extname('/' .. a .. '/' .. b))
      assert.are.equal('/' .. a .. '/' .. b, paths.concat('/' .. a, b))
      assert.are.equal('/' .. b, paths.concat('/' .. a, '/' .. b))
      assert.are.equal(paths.cwd() .. '/' .. a, paths.concat(a))
      assert.are.equal(paths.cwd(), paths.concat())
      local t = paths.tmpname()
      assert.is_true(paths.filep(t)) -- os.tmpname makes the file
      os.remove(t)
   end)
end)
