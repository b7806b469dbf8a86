-- api_spec.lua: every module and criterion that Torch7's nn documentation (nn/doc/*.md)
-- describes exists here as a constructor, and every algorithm of optim's algos.md that the nn issue
-- asks for exists in moontorch.optim. What each one computes is checked by the nn_*_spec and
-- optim_*_spec files (float64 references, nn.Jacobian). Names left out on purpose are listed
-- with the reason (and in the README).
-- The DOC lists are the output of `tools/nn_doc_names.sh DIR` on an nn checkout (grouped by doc
-- file): every anchor nn.X with a file X.lua, however the anchor is quoted. The first lists, made
-- by hand, missed the anchors written <a name='nn.X'>; the last spec here runs the tool on a fixture
-- of anchors in each spelling, so that cannot happen again unnoticed.
require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local util = require 'spec.util'

local DOC = {
   containers = {
      'Bottle', 'Concat', 'Container', 'Decorator', 'DepthConcat', 'DontCast', 'NaN', 'Parallel', 'Profile',
      'Sequential', 'WeightNorm',
   },
   convolution = {
      'LookupTable', 'SpatialAdaptiveAveragePooling', 'SpatialAdaptiveMaxPooling', 'SpatialAveragePooling',
      'SpatialBatchNormalization', 'SpatialConvolution', 'SpatialConvolutionLocal', 'SpatialConvolutionMap',
      'SpatialCrossMapLRN', 'SpatialDepthWiseConvolution', 'SpatialDilatedConvolution', 'SpatialDilatedMaxPooling',
      'SpatialFractionalMaxPooling', 'SpatialFullConvolution', 'SpatialLPPooling', 'SpatialMaxPooling',
      'SpatialMaxUnpooling', 'SpatialReflectionPadding', 'SpatialReplicationPadding', 'SpatialSubSampling',
      'SpatialSubtractiveNormalization', 'SpatialUpSamplingBilinear', 'SpatialUpSamplingNearest', 'SpatialZeroPadding',
      'TemporalConvolution', 'TemporalMaxPooling', 'TemporalRowConvolution', 'TemporalSubSampling', 'UpSampling',
      'VolumetricAveragePooling', 'VolumetricConvolution', 'VolumetricDilatedConvolution',
      'VolumetricDilatedMaxPooling', 'VolumetricFractionalMaxPooling', 'VolumetricFullConvolution',
      'VolumetricMaxPooling', 'VolumetricMaxUnpooling', 'VolumetricReplicationPadding',
   },
   criterion = {
      'AbsCriterion', 'BCECriterion', 'ClassNLLCriterion', 'ClassSimplexCriterion', 'CosineEmbeddingCriterion',
      'Criterion', 'CrossEntropyCriterion', 'DistKLDivCriterion', 'DistanceRatioCriterion', 'HingeEmbeddingCriterion',
      'L1HingeEmbeddingCriterion', 'MSECriterion', 'MarginCriterion', 'MarginRankingCriterion', 'ModuleCriterion',
      'MultiCriterion', 'MultiLabelMarginCriterion', 'MultiLabelSoftMarginCriterion', 'MultiMarginCriterion',
      'ParallelCriterion', 'SmoothL1Criterion', 'SoftMarginCriterion', 'SpatialAutoCropMSECriterion',
   },
   module = { 'Module' },
   simple = {
      'Abs', 'Add', 'BatchNormalization', 'Bilinear', 'CAdd', 'CMul', 'Clamp', 'Collapse', 'Constant', 'Contiguous',
      'Convert', 'Copy', 'Cosine', 'Dropout', 'Euclidean', 'Exp', 'GPU', 'GradientReversal', 'Identity', 'Index',
      'IndexLinear', 'Kmeans', 'L1Penalty', 'Linear', 'LinearWeightNorm', 'Log', 'MM', 'MaskedSelect', 'Max', 'Mean',
      'Min', 'Mul', 'Narrow', 'Normalize', 'OneHot', 'Padding', 'PartialLinear', 'PixelShuffle', 'Power', 'PrintSize',
      'Replicate', 'Reshape', 'Select', 'SparseLinear', 'SpatialDropout', 'Sqrt', 'Square', 'Squeeze', 'Sum',
      'TemporalDynamicKMaxPooling', 'Transpose', 'Unsqueeze', 'View', 'VolumetricDropout', 'WeightedEuclidean',
      'WhiteNoise', 'ZeroGrad',
   },
   table = {
      'CAddTable', 'CAddTensorTable', 'CDivTable', 'CMaxTable', 'CMinTable', 'CMulTable', 'CSubTable', 'ConcatTable',
      'CosineDistance', 'CriterionTable', 'DotProduct', 'FlattenTable', 'JoinTable', 'MapTable', 'MixtureTable',
      'NarrowTable', 'PairwiseDistance', 'ParallelTable', 'SelectTable', 'SplitTable', 'ZipTable', 'ZipTableOneToMany',
   },
   training = { 'StochasticGradient' },
   transfer = {
      'AddConstant', 'CReLU', 'ELU', 'GatedLinearUnit', 'HardShrink', 'HardTanh', 'LeakyReLU', 'LogSigmoid',
      'LogSoftMax', 'MulConstant', 'PReLU', 'RReLU', 'ReLU', 'ReLU6', 'Sigmoid', 'SoftMax', 'SoftMin', 'SoftPlus',
      'SoftShrink', 'SoftSign', 'SpatialLogSoftMax', 'SpatialSoftMax', 'Tanh',
   },
}

-- documented, deliberately absent: name -> why
local LEFT_OUT = {
   GPU = 'a decorator that moves a module to another GPU of one process; moontorch runs one GPU per '
      .. 'process (dist.DataParallel), so there is nothing for it to do',
}

local OPTIM = { 'sgd', 'adam', 'adamax', 'adagrad', 'adadelta', 'rmsprop', 'nag', 'asgd', 'rprop', 'lbfgs', 'cg' }

local function callable(v)
   if type(v) == 'function' then return true end
   local mt = type(v) == 'table' and getmetatable(v)
   return mt and mt.__call ~= nil or false
end

describe('Torch7 nn and optim coverage', function()
   for group, names in pairs(DOC) do
      it('has every module of ' .. group .. '.md', function()
         local missing = {}
         for _, name in ipairs(names) do
            if not LEFT_OUT[name] and not callable(nn[name]) then missing[#missing + 1] = name end
         end
         assert(#missing == 0,
            group .. ': ' .. #missing .. ' documented modules missing: ' .. table.concat(missing, ' '))
      end)
   end
   it('has the optim algorithms', function()
      for _, name in ipairs(OPTIM) do assert(type(optim[name]) == 'function', 'optim.' .. name .. ' missing') end
      assert(callable(optim.Logger) and callable(optim.ConfusionMatrix))
   end)
   it('lists only documented names as left out', function()
      local all = {}
      for _, names in pairs(DOC) do for _, n in ipairs(names) do all[n] = true end end
      for name in pairs(LEFT_OUT) do assert(all[name], name .. ' is not documented') end
   end)

   it('tools/nn_doc_names.sh finds the classes of anchors in every spelling, and nothing else', function()
      local dir = util.tmpdir()
      os.execute(('mkdir %q'):format(dir .. '/doc'))
      local function write(path, text) util.write_bytes(dir .. '/' .. path, text) end
      write('doc/alpha.md', table.concat({
         '<a name="nn.Dq"></a>', '## Dq ##', "<a name='nn.Sq'></a>", "<a name = 'nn.Spaced'></a>",
         '<a name=nn.Bare></a>', '<a id="nn.ById"></a>', '<a name="nn.Dq.forward"></a>',
         '<a name="nn.Section"></a>', '# A section #', 'text naming nn.Inline and name="nn.Loose"', '',
      }, '\n'))
      write('doc/beta.md', "intro\n<a name='nn.Other'></a>\n<a name=\"nn.lower\"></a>\n")
      for _, n in ipairs { 'Dq', 'Sq', 'Spaced', 'Bare', 'ById', 'Other', 'lower', 'Inline', 'Loose' } do
         write(n .. '.lua', '')
      end
      local out, rc = util.sh(('tools/nn_doc_names.sh %q'):format(dir))
      os.execute(('rm -r %q'):format(dir))
      assert.are.equal(0, rc, out)
      assert.are.equal(table.concat({ 'alpha Bare', 'alpha ById', 'alpha Dq', 'alpha Spaced', 'alpha Sq',
         'beta Other', 'exit=0', '' }, '\n'), out)
   end)
end)
