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

-- simple modules, part b (issue 14, t14-a2)
load 'Narrow'
load 'Select'
load 'Index'
load 'Replicate'
load 'Transpose'
load 'Squeeze'
load 'Unsqueeze'
load 'Padding'
load 'Max'
load 'Min'
load 'Sum'
load 'Mean'
load 'Copy'
load 'Contiguous'
load 'GradientReversal'
load 'SpatialDropout'
load 'VolumetricDropout'
-- simple layers, group a1 (simple.md, LookupTable from convolution.md)
for _, name in ipairs { 'Add', 'Mul', 'CMul', 'CAdd', 'Euclidean', 'WeightedEuclidean', 'LookupTable', 'Normalize',
   'MM', 'MV', 'Power', 'Clamp', 'Square', 'Sqrt', 'Exp', 'Log', 'Abs' } do load(name) end
-- containers and table layers (containers.md, table.md)
load 'Parallel'
load 'DepthConcat'
load 'Bottle'
load 'MapTable'
load 'SplitTable'
load 'SelectTable'
load 'NarrowTable'
load 'FlattenTable'
load 'PairwiseDistance'
load 'DotProduct'
load 'CosineDistance'
load 'CMulTable'
load 'CSubTable'
load 'CDivTable'
load 'CMaxTable'
load 'CMinTable'
-- transfer functions (issue 14: transfer.md); ReLU above is an nn.Threshold
load 'Threshold'
load 'HardTanh'
load 'ReLU6'
load 'HardShrink'
load 'SoftShrink'
load 'SoftMin'
load 'SoftPlus'
load 'SoftSign'
load 'LogSigmoid'
load 'PReLU'
load 'RReLU'
load 'ELU'
load 'SpatialSoftMax'
load 'GatedLinearUnit'
-- criterions (criterion.md)
load 'BCECriterion'
load 'AbsCriterion'
load 'SmoothL1Criterion'
load 'DistKLDivCriterion'
load 'MarginCriterion'
load 'SoftMarginCriterion'
load 'MultiMarginCriterion'
load 'MultiLabelMarginCriterion'
load 'MultiLabelSoftMarginCriterion'
load 'HingeEmbeddingCriterion'
load 'L1HingeEmbeddingCriterion'
load 'CosineEmbeddingCriterion'
load 'MarginRankingCriterion'
load 'ParallelCriterion'
load 'MultiCriterion'
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
-- convolution and sub-sampling, group misc2 (issue 14): composed from the C convolution and tensor ops
for _, name in ipairs { 'SpatialDepthWiseConvolution', 'SpatialDilatedMaxPooling', 'SpatialSubSampling',
   'TemporalSubSampling', 'TemporalRowConvolution', 'SpatialConvolutionMap',
   'UpSampling', 'WeightNorm', 'LinearWeightNorm', 'PartialLinear' } do load(name) end

-- misc group (issue 14): simple, transfer, table and criterion odds and ends
load 'Bilinear'
load 'Cosine'
load 'L1Penalty'
load 'MaskedSelect'
load 'PixelShuffle'
load 'TemporalDynamicKMaxPooling'
load 'AddConstant'
load 'MulConstant'
load 'CReLU'
load 'SpatialLogSoftMax'
load 'CriterionTable'
load 'ClassSimplexCriterion'
load 'DistanceRatioCriterion'
load 'SpatialAutoCropMSECriterion'
-- volumetric group (issue 14): 3-d convolution, pooling and padding composed from the 2-d layers
load 'VolumetricConvolution'
load 'VolumetricDilatedConvolution'
load 'VolumetricFullConvolution'
load 'VolumetricMaxPooling'
load 'VolumetricDilatedMaxPooling'
load 'VolumetricAveragePooling'
load 'VolumetricMaxUnpooling'
load 'VolumetricReplicationPadding'
load 'VolumetricFractionalMaxPooling' -- the 3-d form of SpatialFractionalMaxPooling

-- fused batch norm (issue 12): BN + ReLU and BN + residual add + ReLU, and the model rewrite
load 'BatchNormReLU'
load 'BatchNormAddReLU'
load 'fuse'
-- ghost batch norm (Hoffer et al. 2017) on every batch norm of a model
load 'ghost'

-- documented modules the first inventory missed (issue 37, t37-nnnew: anchors written with ')
for _, name in ipairs { 'Decorator', 'NaN', 'Profile', 'DontCast', 'Constant', 'Collapse', 'ZeroGrad', 'ZipTable',
   'ZipTableOneToMany', 'CAddTensorTable', 'PrintSize', 'WhiteNoise', 'OneHot', 'Kmeans', 'MixtureTable',
   'ModuleCriterion', 'Convert', 'StochasticGradient' } do load(name) end

-- nnextra group (issue 37): modules nn ships and Torch7 code uses though nn's docs do not list them
for _, name in ipairs { 'SpatialConvolutionMM', 'SpatialFullConvolutionMap', 'SpatialDivisiveNormalization',
   'SpatialContrastiveNormalization', 'FeatureLPPooling', 'TanhShrink', 'L1Cost', 'WeightedMSECriterion',
   'SpatialClassNLLCriterion' } do load(name) end

-- sparse inputs (issue 37, t37-nnsparse): (index, value) rows, the derivative checker for them
load 'SparseJacobian'
load 'SparseLinear'
load 'IndexLinear'

-- issue 37 nn fixes: Torch7's nn.hessian (diagonal Hessians, off until nn.hessian.enable())
load 'hessian'

return nn
