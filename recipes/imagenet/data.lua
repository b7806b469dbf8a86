-- imagenet/data.lua: the training and validation sources of recipes/resnet50_imagenet.lua:
-- -data as ImageFolders or packed shards, cached in memory when they fit, decoded and augmented
-- by data.Loader as fb.resnet.torch does; or -synthetic batches of ImageNet's sizes.
local data = require 'moontorch.data'
local fs = require 'moontorch.data.fs'
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
         fail('-data %s: no %s/ folder (expected train/ and val/, as ImageFolders or packed shards; run without -data for how to get ImageNet)', dir, split)
      end
   end
   -- recipes/tools/pack.lua writes DIR/<split>/classes.txt beside the split's shards
   local shards = fs.isfile(dir .. '/train/classes.txt')
   local make = shards and data.Shards or data.ImageFolder
   local function open(split)
      local ok, ds = pcall(make, dir .. '/' .. split)
      if ok then return ds end
      fail('-data %s: %s%s', dir, tostring(ds), split == 'val' and not shards and
         ' (the val tar unpacks flat: sort it into one folder per class with valprep.sh, see the instructions printed without -data)' or '')
   end
   local train, val = open('train'), open('val')
   local tc, vc = train:classes(), val:classes()
   if #tc == 0 then fail('-data %s/train: no classes found', dir) end
   if #tc ~= #vc then
      fail('-data %s: train/ has %d classes but val/ has %d (is val/ sorted into one folder per class? see valprep.sh in the instructions printed without -data)',
         dir, #tc, #vc)
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

-- cache a dataset's encoded bytes in memory per -cache; returns the budget left (bytes)
local function cache(ds, split, opt, budget)
   if opt.cache == 'off' then return budget end
   local need = ds:partitionBytes(0, 1, false)
   if opt.cache == 'auto' and need > budget then
      print(('not caching %s: its %s exceed the %s left of the cache budget (-cacheBudget); streaming from disk'):format(
         split, human(need), human(budget)))
      return budget
   end
   local ok, err = pcall(ds.cache, ds, { rank = 0, world = 1, replicated = false,
      budget = budget == math.huge and 0 or budget, threads = opt.nThreads })
   if not ok then
      if opt.cache == 'on' then fail('-cache on: %s', tostring(err)) end
      print(('not caching %s (%s); streaming from disk'):format(split, tostring(err)))
      return budget
   end
   local st = ds:cacheStats()
   print(('cached %s: %d images, %s in %.1f s'):format(split, st.samples, human(st.bytes), st.seconds))
   return budget - st.bytes
end

-- train and val sources for the options, and the number of classes
function M.sources(opt)
   if opt.synthetic then
      local function synthetic(n, seed, dropLast)
         return data.Synthetic{ n = n, batchSize = opt.batchSize, shape = { 3, opt.cropSize, opt.cropSize },
            nClasses = IMAGENET_CLASSES, device = opt.device, seed = seed, dropLast = dropLast }
      end
      print(('synthetic data: %d classes, %dx%d crops made on the %s'):format(IMAGENET_CLASSES, opt.cropSize,
         opt.cropSize, opt.device))
      return synthetic(IMAGENET_TRAIN, opt.seed, true), synthetic(IMAGENET_VAL, opt.seed + 7919, false), IMAGENET_CLASSES
   end
   local train, val, layout = M.open(opt.data)
   local nClasses = #train:classes()
   print(('data: %s (%s): %d training and %d validation images, %d classes'):format(opt.data, layout, train:size(),
      val:size(), nClasses))
   for _, w in ipairs(train:warnings()) do io.stderr:write(opts.NAME, ': train: ', w, '\n') end
   for _, w in ipairs(val:warnings()) do io.stderr:write(opts.NAME, ': val: ', w, '\n') end
   local budget = math.floor(opt.cacheBudget * 2 ^ 30)
   if budget == 0 then budget = opt.cache == 'on' and math.huge or math.floor((fs.availableMemory() or 2 ^ 33) / 2) end
   cache(val, 'val', opt, cache(train, 'train', opt, budget))
   local resize = math.floor(opt.cropSize * 256 / 224 + 0.5)
   local function loader(ds, transform, shuffle, dropLast)
      return data.Loader(ds, transform, { threads = opt.nThreads, prefetch = 2, skipBad = true,
         pinned = opt.device == 'cuda', seed = opt.seed, batchSize = opt.batchSize, shuffle = shuffle, dropLast = dropLast })
   end
   -- fb.resnet.torch's augmentation: random-resized crops, flips, colour jitter, PCA lighting
   local trainSrc = loader(train, data.Transform{ train = true, size = opt.cropSize, resize = resize, flip = true,
      brightness = 0.4, contrast = 0.4, saturation = 0.4, lighting = 0.1, dctScaling = true, dtype = 'float',
      layout = 'NCHW' }, true, true)
   local valSrc = loader(val, data.Transform{ train = false, size = opt.cropSize, resize = resize, dctScaling = true,
      dtype = 'float', layout = 'NCHW' }, false, false)
   return trainSrc, valSrc, nClasses
end

return M
