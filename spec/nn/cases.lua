-- cases.lua: one case per nn class for spec/nn_all_modules_spec.lua. Each entry is a function
-- (called with float64 as the default tensor type) that returns a fresh module or criterion,
-- an input, a target (criterions only, else nil) and options:
--   seed = true         reseed the generator before each run (modules that draw random numbers)
--   evaluate = true     run in evaluation mode
--   redraws = true      clearState() drops drawn random state (only output sizes are compared after it)
--   setup = f(m, x, t)  called on the float64 module before any conversion
--   tol = k             widens the float32 tolerance k times (long sums, squared terms)
-- Inputs are fresh random numbers of small odd sizes: R (uniform in [-1, 1)), U (uniform in
-- [lo, hi)), S (signs +-1), B (0 or 1), I (LongTensor of indices in 1..n), P (rows of
-- log-probabilities). A new nn class needs one line here; the spec lists classes without one.
-- More cases of a class (other modes, non-batch inputs) are named 'Class#what'.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local function shape(...) return { ... } end
local function R(...) return (util.rand_tensor(shape(...), 'torch.DoubleTensor', -1, 1)) end
local function U(lo, hi, ...) return (util.rand_tensor(shape(...), 'torch.DoubleTensor', lo, hi)) end
local function S(...) return R(...):sign():apply(function(v) return v == 0 and 1 or v end) end
local function B(...) return R(...):gt(0):double() end
local function I(n, ...)
   local t = torch.LongTensor(torch.LongStorage(shape(...)))
   return t:apply(function() return math.random(1, n) end)
end
local function P(...) return nn.LogSoftMax():forward(U(-2, 2, ...)):clone() end
local function lin(i, o) return nn.Linear(i, o) end

-- MultiLabelMarginCriterion targets: each row some distinct classes, then zeros
local function labels(n, c)
   local t = torch.LongTensor(n, c):zero()
   for i = 1, n do
      local k = math.random(1, c - 1)
      local perm = torch.randperm(c)
      for j = 1, k do t[i][j] = perm[j] end
   end
   return t
end
local function unpool()
   local p = nn.SpatialMaxPooling(2, 2, 2, 2)
   p:forward(R(2, 3, 7, 5))
   return nn.SpatialMaxUnpooling(p), R(2, 3, 3, 2)
end

local C = {}
-- modules
C.Abs = function() return nn.Abs(), R(3, 5) end
C.Add = function() return nn.Add(5), R(3, 5) end
C.BatchNormalization = function() return nn.BatchNormalization(5), R(7, 5) end
C.Bottle = function() return nn.Bottle(lin(5, 3)), R(2, 3, 5) end
C.CAdd = function() return nn.CAdd(3, 5), R(3, 5) end
C.CAddTable = function() return nn.CAddTable(), { R(3, 5), R(3, 5) } end
C.CDivTable = function() return nn.CDivTable(), { R(3, 5), U(0.5, 2, 3, 5) } end
C.CMaxTable = function() return nn.CMaxTable(), { R(3, 5), R(3, 5), R(3, 5) } end
C.CMinTable = function() return nn.CMinTable(), { R(3, 5), R(3, 5) } end
C.CMul = function() return nn.CMul(5), R(3, 5) end
C.CMulTable = function() return nn.CMulTable(), { R(3, 5), R(3, 5), R(3, 5) } end
C.CSubTable = function() return nn.CSubTable(), { R(3, 5), R(3, 5) } end
C.Clamp = function() return nn.Clamp(-0.5, 0.4), R(3, 5) end
C.Concat = function() return nn.Concat(2):add(lin(5, 3)):add(lin(5, 2)), R(3, 5) end
C.ConcatTable = function() return nn.ConcatTable():add(lin(5, 3)):add(nn.Tanh()), R(3, 5) end
C.Contiguous = function() return nn.Contiguous(), R(5, 3):t() end
C.Copy = function() return nn.Copy(nil, nil, true), R(3, 5) end
C.CosineDistance = function() return nn.CosineDistance(), { R(3, 5), R(3, 5) } end
C.DepthConcat = function()
   return nn.DepthConcat(2):add(nn.SpatialConvolution(2, 3, 1, 1)):add(nn.SpatialConvolution(2, 2, 3, 3)), R(2, 2, 5, 5)
end
C.DotProduct = function() return nn.DotProduct(), { R(3, 5), R(3, 5) } end
C.Dropout = function() return nn.Dropout(0.3), R(3, 5), nil, { seed = true } end
C.ELU = function() return nn.ELU(0.7), R(3, 5) end
C.Euclidean = function() return nn.Euclidean(5, 3), R(3, 5) end
C.Exp = function() return nn.Exp(), R(3, 5) end
C.Flatten = function() return nn.Flatten(), R(2, 3, 5) end
C.FlattenTable = function() return nn.FlattenTable(), { R(3), { R(2, 3), { R(5) } } } end
C.GatedLinearUnit = function() return nn.GatedLinearUnit(), R(3, 6) end
C.GradientReversal = function() return nn.GradientReversal(0.7), R(3, 5) end
C.HardShrink = function() return nn.HardShrink(0.3), R(3, 5) end
C.HardTanh = function() return nn.HardTanh(-0.5, 0.6), R(3, 5) end
C.Identity = function() return nn.Identity(), R(3, 5) end
C.Index = function() return nn.Index(1), { R(5, 3), I(5, 4) } end
C.JoinTable = function() return nn.JoinTable(2), { R(3, 2), R(3, 4) } end
C.LeakyReLU = function() return nn.LeakyReLU(0.1), R(3, 5) end
C.Linear = function() return nn.Linear(5, 3), R(3, 5) end
C.Log = function() return nn.Log(), U(0.2, 2, 3, 5) end
C.LogSigmoid = function() return nn.LogSigmoid(), R(3, 5) end
C.LogSoftMax = function() return nn.LogSoftMax(), R(3, 5) end
C.LookupTable = function() return nn.LookupTable(7, 3), I(7, 2, 5) end
C.MM = function() return nn.MM(), { R(2, 3, 4), R(2, 4, 5) } end
C.MV = function() return nn.MV(), { R(2, 3, 4), R(2, 4) } end
C.MapTable = function() return nn.MapTable(lin(5, 3)), { R(3, 5), R(3, 5) } end
C.Max = function() return nn.Max(2), R(3, 5) end
C.Mean = function() return nn.Mean(2), R(3, 5) end
C.Min = function() return nn.Min(1), R(3, 5) end
C.Mul = function() return nn.Mul(), R(3, 5) end
C.Narrow = function() return nn.Narrow(2, 2, 3), R(3, 5) end
C.NarrowTable = function() return nn.NarrowTable(2, 2), { R(3), R(3), R(3), R(3) } end
C.Normalize = function() return nn.Normalize(2), R(3, 5) end
C.PReLU = function() return nn.PReLU(5), R(3, 5) end
C.Padding = function() return nn.Padding(1, 2, 1, 0.5), R(3, 5) end
C.PairwiseDistance = function() return nn.PairwiseDistance(2), { R(3, 5), R(3, 5) } end
C.Parallel = function() return nn.Parallel(1, 1):add(lin(3, 2)):add(lin(3, 4)), R(2, 3) end
C.ParallelTable = function() return nn.ParallelTable():add(lin(5, 3)):add(nn.Tanh()), { R(3, 5), R(3, 2) } end
C.Power = function() return nn.Power(2.5), U(0.2, 2, 3, 5) end
C.RReLU = function() return nn.RReLU(), R(3, 5), nil, { seed = true } end
C.ReLU = function() return nn.ReLU(), R(3, 5) end
C.ReLU6 = function() return nn.ReLU6(), U(-3, 9, 3, 5) end
C.Replicate = function() return nn.Replicate(3, 1), R(2, 5) end
C.Reshape = function() return nn.Reshape(5, 3), R(2, 15) end
C.Select = function() return nn.Select(2, 3), R(3, 5) end
C.SelectTable = function() return nn.SelectTable(2), { R(3), R(3, 2), R(3) } end
C.Sequential = function() return nn.Sequential():add(lin(5, 3)):add(nn.Tanh()), R(3, 5) end
C.Sigmoid = function() return nn.Sigmoid(), R(3, 5) end
C.SoftMax = function() return nn.SoftMax(), R(3, 5) end
C.SoftMin = function() return nn.SoftMin(), R(3, 5) end
C.SoftPlus = function() return nn.SoftPlus(2), R(3, 5) end
C.SoftShrink = function() return nn.SoftShrink(0.3), R(3, 5) end
C.SoftSign = function() return nn.SoftSign(), R(3, 5) end
C.SpatialAdaptiveAveragePooling = function() return nn.SpatialAdaptiveAveragePooling(3, 2), R(2, 3, 7, 5) end
C.SpatialAdaptiveMaxPooling = function() return nn.SpatialAdaptiveMaxPooling(3, 2), R(2, 3, 7, 5) end
C.SpatialAveragePooling = function() return nn.SpatialAveragePooling(3, 3, 2, 2), R(2, 3, 7, 5) end
C.SpatialBatchNormalization = function() return nn.SpatialBatchNormalization(3), R(2, 3, 5, 3) end
C.SpatialConvolution = function() return nn.SpatialConvolution(3, 2, 3, 3, 1, 1, 1, 1), R(2, 3, 5, 7) end
C.SpatialConvolutionLocal = function() return nn.SpatialConvolutionLocal(3, 2, 5, 5, 3, 3), R(2, 3, 5, 5) end
C.SpatialCrossMapLRN = function() return nn.SpatialCrossMapLRN(3), R(2, 5, 3, 3) end
C.SpatialDilatedConvolution = function()
   return nn.SpatialDilatedConvolution(3, 2, 3, 3, 1, 1, 2, 2, 2, 2), R(2, 3, 5, 7)
end
C.SpatialDropout = function() return nn.SpatialDropout(0.3), R(2, 3, 5, 5), nil, { seed = true } end
C.SpatialFractionalMaxPooling = function()
   return nn.SpatialFractionalMaxPooling(2, 2, 3, 3), R(2, 3, 7, 7), nil,
      { setup = function(m, x) m:fixPoolingRegions(); m:forward(x) end, redraws = true }
end
C.SpatialFullConvolution = function() return nn.SpatialFullConvolution(3, 2, 3, 3, 2, 2, 1, 1), R(2, 3, 3, 5) end
C.SpatialGlobalAveragePooling = function() return nn.SpatialGlobalAveragePooling(), R(2, 3, 5, 3) end
C.SpatialLPPooling = function() return nn.SpatialLPPooling(3, 2, 2, 2, 2, 2), R(2, 3, 5, 5) end
C.SpatialMaxPooling = function() return nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1), R(2, 3, 7, 5) end
C.SpatialMaxUnpooling = unpool
C.SpatialReflectionPadding = function() return nn.SpatialReflectionPadding(1, 2, 2, 1), R(2, 3, 4, 5) end
C.SpatialReplicationPadding = function() return nn.SpatialReplicationPadding(1, 2, 2, 1), R(2, 3, 4, 5) end
C.SpatialSoftMax = function() return nn.SpatialSoftMax(), R(2, 3, 4, 5) end
C.SpatialSubtractiveNormalization = function()
   return nn.SpatialSubtractiveNormalization(3, U(0.5, 1, 3, 3)), R(2, 3, 5, 5)
end
C.SpatialUpSamplingBilinear = function() return nn.SpatialUpSamplingBilinear(2), R(2, 3, 3, 5) end
C.SpatialUpSamplingNearest = function() return nn.SpatialUpSamplingNearest(2), R(2, 3, 3, 5) end
C.SpatialZeroPadding = function() return nn.SpatialZeroPadding(1, 2, -1, 1), R(2, 3, 4, 5) end
C.SplitTable = function() return nn.SplitTable(2), R(3, 5) end
C.Sqrt = function() return nn.Sqrt(), U(0.2, 2, 3, 5) end
C.Square = function() return nn.Square(), R(3, 5) end
C.Squeeze = function() return nn.Squeeze(2), R(3, 1, 5) end
C.Sum = function() return nn.Sum(2), R(3, 5) end
C.Tanh = function() return nn.Tanh(), R(3, 5) end
C.TemporalConvolution = function() return nn.TemporalConvolution(5, 3, 3, 1), R(2, 7, 5) end
C.TemporalMaxPooling = function() return nn.TemporalMaxPooling(2, 2), R(2, 7, 5) end
C.Threshold = function() return nn.Threshold(0.1, -0.5), R(3, 5) end
C.Transpose = function() return nn.Transpose({ 1, 2 }), R(3, 5) end
C.Unsqueeze = function() return nn.Unsqueeze(2), R(3, 5) end
C.View = function() return nn.View(5, 3), R(15) end
C.VolumetricBatchNormalization = function() return nn.VolumetricBatchNormalization(3), R(2, 3, 3, 3, 3) end
C.VolumetricDropout = function() return nn.VolumetricDropout(0.3), R(2, 3, 3, 3, 3), nil, { seed = true } end
C.WeightedEuclidean = function() return nn.WeightedEuclidean(5, 3), R(3, 5) end

-- criterions
C.AbsCriterion = function() return nn.AbsCriterion(), R(3, 5), R(3, 5) end
C.BCECriterion = function() return nn.BCECriterion(), U(0.05, 0.95, 3, 5), B(3, 5) end
C.ClassNLLCriterion = function() return nn.ClassNLLCriterion(), P(3, 5), I(5, 3) end
C.CosineEmbeddingCriterion = function() return nn.CosineEmbeddingCriterion(0.2), { R(3, 5), R(3, 5) }, S(3) end
C.CrossEntropyCriterion = function() return nn.CrossEntropyCriterion(), R(3, 5), I(5, 3) end
C.DistKLDivCriterion = function() return nn.DistKLDivCriterion(), P(3, 5), U(0.1, 1, 3, 5) end
C.HingeEmbeddingCriterion = function() return nn.HingeEmbeddingCriterion(0.7), U(0, 2, 5), S(5) end
C.L1HingeEmbeddingCriterion = function() return nn.L1HingeEmbeddingCriterion(2), { R(5), R(5) }, -1 end
C.MSECriterion = function() return nn.MSECriterion(), R(3, 5), R(3, 5) end
C.MarginCriterion = function() return nn.MarginCriterion(0.8), R(5), S(5) end
C.MarginRankingCriterion = function() return nn.MarginRankingCriterion(0.3), { R(5), R(5) }, S(5) end
C.MultiCriterion = function()
   return nn.MultiCriterion():add(nn.MSECriterion()):add(nn.AbsCriterion(), 0.5), R(3, 5), R(3, 5)
end
C.MultiLabelMarginCriterion = function() return nn.MultiLabelMarginCriterion(), R(3, 5), labels(3, 5) end
C.MultiLabelSoftMarginCriterion = function() return nn.MultiLabelSoftMarginCriterion(), R(3, 5), B(3, 5) end
C.MultiMarginCriterion = function() return nn.MultiMarginCriterion(), R(3, 5), I(5, 3) end
C.ParallelCriterion = function()
   local c = nn.ParallelCriterion():add(nn.MSECriterion()):add(nn.AbsCriterion(), 0.5)
   return c, { R(3, 5), R(2) }, { R(3, 5), R(2) }
end
C.SmoothL1Criterion = function() return nn.SmoothL1Criterion(), R(3, 5), R(3, 5) end
C.SoftMarginCriterion = function() return nn.SoftMarginCriterion(), R(3, 5), S(3, 5) end

-- other modes: in place, non-batch inputs, without bias or affine parameters, evaluation,
-- weights and sums in criterions
C['ReLU#inplace'] = function() return nn.ReLU(true), R(3, 5) end
C['Threshold#inplace'] = function() return nn.Threshold(0.1, -0.5, true), R(3, 5) end
C['LeakyReLU#inplace'] = function() return nn.LeakyReLU(0.1, true), R(3, 5) end
C['ELU#inplace'] = function() return nn.ELU(0.7, true), R(3, 5) end
C['HardTanh#inplace'] = function() return nn.HardTanh(-0.5, 0.6, true), R(3, 5) end
C['Dropout#inplace'] = function() return nn.Dropout(0.3, false, true), R(3, 5), nil, { seed = true } end
C['Linear#nobatch'] = function() return nn.Linear(5, 3), R(5) end
C['Linear#nobias'] = function() return nn.Linear(5, 3, false), R(3, 5) end
C['SpatialConvolution#nobatch'] = function() return nn.SpatialConvolution(3, 2, 3, 3, 2, 1), R(3, 5, 7) end
C['SpatialMaxPooling#nobatch'] = function() return nn.SpatialMaxPooling(2, 2, 2, 2):ceil(), R(3, 5, 7) end
C['BatchNormalization#noaffine'] = function() return nn.BatchNormalization(5, 1e-5, 0.1, false), R(7, 5) end
C['BatchNormalization#evaluate'] = function()
   return nn.BatchNormalization(5), R(7, 5), nil, { setup = function(m, x) m:forward(x) end, evaluate = true }
end
C['SoftMax#nobatch'] = function() return nn.SoftMax(), R(5) end
C['LogSoftMax#nobatch'] = function() return nn.LogSoftMax(), R(5) end
C['MSECriterion#sum'] = function() return nn.MSECriterion(false), R(3, 5), R(3, 5) end
C['ClassNLLCriterion#weights'] = function() return nn.ClassNLLCriterion(U(0.5, 2, 5)), P(3, 5), I(5, 3) end
C['CrossEntropyCriterion#nobatch'] = function() return nn.CrossEntropyCriterion(), R(5), 3 end
C['CrossEntropyCriterion#weights_smooth'] = function()
   return nn.CrossEntropyCriterion(U(0.5, 2, 5), 0.1), R(3, 5), I(5, 3)
end
C['SmoothL1Criterion#sum'] = function() return nn.SmoothL1Criterion(false), U(-3, 3, 3, 5), R(3, 5) end
C['Normalize#inf'] = function() return nn.Normalize(math.huge), R(3, 5) end
C['Normalize#p1.5'] = function() return nn.Normalize(1.5), R(3, 5) end

-- misc group (issue 14, merged later)
C.AddConstant = function() return nn.AddConstant(0.7), R(3, 5) end
C.MulConstant = function() return nn.MulConstant(-1.3), R(3, 5) end
C.Bilinear = function() return nn.Bilinear(4, 3, 5), { R(2, 4), R(2, 3) } end
C.Cosine = function() return nn.Cosine(5, 3), R(2, 5) end
C.CReLU = function() return nn.CReLU(3), R(2, 3, 3, 5) end
C.L1Penalty = function() return nn.L1Penalty(0.1), R(3, 5) end
C.MaskedSelect = function()
   local x = R(3, 5)
   return nn.MaskedSelect(), { x, x:gt(0) }
end
C.PixelShuffle = function() return nn.PixelShuffle(2), R(2, 8, 3, 5) end
C.SpatialLogSoftMax = function() return nn.SpatialLogSoftMax(), R(2, 3, 5, 3) end
C.TemporalDynamicKMaxPooling = function() return nn.TemporalDynamicKMaxPooling(3, 0.5), R(2, 7, 3) end
C.CriterionTable = function() return nn.CriterionTable(nn.MSECriterion()), { R(3, 5), R(3, 5) } end
C.ClassSimplexCriterion = function() return nn.ClassSimplexCriterion(5), R(3, 5), I(5, 3) end
C.DistanceRatioCriterion = function() return nn.DistanceRatioCriterion(), { U(0, 2, 5), U(0, 2, 5) }, R(5) end
C.SpatialAutoCropMSECriterion = function() return nn.SpatialAutoCropMSECriterion(), R(2, 3, 3, 3), R(2, 3, 5, 6) end

-- volumetric group (issue 14)
C.VolumetricConvolution = function()
   return nn.VolumetricConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1, 1, 0), R(2, 2, 4, 5, 5)
end
C.VolumetricDilatedConvolution = function()
   return nn.VolumetricDilatedConvolution(2, 3, 2, 2, 2, 1, 1, 1, 0, 1, 1, 2, 2, 1), R(2, 2, 5, 5, 5)
end
C.VolumetricFullConvolution = function()
   return nn.VolumetricFullConvolution(2, 3, 2, 3, 2, 1, 2, 1), R(2, 2, 3, 3, 4)
end
C.VolumetricMaxPooling = function() return nn.VolumetricMaxPooling(2, 2, 2, 2, 2, 2), R(2, 3, 4, 5, 5) end
C.VolumetricDilatedMaxPooling = function()
   return nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2), R(2, 3, 5, 5, 5)
end
C.VolumetricAveragePooling = function() return nn.VolumetricAveragePooling(2, 2, 2, 1, 2, 2), R(2, 3, 4, 5, 5) end
C.VolumetricMaxUnpooling = function()
   local p = nn.VolumetricMaxPooling(2, 2, 2, 2, 2, 2)
   p:forward(R(2, 3, 4, 4, 4))
   return nn.VolumetricMaxUnpooling(p), R(2, 3, 2, 2, 2)
end
C.VolumetricReplicationPadding = function()
   return nn.VolumetricReplicationPadding(1, 2, 0, 1, 2, 1), R(2, 3, 3, 4, 3)
end
C.VolumetricFractionalMaxPooling = function()
   return nn.VolumetricFractionalMaxPooling(2, 2, 2, 3, 3, 3), R(2, 2, 5, 5, 5), nil,
      { setup = function(m, x) m:fixPoolingRegions(); m:forward(x) end, redraws = true }
end

-- convolution and sub-sampling, group misc2 (issue 14)
C.SpatialDepthWiseConvolution = function()
   return nn.SpatialDepthWiseConvolution(3, 2, 3, 2, 1, 1, 1, 0), R(2, 3, 5, 6)
end
C.SpatialDilatedMaxPooling = function() return nn.SpatialDilatedMaxPooling(2, 2, 1, 1, 0, 0, 2, 2), R(2, 3, 6, 7) end
C.SpatialSubSampling = function() return nn.SpatialSubSampling(3, 2, 2, 2, 2), R(2, 3, 5, 6) end
C.TemporalSubSampling = function() return nn.TemporalSubSampling(4, 3, 2), R(7, 4) end
C.TemporalRowConvolution = function() return nn.TemporalRowConvolution(4, 3), R(2, 7, 4) end
C.SpatialConvolutionMap = function() return nn.SpatialConvolutionMap(nn.tables.full(3, 2), 3, 2), R(2, 3, 5, 6) end
C.UpSampling = function() return nn.UpSampling(2), R(2, 3, 3, 4) end
C.WeightNorm = function() return nn.WeightNorm(nn.Linear(5, 3)), R(2, 5) end
C.LinearWeightNorm = function() return nn.LinearWeightNorm(5, 3), R(2, 5) end
C.PartialLinear = function()
   local m = nn.PartialLinear(5, 4)
   m:setPartition(torch.LongTensor { 1, 3 })
   return m, R(2, 5)
end

-- fused batch norm (issue 12)
C.BatchNormReLU = function() return nn.BatchNormReLU(3), R(2, 3, 5, 3) end
C.BatchNormAddReLU = function() return nn.BatchNormAddReLU(3), { R(2, 3, 5, 3), R(2, 3, 5, 3) } end
C['BatchNormAddReLU#evaluate'] = function()
   return nn.BatchNormAddReLU(3), { R(2, 3, 5, 3), R(2, 3, 5, 3) }, nil,
      { setup = function(m, x) m:forward(x) end, evaluate = true }
end

-- documented modules the first inventory missed (issue 37, t37-nnnew)
C.CAddTensorTable = function() return nn.CAddTensorTable(), { R(5), { R(5), R(5), R(5) } } end
C.Collapse = function() return nn.Collapse(2), R(3, 4, 5) end
C.Constant = function() return nn.Constant(R(2, 3), 1), R(4, 5) end
C.Convert = function() return nn.Convert('bchw', 'bf'), R(2, 3, 4, 5) end
C['Convert#transpose'] = function() return nn.Convert('bchw', 'chwb'), R(2, 3, 4, 5) end
C['Convert#nobatch'] = function() return nn.Convert('chw', 'hwc'), R(3, 4, 5) end
C.Decorator = function() return nn.Decorator(lin(5, 3)), R(3, 5) end
C.Kmeans = function() return nn.Kmeans(3, 5), R(7, 5) end
C.MixtureTable = function() return nn.MixtureTable(), { U(0, 1, 3, 4), { R(3, 5), R(3, 5), R(3, 5), R(3, 5) } } end
C['MixtureTable#tensor'] = function() return nn.MixtureTable(2), { U(0, 1, 3, 4), R(3, 4, 5) } end
C.ModuleCriterion = function() return nn.ModuleCriterion(nn.MSECriterion(), nn.Tanh()), R(3, 5), R(3, 5) end
C.NaN = function() return nn.NaN(lin(5, 3)), R(3, 5) end
C.OneHot = function() return nn.OneHot(6), I(6, 3, 4) end
C.Profile = function() return nn.Profile(lin(5, 3), 1000), R(3, 5) end
C.WhiteNoise = function() return nn.WhiteNoise(0.1, 0.2), R(3, 5), nil, { seed = true } end
C.ZeroGrad = function() return nn.ZeroGrad(), R(3, 5) end
C.ZipTable = function() return nn.ZipTable(), { { R(3), R(3) }, { R(3), R(3) }, { R(3), R(3) } } end
C.ZipTableOneToMany = function() return nn.ZipTableOneToMany(), { R(4), { R(4), R(4), R(4) } } end

-- nnextra group (issue 37): nn's undocumented modules
C.SpatialConvolutionMM = function() return nn.SpatialConvolutionMM(3, 2, 3, 2, 1, 2, 1, 0), R(2, 3, 5, 7) end
C['SpatialConvolutionMM#nobatch'] = function() return nn.SpatialConvolutionMM(3, 4, 2, 3, 2, 1), R(3, 6, 5) end
C.SpatialFullConvolutionMap = function()
   local ct = torch.Tensor { { 1, 1 }, { 3, 1 }, { 2, 2 }, { 3, 2 }, { 1, 3 } }
   return nn.SpatialFullConvolutionMap(ct, 3, 2, 2, 1), R(3, 3, 4)
end
C['SpatialFullConvolutionMap#batch'] = function()
   return nn.SpatialFullConvolutionMap(nn.tables.full(2, 3), 2, 3, 1, 2), R(2, 2, 3, 4)
end
C.SpatialDivisiveNormalization = function()
   return nn.SpatialDivisiveNormalization(3, U(0.5, 1, 3, 5)), R(2, 3, 5, 6)
end
C['SpatialDivisiveNormalization#1d'] = function()
   return nn.SpatialDivisiveNormalization(2, U(0.5, 1, 3)), R(2, 5, 4)
end
C.SpatialContrastiveNormalization = function()
   return nn.SpatialContrastiveNormalization(3, U(0.5, 1, 3, 3)), R(2, 3, 5, 5)
end
C.FeatureLPPooling = function() return nn.FeatureLPPooling(3, 2, 3, true), U(0.2, 1, 2, 7, 3) end
C['FeatureLPPooling#nobatch'] = function() return nn.FeatureLPPooling(2, 1, 2, false), R(5, 2, 3) end
C.TanhShrink = function() return nn.TanhShrink(), R(3, 5) end
C.L1Cost = function() return nn.L1Cost(), R(3, 5) end
C.WeightedMSECriterion = function() return nn.WeightedMSECriterion(U(0.5, 2, 5)), R(3, 5), R(3, 5) end
C.SpatialClassNLLCriterion = function()
   local x = nn.LogSoftMax():forward(U(-2, 2, 2 * 3 * 4, 5)):clone():view(2, 3, 4, 5):permute(1, 4, 2, 3)
   return nn.SpatialClassNLLCriterion(U(0.5, 2, 5)), x:contiguous(), I(5, 2, 3, 4)
end

-- sparse inputs (issue 37, t37-nnsparse): k x 2 (index, value) rows with distinct indices
local function rows(n, k)
   local r = R(k, 2)
   r:select(2, 1):copy(torch.randperm(n):narrow(1, 1, k))
   return r
end
C.SparseLinear = function() return nn.SparseLinear(9, 3, true), rows(9, 4) end
C['SparseLinear#batch'] = function() return nn.SparseLinear(9, 3, true), { rows(9, 4), rows(9, 2), rows(9, 5) } end
C['SparseLinear#legacy'] = function()
   local x = R(3, 4, 2)
   for i = 1, 3 do x[i]:copy(rows(9, 4)) end
   return nn.SparseLinear(9, 3, true), x
end
local function keys(n, k) return torch.randperm(n):narrow(1, 1, k):long() end
C.IndexLinear = function() return nn.IndexLinear(9, 3, true):reset(), { { keys(9, 4), keys(9, 2) }, { R(4), R(2) } } end
C['IndexLinear#sample'] = function() return nn.IndexLinear(9, 3, true):reset(), { keys(9, 4), R(4) } end
C['IndexLinear#flat'] = function()
   return nn.IndexLinear(9, 3, true):reset(), { torch.cat(keys(9, 4), keys(9, 3)), R(7), torch.LongTensor { 4, 3 } }
end
C['IndexLinear#normalize'] = function()
   return nn.IndexLinear(9, 3, false, 0, nil, nil, true):reset(), { { keys(9, 4), keys(9, 2) }, { R(4), R(2) } }, nil,
      { evaluate = true }
end

-- classes that cannot be run on their own: abstract bases and tools
local exempt = { Module = 'abstract', Container = 'abstract', Criterion = 'abstract', Jacobian = 'a test tool' }
exempt.StochasticGradient = 'a trainer, not a module (spec/nn/training_spec.lua)'
exempt.DontCast = ':type() leaves the decorated module as it is, by design (spec/nn/decorator_spec.lua)'
exempt.PrintSize = 'prints on every call; the identity otherwise (spec/nn/decorator_spec.lua)'

return { cases = C, exempt = exempt }
