-- cache_spec.lua: the partitioned in-memory cache and loader across real ranks (run by ctest
-- solo and under `mpirun -np N` for N = 1..4). Rank 0 writes a small ImageFolder in which every
-- image is its own class, so a batch's targets name the samples it holds; each rank caches only
-- its block and walks it with a partitioned loader, and the ranks' counts, gathered, must cover
-- every sample exactly once per epoch; the ImageNet recipe then trains on it with -dist.
-- Every rank runs the same `it`s in the same order, and each `it` does its collectives before
-- asserting, so a failure on one rank cannot leave the others waiting in a collective it
-- skipped.
-- ctest: ranks 1 2 3 4
local ffi = require 'ffi'
local torch = require 'moontorch'
local data = require 'moontorch.data'
local dist = require 'moontorch.dist'

dist.init{ timeout = 120, model = false }
local R, N = dist.rank(), dist.size()

local NS = 22 -- samples: uneven blocks for 3 and 4 ranks
local BATCH = 3

-- a smooth image whose size (hence encoded length) depends on i
local function image(i)
   local h, w = 20 + (i * 7) % 13, 24 + (i * 5) % 17
   local ys = torch.range(0, h - 1):float():view(h, 1, 1):expand(h, w, 3)
   local xs = torch.range(0, w - 1):float():view(1, w, 1):expand(h, w, 3)
   return torch.cos(ys * (0.05 + 0.01 * i) + xs * 0.13):mul(60):add(128 + 3 * i):clamp(0, 255):byte()
end

-- Rank 0 claims a fresh folder (mkdir fails on one that exists), writes the dataset into it
-- and broadcasts its number; the barrier says the files are complete.
local root
if R == 0 then
   local seed = (os.time() % 100000) * 1000 + math.floor(os.clock() * 1e6) % 1000
   math.randomseed(seed)
   local id
   repeat
      id = math.random(1, 2 ^ 30)
   until os.execute(('mkdir /tmp/mt_cache_spec_%d 2>/dev/null'):format(id)) == 0
   root = ('/tmp/mt_cache_spec_%d'):format(id)
   for i = 1, NS do
      local bytes = data.image.encode(image(i), 'jpeg', 90)
      for _, split in ipairs({ 'train', 'val' }) do -- val/ for the recipe
         local dir = ('%s/%s/c%02d'):format(root, split, i) -- class i, sorted by name: label i is sample i
         os.execute(('mkdir -p %s'):format(dir))
         local f = assert(io.open(dir .. '/img.jpg', 'wb'))
         f:write(ffi.string(bytes:data(), bytes:size(1)))
         f:close()
      end
   end
   dist.broadcastNumber(id)
else
   root = ('/tmp/mt_cache_spec_%d'):format(dist.broadcastNumber(0))
end
dist.barrier()

-- sample i's rank's block [lo, hi) as 1-based indices lo..hi: the loader's and cache's split
local function block(r, world)
   return math.floor(NS * r / world) + 1, math.floor(NS * (r + 1) / world)
end

-- every rank's copy of a rank-local vector: N x #v
local function gather(v)
   local t = torch.DoubleTensor(#v)
   for i = 1, #v do t[i] = v[i] end
   local out = torch.DoubleTensor(N * #v)
   dist.allgather(out, t)
   return out:view(N, #v)
end

describe('partitioned cache and loader across ranks', function()
   local ds = data.ImageFolder(root .. '/train')
   local lo, hi = block(R, N)

   teardown(function()
      -- every rank has finished reading (the recipe's run, last, has finalized already); after a
      -- failure the communicator is broken and the barrier errors, but the folder still goes
      local ok = not dist.initialized() or pcall(dist.barrier)
      if R == 0 then os.execute(('rm -rf %q'):format(root)) end
      if ok then dist.finalize() end -- mpirun counts a rank that exits without it as failed
   end)

   it('builds a dataset whose labels name its samples', function()
      assert.are.equal(NS, ds:size())
      for i = 1, NS do assert.are.equal(i, (ds:sample(i))) end
   end)

   it("caches only this rank's block, and the blocks add up to the whole dataset", function()
      ds:cache{ rank = R, world = N, replicated = false, threads = 1 }
      local st = ds:cacheStats()
      local all = gather({ st.bytes, st.samples })
      local whole = ds:partitionBytes(0, 1, false)
      assert.are.equal(ds:partitionBytes(R, N, false), st.bytes)
      assert.are.equal(hi - lo + 1, st.samples)
      if N > 1 then
         assert.is_true(st.bytes < whole,
            ('rank %d caches %d bytes, the whole dataset is %d'):format(R, st.bytes, whole))
      end
      local bytes, samples = 0, 0
      for r = 1, N do
         assert.are.equal(ds:partitionBytes(r - 1, N, false), all[r][1], ('rank %d cache'):format(r - 1))
         bytes, samples = bytes + all[r][1], samples + all[r][2]
      end
      assert.are.equal(whole, bytes)
      assert.are.equal(NS, samples)
   end)

   it('walks only its block, in the order of the global permutation, '
      .. 'and the ranks together see every sample once per epoch', function()
      local tf = data.Transform{ train = false, size = 16, resize = 18 }
      local opts = { batchSize = BATCH, threads = 1, shuffle = true, seed = 7, rank = R, world = N, partitioned = true }
      local loader = data.Loader(ds, tf, opts)
      -- the whole epoch's permutation, as one process sees it
      local whole = data.Loader(ds, tf, { batchSize = NS, threads = 1, shuffle = true, seed = 7 })
      local EPOCHS = 2
      local counts, outside, misordered, batches = torch.DoubleTensor(EPOCHS, NS):zero(), 0, 0, {}
      for e = 1, EPOCHS do
         local order = {}
         for _, target, info in loader:run(e) do
            for k = 1, info.count do
               local i = target[k]
               counts[e][i] = counts[e][i] + 1
               if i < lo or i > hi then outside = outside + 1 end
               order[#order + 1] = i
            end
         end
         batches[e] = loader:nbatches()
         local _, perm = whole:run(e)()
         local j = 0
         for k = 1, NS do
            if perm[k] >= lo and perm[k] <= hi then
               j = j + 1
               if order[j] ~= perm[k] then misordered = misordered + 1 end
            end
         end
         if j ~= #order then misordered = misordered + 1 end
      end
      loader:free()
      whole:free()
      local v = { outside, misordered }
      for e = 1, EPOCHS do v[#v + 1] = batches[e] end
      for e = 1, EPOCHS do for i = 1, NS do v[#v + 1] = counts[e][i] end end
      local all = gather(v)

      assert.are.equal(0, outside, ('rank %d saw samples outside its block %d..%d'):format(R, lo, hi))
      assert.are.equal(0, misordered, ('rank %d left the order of the global permutation'):format(R))
      for r = 1, N do
         for e = 1, EPOCHS do
            assert.are.equal(all[1][2 + e], all[r][2 + e],
               ('epoch %d: rank %d has another number of batches'):format(e, r - 1))
         end
      end
      for e = 1, EPOCHS do
         for i = 1, NS do
            local seen = 0
            for r = 1, N do seen = seen + all[r][2 + EPOCHS + (e - 1) * NS + i] end
            assert.are.equal(1, seen, ('epoch %d: sample %d seen %d times over the %d ranks'):format(e, i, seen, N))
         end
      end
   end)

   -- last: the recipe finalizes the communicator when it ends
   it('runs recipes/resnet50_imagenet.lua -dist on every rank with a partitioned cache, '
      .. 'rank 0 alone writing', function()
      local R50 = require 'recipes.resnet50_imagenet'
      local save = ('%s/run'):format(root)
      local args = { '-dist', '-allreduce', 'mpi', '-data', root, '-cache', 'on', '-depth', '18', '-cropSize', '32',
         '-batchSize', tostring(2 * N), '-nEpochs', '1', '-limitBatches', '2', '-device', 'cpu', '-threads', '1',
         '-nThreads', '1', '-quiet', '-save', save }
      -- the recipe's print (its globals, not this sandboxed file's), kept out of busted's output
      local G, lines = getfenv(R50.main), {}
      local say = G.print
      G.print = function(...) lines[#lines + 1] = table.concat({ ... }, ' ') end
      local ok, last = pcall(R50.main, args)
      G.print = say
      if not ok then dist.fail(tostring(last)) end -- the other ranks stop at once, naming this one
      assert(ok, tostring(last))
      local text = table.concat(lines, '\n')
      assert.is_true(last.loss == last.loss and last.loss > 0, 'train loss ' .. tostring(last.loss))
      assert.is_false(dist.initialized(), 'the recipe finalizes')
      if R == 0 then
         assert.truthy(text:find(('data-parallel on %d ranks'):format(N), 1, true), text)
         assert.truthy(text:find(('cached train: %d images'):format(hi - lo + 1), 1, true), text)
         local f = io.open(save .. '/checkpoint.safetensors', 'rb')
         assert.truthy(f, 'rank 0 writes the checkpoint')
         f:close()
      else
         assert.are.equal('', text, ('rank %d printed'):format(R))
      end
   end)
end)
