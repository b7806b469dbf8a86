-- The loader and the in-memory cache, on a small generated ImageFolder of JPEGs (random smooth
-- images encoded with libjpeg-turbo in the test). Samples are identified in the batches by
-- matching each row against the evaluation transform's output for every sample, so ordering,
-- coverage and rank slicing are checked on the pixels actually delivered.
local torch = require 'moontorch'
local data = require 'moontorch.data'
local ffi = require 'ffi'

local util = require 'spec.util'
local tmpdir = util.tmpdir

-- a smooth random RGB image (sums of a few random cosines plus noise), h x w x 3 bytes
local function smooth_image(h, w, seed)
   torch.manualSeed(seed)
   local img = torch.FloatTensor(h, w, 3):zero()
   local ys = torch.range(0, h - 1):float():view(h, 1, 1):expand(h, w, 3)
   local xs = torch.range(0, w - 1):float():view(1, w, 1):expand(h, w, 3)
   for _ = 1, 3 do
      local fy, fx, ph = torch.uniform(0.01, 0.2), torch.uniform(0.01, 0.2), torch.uniform(0, 6)
      local amp = torch.rand(1, 1, 3):mul(60):expand(h, w, 3)
      img:add(torch.cmul(amp, torch.cos(ys * fy + xs * fx + ph)))
   end
   img:add(128):add(torch.randn(h, w, 3):float():mul(4))
   return img:clamp(0, 255):byte()
end

local N, CLASSES = 23, { 'cat', 'dog', 'eel' }

local function make_folder(root, corrupt)
   for c, name in ipairs(CLASSES) do os.execute(('mkdir -p %s/%s'):format(root, name)) end
   for i = 1, N do
      local h, w = 30 + (i * 7) % 25, 36 + (i * 11) % 30
      local bytes = data.image.encode(smooth_image(h, w, 1000 + i), 'jpeg', 92)
      local path = ('%s/%s/img%02d.jpg'):format(root, CLASSES[(i - 1) % 3 + 1], i)
      local f = assert(io.open(path, 'wb'))
      local s = ffi.string(bytes:data(), bytes:size(1))
      if corrupt == i then s = s:sub(1, math.floor(#s / 2)) end -- truncated JPEG
      f:write(s)
      f:close()
   end
end

local root = tmpdir()
make_folder(root)
local eval = data.Transform { train = false, size = 24, resize = 28 }
local ds = data.ImageFolder(root)

-- reference rows: sample i through the evaluation transform
local ref = {}
for i = 1, ds:size() do ref[i] = eval:apply(ds:read(i), 0, 0) end

local function identify(row)
   for i = 1, #ref do
      if torch.equal(ref[i], row) then return i end
   end
   error('a delivered image matches no sample')
end

-- the sample ids of every batch of an epoch
local function epoch_ids(loader, epoch, first)
   local batches = {}
   for input, target, info in loader:run(epoch, first) do
      local ids = {}
      for r = 1, input:size(1) do
         ids[r] = identify(input[r])
         assert.are.equal(ds:sample(ids[r]), target[r]) -- label travels with its image
      end
      batches[#batches + 1] = ids
      assert.are.equal(#batches + (first or 1) - 1, info.index)
   end
   return batches
end

local function flat(batches)
   local t = {}
   for _, b in ipairs(batches) do for _, i in ipairs(b) do t[#t + 1] = i end end
   return t
end

describe('data.Loader', function()
   it('visits every sample once per epoch, in dataset order without shuffle', function()
      local l = data.Loader(ds, eval, { batchSize = 5, threads = 2, shuffle = false })
      assert.are.equal(5, l:nbatches()) -- ceil(23 / 5), the last batch short
      local b = epoch_ids(l, 1)
      assert.are.same({ 5, 5, 5, 5, 3 }, { #b[1], #b[2], #b[3], #b[4], #b[5] })
      local f = flat(b)
      for i = 1, N do assert.are.equal(i, f[i]) end
   end)

   it('shuffles each epoch differently, reproducibly from the seed', function()
      local l = data.Loader(ds, eval, { batchSize = 4, threads = 2, seed = 7 })
      local e1, e2 = flat(epoch_ids(l, 1)), flat(epoch_ids(l, 2))
      local l2 = data.Loader(ds, eval, { batchSize = 4, threads = 1, seed = 7 })
      assert.are.same(e1, flat(epoch_ids(l2, 1)))
      assert.are_not.same(e1, e2)
      for _, e in ipairs { e1, e2 } do
         table.sort(e)
         for i = 1, N do assert.are.equal(i, e[i]) end
      end
   end)

   it('gives world ranks with batch B the slices of one rank with batch world*B', function()
      local W, B = 3, 2
      local one = epoch_ids(data.Loader(ds, eval, { batchSize = W * B, threads = 2, seed = 3 }), 4)
      local ranks = {}
      for r = 0, W - 1 do
         ranks[r] = epoch_ids(data.Loader(ds, eval, { batchSize = B, threads = 1, seed = 3, rank = r, world = W }), 4)
         assert.are.equal(#one, #ranks[r]) -- every rank takes the same number of steps
      end
      for k = 1, #one do
         local cat = {}
         for r = 0, W - 1 do for _, i in ipairs(ranks[r][k]) do cat[#cat + 1] = i end end
         assert.are.same(one[k], cat)
      end
   end)

   it('in partitioned mode serves each rank only its own block', function()
      local W = 2
      local seen = {}
      for r = 0, W - 1 do
         local lo, hi = math.floor(N * r / W) + 1, math.floor(N * (r + 1) / W)
         local l = data.Loader(ds, eval, { batchSize = 4, threads = 2, rank = r, world = W, partitioned = true })
         assert.are.equal(math.ceil(math.ceil(N / W) / 4), l:nbatches())
         for _, i in ipairs(flat(epoch_ids(l, 1))) do
            assert.is_true(i >= lo and i <= hi)
            assert.is_nil(seen[i])
            seen[i] = true
         end
      end
      for i = 1, N do assert.is_true(seen[i]) end
   end)

   it('drops the short last batch only when asked', function()
      local l = data.Loader(ds, eval, { batchSize = 5, dropLast = true, threads = 1 })
      assert.are.equal(4, l:nbatches())
      assert.are.equal(20, #flat(epoch_ids(l, 1)))
   end)

   it('resumes mid-epoch with the same batches', function()
      local l = data.Loader(ds, eval, { batchSize = 3, threads = 2, seed = 11 })
      local full = epoch_ids(l, 2)
      local tail = epoch_ids(l, 2, 4)
      assert.are.equal(#full - 3, #tail)
      for k = 1, #tail do assert.are.same(full[k + 3], tail[k]) end
   end)

   it('augments deterministically whatever the thread count', function()
      local train = data.Transform { train = true, size = 20 }
      local a = data.Loader(ds, train, { batchSize = 6, threads = 1, seed = 5 })
      local b = data.Loader(ds, train, { batchSize = 6, threads = 3, seed = 5, prefetch = 4 })
      local ia, ib = a:run(2), b:run(2)
      local count = 0
      while true do
         local x, y = ia()
         local u, v = ib()
         if not x then assert.is_nil(u) break end
         assert.is_true(torch.equal(x, u))
         assert.is_true(torch.equal(y, v))
         assert.is_true(x:std() > 0.05) -- not blank
         count = count + x:size(1)
      end
      assert.are.equal(N, count)
   end)

   it('can restart or be freed while batches are being prepared', function()
      local l = data.Loader(ds, eval, { batchSize = 2, threads = 2, prefetch = 6 })
      for _ = 1, 5 do
         l:start(1)
         l:next()
      end
      local n = #flat(epoch_ids(l, 1))
      assert.are.equal(N, n)
      l:start(2)
      l:free()
      assert.has_error(function() data.Loader(ds, eval, { batchSize = 0 }) end)
   end)

   it('normalises uint8 batches like the float transform, in both layouts', function()
      for _, layout in ipairs { 'NCHW', 'NHWC' } do
         local f = data.Transform { train = true, size = 20, layout = layout }
         local b = data.Transform { train = true, size = 20, layout = layout, dtype = 'byte' }
         local lf = data.Loader(ds, f, { batchSize = 8, threads = 2, seed = 4 })
         local lb = data.Loader(ds, b, { batchSize = 8, threads = 2, seed = 4 })
         local itf, itb = lf:run(1), lb:run(1)
         for _ = 1, 2 do
            local xf = itf()
            local xb = itb()
            assert.are.equal('torch.ByteTensor', torch.type(xb))
            local n = data.normalize(xb, nil, nil, layout)
            -- the byte path rounds to whole levels first: at most half a level apart
            assert.is_true((n - xf):abs():max() <= 0.5 / 255 / 0.224 + 1e-5)
            assert.is_true((n - xf):abs():max() > 0) -- (and the two paths do differ)
         end
      end
      assert.has_error(function() data.normalize(torch.ByteTensor(2, 4, 5, 5)) end,
         'data.normalize: expected 3 channels in dimension 2 of a NCHW batch, got 4')
   end)

   it('rejects bad options with clear messages', function()
      assert.has_error(function() data.Loader(ds, eval, { batchsize = 4 }) end,
         'data.Loader: unknown option "batchsize"')
      local ok, err = pcall(data.Loader, ds, eval, { rank = 2, world = 2 })
      assert.is_false(ok)
      assert.truthy(err:find('rank 2 is not in %[0, world = 2%)'))
      err = select(2, pcall(function() data.Loader(ds, eval):start(0) end))
      assert.truthy(err:find('epoch must be'))
   end)
end)

describe('data.Loader on bad images', function()
   local broot = tmpdir()
   make_folder(broot, 8)
   local bds = data.ImageFolder(broot)

   it('skips a truncated JPEG, counts it and names the file', function()
      local l = data.Loader(bds, eval, { batchSize = 4, threads = 2, shuffle = false })
      local delivered, skipped = 0, 0
      for input, target, info in l:run(1) do
         delivered = delivered + input:size(1)
         skipped = skipped + info.skipped
         assert.are.equal(input:size(1), target:size(1))
         assert.are.equal(info.count, input:size(1))
      end
      assert.are.equal(N - 1, delivered)
      assert.are.equal(1, skipped)
      local errs = l:errors()
      assert.are.equal(1, #errs)
      assert.truthy(errs[1]:find('img08.jpg', 1, true))
      assert.are.same({}, l:errors()) -- taken once
   end)

   it('fails the batch instead when skipBad is off', function()
      local l = data.Loader(bds, eval, { batchSize = 4, threads = 2, shuffle = false, skipBad = false })
      l:start(1)
      local ok, err, batches = true, nil, 0
      while ok do -- the batches before img08's come through, then its batch fails
         local x
         ok, x = pcall(l.next, l)
         if ok then
            assert.is_not_nil(x, 'the epoch ended without the error')
            batches = batches + 1
         else err = x end
      end
      assert.are.equal(2, batches) -- img08 is sample 11 (cat has 8 images), in batch 3
      assert.truthy(err:find('img08.jpg', 1, true))
      assert.truthy(err:find('skipBad', 1, true))
   end)
end)

describe('dataset cache', function()
   it('holds the partition in memory and serves the same bytes', function()
      local cds = data.ImageFolder(root)
      local total = 0
      for i = 1, cds:size() do total = total + cds:read(i):size(1) end
      assert.are.equal(total, cds:partitionBytes(0, 1, false))
      local half = cds:partitionBytes(1, 2, false)
      assert.is_true(half > 0 and half < total)
      cds:cache { threads = 2 }
      local st = cds:cacheStats()
      assert.are.equal(N, st.samples)
      assert.are.equal(total, st.bytes)
      for i = 1, N do assert.is_true(torch.equal(ds:read(i), cds:read(i))) end
      local a = flat(epoch_ids(data.Loader(cds, eval, { batchSize = 5, seed = 2 }), 3))
      local b = flat(epoch_ids(data.Loader(ds, eval, { batchSize = 5, seed = 2 }), 3))
      assert.are.same(a, b)
   end)

   it('refuses a partition over budget with the sizes, and keeps streaming', function()
      local cds = data.ImageFolder(root)
      local ok, err = pcall(function() cds:cache { budget = 1000 } end)
      assert.is_false(ok)
      assert.truthy(err:find('does not fit the memory budget', 1, true))
      assert.are.equal(0, cds:cacheStats().samples)
      assert.is_true(torch.equal(ds:read(3), cds:read(3)))
   end)

   it('serves packed shards like the folder they came from, cached per rank', function()
      local dst = tmpdir()
      local cmd = ('luajit recipes/tools/pack.lua %s %s -shardSize 5 -quiet 2>&1'):format(root, dst)
      local p = io.popen(cmd)
      local out = p:read('*a')
      assert.is_true(p:close(), out)
      local sds = data.Shards(dst)
      assert.are.equal(N, sds:size())
      local want = flat(epoch_ids(data.Loader(ds, eval, { batchSize = 4, seed = 9 }), 2))
      assert.are.same(want, flat(epoch_ids(data.Loader(sds, eval, { batchSize = 4, seed = 9 }), 2)))
      local seen = 0
      for r = 0, 1 do
         local part = data.Shards(dst)
         part:cache { rank = r, world = 2, threads = 2 }
         local l = data.Loader(part, eval, { batchSize = 4, seed = 9, rank = r, world = 2, partitioned = true })
         seen = seen + #flat(epoch_ids(l, 1))
      end
      assert.are.equal(N, seen)
   end)

   it('leaves out an empty or vanished image, names it, and caches and serves the rest', function()
      local broot = tmpdir()
      make_folder(broot, 8) -- img08 is truncated: cached, skipped when decoded
      local empty, gone = broot .. '/dog/img05.jpg', broot .. '/eel/img03.jpg'
      assert(io.open(empty, 'wb')):close()
      local cds = data.ImageFolder(broot)
      os.remove(gone) -- after the listing
      local want_bytes = 0
      for i = 1, cds:size() do
         local f = io.open(select(2, cds:sample(i)), 'rb')
         if f then want_bytes = want_bytes + #f:read('*a') f:close() end
      end
      cds:cache { threads = 2 }
      local st = cds:cacheStats()
      assert.are.equal(N - 2, st.samples)
      assert.are.equal(2, st.skipped)
      assert.are.equal(want_bytes, st.bytes)
      local errs = cds:cacheErrors() -- in sample order: dog before eel
      assert.are.equal(2, #errs)
      assert.truthy(errs[1]:find(empty, 1, true) and errs[1]:find('empty', 1, true), errs[1])
      assert.truthy(errs[2]:find(gone, 1, true), errs[2])
      local bad = {}
      for i = 1, cds:size() do
         local name = select(2, cds:sample(i))
         if name == empty or name == gone or name:find('img08.jpg', 1, true) then bad[i] = name end
      end
      for i, name in pairs(bad) do -- the truncated one is cached; the other two fail by name
         if name:find('img08', 1, true) then assert.is_true(cds:read(i):nElement() > 0)
         else util.assert_error(function() cds:read(i) end, name) end
      end
      -- the loader delivers every good image once, from memory, and skips and names the three
      local l = data.Loader(cds, eval, { batchSize = 4, threads = 2, shuffle = false })
      local seen, skipped = {}, 0
      for input, target, info in l:run(1) do
         skipped = skipped + info.skipped
         for r = 1, input:size(1) do
            local id = identify(input[r])
            assert.is_nil(seen[id])
            assert.is_nil(bad[id], 'a bad sample was delivered')
            assert.are.equal(cds:sample(id), target[r])
            seen[id] = true
         end
      end
      local delivered = 0
      for _ in pairs(seen) do delivered = delivered + 1 end
      assert.are.equal(N - 3, delivered)
      assert.are.equal(3, skipped)
      local named = table.concat(l:errors(), '\n')
      for _, name in pairs(bad) do assert.truthy(named:find(name, 1, true), named) end
   end)

   it('fails when none of its block can be read, naming the first', function()
      local eroot = tmpdir()
      os.execute(('mkdir -p %s/a && : > %s/a/x.jpg && : > %s/a/y.jpg'):format(eroot, eroot, eroot))
      local eds = data.ImageFolder(eroot)
      util.assert_error(function() eds:cache {} end, 'none of rank 0', eroot .. '/a/x.jpg', 'empty')
      assert.are.equal(0, eds:cacheStats().samples)
   end)

   it('caches only its block per rank', function()
      local cds = data.ImageFolder(root)
      cds:cache { rank = 1, world = 3 }
      assert.are.equal(math.floor(2 * N / 3) - math.floor(N / 3), cds:cacheStats().samples)
      for i = 1, N do assert.is_true(torch.equal(ds:read(i), cds:read(i))) end
   end)
end)
