-- googlenet.lua: GoogLeNet / Inception v1 (Szegedy et al. 2015) as torchvision builds it:
-- every convolution is conv (no bias) + BatchNorm (eps 1e-3) + ReLU, max pooling in ceil mode,
-- no auxiliary classifiers, and (like torchvision, kept for its published weights) a 3x3
-- convolution in the "5x5" branch. 6,624,904 parameters with 1000 classes, as torchvision's.
--   local googlenet = require 'moontorch.models.googlenet'
--   local model = googlenet{ nClasses = 1000 }      -- 224x224 input
local nn = require 'moontorch.nn'

local function ConvBN(nIn, nOut, k, s, p)
   local c = nn.SpatialConvolution(nIn, nOut, k, k, s or 1, s or 1, p or 0, p or 0)
   c:noBias()
   return nn.Sequential():add(c):add(nn.SpatialBatchNormalization(nOut, 1e-3)):add(nn.ReLU(true))
end

local function MaxPool(k, s, p) return nn.SpatialMaxPooling(k, k, s, s, p or 0, p or 0):ceil() end

-- four branches concatenated along the channels (dimension 2 of a batch)
local function Inception(nIn, n1, n3red, n3, n5red, n5, nPool)
   return nn.Concat(2)
      :add(ConvBN(nIn, n1, 1))
      :add(nn.Sequential():add(ConvBN(nIn, n3red, 1)):add(ConvBN(n3red, n3, 3, 1, 1)))
      :add(nn.Sequential():add(ConvBN(nIn, n5red, 1)):add(ConvBN(n5red, n5, 3, 1, 1)))
      :add(nn.Sequential():add(MaxPool(3, 1, 1)):add(ConvBN(nIn, nPool, 1)))
end

return function(opt)
   opt = opt or {}
   local nClasses = opt.nClasses or 1000
   local flat = nn.View(1024)
   if flat.setNumInputDims then flat:setNumInputDims(3) end
   return nn.Sequential()
      :add(ConvBN(3, 64, 7, 2, 3)):add(MaxPool(3, 2))
      :add(ConvBN(64, 64, 1)):add(ConvBN(64, 192, 3, 1, 1)):add(MaxPool(3, 2))
      :add(Inception(192, 64, 96, 128, 16, 32, 32))
      :add(Inception(256, 128, 128, 192, 32, 96, 64))
      :add(MaxPool(3, 2))
      :add(Inception(480, 192, 96, 208, 16, 48, 64))
      :add(Inception(512, 160, 112, 224, 24, 64, 64))
      :add(Inception(512, 128, 128, 256, 24, 64, 64))
      :add(Inception(512, 112, 144, 288, 32, 64, 64))
      :add(Inception(528, 256, 160, 320, 32, 128, 128))
      :add(MaxPool(2, 2))
      :add(Inception(832, 256, 160, 320, 32, 128, 128))
      :add(Inception(832, 384, 192, 384, 48, 128, 128))
      :add(nn.SpatialAveragePooling(7, 7, 1, 1))               -- 1024 x 7 x 7 at 224x224
      :add(flat)
      :add(nn.Dropout(0.2))
      :add(nn.Linear(1024, nClasses))
end
