-- fashion_mnist/data.lua: Fashion-MNIST's four IDX files as tensors in memory (Debian's
-- dataset-fashion-mnist, or the same files in -data DIR), and their batches: data.TensorLoader,
-- shuffled with random horizontal flips for training, in order for the test set; with -dist each
-- rank takes its slice of every batch.
local data = require 'moontorch.data'
local idx = require 'moontorch.data.idx'
local precision = require 'moontorch.train.precision'

local M = {}

local function find_file(dir, stem)
   for _, name in ipairs({ stem .. '.gz', stem }) do
      local p = dir .. '/' .. name
      local f = io.open(p, 'rb')
      if f then f:close() return p end
   end
   error(('no %s(.gz) in %s (install dataset-fashion-mnist or pass -data DIR)'):format(stem, dir), 0)
end

-- images as (N, 1, 28, 28) normalised floats of typename, labels as 1..10 LongTensor
function M.load(dir, set, typename)
   local prefix = set == 'train' and 'train' or 't10k'
   local images = idx.read(find_file(dir, prefix .. '-images-idx3-ubyte'))
   local labels = idx.read(find_file(dir, prefix .. '-labels-idx1-ubyte'))
   if images:dim() ~= 3 or labels:dim() ~= 1 or images:size(1) ~= labels:size(1) then
      error(('%s images %s and labels %s do not match'):format(set, table.concat(images:size():totable(), 'x'),
         table.concat(labels:size():totable(), 'x')), 0)
   end
   local n, h, w = images:size(1), images:size(2), images:size(3)
   -- Fashion-MNIST's training-set mean and standard deviation of the pixel values in [0, 1]
   local x = images:type(typename):div(255):add(-0.2860):div(0.3530):view(n, 1, h, w)
   return { x = x, y = labels:long():add(1), n = n }
end

-- the training and test batches, in -precision's dtype
function M.sources(opt)
   local typename = precision.typename(opt.precision)
   local train, test = M.load(opt.data, 'train', typename), M.load(opt.data, 'test', typename)
   return data.TensorLoader(train.x, train.y, { batchSize = opt.batchSize, shuffle = true, flip = opt.augment,
         seed = opt.seed, dropLast = true, rank = opt.rank, world = opt.world }),
      data.TensorLoader(test.x, test.y, { batchSize = opt.testBatchSize, rank = opt.rank, world = opt.world })
end

return M
