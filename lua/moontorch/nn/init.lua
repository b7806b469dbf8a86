-- moontorch.nn: Torch7's nn package. local nn = require 'moontorch.nn'
-- Each module lives in its own file that registers its class with torch.class('nn.X', ...).
local torch = require 'moontorch'

local nn = {}
package.loaded['moontorch.nn'] = nn     -- the module files may require 'moontorch.nn' themselves
torch.class.namespace('nn', nn)         -- torch.class('nn.Linear') lands in this table
nn.torch = torch
nn.utils = require 'moontorch.nn.utils'

local function load(name) require('moontorch.nn.' .. name) end

-- base classes
load 'Module'
load 'Container'
load 'Criterion'
load 'Sequential'
load 'Concat'
load 'ConcatTable'
load 'ParallelTable'
load 'CAddTable'
load 'JoinTable'
load 'Identity'
load 'View'
load 'Reshape'
load 'Flatten'
load 'Linear'
load 'BatchNormalization'
load 'SpatialBatchNormalization'
load 'ReLU'
load 'LeakyReLU'
load 'Sigmoid'
load 'Tanh'
load 'Dropout'
load 'SoftMax'
load 'LogSoftMax'
load 'ClassNLLCriterion'
load 'CrossEntropyCriterion'
load 'MSECriterion'

-- other parts add their require lines below (one per file)
load 'SpatialConvolution'
load 'SpatialMaxPooling'
load 'SpatialAveragePooling'
load 'SpatialGlobalAveragePooling'
load 'Jacobian'

-- convolution group (issue 14): transposed convolution, padding, up-sampling, pooling, normalization
load 'SpatialFullConvolution'
load 'SpatialZeroPadding'
load 'SpatialReflectionPadding'
load 'SpatialReplicationPadding'
load 'SpatialUpSamplingNearest'
load 'SpatialUpSamplingBilinear'
load 'SpatialAdaptiveMaxPooling'
load 'TemporalConvolution'
load 'TemporalMaxPooling'
load 'VolumetricBatchNormalization'
load 'SpatialCrossMapLRN'
load 'SpatialLPPooling'
load 'SpatialMaxUnpooling'
load 'SpatialConvolutionLocal'
load 'SpatialSubtractiveNormalization'
load 'SpatialFractionalMaxPooling'

return nn
