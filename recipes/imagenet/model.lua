-- imagenet/model.lua: the ResNet of recipes/resnet50_imagenet.lua, its criterion and its
-- optimizer configuration.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local models = require 'recipes.models'

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

-- model, criterion and the optimizer's config on opt.device (seeded by -seed); with dist
-- (-dist) the model is a dist.DataParallel around the ResNet, made once it is on its device
function M.setup(opt, nClasses, dist)
   torch.manualSeed(opt.seed)
   local model = M.build(opt.depth, nClasses, opt.zeroInitResidual)
   nn.utils.ghostBatchNorm(model, opt.ghostBatch) -- 0 or nil: off
   model = require('moontorch.train.precision').fuse(model, opt)
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing)
   -- -precision: the model in its dtype (fp16/bf16: the optimizer keeps fp32 master weights)
   local precision = require 'moontorch.train.precision'
   precision.apply(opt)
   local typename = precision.typename(opt.precision or 'fp32')
   model:type(typename)
   criterion:type(typename)
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local config = { learningRate = opt.lr, weightDecay = opt.weightDecay }
   if opt.optimizer ~= 'lamb' then config.momentum = opt.momentum end
   if opt.optimizer == 'lars' then config.eta = opt.eta end
   if opt.optimizer == 'sgd' and opt.nesterov and opt.momentum > 0 then config.nesterov, config.dampening = true, 0 end
   print(('ResNet-%d, %d classes, %.2fM parameters on %s in %s; %s, lr %g (%g per 256 images x %d / 256), '
      .. '%s schedule%s'):format(opt.depth, nClasses, models.nParameters(model) / 1e6, opt.device,
      opt.precision or 'fp32', opt.optimizer, opt.lr, opt.LR, opt.batchSize, opt.lrSchedule,
      (opt.accumulate or 1) > 1 and (', %d micro-batches per batch'):format(opt.accumulate) or ''))
   if dist then
      -- with -compress rgc, momentum and weight decay move into the compressor; its warm-up
      -- length is set once the epoch length is known (recipes/resnet50_imagenet.lua)
      local dpopts = { bucketMB = opt.bucketMB, algorithm = opt.allreduce }
      model = dist.DataParallel(model, require('moontorch.dist.rgcflags').recipeSetup(opt, config, dpopts))
   end
   return model, criterion, config
end

-- LARS and LAMB scale per layer: the layers' segments of the flat parameter vector
function M.layers(model, params, config, opt)
   if opt.optimizer ~= 'sgd' then config.layers, config.lars_exclude = optim.layerSegments(model, params) end
end

return M
