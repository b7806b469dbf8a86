-- batchnorm_fused_spec.lua: batch norm for mixed precision (float32 statistics with float16 /
-- bfloat16 inputs), the fused nn.BatchNormReLU / nn.BatchNormAddReLU (Jacobians in float64,
-- bit-identical to the unfused modules on the CPU in every float dtype), the model rewrite
-- nn.utils.fuseBatchNorm on a small ResNet, and channels-last inputs; CUDA against the CPU.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local C = T.clib

local EXACT = { atol = 0, rtol = 0 }
local FTYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }

local function rnd(shape, ty, lo, hi)
   return (util.rand_tensor(shape, ty or 'torch.DoubleTensor', lo or -2, hi or 2))
end

-- a BN module (class cls) of type ty with random parameters and statistics
local function randomBN(cls, n, ty, affine, momentum)
   local m = cls(n, 1e-5, momentum or 0.3, affine)
   if m.weight then
      m.weight:copy(rnd({ n }, nil, 0.5, 1.5))
      m.bias:copy(rnd({ n }, nil, -0.5, 0.5))
   end
   m.running_mean:copy(rnd({ n }, nil, -0.2, 0.2))
   m.running_var:copy(rnd({ n }, nil, 0.5, 1.5))
   return m:type(ty)
end

-- share src's batch norm tensors with dst (fields of nn.BatchNormalization)
local FIELDS = { 'weight', 'bias', 'gradWeight', 'gradBias', 'running_mean', 'running_var' }
local function copyBN(dst, src)
   for _, k in ipairs(FIELDS) do if src[k] then dst[k]:copy(src[k]) end end
   return dst
end

describe('batch norm with float32 statistics for half inputs', function()
   it('type() keeps running/saved stats in float32, weight and bias in the half type', function()
      for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local m = nn.SpatialBatchNormalization(3):type(ty)
         assert.are.equal('torch.FloatTensor', m.running_mean:type())
         assert.are.equal('torch.FloatTensor', m.running_var:type())
         assert.are.equal('torch.FloatTensor', m.save_mean:type())
         assert.are.equal(ty, m.weight:type())
         m:float()
         assert.are.equal('torch.FloatTensor', m.weight:type())
         m:double()
         assert.are.equal('torch.DoubleTensor', m.running_mean:type())
      end
   end)

   it('forward/backward in half match float64, stats equal the float64 reference to fp32 precision', function()
      for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         for _, affine in ipairs { true, false } do
            local shape = { 3, 5, 3, 7 }
            local m = randomBN(nn.SpatialBatchNormalization, 5, ty, affine)
            local ref = copyBN(randomBN(nn.SpatialBatchNormalization, 5, 'torch.DoubleTensor', affine), m)
            local x = rnd(shape, ty, -2, 3)
            local go = rnd(shape, ty)
            local tol = util.tol[ty]
            util.assert_close(m:forward(x), ref:forward(x:double()), tol, 'y ' .. ty)
            m:zeroGradParameters(); ref:zeroGradParameters()
            util.assert_close(m:backward(x, go), ref:backward(x:double(), go:double()), tol, 'gx ' .. ty)
            if affine then
               util.assert_close(m.gradWeight, ref.gradWeight, tol, 'gw ' .. ty)
               util.assert_close(m.gradBias, ref.gradBias, tol, 'gb ' .. ty)
            end
            assert.are.equal('torch.FloatTensor', m.running_mean:type())
            local f32 = { atol = 1e-7, rtol = 2e-7 }
            util.assert_close(m.running_mean, ref.running_mean, f32, 'running_mean ' .. ty)
            util.assert_close(m.running_var, ref.running_var, f32, 'running_var ' .. ty)
            util.assert_close(m.save_mean, ref.save_mean, f32, 'save_mean ' .. ty)
            util.assert_close(m.save_std, ref.save_std, f32, 'save_std ' .. ty)
            m:evaluate(); ref:evaluate()
            util.assert_close(m:forward(x), ref:forward(x:double()), tol, 'eval y ' .. ty)
         end
      end
   end)

   it('keeps small momentum updates that half statistics lose', function()
      local x = rnd({ 4, 2, 3, 3 }, 'torch.HalfTensor', -1, 1)
      local m = randomBN(nn.SpatialBatchNormalization, 2, 'torch.HalfTensor', true, 1e-4)
      m.running_mean:fill(2); m.running_var:fill(3)
      local ref = copyBN(randomBN(nn.SpatialBatchNormalization, 2, 'torch.DoubleTensor', true, 1e-4), m)
      -- the same module with half statistics (nn.Module's plain conversion)
      local mh = nn.Module.type(copyBN(nn.SpatialBatchNormalization(2, 1e-5, 1e-4), m), 'torch.HalfTensor')
      assert.are.equal('torch.HalfTensor', mh.running_mean:type())
      for _ = 1, 5 do
         m:forward(x); ref:forward(x:double()); mh:forward(x)
      end
      util.assert_close(m.running_mean, ref.running_mean, { atol = 0, rtol = 2e-7 }, 'fp32 running_mean')
      util.assert_close(m.running_var, ref.running_var, { atol = 0, rtol = 2e-7 }, 'fp32 running_var')
      -- updates of ~2e-4 each sit below half of fp16's ulp at 2: the half statistics never move
      for c = 1, 2 do
         assert.are.equal(2, mh.running_mean[c])
         assert.is_true(math.abs(ref.running_mean[c] - 2) > 5e-4)
         assert.is_true(math.abs(m.running_mean[c] - 2) > 5e-4)
      end
   end)

   it('t7 round trip of a half model keeps the float32 statistics and the results', function()
      local m = nn.Sequential():add(randomBN(nn.SpatialBatchNormalization, 3, 'torch.FloatTensor', true))
         :add(nn.ReLU()):half()
      local x = rnd({ 2, 3, 4, 5 }, 'torch.HalfTensor')
      m:forward(x)
      for _, fmt in ipairs { 'binary', 'ascii' } do
         local c = torch.deserialize(torch.serialize(m, fmt), fmt)
         local bn = c.modules[1]
         assert.are.equal('torch.FloatTensor', bn.running_mean:type())
         assert.are.equal('torch.HalfTensor', bn.weight:type())
         util.assert_close(bn.running_var, m.modules[1].running_var, EXACT, 'running_var ' .. fmt)
         c:evaluate(); m:evaluate()
         util.assert_close(c:forward(x):double(), m:forward(x):double(), EXACT, 'eval output ' .. fmt)
         m:training()
      end
   end)

   it('rejects statistics of another dtype naming the allowed ones', function()
      local x = torch.randn(4, 3):half()
      local y, sm, sv = torch.HalfTensor(), torch.FloatTensor(), torch.FloatTensor()
      local rm, rv = torch.zeros(3):double(), torch.ones(3):double()
      local ok, err = pcall(T.check,
         C.mt_nn_batchnorm_forward(y.h, x.h, nil, nil, rm.h, rv.h, sm.h, sv.h, 1, 0.1, 1e-5))
      assert.is_false(ok)
      assert.truthy(tostring(err):find('running_mean has dtype float64', 1, true))
      assert.truthy(tostring(err):find('float32', 1, true))
      local xf = torch.randn(4, 3)
      ok, err = pcall(T.check, C.mt_nn_batchnorm_forward(y.h, xf.h, nil, nil, rm:float().h, rv:half().h, sm.h, sv.h,
         1, 0.1, 1e-5))
      assert.is_false(ok)
      assert.truthy(tostring(err):find('running_var has dtype float16', 1, true))
      util.assert_error(function() nn.BatchNormalization(3):double():forward(torch.randn(4, 3)) end,
         'convert with :type()')
   end)
end)

-- the unfused chains the fused modules stand for
local function chainReLU(bn) return nn.Sequential():add(bn):add(nn.ReLU(true)) end
local function chainAdd(bn)
   return nn.Sequential():add(nn.ParallelTable():add(bn):add(nn.Identity())):add(nn.CAddTable(true)):add(nn.ReLU(true))
end

-- values of a (table of) tensor(s) as float64 for exact comparison
local function same(a, b, what)
   if type(a) == 'table' then
      for i = 1, #b do same(a[i], b[i], what .. '[' .. i .. ']') end
      return
   end
   assert.are.equal(b:type(), a:type(), what)
   util.assert_close(a:double(), b:double(), EXACT, what)
end

describe('fused BatchNormReLU and BatchNormAddReLU', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('pass nn.Jacobian in float64 (odd sizes, affine and not, train and evaluate)', function()
      for _, affine in ipairs { true, false } do
         for _, mode in ipairs { 'train', 'eval' } do
            local a = randomBN(nn.BatchNormReLU, 3, 'torch.DoubleTensor', affine)
            local b = randomBN(nn.BatchNormAddReLU, 3, 'torch.DoubleTensor', affine)
            if mode == 'eval' then a:evaluate(); b:evaluate() end
            local x = torch.Tensor(3, 3, 3, 5)
            assert(nn.Jacobian.testJacobian(a, x, -2, 2) < 1e-6, 'BatchNormReLU ' .. mode)
            assert(nn.Jacobian.testJacobian(b, { torch.Tensor(3, 3, 3, 5), torch.Tensor(3, 3, 3, 5) }, -2, 2) < 1e-6,
               'BatchNormAddReLU ' .. mode)
            if affine then
               x = rnd({ 3, 3, 3, 5 })
               assert(nn.Jacobian.testJacobianParameters(a, x, a.weight, a.gradWeight) < 1e-6, 'dweight ' .. mode)
               assert(nn.Jacobian.testJacobianParameters(a, x, a.bias, a.gradBias) < 1e-6, 'dbias ' .. mode)
               local xr = { rnd({ 3, 3, 3, 5 }), rnd({ 3, 3, 3, 5 }) }
               assert(nn.Jacobian.testJacobianParameters(b, xr, b.weight, b.gradWeight) < 1e-6, 'add dweight ' .. mode)
            end
         end
      end
   end)

   it('are bit-identical to BN -> (CAddTable ->) ReLU on the CPU, every float dtype', function()
      for _, ty in ipairs(FTYPES) do
         for _, affine in ipairs { true, false } do
            for _, mode in ipairs { 'train', 'eval' } do
               for _, add in ipairs { false, true } do
                  local what = ('%s affine=%s %s add=%s'):format(ty, tostring(affine), mode, tostring(add))
                  local fused = randomBN(add and nn.BatchNormAddReLU or nn.BatchNormReLU, 5, ty, affine)
                  local bn = copyBN(randomBN(nn.SpatialBatchNormalization, 5, ty, affine), fused)
                  local ref = (add and chainAdd(bn) or chainReLU(bn)):type(ty)
                  if mode == 'eval' then fused:evaluate(); ref:evaluate() end
                  local shape = { 3, 5, 4, 7 }
                  local x = rnd(shape, ty, -2, 3)
                  local input = add and { x, rnd(shape, ty) } or x
                  local go = rnd(shape, ty)
                  local yf = fused:forward(input)
                  local yr = ref:forward(input)
                  same(yf, yr, 'y ' .. what)
                  assert.is_true(yf:double():eq(0):sum() > 5, 'the ReLU clamps ' .. what)
                  fused:zeroGradParameters(); ref:zeroGradParameters()
                  local gf = fused:backward(input, go:clone(), 0.5)
                  local gr = ref:backward(input, go:clone(), 0.5)
                  same(gf, gr, 'gradInput ' .. what)
                  for _, k in ipairs(FIELDS) do
                     if fused[k] then same(fused[k], bn[k], k .. ' ' .. what) end
                  end
               end
            end
         end
      end
   end)

   it('reject bad shapes and inputs', function()
      local a = nn.BatchNormAddReLU(3)
      util.assert_error(function() a:forward(torch.randn(2, 3, 4, 4)) end, 'nn.BatchNormAddReLU', '{x, residual}')
      util.assert_error(function() a:forward({ torch.randn(2, 3, 4, 4), torch.randn(2, 3, 4, 5) }) end,
         'nn.BatchNormAddReLU', 'residual', '2x3x4x5', '2x3x4x4')
      util.assert_error(function() a:forward({ torch.randn(2, 4, 4, 4), torch.randn(2, 4, 4, 4) }) end, '4', '3')
      util.assert_error(function() nn.BatchNormReLU(3):forward(torch.randn(2, 3)) end, 'nn.BatchNormReLU', '2x3')
      local x, r, y = torch.randn(2, 3, 2, 2), torch.randn(2, 3, 2, 3), torch.Tensor()
      local rm, rv, sm, sv = torch.zeros(3), torch.ones(3), torch.Tensor(), torch.Tensor()
      local ok, err = pcall(T.check, C.mt_nn_batchnorm_act_forward(y.h, x.h, r.h, nil, nil, rm.h, rv.h, sm.h, sv.h, 1,
         0.1, 1e-5, 1))
      assert.is_false(ok)
      assert.truthy(tostring(err):find('residual has size 2x3x2x3, expected 2x3x2x2', 1, true))
      ok, err = pcall(T.check, C.mt_nn_batchnorm_act_backward(y.h, nil, nil, nil, x.h, nil, x.h, nil, rm.h, rv.h, nil,
         nil, 0, 1, 1e-5, 1))
      assert.is_false(ok)
      assert.truthy(tostring(err):find("ReLU's backward needs the forward's output", 1, true))
   end)
end)

describe('nn.utils.fuseBatchNorm', function()
   it('rewrites a small ResNet into identical outputs and gradients, sharing the tensors', function()
      local resnet = require 'moontorch.models.resnet'
      torch.manualSeed(7)
      local a = resnet { depth = 8, dataset = 'cifar10' }
      for _, m in ipairs(a:listModules()) do
         if m.running_var then
            m.weight:copy(rnd({ m.weight:nElement() }, nil, 0.5, 1.5))
            m.bias:copy(rnd({ m.bias:nElement() }, nil, -0.3, 0.3))
         end
      end
      local b = a:clone()
      local pb, gb = b:parameters()
      local _, n = b:fuseBatchNorm()
      assert.are.equal(7, n) -- stem and 3 in-block BN+ReLU, 3 block ends
      local count = {}
      for _, m in ipairs(b:listModules()) do count[torch.type(m)] = (count[torch.type(m)] or 0) + 1 end
      assert.are.equal(4, count['nn.BatchNormReLU'])
      assert.are.equal(3, count['nn.BatchNormAddReLU'])
      assert.are.equal(2, count['nn.SpatialBatchNormalization']) -- the projection shortcuts
      assert.is_nil(count['nn.CAddTable'])
      local pb2 = b:parameters()
      assert.are.equal(#pb, #pb2)
      local seen = {}
      for _, p in ipairs(pb2) do seen[p] = true end
      for i = 1, #pb do assert.is_true(seen[pb[i]], 'parameter tensor ' .. i .. ' kept') end
      local pa, ga = a:parameters()
      for step = 1, 2 do
         local x = rnd({ 2, 3, 32, 32 }, 'torch.FloatTensor')
         local go = rnd({ 2, 10 }, 'torch.FloatTensor')
         a:zeroGradParameters(); b:zeroGradParameters()
         same(b:forward(x), a:forward(x), 'output step ' .. step)
         same(b:backward(x, go), a:backward(x, go), 'gradInput step ' .. step)
         for i = 1, #ga do same(gb[i], ga[i], ('gradient %d step %d'):format(i, step)) end
         a:updateParameters(0.1); b:updateParameters(0.1)
         for i = 1, #pa do same(pb[i], pa[i], ('parameter %d step %d'):format(i, step)) end
      end
      -- the fused modules carry the batch norms' running statistics, updated alike by training;
      -- a module of b is paired with a's by its weight's place in the parameter list
      local place, owner = {}, {}
      for i, p in ipairs(pb) do place[p] = i end
      local ra, rb = 0, 0
      for _, m in ipairs(a:listModules()) do
         if m.running_mean then
            ra = ra + 1
            for i, p in ipairs(pa) do if p == m.weight then owner[i] = m end end
         end
      end
      for _, m in ipairs(b:listModules()) do
         if m.running_mean then
            rb = rb + 1
            local twin = owner[place[m.weight]]
            assert.truthy(twin, 'a batch norm of the fused model without its twin')
            same(m.running_mean, twin.running_mean, 'running_mean of parameter ' .. place[m.weight])
            same(m.running_var, twin.running_var, 'running_var of parameter ' .. place[m.weight])
         end
      end
      assert.are.equal(9, ra)
      assert.are.equal(ra, rb)
      a:evaluate(); b:evaluate()
      local x = rnd({ 3, 3, 32, 32 }, 'torch.FloatTensor')
      same(b:forward(x), a:forward(x), 'evaluate output')
   end)

   it('fuses a half or bfloat16 model converted first, training as the unfused one does', function()
      local models = require 'moontorch.models'
      for _, ty in ipairs({ 'torch.HalfTensor', 'torch.BFloat16Tensor' }) do
         torch.manualSeed(11)
         local a = models.small_cnn { nClasses = 10 }:type(ty)
         local b = a:clone()
         local _, n = b:fuseBatchNorm()
         assert.is_true(n > 0, ty .. ': nothing fused')
         local pa, ga = a:parameters()
         local pb, gb = b:parameters()
         for step = 1, 2 do
            local x = rnd({ 4, 1, 28, 28 }, ty)
            local go = rnd({ 4, 10 }, ty)
            a:zeroGradParameters(); b:zeroGradParameters()
            torch.manualSeed(step) -- the same dropout draw on both sides
            local ya = a:forward(x)
            torch.manualSeed(step)
            same(b:forward(x), ya, ty .. ' output step ' .. step)
            same(b:backward(x, go), a:backward(x, go), ty .. ' gradInput step ' .. step)
            for i = 1, #ga do same(gb[i], ga[i], ('%s gradient %d step %d'):format(ty, i, step)) end
            a:updateParameters(0.05); b:updateParameters(0.05)
            for i = 1, #pa do same(pb[i], pa[i], ('%s parameter %d step %d'):format(ty, i, step)) end
         end
      end
   end)

   it('leaves other patterns alone and rejects non-modules', function()
      local m = nn.Sequential():add(nn.SpatialBatchNormalization(2)):add(nn.Tanh())
         :add(nn.SpatialBatchNormalization(2)):add(nn.LeakyReLU(0.1))
      local _, n = nn.utils.fuseBatchNorm(m)
      assert.are.equal(0, n)
      assert.are.equal(4, #m.modules)
      util.assert_error(function() nn.utils.fuseBatchNorm({}) end, 'nn.utils.fuseBatchNorm', 'nn.Module')
      local kept = nn.Sequential():add(nn.SpatialBatchNormalization(2)):add(nn.ReLU())
      assert.are.equal(0, select(2, kept:fuseBatchNorm()), 'ReLU(false) reads its input: not fused')
      local s = nn.Sequential():add(nn.Linear(3, 4)):add(nn.BatchNormalization(4)):add(nn.ReLU(true))
      local ref = s:clone()
      s:fuseBatchNorm()
      assert.are.equal('nn.BatchNormReLU', torch.type(s.modules[2]))
      local x = rnd({ 5, 3 }, 'torch.FloatTensor')
      same(s:forward(x), ref:forward(x), '2-d BN + ReLU')
   end)
end)

describe('channels-last batch norm', function()
   it('gives the NCHW values with channels-last strides, plain and fused, forward and backward', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.HalfTensor', 'torch.DoubleTensor' } do
         for _, cls in ipairs { nn.SpatialBatchNormalization, nn.BatchNormReLU, nn.BatchNormAddReLU } do
            -- 37 channels: blocks of 16 adjacent channels and a partial one in the CPU's sums
            local shape = ty == 'torch.FloatTensor' and { 2, 37, 3, 5 } or { 3, 6, 5, 4 }
            local what = torch.type(cls(1)) .. ' ' .. ty .. ' ' .. table.concat(shape, 'x')
            local m1 = randomBN(cls, shape[2], ty, true)
            local m2 = copyBN(randomBN(cls, shape[2], ty, true), m1)
            local x, go = rnd(shape, ty), rnd(shape, ty)
            local add = cls == nn.BatchNormAddReLU
            local r = rnd(shape, ty)
            local in1 = add and { x, r } or x
            local in2 = add and { x:channelsLast(), r:channelsLast() } or x:channelsLast()
            local y1 = m1:forward(in1)
            local y2 = m2:forward(in2)
            assert.is_true(y2:isChannelsLast(), 'channels-last output ' .. what)
            util.assert_close(y2:double(), y1:double(), EXACT, 'y ' .. what)
            local g1 = m1:backward(in1, go)
            local g2 = m2:backward(in2, go:channelsLast())
            if add then
               assert.is_true(g2[1]:isChannelsLast() and g2[2]:isChannelsLast(), 'channels-last gradInput ' .. what)
               same(g2, g1, 'gradInput ' .. what)
            else
               assert.is_true(g2:isChannelsLast(), 'channels-last gradInput ' .. what)
               same(g2, g1, 'gradInput ' .. what)
            end
            same(m2.gradWeight, m1.gradWeight, 'gradWeight ' .. what)
            same(m2.running_var, m1.running_var, 'running_var ' .. what)
         end
      end
   end)
end)

describe('batch norm on CUDA', function()
   util.gpu_it('fp32 stats, fused and channels-last forms match the CPU', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         for _, cls in ipairs { nn.SpatialBatchNormalization, nn.BatchNormReLU, nn.BatchNormAddReLU } do
            for _, cl in ipairs { false, true } do
               local what = ('%s %s cl=%s'):format(torch.type(cls(1)), ty, tostring(cl))
               local shape = { 4, 6, 5, 3 }
               local m = randomBN(cls, 6, ty, true)
               local g = copyBN(randomBN(cls, 6, ty, true), m)
               local cudaType = ({ ['torch.FloatTensor'] = 'torch.CudaTensor',
                  ['torch.HalfTensor'] = 'torch.CudaHalfTensor',
                  ['torch.BFloat16Tensor'] = 'torch.CudaBFloat16Tensor' })[ty]
               g:type(cudaType)
               assert.are.equal('torch.CudaTensor', g.running_mean:type())
               local x, r, go = rnd(shape, ty), rnd(shape, ty), rnd(shape, ty)
               local add = cls == nn.BatchNormAddReLU
               local function dev(t) t = t:cuda(); return cl and t:channelsLast() or t end
               local ic, ig = add and { x, r } or x, add and { dev(x), dev(r) } or dev(x)
               local tol = ty == 'torch.FloatTensor' and { atol = 1e-5, rtol = 1e-5 } or util.tol[ty]
               util.assert_close(g:forward(ig):double(), m:forward(ic):double(), tol, 'y ' .. what)
               m:zeroGradParameters(); g:zeroGradParameters()
               local gc, gg = m:backward(ic, go), g:backward(ig, dev(go))
               if add then
                  util.assert_close(gg[1]:double(), gc[1]:double(), tol, 'gx ' .. what)
                  util.assert_close(gg[2]:double(), gc[2]:double(), tol, 'gres ' .. what)
               else
                  util.assert_close(gg:double(), gc:double(), tol, 'gx ' .. what)
               end
               util.assert_close(g.gradWeight:double(), m.gradWeight:double(), { atol = 1e-2, rtol = 1e-2 },
                  'gw ' .. what)
               util.assert_close(g.running_var:double(), m.running_var:double(), { atol = 1e-6, rtol = 1e-6 },
                  'rv ' .. what)
            end
         end
      end
   end)
end)
