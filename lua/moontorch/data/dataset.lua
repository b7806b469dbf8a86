-- dataset.lua: datasets of encoded samples (image files, or records of packed shards).
--   local data = require 'moontorch.data'
--   local train = data.ImageFolder('/data/imagenet/train')    -- root/<class>/<image>
--   local train = data.Shards('/data/imagenet-shards/train')  -- classes.txt + *.mts (tools/pack.lua)
--   local ds = data.Dataset(); ds:addClass('cat'); ds:addFile('a.jpg', 1)
--   print(ds:size(), #ds:classes()); local label, name = ds:sample(1); local bytes = ds:read(1)
-- Indices and labels are 1-based here (0-based in the C API). The dataset lives in C (field
-- `.h`, freed with the Lua object) so that the loader's threads read it without Lua.
local ffi = require 'ffi'
require 'moontorch'
local fs = require 'moontorch.io.fs'
local T = require 'moontorch.internal'
local C = T.clib

local M = {}
local Dataset = {}
Dataset.__index = Dataset
M.DatasetClass = Dataset


local function is_int(x) return type(x) == 'number' and x == math.floor(x) and x > -2 ^ 53 and x < 2 ^ 53 end

-- data.Dataset(): an empty dataset to fill with addFile/addClass/addFolder/addShard
function M.Dataset()
   local p = ffi.new('mt_dataset *[1]')
   if C.mt_dataset_new(p) ~= 0 then T.raise('Dataset') end
   return setmetatable({ h = ffi.gc(p[0], C.mt_dataset_free) }, Dataset)
end

-- data.ImageFolder(root[, {extensions = 'jpg,jpeg,png'}])
function M.ImageFolder(root, opts)
   if type(root) ~= 'string' then error('ImageFolder: expected a folder name, got ' .. type(root), 2) end
   opts = opts or {}
   local ds = M.Dataset()
   if C.mt_dataset_add_folder(ds.h, root, opts.extensions or 'jpg,jpeg,png') ~= 0 then T.raise('ImageFolder') end
   return ds
end

-- the class names of dir/classes.txt, one per line
local function read_classes(path)
   local f, err = io.open(path, 'rb')
   if not f then error(('Shards: cannot read the class list %s: %s'):format(path, tostring(err)), 3) end
   local text = f:read('*a')
   f:close()
   local classes, n = {}, 0
   for line in (text:sub(-1) == '\n' and text or text .. '\n'):gmatch('([^\n]*)\n') do
      n = n + 1
      line = line:gsub('\r$', '')
      if line == '' then error(('Shards: %s: line %d is empty (one class name per line)'):format(path, n), 3) end
      classes[#classes + 1] = line
   end
   if #classes == 0 then error(('Shards: %s lists no classes'):format(path), 3) end
   return classes
end

-- data.Shards(dir): dir/classes.txt and every dir/*.mts in name order
function M.Shards(dir)
   if type(dir) ~= 'string' then error('Shards: expected a folder name, got ' .. type(dir), 2) end
   dir = dir:gsub('(.)/+$', '%1')
   local names, err = fs.list(dir)
   if not names then error('Shards: ' .. err, 2) end
   local classes = read_classes(dir .. '/classes.txt')
   local ds = M.Dataset()
   for _, c in ipairs(classes) do ds:addClass(c) end
   local nshards = 0
   for _, name in ipairs(names) do
      if name:match('%.mts$') then
         if C.mt_dataset_add_shard(ds.h, dir .. '/' .. name) ~= 0 then T.raise('Shards') end
         nshards = nshards + 1
      end
   end
   if nshards == 0 then error(('Shards: no shard files (*.mts) in %s'):format(dir), 2) end
   -- a label beyond classes.txt means the two do not belong together
   local label, name = ffi.new('int32_t[1]'), ffi.new('const char *[1]')
   for i = 0, tonumber(C.mt_dataset_size(ds.h)) - 1 do
      if C.mt_dataset_sample(ds.h, i, label, name) ~= 0 then T.raise('Shards') end
      if label[0] >= #classes then
         error(('Shards: %s has label %d but %s/classes.txt lists %d classes'):format(ffi.string(name[0]), label[0] + 1,
            dir, #classes), 2)
      end
   end
   return ds
end

function Dataset:addFile(path, label)
   if type(path) ~= 'string' then error('Dataset:addFile: expected a file name, got ' .. type(path), 2) end
   if not is_int(label) or label < 1 or label > 2 ^ 31 then
      error(('Dataset:addFile: label must be an integer >= 1 (1-based), got %s'):format(tostring(label)), 2)
   end
   if C.mt_dataset_add_file(self.h, path, label - 1) ~= 0 then T.raise('Dataset:addFile') end
   return self
end

function Dataset:addClass(name)
   if type(name) ~= 'string' then error('Dataset:addClass: expected a class name, got ' .. type(name), 2) end
   if C.mt_dataset_add_class(self.h, name) ~= 0 then T.raise('Dataset:addClass') end
   return self
end

-- classes and files of an ImageFolder root, appended (labels continue after existing classes)
function Dataset:addFolder(root, extensions)
   if type(root) ~= 'string' then error('Dataset:addFolder: expected a folder name, got ' .. type(root), 2) end
   if C.mt_dataset_add_folder(self.h, root, extensions or 'jpg,jpeg,png') ~= 0 then T.raise('Dataset:addFolder') end
   return self
end

function Dataset:addShard(path)
   if type(path) ~= 'string' then error('Dataset:addShard: expected a file name, got ' .. type(path), 2) end
   if C.mt_dataset_add_shard(self.h, path) ~= 0 then T.raise('Dataset:addShard') end
   return self
end

function Dataset:size() return tonumber(C.mt_dataset_size(self.h)) end

-- a fixed pseudo-random order of the samples from seed (an integer), before caching: folders
-- and shards list samples class by class, and each rank of a partitioned cache holds one
-- contiguous block, which should hold every class
function Dataset:shuffle(seed)
   if not is_int(seed) or seed < 0 then
      error('Dataset:shuffle: seed must be an integer >= 0, got ' .. tostring(seed), 2)
   end
   if C.mt_dataset_shuffle(self.h, seed) ~= 0 then T.raise('Dataset:shuffle') end
   return self
end

function Dataset:classes()
   local out = {}
   for i = 0, C.mt_dataset_nclasses(self.h) - 1 do out[i + 1] = ffi.string(C.mt_dataset_class(self.h, i)) end
   return out
end

local function check_index(self, i, op)
   local n = self:size()
   if not is_int(i) or i < 1 or i > n then
      error(('%s: index %s out of range (the dataset has %d samples, 1-based)'):format(op, tostring(i), n), 3)
   end
end

local label_buf, name_buf = ffi.new('int32_t[1]'), ffi.new('const char *[1]')
-- label (1-based) and name of sample i (1-based)
function Dataset:sample(i)
   check_index(self, i, 'Dataset:sample')
   if C.mt_dataset_sample(self.h, i - 1, label_buf, name_buf) ~= 0 then T.raise('Dataset:sample') end
   return label_buf[0] + 1, ffi.string(name_buf[0])
end

-- the encoded bytes of sample i as a ByteTensor
function Dataset:read(i)
   check_index(self, i, 'Dataset:read')
   if C.mt_dataset_read(self.h, i - 1, T.out_handle) ~= 0 then T.raise('Dataset:read') end
   return T.wrap_handle(T.out_handle[0])
end

function Dataset:warnings()
   local out = {}
   for i = 0, C.mt_dataset_nwarnings(self.h) - 1 do out[i + 1] = ffi.string(C.mt_dataset_warning(self.h, i)) end
   return out
end

local function rank_world(op, rank, world)
   rank, world = rank or 0, world or 1
   if not is_int(world) or world < 1 or not is_int(rank) or rank < 0 or rank >= world then
      error(('%s: need 0 <= rank < world, got rank %s, world %s'):format(op, tostring(rank), tostring(world)), 3)
   end
   return rank, world
end

-- keep the encoded bytes of this rank's block (every sample when replicated) in memory:
-- ds:cache{rank = 0, world = 1, replicated = false, budget = 0 (bytes, 0: no limit), threads = 2}
function Dataset:cache(opts)
   opts = opts or {}
   local rank, world = rank_world('Dataset:cache', opts.rank, opts.world)
   local budget, threads = opts.budget or 0, opts.threads or 2
   if not is_int(budget) or budget < 0 then error('Dataset:cache: budget must be a byte count >= 0', 2) end
   if not is_int(threads) or threads < 1 then error('Dataset:cache: threads must be an integer >= 1', 2) end
   if C.mt_dataset_cache(self.h, rank, world, opts.replicated and 1 or 0, budget, threads) ~= 0 then
      T.raise('Dataset:cache')
   end
   return self
end

-- bytes the cache of (rank, world, replicated) would hold
function Dataset:partitionBytes(rank, world, replicated)
   rank, world = rank_world('Dataset:partitionBytes', rank, world)
   local out = ffi.new('uint64_t[1]')
   if C.mt_dataset_partition_bytes(self.h, rank, world, replicated and 1 or 0, out) ~= 0 then
      T.raise('Dataset:partitionBytes')
   end
   return tonumber(out[0])
end

-- samples: those cached, skipped: those of the block left out as unreadable (Dataset:cacheErrors)
function Dataset:cacheStats()
   local n, bytes, seconds = ffi.new('int64_t[1]'), ffi.new('uint64_t[1]'), ffi.new('double[1]')
   C.mt_dataset_cache_stats(self.h, n, bytes, seconds)
   local skipped = tonumber(C.mt_dataset_cache_nerrors(self.h))
   return { samples = tonumber(n[0]) - skipped, bytes = tonumber(bytes[0]), seconds = seconds[0], skipped = skipped }
end

-- why each sample the cache left out could not be read (file name and reason), in sample order;
-- the loader skips them and its errors() names them again when an epoch reaches them
function Dataset:cacheErrors()
   local out = {}
   for k = 0, tonumber(C.mt_dataset_cache_nerrors(self.h)) - 1 do
      out[k + 1] = ffi.string(C.mt_dataset_cache_error(self.h, k))
   end
   return out
end

function Dataset:__tostring()
   return ('moontorch.data.Dataset (%d samples, %d classes)'):format(self:size(),
      tonumber(C.mt_dataset_nclasses(self.h)))
end

return M
