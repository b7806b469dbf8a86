-- moontorch.data: datasets, image codecs, augmentation and the loader.
--   local data = require 'moontorch.data'
--   local train = data.ImageFolder('/data/imagenet/train')       -- or data.Shards(dir)
--   local loader = data.Loader(train, data.Transform{train = true}, {batchSize = 256})
--   for input, target, info in loader:run(epoch) do ... end
-- Small formats: data.idx (MNIST/Fashion-MNIST), data.cifar; batches of tensors in memory:
-- data.TensorLoader; random batches: data.Synthetic.
-- Each part is its own module, loaded on first use, so `require 'moontorch.data'` stays cheap.
local parts = {
   idx = 'moontorch.data.idx',
   cifar = 'moontorch.data.cifar',
   image = 'moontorch.data.image',
   Transform = { 'moontorch.data.transform', 'Transform' },
   ImageFolder = { 'moontorch.data.dataset', 'ImageFolder' },
   Shards = { 'moontorch.data.dataset', 'Shards' },
   Dataset = { 'moontorch.data.dataset', 'Dataset' },
   Loader = { 'moontorch.data.loader', 'Loader' },
   Synthetic = 'moontorch.data.synthetic',
   TensorLoader = 'moontorch.data.tensor_loader',
   normalize = { 'moontorch.data.loader', 'normalize' },
}

return setmetatable({}, {
   __index = function(self, k)
      local p = parts[k]
      if not p then return nil end
      local v
      if type(p) == 'string' then v = require(p) else v = require(p[1])[p[2]] end
      rawset(self, k, v)
      return v
   end,
})
