-- the second table of bench/conv_layers.lua (-layers): the nn issue's layers that PyTorch has an
-- equivalent for, one realistic shape each. Each case builds the module (float) and its input; 'kind'
-- and 'args' name the PyTorch computation in bench/layers_peer.py, 'save' the parameters it needs
-- (written in moontorch's layout; the peer reshapes them), 'extra' further tensors for it.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local function randn(...) return torch.randn(...):float() end
local function cases()
   local c = {}
   local function add(t) c[#c + 1] = t end
   add { name = 'SpatialFullConvolution', desc = '32x64x16x16 -> 32, k4 s2 p1', kind = 'convT2d', args = { 2, 1 },
      save = { 'weight', 'bias' },
      build = function() return nn.SpatialFullConvolution(64, 32, 4, 4, 2, 2, 1, 1), randn(32, 64, 16, 16) end }
   add { name = 'SpatialDilatedConvolution', desc = '32x64x32x32 -> 64, k3 p2 d2', kind = 'conv2d', args = { 1, 2, 2 },
      save = { 'weight', 'bias' },
      build = function()
         return nn.SpatialDilatedConvolution(64, 64, 3, 3, 1, 1, 2, 2, 2, 2), randn(32, 64, 32, 32)
      end }
   add { name = 'SpatialConvolutionLocal', desc = '16x16x16x16 -> 16, k3 p1 (unfold)', kind = 'local2d',
      args = { 16, 3, 1, 1 }, save = { 'weight', 'bias' },
      build = function()
         return nn.SpatialConvolutionLocal(16, 16, 16, 16, 3, 3, 1, 1, 1, 1), randn(16, 16, 16, 16)
      end }
   add { name = 'TemporalConvolution', desc = '32x128x256 -> 256, k5', kind = 'conv1d', args = { 256, 256, 5 },
      save = { 'weight', 'bias' },
      build = function() return nn.TemporalConvolution(256, 256, 5, 1), randn(32, 128, 256) end }
   add { name = 'VolumetricConvolution', desc = '8x16x8x28x28 -> 32, k3 p1', kind = 'conv3d', args = { 1, 1 },
      save = { 'weight', 'bias' },
      build = function()
         return nn.VolumetricConvolution(16, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1), randn(8, 16, 8, 28, 28)
      end }
   add { name = 'VolumetricFullConvolution', desc = '8x32x4x14x14 -> 16, k4 s2 p1', kind = 'convT3d', args = { 2, 1 },
      save = { 'weight', 'bias' },
      build = function()
         return nn.VolumetricFullConvolution(32, 16, 4, 4, 4, 2, 2, 2, 1, 1, 1), randn(8, 32, 4, 14, 14)
      end }
   add { name = 'SpatialMaxPooling', desc = '32x64x56x56, k3 s2 p1', kind = 'maxpool2d', args = { 3, 2, 1 },
      build = function() return nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1), randn(32, 64, 56, 56) end }
   add { name = 'SpatialMaxPooling', desc = '32x128x28x28, k2 s2', kind = 'maxpool2d', args = { 2, 2, 0 },
      build = function() return nn.SpatialMaxPooling(2, 2, 2, 2), randn(32, 128, 28, 28) end }
   add { name = 'SpatialAveragePooling', desc = '32x128x28x28, k2 s2', kind = 'avgpool2d', args = { 2, 2, 0 },
      build = function() return nn.SpatialAveragePooling(2, 2, 2, 2), randn(32, 128, 28, 28) end }
   add { name = 'SpatialAveragePooling', desc = '32x64x32x32, k3 s1 p1', kind = 'avgpool2d', args = { 3, 1, 1 },
      build = function() return nn.SpatialAveragePooling(3, 3, 1, 1, 1, 1), randn(32, 64, 32, 32) end }
   add { name = 'SpatialAdaptiveMaxPooling', desc = '32x256x14x14 -> 5x5', kind = 'adamax2d', args = { 5, 5 },
      build = function() return nn.SpatialAdaptiveMaxPooling(5, 5), randn(32, 256, 14, 14) end }
   add { name = 'SpatialAdaptiveAveragePooling', desc = '32x256x14x14 -> 5x5', kind = 'adaavg2d', args = { 5, 5 },
      build = function() return nn.SpatialAdaptiveAveragePooling(5, 5), randn(32, 256, 14, 14) end }
   add { name = 'SpatialFractionalMaxPooling', desc = '32x64x32x32, k2 -> 22x22', kind = 'fracmax2d', args = { 2, 22 },
      extra = function(m) return { samples = m.randomSamples } end,
      build = function() return nn.SpatialFractionalMaxPooling(2, 2, 22, 22), randn(32, 64, 32, 32) end }
   add { name = 'SpatialLPPooling', desc = '32x64x32x32, p2 k2 s2', kind = 'lppool2d', args = { 2, 2, 2 },
      build = function() return nn.SpatialLPPooling(64, 2, 2, 2, 2, 2), randn(32, 64, 32, 32) end }
   add { name = 'SpatialMaxUnpooling', desc = '32x64x16x16 -> 32x32, k2 s2', kind = 'maxunpool2d', args = { 2 },
      build = function()
         local pool = nn.SpatialMaxPooling(2, 2, 2, 2):float()
         local x0 = randn(32, 64, 32, 32)
         return nn.SpatialMaxUnpooling(pool), pool:forward(x0):clone(), { x0 = x0 }
      end }
   add { name = 'TemporalMaxPooling', desc = '32x128x256, k2 s2', kind = 'maxpool1d', args = { 2, 2 },
      build = function() return nn.TemporalMaxPooling(2, 2), randn(32, 128, 256) end }
   add { name = 'VolumetricMaxPooling', desc = '8x32x8x28x28, k2 s2', kind = 'maxpool3d', args = { 2, 2 },
      build = function() return nn.VolumetricMaxPooling(2, 2, 2, 2, 2, 2), randn(8, 32, 8, 28, 28) end }
   add { name = 'VolumetricAveragePooling', desc = '8x32x8x28x28, k2 s2', kind = 'avgpool3d', args = { 2, 2 },
      build = function() return nn.VolumetricAveragePooling(2, 2, 2, 2, 2, 2), randn(8, 32, 8, 28, 28) end }
   add { name = 'SpatialUpSamplingNearest', desc = '32x64x32x32, x2', kind = 'upnearest', args = { 2 },
      build = function() return nn.SpatialUpSamplingNearest(2), randn(32, 64, 32, 32) end }
   add { name = 'SpatialUpSamplingBilinear', desc = '32x64x32x32 -> 64x64', kind = 'upbilinear', args = { 64, 64 },
      build = function() return nn.SpatialUpSamplingBilinear({ oheight = 64, owidth = 64 }), randn(32, 64, 32, 32) end }
   for _, p in ipairs { { 'Zero', 'constant' }, { 'Reflection', 'reflect' }, { 'Replication', 'replicate' } } do
      add { name = 'Spatial' .. p[1] .. 'Padding', desc = '32x64x32x32, pad 1,2,3,4', kind = 'pad',
         args = { p[2], 1, 2, 3, 4 },
         build = function() return nn['Spatial' .. p[1] .. 'Padding'](1, 2, 3, 4), randn(32, 64, 32, 32) end }
   end
   add { name = 'SpatialCrossMapLRN', desc = '32x64x28x28, size 5', kind = 'lrn', args = { 5, 1e-4, 0.75, 2 },
      build = function() return nn.SpatialCrossMapLRN(5, 1e-4, 0.75, 2), randn(32, 64, 28, 28) end }
   add { name = 'SpatialBatchNormalization', desc = '32x64x32x32, train', kind = 'bn', args = { 1e-5, 0.1 },
      save = { 'weight', 'bias' },
      build = function() return nn.SpatialBatchNormalization(64), randn(32, 64, 32, 32) end }
   add { name = 'VolumetricBatchNormalization', desc = '8x32x8x28x28, train', kind = 'bn', args = { 1e-5, 0.1 },
      save = { 'weight', 'bias' },
      build = function() return nn.VolumetricBatchNormalization(32), randn(8, 32, 8, 28, 28) end }
   add { name = 'SpatialSoftMax', desc = '16x21x64x64', kind = 'softmax1', args = {},
      build = function() return nn.SpatialSoftMax(), randn(16, 21, 64, 64) end }
   add { name = 'PReLU', desc = '32x64x32x32, 64 slopes', kind = 'prelu', args = {},
      save = { 'weight' }, build = function()
         local m = nn.PReLU(64)
         m.weight:uniform(0.1, 0.4)
         return m, randn(32, 64, 32, 32)
      end }
   add { name = 'ELU', desc = '32x64x32x32', kind = 'elu', args = { 1 },
      build = function() return nn.ELU(1), randn(32, 64, 32, 32) end }
   add { name = 'RReLU', desc = '32x64x32x32, train (random)', kind = 'rrelu', args = { 1 / 8, 1 / 3 },
      build = function() return nn.RReLU(), randn(32, 64, 32, 32) end }
   add { name = 'LookupTable', desc = '10000x256, 32x64 indices', kind = 'embedding', args = {},
      save = { 'weight' }, build = function()
         return nn.LookupTable(10000, 256), torch.LongTensor(32, 64):random(1, 10000)
      end }
   add { name = 'MM', desc = '32x(128x256 * 256x128)', kind = 'bmm', args = {},
      build = function() return nn.MM(), { randn(32, 128, 256), randn(32, 256, 128) } end }
   add { name = 'Normalize', desc = '256x1024, p2', kind = 'normalize', args = { 2 },
      build = function() return nn.Normalize(2), randn(256, 1024) end }
   local function logp() return nn.LogSoftMax():float():forward(randn(256, 1000)):clone() end
   local function classes() return torch.LongTensor(256):random(1, 1000) end
   add { name = 'ClassNLLCriterion', desc = '256x1000', kind = 'nll', args = {}, criterion = true,
      build = function() return nn.ClassNLLCriterion(), logp(), classes() end }
   add { name = 'CrossEntropyCriterion', desc = '256x1000', kind = 'crossentropy', args = {}, criterion = true,
      build = function() return nn.CrossEntropyCriterion(), randn(256, 1000), classes() end }
   add { name = 'MSECriterion', desc = '256x1000', kind = 'mse', args = {}, criterion = true,
      build = function() return nn.MSECriterion(), randn(256, 1000), randn(256, 1000) end }
   add { name = 'SmoothL1Criterion', desc = '256x1000', kind = 'smoothl1', args = {}, criterion = true,
      build = function() return nn.SmoothL1Criterion(), randn(256, 1000), randn(256, 1000) end }
   return c
end

return cases
