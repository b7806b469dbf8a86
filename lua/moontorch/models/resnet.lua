-- resnet.lua: residual networks as in fb.resnet.torch (He et al. 2016), written against Torch7's
-- nn API.
--   local resnet = require 'moontorch.models.resnet'
--   resnet{ depth = 50 }                                -- ImageNet, 1000 classes, 224x224 input
--   resnet{ depth = 56, dataset = 'cifar10' }           -- CIFAR: 6n+2 layers, 16/32/64 planes
--   resnet{ depth = 18, dataset = 'cifar10' }           -- ImageNet widths on 32x32 input:
--                                                          3x3 stem, no max pooling
-- Options: depth, dataset ('imagenet' | 'cifar10' | 'cifar100'), nClasses, shortcutType
-- ('B': projection only where the shape changes (default), 'C': projection everywhere),
-- zeroInitLastBN (the last BN of each block starts at weight 0, so blocks start as identities).
-- Convolutions carry no bias (the BN that follows has one), which is what makes the
-- parameter counts the published ones (ResNet-50: 25,557,032).
local nn = require 'moontorch.nn'

local function Conv(nIn, nOut, k, s, p)
   local c = nn.SpatialConvolution(nIn, nOut, k, k, s, s, p, p)
   c:noBias()
   return c
end
local function BN(n) return nn.SpatialBatchNormalization(n) end
-- (N, C, 1, 1) -> (N, C); also for one unbatched (C, 1, 1) image
local function Flat(n)
   local v = nn.View(n)
   if v.setNumInputDims then v:setNumInputDims(3) end
   return v
end

local function build(opt)
   local depth = opt.depth or 18
   local dataset = opt.dataset or 'imagenet'
   local shortcutType = opt.shortcutType or 'B'
   if shortcutType ~= 'B' and shortcutType ~= 'C' then
      error(("resnet: shortcutType must be 'B' or 'C', got %s"):format(tostring(shortcutType)), 3)
   end
   local last_bns = {}
   local iChannels

   local function shortcut(nIn, nOut, stride)
      if shortcutType == 'C' or nIn ~= nOut or stride ~= 1 then
         return nn.Sequential():add(Conv(nIn, nOut, 1, stride, 0)):add(BN(nOut))
      end
      return nn.Identity()
   end

   -- 3x3, 3x3 (ResNet-18/34 and the CIFAR nets)
   local function basicblock(n, stride)
      local nIn = iChannels
      iChannels = n
      local bn = BN(n)
      last_bns[#last_bns + 1] = bn
      local s = nn.Sequential()
         :add(Conv(nIn, n, 3, stride, 1)):add(BN(n)):add(nn.ReLU(true))
         :add(Conv(n, n, 3, 1, 1)):add(bn)
      return nn.Sequential()
         :add(nn.ConcatTable():add(s):add(shortcut(nIn, n, stride)))
         :add(nn.CAddTable(true))
         :add(nn.ReLU(true))
   end

   -- 1x1, 3x3, 1x1 with 4x expansion (ResNet-50/101/152); the stride sits on the 3x3 as in
   -- fb.resnet.torch
   local function bottleneck(n, stride)
      local nIn = iChannels
      iChannels = n * 4
      local bn = BN(n * 4)
      last_bns[#last_bns + 1] = bn
      local s = nn.Sequential()
         :add(Conv(nIn, n, 1, 1, 0)):add(BN(n)):add(nn.ReLU(true))
         :add(Conv(n, n, 3, stride, 1)):add(BN(n)):add(nn.ReLU(true))
         :add(Conv(n, n * 4, 1, 1, 0)):add(bn)
      return nn.Sequential()
         :add(nn.ConcatTable():add(s):add(shortcut(nIn, n * 4, stride)))
         :add(nn.CAddTable(true))
         :add(nn.ReLU(true))
   end

   local function layer(block, features, count, stride)
      local s = nn.Sequential()
      for i = 1, count do s:add(block(features, i == 1 and stride or 1)) end
      return s
   end

   local cfg = {
      [18] = { { 2, 2, 2, 2 }, 512, basicblock },
      [34] = { { 3, 4, 6, 3 }, 512, basicblock },
      [50] = { { 3, 4, 6, 3 }, 2048, bottleneck },
      [101] = { { 3, 4, 23, 3 }, 2048, bottleneck },
      [152] = { { 3, 8, 36, 3 }, 2048, bottleneck },
      [200] = { { 3, 24, 36, 3 }, 2048, bottleneck },
   }
   local model = nn.Sequential()
   if dataset == 'imagenet' then
      local c = cfg[depth]
      if not c then error('resnet: invalid ImageNet depth ' .. tostring(depth) .. ' (18, 34, 50, 101, 152, 200)', 3) end
      local def, nFeatures, block = c[1], c[2], c[3]
      iChannels = 64
      model:add(Conv(3, 64, 7, 2, 3)):add(BN(64)):add(nn.ReLU(true))
         :add(nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1))
         :add(layer(block, 64, def[1], 1))
         :add(layer(block, 128, def[2], 2))
         :add(layer(block, 256, def[3], 2))
         :add(layer(block, 512, def[4], 2))
         :add(nn.SpatialAveragePooling(7, 7, 1, 1))
         :add(Flat(nFeatures))
         :add(nn.Linear(nFeatures, opt.nClasses or 1000))
   elseif dataset == 'cifar10' or dataset == 'cifar100' then
      local nClasses = opt.nClasses or (dataset == 'cifar10' and 10 or 100)
      if cfg[depth] then
         -- ImageNet widths for 32x32 input: 3x3 stem, no max pooling, 4x4 global pooling
         local c = cfg[depth]
         local def, nFeatures, block = c[1], c[2], c[3]
         iChannels = 64
         model:add(Conv(3, 64, 3, 1, 1)):add(BN(64)):add(nn.ReLU(true))
            :add(layer(block, 64, def[1], 1))
            :add(layer(block, 128, def[2], 2))
            :add(layer(block, 256, def[3], 2))
            :add(layer(block, 512, def[4], 2))
            :add(nn.SpatialAveragePooling(4, 4, 1, 1))
            :add(Flat(nFeatures))
            :add(nn.Linear(nFeatures, nClasses))
      else
         if (depth - 2) % 6 ~= 0 or depth < 8 then
            error('resnet: CIFAR depth must be 6n+2 (20, 32, 44, 56, 110) or 18/34/50/101/152, got '
               .. tostring(depth), 3)
         end
         local n = (depth - 2) / 6
         iChannels = 16
         model:add(Conv(3, 16, 3, 1, 1)):add(BN(16)):add(nn.ReLU(true))
            :add(layer(basicblock, 16, n, 1))
            :add(layer(basicblock, 32, n, 2))
            :add(layer(basicblock, 64, n, 2))
            :add(nn.SpatialAveragePooling(8, 8, 1, 1))
            :add(Flat(64))
            :add(nn.Linear(64, nClasses))
      end
   else
      error("resnet: dataset must be 'imagenet', 'cifar10' or 'cifar100', got " .. tostring(dataset), 3)
   end
   return model, last_bns
end

-- fb.resnet.torch's initialisation: conv weights N(0, sqrt(2 / (kW*kH*nOut))), BN weight 1 and
-- bias 0, Linear bias 0 (its weight keeps Torch7's default).
local function init(model, last_bns, zeroInitLastBN)
   for _, m in ipairs(model:findModules('nn.SpatialConvolution')) do
      m.weight:normal(0, math.sqrt(2 / (m.kW * m.kH * m.nOutputPlane)))
      if m.bias then m.bias:zero() end
   end
   for _, name in ipairs({ 'nn.SpatialBatchNormalization', 'nn.BatchNormalization' }) do
      for _, m in ipairs(model:findModules(name)) do
         if m.weight then m.weight:fill(1) end
         if m.bias then m.bias:zero() end
      end
   end
   for _, m in ipairs(model:findModules('nn.Linear')) do
      if m.bias then m.bias:zero() end
   end
   if zeroInitLastBN then
      for _, bn in ipairs(last_bns) do bn.weight:zero() end
   end
end

return function(opt)
   opt = opt or {}
   if type(opt) == 'number' then opt = { depth = opt } end
   local model, last_bns = build(opt)
   init(model, last_bns, opt.zeroInitLastBN)
   return model
end
