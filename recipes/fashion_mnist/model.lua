-- fashion_mnist/model.lua: the small CNN (lua/moontorch/models/small_cnn.lua), its criterion and the
-- optimizer's config, and its wrappers (moontorch.train.recipe.wrap).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local models = require 'moontorch.models'
local precision = require 'moontorch.train.precision'
local recipe = require 'moontorch.train.recipe'

local M = {}

-- model, criterion, optimizer config and loss scaler (or nil), in -precision's dtype on
-- -device, initialised from -seed; with dist the model is a dist.DataParallel around the CNN
function M.setup(opt, dist)
   local typename = precision.typename(opt.precision)
   precision.apply(opt)
   torch.manualSeed(opt.seed)
   local model = models.small_cnn{ nClasses = 10, width = opt.width }:type(typename)
   nn.utils.ghostBatchNorm(model, opt.ghostBatch) -- 0: off
   model = precision.fuse(model, opt)
   local criterion = nn.CrossEntropyCriterion(nil, opt.labelSmoothing > 0 and opt.labelSmoothing or nil):type(typename)
   if opt.device == 'cuda' then model:cuda() criterion:cuda() end
   local config = recipe.optimConfig(opt, opt.LR)
   local wrapped, scaler = recipe.wrap(model, config, opt, dist)
   return wrapped, criterion, config, scaler
end

return M
