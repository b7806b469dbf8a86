-- imagenet/checkpoints.lua: what recipes/resnet50_imagenet.lua's checkpoints hold besides the
-- harness's training state (moontorch.train.state), and which ones -resume accepts.
local opts = require 'recipes.imagenet.opts'

local M = {}
M.FORMAT = 'moontorch resnet_imagenet 1'

-- the run's description saved with every checkpoint
function M.meta(opt, nClasses)
   return { depth = opt.depth, nClasses = nClasses, optimizer = opt.optimizer, batchSize = opt.batchSize,
      cropSize = opt.cropSize, seed = opt.seed, precision = opt.precision, fuse = opt.fuse }
end

-- refuse a checkpoint another model or optimizer wrote (its tensors would not fit or mean
-- something else)
function M.check(opt)
   return function(meta, path)
      if tonumber(meta.depth) ~= opt.depth then
         opts.fail('-resume %s: the checkpoint is a ResNet-%s, this run asks for -depth %d', path, tostring(meta.depth),
            opt.depth)
      end
      local bad = require('moontorch.train.precision').fuseMismatch(meta, opt)
      if bad then opts.fail('-resume %s: %s', path, bad) end
      if meta.optimizer ~= opt.optimizer then
         opts.fail('-resume %s: the checkpoint was trained with -optimizer %s, not %s', path, tostring(meta.optimizer),
            opt.optimizer)
      end
   end
end

return M
