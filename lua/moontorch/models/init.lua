-- moontorch.models: model definitions over moontorch.nn, by name (installed with the library).
--   local models = require 'moontorch.models'
--   local net = models.create('resnet50')            -- or models.resnet{ depth = 50 }
--   models.nParameters(net)                          -- 25557032
local models = {
   resnet = require 'moontorch.models.resnet',
   alexnet = require 'moontorch.models.alexnet',
   googlenet = require 'moontorch.models.googlenet',
   small_cnn = require 'moontorch.models.small_cnn',
}

-- 'resnet18' .. 'resnet152' (ImageNet), 'cifar_resnet20' .. 'cifar_resnet110', 'cifar_resnet18'
-- (ImageNet widths at 32x32), 'alexnet', 'googlenet', 'small_cnn'; opt is passed through.
function models.create(name, opt)
   opt = opt or {}
   local depth = name:match('^resnet(%d+)$')
   if depth then
      opt.depth = tonumber(depth)
      return models.resnet(opt)
   end
   depth = name:match('^cifar_resnet(%d+)$')
   if depth then
      opt.depth, opt.dataset = tonumber(depth), opt.dataset or 'cifar10'
      return models.resnet(opt)
   end
   local f = models[name]
   if type(f) ~= 'function' or name == 'create' or name == 'nParameters' then
      error(("models.create: unknown model '%s' (resnet18/34/50/101/152, cifar_resnet20/32/44/56/110, " ..
         "cifar_resnet18, alexnet, googlenet, small_cnn)"):format(tostring(name)), 2)
   end
   return f(opt)
end

-- number of trainable parameters (weights and biases; not BN running statistics)
function models.nParameters(model)
   local params = model:parameters()
   local n = 0
   for _, p in ipairs(params or {}) do n = n + p:nElement() end
   return n
end

return models
