-- alexnet.lua: AlexNet in torchvision's single-tower form (Krizhevsky 2014, "one weird
-- trick"), for 224x224 inputs: 61,100,840 parameters with 1000 classes, as torchvision's.
--   local alexnet = require 'moontorch.models.alexnet'
--   local model = alexnet{ nClasses = 1000 }
-- Torch7's default initialisation (each layer's reset()).
local nn = require 'moontorch.nn'

return function(opt)
   opt = opt or {}
   local nClasses = opt.nClasses or 1000
   local features = nn.Sequential()
      :add(nn.SpatialConvolution(3, 64, 11, 11, 4, 4, 2, 2)):add(nn.ReLU(true))
      :add(nn.SpatialMaxPooling(3, 3, 2, 2))
      :add(nn.SpatialConvolution(64, 192, 5, 5, 1, 1, 2, 2)):add(nn.ReLU(true))
      :add(nn.SpatialMaxPooling(3, 3, 2, 2))
      :add(nn.SpatialConvolution(192, 384, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))
      :add(nn.SpatialConvolution(384, 256, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))
      :add(nn.SpatialConvolution(256, 256, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))
      :add(nn.SpatialMaxPooling(3, 3, 2, 2))                      -- 256 x 6 x 6 at 224x224
   local flat = nn.View(256 * 6 * 6)
   if flat.setNumInputDims then flat:setNumInputDims(3) end
   local classifier = nn.Sequential()
      :add(flat)
      :add(nn.Dropout(0.5)):add(nn.Linear(256 * 6 * 6, 4096)):add(nn.ReLU(true))
      :add(nn.Dropout(0.5)):add(nn.Linear(4096, 4096)):add(nn.ReLU(true))
      :add(nn.Linear(4096, nClasses))
   return nn.Sequential():add(features):add(classifier)
end
