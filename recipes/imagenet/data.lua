-- imagenet/data.lua: the training and validation sources of recipes/resnet50_imagenet.lua:
-- -data as ImageFolders or packed shards, cached in memory when they fit, decoded and augmented
-- by data.Loader as fb.resnet.torch does; or -synthetic batches of ImageNet's sizes. With
-- -dist every rank loads only its share of each batch.
local torch = require 'moontorch'
local data = require 'moontorch.data'
local fs = require 'moontorch.io.fs'
local opts = require 'recipes.imagenet.opts'

local M = {}
local fail = opts.fail
-- ILSVRC2012's sizes, for the synthetic epochs
local IMAGENET_TRAIN, IMAGENET_VAL, IMAGENET_CLASSES = 1281167, 50000, 1000

-- the train and val datasets of -data, and which layout they are in
function M.open(dir)
   if not fs.isdir(dir) then fail('-data %s: no such directory (expected train/ and val/ inside)', dir) end
   for _, split in ipairs({ 'train', 'val' }) do
      if not fs.isdir(dir .. '/' .. split) then
         fail('-data %s: no %s/ folder (expected train/ and val/, as ImageFolders or packed shards; '
            .. 'run without -data for how to get ImageNet)', dir, split)
      end
   end
   -- recipes/tools/pack.lua writes DIR/<split>/classes.txt beside the split's shards
   local shards = fs.isfile(dir .. '/train/classes.txt')
   local make = shards and data.Shards or data.ImageFolder
   local function open(split)
      local ok, ds = pcall(make, dir .. '/' .. split)
      if ok then return ds end
      fail('-data %s: %s%s', dir, tostring(ds), split == 'val' and not shards and
         ' (the val tar unpacks flat: sort it into one folder per class with valprep.sh, see the instructions'
         .. ' printed without -data)' or '')
   end
   local train, val = open('train'), open('val')
   local tc, vc = train:classes(), val:classes()
   if #tc == 0 then fail('-data %s/train: no classes found', dir) end
   if #tc ~= #vc then
      fail('-data %s: train/ has %d classes but val/ has %d (is val/ sorted into one folder per class? '
         .. 'see valprep.sh in the instructions printed without -data)', dir, #tc, #vc)
   end
   for i = 1, #tc do
      if tc[i] ~= vc[i] then fail('-data %s: class %d is %s in train/ but %s in val/', dir, i, tc[i], vc[i]) end
   end
   return train, val, shards and 'shards' or 'folders'
end

local function human(bytes)
   if bytes >= 2 ^ 30 then return ('%.2f GB'):format(bytes / 2 ^ 30) end
   return ('%.1f MB'):format(bytes / 2 ^ 20)
end

-- whether ok holds on every rank (the same answer on all; ok itself with one process)
local function everyRank(dist, ok)
   if not dist or dist.size() == 1 then return ok end
   local t = torch.DoubleTensor(1):fill(ok and 1 or 0)
   dist.allreduce(t, 'min')
   return t[1] == 1
end

-- Cache a dataset's encoded bytes in memory per -cache: with -dist each rank holds only its
-- contiguous block (ds:cache{rank, world}) and checks the budget for that block. The ranks
-- decide together, so a split is either cached on every rank (its loader then walks only the
-- rank's block: partitioned) or its loader takes slices of the global batches on all of them,
-- and the order never depends on one host's free memory. Returns the budget left (bytes) and
-- whether the split is partitioned.
local function cache(ds, split, opt, budget, dist)
   if opt.cache == 'off' then return budget, false end
   local need = ds:partitionBytes(opt.rank, opt.world, false)
   if not everyRank(dist, opt.cache == 'on' or need <= budget) then
      if opt.world == 1 then
         print(('not caching %s: its %s exceed the %s left of the cache budget (-cacheBudget); streaming from disk')
            :format(split, human(need), human(budget)))
      else
         print(('not caching %s on any rank: the block of at least one rank exceeds what it has left of the '
            .. 'cache budget (-cacheBudget, per rank; rank 0: %s for %s left); streaming from disk')
            :format(split, human(need), human(budget)))
      end
      return budget, false
   end
   -- folders and shards list samples class by class: without a fixed shuffle (the same on
   -- every rank) each rank's block would hold a few classes, skewing its batch statistics
   if opt.world > 1 then ds:shuffle(opt.seed) end
   local ok, err = pcall(ds.cache, ds, { rank = opt.rank, world = opt.world, replicated = false,
      budget = budget == math.huge and 0 or budget, threads = opt.nThreads })
   if not ok and opt.cache == 'on' then fail('-cache on: %s', tostring(err)) end
   if not ok and opt.world > 1 then -- said by the rank it happened on
      io.stderr:write(('%s: rank %d: not caching %s (%s)\n'):format(opts.NAME, opt.rank, split, tostring(err)))
   end
   if not everyRank(dist, ok) then
      if opt.world == 1 then
         print(('not caching %s (%s); streaming from disk'):format(split, tostring(err)))
         return budget, false
      end
      -- the blocks that did load still serve their own samples from memory
      print(('could not cache %s on every rank; its loader takes slices of the global batches, reading what a '
         .. 'rank did not cache from disk'):format(split))
      return ok and budget - ds:cacheStats().bytes or budget, false
   end
   local st = ds:cacheStats()
   -- unreadable images (an empty file, say) are left out, not a reason to stream everything: the
   -- loader skips them and the trainer names them with the undecodable ones
   local skipped = st.skipped
   if dist and dist.size() > 1 then
      local t = torch.DoubleTensor(1):fill(skipped)
      dist.allreduce(t, 'sum')
      skipped = t[1]
   end
   print(('cached %s: %d images, %s in %.1f s%s%s'):format(split, st.samples, human(st.bytes), st.seconds,
      opt.world > 1 and (' on rank 0, each of the %d ranks its own block of the %d'):format(opt.world, ds:size())
         or '', skipped > 0 and ('; %d unreadable, left out and skipped (e.g. %s)'):format(skipped,
         ds:cacheErrors()[1] or 'on another rank') or ''))
   return budget - st.bytes, opt.world > 1
end

-- Synthetic batches. With -dist each rank draws its own localBatch images per batch from its
-- own seed (seed + rank: Synthetic's per-batch seeds must stay below 2^53), as many batches as
-- one process with the global batch would make: training keeps floor(n / batchSize) full
-- batches; validation gives every rank ceil(n / world) images.
local function synthetic(opt, n, seed, dropLast)
   local local_n = dropLast and math.floor(n / opt.batchSize) * opt.localBatch or math.ceil(n / opt.world)
   return data.Synthetic{ n = local_n, batchSize = opt.localBatch, shape = { 3, opt.cropSize, opt.cropSize },
      nClasses = IMAGENET_CLASSES, device = opt.device, seed = seed + opt.rank, dropLast = dropLast }
end

-- train and val sources for the options, and the number of classes; dist: moontorch.dist with
-- -dist (opt.rank, opt.world and opt.localBatch then say which slice this rank loads)
function M.sources(opt, dist)
   if opt.synthetic then
      print(('synthetic data: %d classes, %dx%d crops made on the %s'):format(IMAGENET_CLASSES, opt.cropSize,
         opt.cropSize, opt.device))
      return synthetic(opt, IMAGENET_TRAIN, opt.seed, true), synthetic(opt, IMAGENET_VAL, opt.seed + 7919, false),
         IMAGENET_CLASSES
   end
   local train, val, layout = M.open(opt.data)
   local nClasses = #train:classes()
   print(('data: %s (%s): %d training and %d validation images, %d classes'):format(opt.data, layout, train:size(),
      val:size(), nClasses))
   if opt.rank == 0 then -- every rank lists the same folders
      for _, w in ipairs(train:warnings()) do io.stderr:write(opts.NAME, ': train: ', w, '\n') end
      for _, w in ipairs(val:warnings()) do io.stderr:write(opts.NAME, ': val: ', w, '\n') end
   end
   local budget = math.floor(opt.cacheBudget * 2 ^ 30)
   if budget == 0 then
      -- the ranks of a host share its memory
      local here = dist and dist.localSize() or 1
      budget = opt.cache == 'on' and math.huge or math.floor((fs.availableMemory() or 2 ^ 33) / 2 / here)
   end
   local trainPart
   budget, trainPart = cache(train, 'train', opt, budget, dist)
   local _, valPart = cache(val, 'val', opt, budget, dist) -- (the budget left after both goes unused)
   local resize = math.floor(opt.cropSize * 256 / 224 + 0.5)
   -- each rank loads its slice of every global batch, or with a partitioned cache the batches
   -- of its own block in the order of the epoch's global permutation
   local function loader(ds, transform, shuffle, dropLast, partitioned)
      return data.Loader(ds, transform, { threads = opt.nThreads, prefetch = 2, skipBad = true,
         pinned = opt.device == 'cuda', seed = opt.seed, batchSize = opt.localBatch, shuffle = shuffle,
         dropLast = dropLast, rank = opt.rank, world = opt.world, partitioned = partitioned })
   end
   -- fb.resnet.torch's augmentation: random-resized crops, flips, colour jitter, PCA lighting
   local trainSrc = loader(train, data.Transform{ train = true, size = opt.cropSize, resize = resize, flip = true,
      brightness = 0.4, contrast = 0.4, saturation = 0.4, lighting = 0.1, dctScaling = true, dtype = 'float',
      layout = 'NCHW' }, true, true, trainPart)
   local valSrc = loader(val, data.Transform{ train = false, size = opt.cropSize, resize = resize, dctScaling = true,
      dtype = 'float', layout = 'NCHW' }, false, false, valPart)
   return trainSrc, valSrc, nClasses
end

return M
