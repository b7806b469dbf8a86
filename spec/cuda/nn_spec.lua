-- nn_spec.lua: the CUDA versions of the nn layers, criterions and optimizer steps against
-- the CPU ones on the same fresh random inputs and parameters (forward, backward and
-- accGradParameters; batch norm in training and evaluation; optimizer steps over several
-- iterations), tolerances by dtype. GPU tests show as pending without a GPU; the last block
-- runs everywhere and checks the errors a machine without CUDA gives.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'

-- tolerance for a module's results: sums over many terms in another order (cuDNN, atomics-free
-- gathers, block reductions) differ from the CPU's by a few roundings of the accumulated value
local function tol(ty, scale)
   local t = cu.tolerance(ty, scale)
   return t
end
local SCALE = { ['torch.DoubleTensor'] = 1000, ['torch.FloatTensor'] = 30, ['torch.HalfTensor'] = 2,
   ['torch.BFloat16Tensor'] = 2 }

local function rand(shape, ty, lo, hi)
   return (util.rand_tensor(shape, ty or 'torch.DoubleTensor', lo or -1, hi or 1))
end

-- a CPU module of type ty with random parameters, and its copy on the GPU
local function pair(m, ty)
   m:type(ty)
   local params = m:parameters() or {}
   for _, p in ipairs(params) do p:copy(rand(T.sizes(p), ty)) end
   local g = m:clone():type(cu.cuda_name(ty))
   return m, g
end

-- forward, backward (scale 1 then accumulated with scale 0.5) on CPU and GPU from the same
-- input and gradOutput; every output, gradInput and parameter gradient compared
local function check_module(what, m, ty, x, opts)
   opts = opts or {}
   local cm, gm = pair(m, ty)
   if opts.evaluate then cm:evaluate() gm:evaluate() end
   local xc = x:type(ty)
   local xg = xc:cuda()
   local sc = (opts.scale or 1) * SCALE[ty]
   local yc = cm:forward(xc)
   local yg = gm:forward(xg)
   cu.same(yc, yg, ty, what .. ' output', sc)
   local go = rand(T.sizes(yc), ty)
   cm:zeroGradParameters()
   gm:zeroGradParameters()
   local gic = cm:backward(xc, go)
   local gig = gm:backward(xg, go:cuda())
   cu.same(gic, gig, ty, what .. ' gradInput', sc)
   cm:backward(xc, go, 0.5)
   gm:backward(xg, go:cuda(), 0.5)
   local _, gpc = cm:parameters()
   local _, gpg = gm:parameters()
   for i = 1, #(gpc or {}) do cu.same(gpc[i], gpg[i], ty, what .. ' gradParameter ' .. i, sc) end
   -- state a module keeps (running statistics) moved the same way
   for _, k in ipairs { 'running_mean', 'running_var' } do
      if torch.isTensor(cm[k]) then cu.same(cm[k], gm[k], ty, what .. ' ' .. k, sc) end
   end
   return cm, gm
end

local FT = { 'torch.DoubleTensor', 'torch.FloatTensor' }

describe('nn on CUDA against the CPU', function()
   cu.gpu_it('SpatialConvolution: strides, paddings, dilation, groups, odd sizes', function()
      local configs = {
         { 3, 5, 3, 3, 1, 1, 1, 1, in_ = { 2, 3, 7, 9 } },
         { 4, 6, 5, 3, 2, 1, 2, 0, in_ = { 3, 4, 11, 8 } },
         { 2, 3, 1, 1, 1, 1, 0, 0, in_ = { 1, 2, 5, 5 } },
         { 3, 4, 2, 2, 3, 2, 1, 1, in_ = { 2, 3, 9, 7 }, nobias = true },
      }
      for _, ty in ipairs(FT) do
         for i, c in ipairs(configs) do
            local m = nn.SpatialConvolution(c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8])
            if c.nobias then m:noBias() end
            check_module(('conv %d %s'):format(i, ty), m, ty, rand(c.in_))
         end
         -- groups and dilation through the module's fields (Torch7's constructor has no slot)
         local m = nn.SpatialConvolution(4, 6, 3, 3, 1, 1, 2, 2)
         if m.groups ~= nil and m.dilationW ~= nil then
            m = nn.SpatialConvolution(4, 6, 3, 3, 1, 1, 2, 2, 2)
            m.dilationW, m.dilationH = 2, 2
            check_module('conv groups+dilation ' .. ty, m, ty, rand { 2, 4, 9, 10 })
         end
      end
   end)

   cu.gpu_it('SpatialConvolution in float16 and bfloat16 (tensor-op math)', function()
      for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         check_module('conv ' .. ty, nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1), ty,
            rand({ 2, 3, 6, 5 }, nil, -0.5, 0.5), { scale = 4 })
      end
   end)

   cu.gpu_it('SpatialBatchNormalization and BatchNormalization, training and evaluation', function()
      for _, ty in ipairs(FT) do
         for _, affine in ipairs { true, false } do
            local m = nn.SpatialBatchNormalization(5, 1e-5, 0.1, affine)
            local cm, gm = check_module('sbn train ' .. ty, m, ty, rand({ 3, 5, 4, 7 }, nil, -2, 3))
            -- evaluation with the running statistics the training pass left
            local x = rand({ 2, 5, 3, 3 }, ty)
            cm:evaluate() gm:evaluate()
            cu.same(cm:forward(x), gm:forward(x:cuda()), ty, 'sbn eval output', SCALE[ty])
            local go = rand({ 2, 5, 3, 3 }, ty)
            cu.same(cm:backward(x, go), gm:backward(x:cuda(), go:cuda()), ty, 'sbn eval gradInput', SCALE[ty])
            check_module('bn train ' .. ty, nn.BatchNormalization(6, 1e-5, 0.2, affine), ty, rand({ 9, 6 }, nil, -1, 2))
            check_module('bn eval ' .. ty, nn.BatchNormalization(6), ty, rand { 4, 6 }, { evaluate = true })
         end
      end
   end)

   cu.gpu_it('activations, SoftMax and LogSoftMax', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         for _, shape in ipairs { { 7 }, { 3, 11 }, { 2, 5, 3, 3 } } do
            local x = rand(shape, nil, -3, 3)
            check_module('ReLU ' .. ty, nn.ReLU(), ty, x)
            check_module('LeakyReLU ' .. ty, nn.LeakyReLU(0.1), ty, x)
            check_module('Sigmoid ' .. ty, nn.Sigmoid(), ty, x)
            check_module('Tanh ' .. ty, nn.Tanh(), ty, x)
            check_module('SoftMax ' .. ty, nn.SoftMax(), ty, x)
            check_module('LogSoftMax ' .. ty, nn.LogSoftMax(), ty, x)
         end
         -- a long row takes the block-per-row path with several passes per thread
         check_module('LogSoftMax long ' .. ty, nn.LogSoftMax(), ty, rand({ 3, 1000 }, nil, -5, 5))
      end
      -- in place
      local x = rand({ 4, 9 }, nil, -1, 1)
      local y = nn.ReLU(true):cuda():forward(x:cuda())
      cu.same(nn.ReLU():forward(x), y, 'torch.DoubleTensor', 'ReLU in place')
   end)

   cu.gpu_it('pooling: max (indices too), average, ceil mode, padding, global', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local x = rand { 2, 3, 9, 8 }
         local cm, gm = check_module('max 3x3/2 ' .. ty, nn.SpatialMaxPooling(3, 3, 2, 2), ty, x)
         assert.are.same(util.flat(cm.indices), util.flat(gm.indices:cpu()), 'max-pool indices')
         check_module('max ceil pad ' .. ty, nn.SpatialMaxPooling(3, 2, 2, 2, 1, 1):ceil(), ty, x)
         check_module('max overlapping ' .. ty, nn.SpatialMaxPooling(3, 3, 1, 1, 1, 1), ty, rand { 1, 2, 5, 6 })
         check_module('avg ' .. ty, nn.SpatialAveragePooling(2, 2, 2, 2), ty, x)
         check_module('avg ceil pad incl ' .. ty, nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1):ceil(), ty, x)
         check_module('avg ceil pad excl ' .. ty,
            nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1):ceil():setCountExcludePad(), ty, x)
         check_module('global avg ' .. ty, nn.SpatialGlobalAveragePooling(), ty, rand { 2, 4, 5, 7 })
         check_module('adaptive avg ' .. ty, nn.SpatialAdaptiveAveragePooling(3, 2), ty, rand { 2, 3, 7, 8 })
      end
   end)

   cu.gpu_it('Linear, Dropout (evaluation; training scales by 1/(1-p)) and a small CNN end to end', function()
      for _, ty in ipairs(FT) do
         check_module('Linear ' .. ty, nn.Linear(7, 5), ty, rand { 4, 7 })
         check_module('Dropout eval ' .. ty, nn.Dropout(0.3), ty, rand { 4, 7 }, { evaluate = true })
         local d = nn.Dropout(0.25):type(cu.cuda_name(ty))
         local x = rand({ 50, 40 }, ty, 1, 2)
         local y = d:forward(x:cuda()):cpu()
         local xf, yf, zeros = util.flat(x), util.flat(y), 0
         for i = 1, #xf do
            if yf[i] == 0 then zeros = zeros + 1
            else util.assert_close({ yf[i] }, { xf[i] / 0.75 }, tol(ty, 10), 'dropout kept value') end
         end
         assert(zeros > 0 and zeros < #xf, 'dropout dropped ' .. zeros .. ' of ' .. #xf)
         local net = nn.Sequential()
            :add(nn.SpatialConvolution(1, 4, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(4)):add(nn.ReLU(true))
            :add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(nn.View(4 * 4 * 4)):add(nn.Linear(64, 10)):add(nn.LogSoftMax())
         check_module('small CNN ' .. ty, net, ty, rand { 3, 1, 8, 8 })
      end
   end)
end)

describe('criterions on CUDA against the CPU', function()
   cu.gpu_it('ClassNLLCriterion (weights, sizeAverage), '
      .. 'CrossEntropyCriterion (label smoothing), MSECriterion', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local N, Cn = 6, 5
         local logp = nn.LogSoftMax():forward(rand({ N, Cn }, nil, -2, 2)):type(ty)
         local target = torch.LongTensor(N)
         for i = 1, N do target[i] = math.random(1, Cn) end
         local w = rand({ Cn }, ty, 0.5, 2)
         local crits = {
            { 'NLL', function() return nn.ClassNLLCriterion() end },
            { 'NLL weights', function() return nn.ClassNLLCriterion(w:clone()) end },
            { 'NLL sum', function() return nn.ClassNLLCriterion(nil, false) end },
            { 'CE smoothing', function() return nn.CrossEntropyCriterion(nil, 0.1) end },
         }
         for _, c in ipairs(crits) do
            local cc = c[2]():type(ty)
            local gc = c[2]():type(cu.cuda_name(ty))
            local lc = cc:forward(logp, target)
            local lg = gc:forward(logp:cuda(), target:cuda())
            cu.same(lc, lg, ty, c[1] .. ' loss', SCALE[ty])
            cu.same(cc:backward(logp, target), gc:backward(logp:cuda(), target:cuda()), ty, c[1] .. ' gradInput',
               SCALE[ty])
         end
         for _, avg in ipairs { true, false } do
            local x, t = rand({ 4, 3, 5 }, ty), rand({ 4, 3, 5 }, ty)
            local cc, gc = nn.MSECriterion(avg):type(ty), nn.MSECriterion(avg):type(cu.cuda_name(ty))
            cu.same(cc:forward(x, t), gc:forward(x:cuda(), t:cuda()), ty, 'MSE loss', SCALE[ty])
            cu.same(cc:backward(x, t), gc:backward(x:cuda(), t:cuda()), ty, 'MSE gradInput', SCALE[ty])
         end
      end
   end)

   cu.gpu_it('ClassNLLCriterion reports an out-of-range CUDA target like the CPU', function()
      local logp = rand({ 3, 4 }, 'torch.FloatTensor'):cuda()
      local t = torch.LongTensor { 1, 5, 2 }:cuda()
      util.assert_error(function() nn.ClassNLLCriterion():cuda():forward(logp, t) end, 'target 5', 'out of range')
   end)
end)

describe('optimizer steps on CUDA against the CPU', function()
   -- the same sequence of gradients on both devices, a few steps; x and the state compared
   local function run(method, config, ty, n, with_layers)
      local x0 = rand({ n }, ty)
      local grads = {}
      for i = 1, 4 do grads[i] = rand({ n }, ty) end
      local function steps(x, dev)
         local cfg = {}
         for k, v in pairs(config) do cfg[k] = v end
         if with_layers then cfg.layers = { { 1, 7 }, { 8, 5 }, { 13, n - 12 } } cfg.exclude = { { 8, 5 } } end
         local state = {}
         for i = 1, #grads do
            local g = dev and grads[i]:cuda() or grads[i]
            optim[method](function() return 0.5, g end, x, cfg, state)
         end
         return x, state
      end
      local xc = steps(x0:clone(), false)
      local xg = steps(x0:cuda(), true)
      cu.same(xc, xg, ty, method .. ' parameters', SCALE[ty])
   end

   cu.gpu_it('sgd (momentum, dampening, nesterov, weight decay), adam, adamw', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         run('sgd', { learningRate = 0.1 }, ty, 37)
         run('sgd', { learningRate = 0.1, momentum = 0.9, dampening = 0.1, weightDecay = 1e-2 }, ty, 37)
         run('sgd', { learningRate = 0.05, momentum = 0.9, dampening = 0, nesterov = true }, ty, 1001)
         run('adam', { learningRate = 0.01, weightDecay = 1e-3 }, ty, 37)
         run('adamw', { learningRate = 0.01, weightDecay = 1e-2 }, ty, 1001)
      end
   end)

   cu.gpu_it('lars and lamb over several segments with one excluded', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         run('lars', { learningRate = 0.1, momentum = 0.9, weightDecay = 1e-3, eta = 0.01 }, ty, 40, true)
         run('lamb', { learningRate = 0.01, weightDecay = 1e-2 }, ty, 40, true)
         run('lamb', { learningRate = 0.01 }, ty, 3000)
      end
   end)
end)

describe('nn without a usable GPU', function()
   cu.nogpu_it('moving a model or a criterion to CUDA fails with a clear error', function()
      local frag = cu.no_cuda_fragment()
      util.assert_error(function() nn.SpatialConvolution(1, 2, 3, 3):cuda() end, frag)
      util.assert_error(function() nn.Sequential():add(nn.Linear(3, 2)):add(nn.ReLU()):cuda() end, frag)
      util.assert_error(function() torch.randn(4):cuda() end, frag)
   end)
   it('CPU layers still reject mixed devices and dtypes with messages naming the op', function()
      local m = nn.SpatialConvolution(2, 3, 3, 3):float()
      util.assert_error(function() m:forward(torch.randn(1, 2, 5, 5):double()) end, 'SpatialConvolution')
      util.assert_error(function() nn.MSECriterion():forward(torch.randn(3), torch.randn(4)) end, 'nn.MSECriterion')
   end)
end)
