-- ghost_batchnorm_spec.lua: ghost batch norm (m.ghostBatch, nn.utils.ghostBatchNorm): a batch of N > g
-- samples is normalized as ceil(N/g) slices, each exactly as the module alone would normalize it
-- (outputs, gradients, running statistics moved once per slice in order), checked against
-- separate modules run slice by slice on random inputs of odd sizes; Jacobians in float64; the
-- fused modules slice the same way; N <= g and evaluation unchanged; CUDA against the CPU.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local EXACT = { atol = 0, rtol = 0 }

local function rnd(shape, ty, lo, hi)
   return (util.rand_tensor(shape, ty or 'torch.DoubleTensor', lo or -2, hi or 2))
end

-- cls's module with nFeature features, random parameters and running statistics, of type ty
local function randomBN(cls, n, ty)
   local m = cls(n, 1e-5, 0.3)
   m.weight:copy(rnd({ n }, nil, 0.5, 1.5))
   m.bias:copy(rnd({ n }, nil, -0.5, 0.5))
   m.running_mean:copy(rnd({ n }, nil, -0.2, 0.2))
   m.running_var:copy(rnd({ n }, nil, 0.5, 1.5))
   return m:type(ty or 'torch.DoubleTensor')
end

-- the slices' boundaries as the definition gives them: G = ceil(N / g) slices, the k-th
-- ending at floor(N k / G)
local function slices(N, g)
   local G, out = math.ceil(N / g), {}
   for k = 1, G do
      local a, b = math.floor(N * (k - 1) / G), math.floor(N * k / G)
      out[k] = { a + 1, b - a }
   end
   return out
end

local CASES = {
   { cls = nn.BatchNormalization, shape = function(N) return { N, 5 } end },
   { cls = nn.SpatialBatchNormalization, shape = function(N) return { N, 4, 3, 5 } end },
   { cls = nn.VolumetricBatchNormalization, shape = function(N) return { N, 3, 2, 3, 3 } end },
   { cls = nn.BatchNormReLU, shape = function(N) return { N, 4, 3, 5 } end },
   { cls = nn.BatchNormAddReLU, shape = function(N) return { N, 4, 3, 5 } end },
}

local function name(cls) return torch.type(cls(1)) end

-- input (x or {x, residual}) restricted to samples s
local function part(input, s)
   if type(input) == 'table' then return { input[1]:narrow(1, s[1], s[2]), input[2]:narrow(1, s[1], s[2]) } end
   return input:narrow(1, s[1], s[2])
end

local function cat(parts, i)
   local ts = {}
   for k, p in ipairs(parts) do ts[k] = i and p[i] or p end
   return torch.cat(ts, 1)
end

describe('ghost batch norm', function()
   it('normalizes each ghost slice as the module alone would: outputs, gradients, running statistics', function()
      for _, case in ipairs(CASES) do
         for _ = 1, 3 do
            -- g >= 4 keeps every slice at 2 samples or more (a 2-d batch norm needs two per slice)
            local N = math.random(7, 19)
            local g = math.random(4, N - 1)
            local what = ('%s N=%d ghostBatch=%d'):format(name(case.cls), N, g)
            local m = randomBN(case.cls, case.shape(1)[2])
            local ref = m:clone()
            m.ghostBatch = g
            local shape = case.shape(N)
            local add = case.cls == nn.BatchNormAddReLU
            local input = add and { rnd(shape), rnd(shape) } or rnd(shape)
            local go = rnd(shape)
            m:zeroGradParameters(); ref:zeroGradParameters()
            local y = m:forward(input):clone()
            local gi = m:backward(input, go)
            -- the reference: one forward and backward per slice, in order, parameter gradients added up
            local ys, gis = {}, {}
            for k, s in ipairs(slices(N, g)) do
               ys[k] = ref:forward(part(input, s)):clone()
               local gk = ref:backward(part(input, s), go:narrow(1, s[1], s[2]))
               gis[k] = add and { gk[1]:clone(), gk[2]:clone() } or gk:clone()
            end
            util.assert_close(y, cat(ys), EXACT, 'output ' .. what)
            if add then
               util.assert_close(gi[1], cat(gis, 1), EXACT, 'gradInput ' .. what)
               util.assert_close(gi[2], cat(gis, 2), EXACT, 'gradResidual ' .. what)
            else
               util.assert_close(gi, cat(gis), EXACT, 'gradInput ' .. what)
            end
            for _, k in ipairs { 'gradWeight', 'gradBias', 'running_mean', 'running_var' } do
               util.assert_close(m[k], ref[k], EXACT, k .. ' ' .. what)
            end
            -- and it differs from one batch of N (else the check above would prove nothing)
            local whole = ref:clone()
            local yw = whole:forward(input)
            assert.is_true((yw - y):abs():max() > 1e-6, 'ghost slices changed nothing: ' .. what)
         end
      end
   end)

   it('passes the Jacobian checks in float64 (input, weight and bias)', function()
      for _, cls in ipairs { nn.BatchNormalization, nn.SpatialBatchNormalization } do
         local N = math.random(7, 11)
         local m = randomBN(cls, 3)
         m.ghostBatch = math.random(3, N - 1)
         local x = cls == nn.BatchNormalization and rnd({ N, 3 }) or rnd({ N, 3, 3, 2 })
         local err = nn.Jacobian.testJacobian(m, x)
         assert.is_true(err < 1e-6, ('%s ghostBatch %d: input Jacobian error %g'):format(name(cls), m.ghostBatch, err))
         err = nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight)
         assert.is_true(err < 1e-6, ('%s: weight Jacobian error %g'):format(name(cls), err))
         err = nn.Jacobian.testJacobianParameters(m, x, m.bias, m.gradBias)
         assert.is_true(err < 1e-6, ('%s: bias Jacobian error %g'):format(name(cls), err))
      end
   end)

   it('changes nothing for batches of at most ghostBatch samples, nor in evaluation', function()
      local N = math.random(5, 12)
      local m = randomBN(nn.SpatialBatchNormalization, 4)
      local ref = m:clone()
      m.ghostBatch = N + math.random(0, 3)
      local x, go = rnd({ N, 4, 3, 3 }), rnd({ N, 4, 3, 3 })
      util.assert_close(m:forward(x), ref:forward(x), EXACT, 'output, N <= ghostBatch')
      util.assert_close(m:backward(x, go), ref:backward(x, go), EXACT, 'gradInput, N <= ghostBatch')
      m.ghostBatch = 2
      m:evaluate(); ref:evaluate()
      util.assert_close(m:forward(x), ref:forward(x), EXACT, 'output in evaluation')
   end)

   it('nn.utils.ghostBatchNorm sets every batch norm, fuseBatchNorm keeps it, 0 turns it off', function()
      local model = nn.Sequential()
         :add(nn.SpatialConvolution(1, 4, 3, 3)):add(nn.SpatialBatchNormalization(4)):add(nn.ReLU(true))
         :add(nn.View(-1):setNumInputDims(3)):add(nn.Linear(4 * 4 * 4, 6)):add(nn.BatchNormalization(6)):double()
      local _, n = nn.utils.ghostBatchNorm(model, 3)
      assert.are.equal(2, n)
      assert.are.equal(3, model.modules[2].ghostBatch)
      assert.are.equal(3, model.modules[6].ghostBatch)
      assert.is_truthy(tostring(model.modules[2]):find('ghost batches of 3', 1, true))
      nn.utils.fuseBatchNorm(model)
      assert.are.equal('nn.BatchNormReLU', torch.type(model.modules[2]))
      assert.are.equal(3, model.modules[2].ghostBatch)
      model:forward(rnd({ 7, 1, 6, 6 }))
      assert.are.same({ 3, 4 }, { model.modules[2].save_mean:size(1), model.modules[2].save_mean:size(2) })
      nn.utils.ghostBatchNorm(model, 0)
      assert.is_nil(model.modules[2].ghostBatch)
      util.assert_error(function() nn.utils.ghostBatchNorm(model, 2.5) end, 'non-negative integer', '2.5')
   end)

   it('a bad ghostBatch, or a backward without its forward, is an error naming it', function()
      local m = randomBN(nn.BatchNormalization, 3)
      m.ghostBatch = 1.5
      util.assert_error(function() m:forward(rnd({ 6, 3 })) end, 'ghostBatch must be a positive integer', '1.5')
      m.ghostBatch = 2
      m:forward(rnd({ 6, 3 }))
      util.assert_error(function() m:backward(rnd({ 8, 3 }), rnd({ 8, 3 })) end,
         'backward of 4 ghost slices without their forward')
   end)
end)

describe('ghost batch norm on CUDA', function()
   util.gpu_it('matches the CPU (float32, plain and fused)', function()
      for _, cls in ipairs { nn.SpatialBatchNormalization, nn.BatchNormReLU } do
         local N, g = 11, 4
         local m = randomBN(cls, 4, 'torch.FloatTensor')
         local gm = m:clone():cuda()
         m.ghostBatch, gm.ghostBatch = g, g
         local x, go = rnd({ N, 4, 3, 5 }, 'torch.FloatTensor'), rnd({ N, 4, 3, 5 }, 'torch.FloatTensor')
         local tol = { atol = 1e-5, rtol = 1e-5 }
         util.assert_close(gm:forward(x:cuda()):double(), m:forward(x):double(), tol, 'output ' .. name(cls))
         m:zeroGradParameters(); gm:zeroGradParameters()
         util.assert_close(gm:backward(x:cuda(), go:cuda()):double(), m:backward(x, go):double(), tol,
            'gradInput ' .. name(cls))
         util.assert_close(gm.gradWeight:double(), m.gradWeight:double(), { atol = 1e-4, rtol = 1e-4 },
            'gradWeight ' .. name(cls))
         util.assert_close(gm.running_var:double(), m.running_var:double(), tol, 'running_var ' .. name(cls))
      end
   end)
end)
