-- dataset_spec.lua: datasets (csrc/data/dataset.c, folder.c; lua/moontorch/data/dataset.lua)
-- and the pack tool (recipes/tools/pack.lua). "Images" are random bytes: nothing is decoded.
-- ImageFolder's listing is checked against torchvision's DatasetFolder on the same tree; packed
-- shards against the folder they came from, sample by sample.
local ffi = require 'ffi'
require 'moontorch'
local util = require 'spec.util'
local data = require 'moontorch.data'
local fs = require 'moontorch.io.fs'

local tmpdir = util.tmpdir()
local counter = 0
local function fresh_dir(name) -- a new empty folder per test
   counter = counter + 1
   local p = ('%s/%s%d'):format(tmpdir, name, counter)
   fs.mkdir_p(p)
   return p
end

local write_bytes = util.write_bytes
local read_bytes = util.read_bytes
local function random_bytes(n)
   local t = {}
   for i = 1, n do t[i] = string.char(math.random(0, 255)) end
   return table.concat(t)
end
local function tensor_string(t) return ffi.string(t:data(), t:nElement()) end
local NAMECHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_- '
local function random_name(n)
   local t = {}
   for i = 1, n do
      local k = math.random(1, #NAMECHARS - (i == 1 and 1 or 0)) -- no leading space
      t[i] = NAMECHARS:sub(k, k)
   end
   return table.concat(t)
end
-- output (stdout and stderr) and exit status of a shell command (LuaJIT's popen:close does
-- not report the status)
local function sh(cmd)
   local p = io.popen(cmd .. ' 2>&1; echo "<rc=$?>"')
   local out = p:read('*a')
   p:close()
   local rc = tonumber(out:match('<rc=(%d+)>%s*$'))
   return out:gsub('<rc=%d+>%s*$', ''), rc
end
local function pack(...)
   local args = {}
   for i, a in ipairs { ... } do args[i] = ('%q'):format(a) end
   return sh('luajit recipes/tools/pack.lua ' .. table.concat(args, ' ') .. ' -quiet')
end

-- a random ImageFolder tree: returns the file contents by path
local function make_tree(root, nclasses, opts)
   opts = opts or {}
   local contents, used = {}, {}
   for _ = 1, nclasses do
      local class
      repeat class = random_name(math.random(1, 10)) until not used[class]
      used[class] = true
      fs.mkdir_p(root .. '/' .. class)
      local exts = { 'jpg', 'JPG', 'jpeg', 'Png', 'png', 'txt', 'gif' }
      local made = 0
      for _ = 1, math.random(1, opts.maxfiles or 8) do
         local ext = exts[math.random(1, #exts)]
         if made == 0 then ext = 'jpg' end -- torchvision refuses a class without images
         local path = ('%s/%s/%s.%s'):format(root, class, random_name(math.random(1, 12)), ext)
         contents[path] = random_bytes(math.random(1, 600))
         write_bytes(path, contents[path])
         made = made + 1
      end
   end
   return contents
end

-- torchvision's listing of an ImageFolder root: classes, {label (1-based), path} pairs
local function torchvision_listing(root)
   local script = [[
import sys, torchvision
ds = torchvision.datasets.DatasetFolder(sys.argv[1], loader=lambda p: p, extensions=('.jpg', '.jpeg', '.png'))
print('\n'.join(ds.classes))
print('--')
for p, c in ds.samples:
    print('%d\t%s' % (c + 1, p))
]]
   local sp = tmpdir .. '/tv.py'
   write_bytes(sp, script)
   local out, rc = sh(('%s %q %q'):format(util.PY, sp, root))
   assert(rc == 0, 'torchvision failed: ' .. out)
   local classes, samples, past = {}, {}, false
   for line in out:gmatch('([^\n]*)\n') do
      if line == '--' then past = true
      elseif not past then classes[#classes + 1] = line
      else
         local label, path = line:match('^(%d+)\t(.*)$')
         samples[#samples + 1] = { tonumber(label), path }
      end
   end
   return classes, samples
end

local function listing(ds)
   local samples = {}
   for i = 1, ds:size() do samples[i] = { ds:sample(i) } end
   return samples
end

describe('ImageFolder', function()
   it('lists classes, order and labels as torchvision does, and reads each file\'s bytes', function()
      local root = fresh_dir('tv')
      local contents = make_tree(root, math.random(3, 7))
      local ds = data.ImageFolder(root)
      local classes, samples = torchvision_listing(root)
      assert.are.same(classes, ds:classes())
      assert.are.same(samples, listing(ds))
      assert(#samples > 0)
      for i = 1, ds:size() do
         local _, name = ds:sample(i)
         local t = ds:read(i)
         assert.are.equal('torch.ByteTensor', t:type())
         assert(tensor_string(t) == contents[name], 'bytes of ' .. name)
      end
      assert.are.same({}, ds:warnings())
      -- a trailing slash names the same samples
      assert.are.same(listing(ds), listing(data.ImageFolder(root .. '/')))
   end)

   it('filters extensions case-insensitively from a comma list', function()
      local root = fresh_dir('ext')
      make_tree(root, 3)
      local ds = data.ImageFolder(root, { extensions = ' .PNG, gif ' })
      local n = 0
      for dir in io.popen(('find %q -type f'):format(root)):lines() do
         local ext = dir:match('%.(%w+)$'):lower()
         if ext == 'png' or ext == 'gif' then n = n + 1 end
      end
      assert.are.equal(n, ds:size())
      for i = 1, ds:size() do
         local _, name = ds:sample(i)
         assert(name:lower():match('%.png$') or name:lower():match('%.gif$'), name)
      end
      util.assert_error(function() data.ImageFolder(root, { extensions = ' , ' }) end, 'names no extension')
   end)

   it('skips hidden entries, keeps an empty class with a warning, follows links', function()
      local root = fresh_dir('hidden')
      fs.mkdir_p(root .. '/b_class')
      fs.mkdir_p(root .. '/a_empty')
      fs.mkdir_p(root .. '/.cache')
      fs.mkdir_p(root .. '/b_class/nested')
      local real = fresh_dir('real')
      write_bytes(real .. '/linked.jpg', random_bytes(50))
      write_bytes(root .. '/.cache/x.jpg', 'hidden class')
      write_bytes(root .. '/b_class/.hidden.jpg', 'hidden file')
      write_bytes(root .. '/b_class/nested/deep.jpg', 'not descended into')
      write_bytes(root .. '/b_class/z.jpg', random_bytes(20))
      write_bytes(root .. '/b_class/a.JPEG', random_bytes(30))
      write_bytes(root .. '/a_empty/readme.txt', 'no image')
      write_bytes(root .. '/toplevel.jpg', 'not in a class')
      os.execute(('ln -s %q %q'):format(real .. '/linked.jpg', root .. '/b_class/m.png'))
      os.execute(('ln -s %q %q'):format(real, root .. '/c_linked'))
      local ds = data.ImageFolder(root)
      assert.are.same({ 'a_empty', 'b_class', 'c_linked' }, ds:classes())
      assert.are.same({ { 2, root .. '/b_class/a.JPEG' }, { 2, root .. '/b_class/m.png' },
         { 2, root .. '/b_class/z.jpg' }, { 3, root .. '/c_linked/linked.jpg' } }, listing(ds))
      assert.are.equal(read_bytes(real .. '/linked.jpg'), tensor_string(ds:read(2)))
      local w = ds:warnings()
      assert.are.equal(1, #w)
      assert(w[1]:find("'a_empty'", 1, true) and w[1]:find(root, 1, true), w[1])
   end)

   it('an unreadable or empty file fails at read time, naming the file', function()
      local root = fresh_dir('unreadable')
      fs.mkdir_p(root .. '/c')
      write_bytes(root .. '/c/a.jpg', random_bytes(10))
      write_bytes(root .. '/c/b.jpg', random_bytes(10))
      write_bytes(root .. '/c/e.jpg', '')
      os.execute(('ln -s %q %q'):format(root .. '/nowhere', root .. '/c/d.jpg'))
      local ds = data.ImageFolder(root)
      assert.are.equal(4, ds:size())
      os.remove(root .. '/c/b.jpg') -- gone after the scan
      assert.are.equal(10, ds:read(1):nElement())
      util.assert_error(function() ds:read(2) end, root .. '/c/b.jpg', 'cannot open')
      util.assert_error(function() ds:read(3) end, root .. '/c/d.jpg', 'cannot open')
      util.assert_error(function() ds:read(4) end, root .. '/c/e.jpg', 'empty')
   end)

   it('a missing root, or one without class folders, is an error naming it', function()
      util.assert_error(function() data.ImageFolder(tmpdir .. '/does-not-exist') end, tmpdir .. '/does-not-exist')
      local root = fresh_dir('flat')
      write_bytes(root .. '/a.jpg', 'x')
      util.assert_error(function() data.ImageFolder(root) end, root, 'no class folders')
      util.assert_error(function() data.ImageFolder(42) end, 'ImageFolder')
   end)
end)

describe('Dataset', function()
   it('holds files and classes added one by one', function()
      local dir = fresh_dir('files')
      local ds = data.Dataset()
      assert.are.equal(0, ds:size())
      ds:addClass('zero'):addClass('one')
      local contents = {}
      for i = 1, 12 do
         local path = ('%s/f%d.bin'):format(dir, i)
         contents[i] = random_bytes(math.random(1, 2000))
         write_bytes(path, contents[i])
         ds:addFile(path, (i % 2) + 1)
      end
      assert.are.same({ 'zero', 'one' }, ds:classes())
      assert.are.equal(12, ds:size())
      for i = 1, 12 do
         local label, name = ds:sample(i)
         assert.are.equal((i % 2) + 1, label)
         assert.are.equal(('%s/f%d.bin'):format(dir, i), name)
         assert(tensor_string(ds:read(i)) == contents[i])
      end
      util.assert_error(function() ds:sample(13) end, 'out of range')
      util.assert_error(function() ds:read(0) end, 'out of range')
      util.assert_error(function() ds:addFile(dir .. '/x', 0) end, 'label')
      util.assert_error(function() ds:addFile(dir .. '/x', 1.5) end, 'label')
      util.assert_error(function() ds:addClass(nil) end, 'addClass')
      util.assert_error(function() ds:cache { rank = 2, world = 2 } end, 'rank')
      assert(tostring(ds):find('12 samples', 1, true))
   end)

   it('shuffles its samples into a fixed order per seed, before caching only', function()
      local dir = fresh_dir('shuffle')
      local function make()
         local ds = data.Dataset():addClass('a'):addClass('b')
         for i = 1, 40 do
            local path = ('%s/s%d.bin'):format(dir, i)
            write_bytes(path, random_bytes(10 + i))
            ds:addFile(path, i <= 20 and 1 or 2)
         end
         return ds
      end
      local function order(ds)
         local names = {}
         for i = 1, ds:size() do names[i] = select(2, ds:sample(i)) end
         return names
      end
      local before = order(make())
      local a, b, c = make():shuffle(7), make():shuffle(7), make():shuffle(8)
      assert.are.same(order(a), order(b))
      assert.are_not.same(order(a), order(c))
      assert.are_not.same(before, order(a))
      -- a permutation: every name once, with its label and bytes
      local seen = {}
      for i = 1, a:size() do
         local label, name = a:sample(i)
         local k = tonumber(name:match('s(%d+)%.bin$'))
         assert.is_nil(seen[k])
         seen[k] = true
         assert.are.equal(k <= 20 and 1 or 2, label)
         assert.are.equal(10 + k, a:read(i):nElement())
      end
      -- the first half of a shuffled order holds both classes (the point of it)
      local labels = {}
      for i = 1, 20 do labels[a:sample(i)] = true end
      assert.is_true(labels[1] and labels[2])
      a:cache{ rank = 0, world = 1 }
      util.assert_error(function() a:shuffle(7) end, 'shuffle before Dataset:cache')
      util.assert_error(function() b:shuffle(-1) end, 'seed')
   end)

   it('appends folders after existing classes', function()
      local root = fresh_dir('append')
      make_tree(root, 2)
      local ds = data.Dataset():addClass('first')
      ds:addFolder(root)
      local alone = data.ImageFolder(root)
      assert.are.equal(alone:size(), ds:size())
      for i = 1, ds:size() do
         local l1, n1 = ds:sample(i)
         local l2, n2 = alone:sample(i)
         assert.are.equal(l2 + 1, l1)
         assert.are.equal(n2, n1)
      end
   end)
end)

describe('Shards and pack.lua', function()
   local function assert_same_samples(shards, folder, src)
      assert.are.same(folder:classes(), shards:classes())
      assert.are.equal(folder:size(), shards:size())
      for i = 1, folder:size() do
         local l1, n1 = folder:sample(i)
         local l2, n2 = shards:sample(i)
         assert.are.equal(l1, l2, 'label of sample ' .. i)
         local rel = n1:sub(#src + 2) -- class/file
         assert(n2:sub(-#rel - 1) == ':' .. rel, ('name %s for %s'):format(n2, n1))
         assert(tensor_string(shards:read(i)) == tensor_string(folder:read(i)), 'bytes of ' .. n1)
      end
   end

   it('packs an ImageFolder into shards that read back equal, sample by sample', function()
      local src, dst = fresh_dir('src'), fresh_dir('dst')
      make_tree(src, 5, { maxfiles = 12 })
      local out, rc = pack(src, dst, '-shardSize', '7', '-verify')
      assert(rc == 0, out)
      assert(out:find('0 errors', 1, true), out)
      local folder = data.ImageFolder(src)
      local shards = data.Shards(dst)
      assert_same_samples(shards, folder, src)
      local names = fs.list(dst)
      local n = 0
      for _, name in ipairs(names) do if name:match('^shard%-%d%d%d%d%d%.mts$') then n = n + 1 end end
      assert.are.equal(math.ceil(folder:size() / 7), n)
      assert.are.equal(table.concat(folder:classes(), '\n') .. '\n', read_bytes(dst .. '/classes.txt'))

      -- another shard size: every shard is rewritten and the surplus ones are removed
      out, rc = pack(src, dst, '-shardSize', '3')
      assert(rc == 0, out)
      n = 0
      for _, name in ipairs(fs.list(dst)) do if name:match('%.mts') then n = n + 1 end end
      assert.are.equal(math.ceil(folder:size() / 3), n)
      assert_same_samples(data.Shards(dst), folder, src)
   end)

   it('packs train/ and val/ splits into DST/<split>', function()
      local src, dst = fresh_dir('splits'), fresh_dir('splitsout')
      make_tree(src .. '/train', 3)
      make_tree(src .. '/val', 2)
      local out, rc = pack(src, dst)
      assert(rc == 0, out)
      for _, split in ipairs { 'train', 'val' } do
         assert_same_samples(data.Shards(dst .. '/' .. split), data.ImageFolder(src .. '/' .. split),
            src .. '/' .. split)
      end
   end)

   it('resumes: a missing or corrupt shard is rebuilt, the others are left alone', function()
      local src, dst = fresh_dir('resume'), fresh_dir('resumeout')
      make_tree(src, 5, { maxfiles = 10 })
      local out, rc = pack(src, dst, '-shardSize', '2')
      assert(rc == 0, out)
      local folder = data.ImageFolder(src)
      local nshards = math.ceil(folder:size() / 2)
      assert(nshards >= 3, 'the tree should give at least 3 shards')
      local function ids()
         local r = {}
         for k = 0, nshards - 1 do
            r[k] = sh(('stat -c %%i:%%y %q'):format(('%s/shard-%05d.mts'):format(dst, k)))
         end
         return r
      end
      local before = ids()
      local gone = math.random(0, nshards - 1)
      local bad
      repeat bad = math.random(0, nshards - 1) until bad ~= gone
      os.remove(('%s/shard-%05d.mts'):format(dst, gone))
      local bpath = ('%s/shard-%05d.mts'):format(dst, bad)
      local s = read_bytes(bpath)
      write_bytes(bpath, s:sub(1, 64) .. string.char((s:byte(65) + 1) % 256) .. s:sub(66)) -- first record's first byte
      local after_damage = ids()
      out, rc = pack(src, dst, '-shardSize', '2', '-verify')
      assert(rc == 0, out)
      assert(out:find(bpath, 1, true) and out:find('CRC', 1, true), 'the corrupt shard should be named: ' .. out)
      local after = ids()
      for k = 0, nshards - 1 do
         if k == gone or k == bad then
            assert.are_not.equal(after_damage[k], after[k], 'shard ' .. k .. ' should be rewritten')
         else
            assert.are.equal(before[k], after[k], 'shard ' .. k .. ' should be untouched')
         end
      end
      assert_same_samples(data.Shards(dst), folder, src)
   end)

   it('skips unreadable files, naming each and counting them, and keeps labels', function()
      local src, dst = fresh_dir('skip'), fresh_dir('skipout')
      fs.mkdir_p(src .. '/a')
      fs.mkdir_p(src .. '/b')
      write_bytes(src .. '/a/1.jpg', random_bytes(40))
      os.execute(('ln -s %q %q'):format(src .. '/nowhere', src .. '/a/2.jpg'))
      write_bytes(src .. '/a/3.jpg', '')
      write_bytes(src .. '/b/4.jpg', random_bytes(40))
      local out, rc = pack(src, dst, '-shardSize', '2')
      assert(rc == 0, out)
      assert(out:find(src .. '/a/2.jpg', 1, true) and out:find(src .. '/a/3.jpg', 1, true), out)
      assert(out:find('2 unreadable files were skipped', 1, true), out)
      local shards = data.Shards(dst)
      assert.are.equal(2, shards:size())
      assert.are.same({ 1, dst .. '/shard-00000.mts:a/1.jpg' }, { shards:sample(1) })
      assert.are.same({ 2, dst .. '/shard-00001.mts:b/4.jpg' }, { shards:sample(2) })
      assert(tensor_string(shards:read(2)) == read_bytes(src .. '/b/4.jpg'))
      -- a rerun keeps the shards and still reports the skipped files
      out, rc = pack(src, dst, '-shardSize', '2')
      assert(rc == 0 and out:find('2 kept', 1, true) and out:find('2 unreadable files', 1, true), out)
   end)

   it('reports bad arguments and bad shard folders clearly', function()
      local out, rc = pack(tmpdir .. '/nope', tmpdir .. '/nope-out')
      assert(rc ~= 0 and out:find(tmpdir .. '/nope', 1, true), out)
      out, rc = pack(tmpdir, tmpdir .. '/x', '-shardSize', '0')
      assert(rc ~= 0 and out:find('shardSize', 1, true), out)
      out, rc = pack(tmpdir, tmpdir .. '/x', '-bogus', '1')
      assert(rc ~= 0 and out:find('bogus', 1, true), out)

      local dir = fresh_dir('noshards')
      util.assert_error(function() data.Shards(dir) end, dir .. '/classes.txt')
      write_bytes(dir .. '/classes.txt', 'a\nb\n')
      util.assert_error(function() data.Shards(dir) end, 'no shard files', dir)
      write_bytes(dir .. '/x.mts', 'garbage')
      util.assert_error(function() data.Shards(dir) end, dir .. '/x.mts')
      os.remove(dir .. '/x.mts')
      -- labels beyond classes.txt
      local src = fresh_dir('labels')
      make_tree(src, 3)
      local out2, rc2 = pack(src, dir)
      assert(rc2 == 0, out2)
      write_bytes(dir .. '/classes.txt', 'only\n')
      util.assert_error(function() data.Shards(dir) end, 'classes.txt lists 1 classes')
   end)
end)
