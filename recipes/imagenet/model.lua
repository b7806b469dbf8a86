-- imagenet/model.lua: the ResNet of recipes/resnet50_imagenet.lua, its criterion, its
-- optimizer configuration and its wrappers (moontorch.train.recipe.wrap).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local models = require 'moontorch.models'
local precision = require 'moontorch.train.precision'
local recipe = require 'moontorch.train.recipe'

local M = {}

function M.build(depth, nClasses, zeroInitResidual)
   local model = models.resnet{ depth = depth, nClasses = nClasses, zeroInitLastBN = zeroInitResidual }
   -- fb.resnet.torch pools 7x7, which is global at 224; pooling globally is the same there and
   -- lets any -cropSize through
   for i, m in ipairs(model.modules) do
      if torch.type(m) == 'nn.SpatialAveragePooling' then model.modules[i] = nn.SpatialGlobalAveragePooling() end
   end
   return model
end

-- model, criterion, optimizer config and loss scaler (or nil) on opt.device (seeded by -seed);
-- with dist (-dist) the model is a dist.DataParallel around the ResNet, made once it is on its
-- device
function M.setup(opt, nClasses, dist)
   torch.manualSeed(opt.seed)
   local model = M.build(opt.depth, nClasses, opt.zeroInitResidual)
   nn.utils.ghostBatchNorm(model, opt.ghostBatch) -- 0 or nil: off
   model = precision.fuse(model, opt)
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing)
   -- -precision: the model in its dtype (fp16/bf16: the optimizer keeps fp32 master weights)
   precision.apply(opt)
   local typename = precision.typename(opt.precision or 'fp32')
   model:type(typename)
   criterion:type(typename)
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local config = recipe.optimConfig(opt, opt.lr)
   print(('ResNet-%d, %d classes, %.2fM parameters on %s in %s; %s, lr %g (%g per 256 images x %d / 256), '
      .. '%s schedule%s'):format(opt.depth, nClasses, models.nParameters(model) / 1e6, opt.device,
      opt.precision or 'fp32', opt.optimizer, opt.lr, opt.LR, opt.batchSize, opt.lrSchedule,
      (opt.accumulate or 1) > 1 and (', %d micro-batches per batch'):format(opt.accumulate) or ''))
   local wrapped, scaler = recipe.wrap(model, config, opt, dist)
   return wrapped, criterion, config, scaler
end

-- LARS and LAMB scale per layer: the layers' segments of the flat parameter vector
M.layers = recipe.layerwise

return M
