-- mixed_precision_spec.lua: mixed precision on the CPU: fp32 master weights inside the fused optimizer
-- steps (lua/moontorch/optim, csrc/cpu/nn_optim*.c), the one-pass gradient check, dynamic loss
-- scaling (optim.GradScaler), checkpoints of all of it, and gradient accumulation in
-- train.Trainer. References are float64 transcriptions (spec/optim/ref.lua) on fresh random data.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local train = require 'moontorch.train'
local tstate = require 'moontorch.train.state'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local R = require 'spec.optim.ref'

local HALVES = { 'torch.HalfTensor', 'torch.BFloat16Tensor' }
local F32 = { atol = 2e-6, rtol = 2e-5 } -- an fp32 master after a few steps, against float64

local function tensor(vals, typename) return T.from_flat(vals, { #vals }, T.parse_typename(typename), T.CPU_DEVICE) end
local function same_bits(a, b, what)
   assert.are.equal(a:type(), b:type(), what)
   assert.is_true(torch.equal(a, b), what .. ': not bit-identical')
end

local layout = R.layout

describe('fp32 master weights in the fused optimizer steps', function()
   local cases = {
      { 'sgd', function(c) return R.sgd end,
         { learningRate = 0.05, momentum = 0.9, dampening = 0, nesterov = true, weightDecay = 1e-3 } },
      { 'adam', function() return R.adam end, { learningRate = 1e-2, weightDecay = 1e-3 } },
      { 'adamw', function() return R.adamw end, { learningRate = 1e-2 } },
      { 'lars', function(segs) return function(x, g, c) return (R.lars(x, g, c, segs)) end end,
         { learningRate = 0.5, momentum = 0.9, weightDecay = 5e-4, eta = 0.02 } },
      { 'lamb', function(segs) return function(x, g, c) return (R.lamb(x, g, c, segs)) end end,
         { learningRate = 1e-2, weightDecay = 0.01 } },
   }
   for _, case in ipairs(cases) do
      local method, mkref, base = case[1], case[2], case[3]
      it(method .. ' on float16/bfloat16 parameters updates an fp32 master, unscales, '
         .. 'and rounds it back in the same pass', function()
         for _, tn in ipairs(HALVES) do
            for _, n in ipairs { 1, 1500, 40001 } do -- one element, across a block edge, across the thread threshold
               local c = {}
               for k, v in pairs(base) do c[k] = v end
               local segs
               if method == 'lars' or method == 'lamb' then
                  local layers, excl
                  layers, excl, segs = layout(n, n > 1 and 5 or 1)
                  c.layers, c.lars_exclude = layers, excl
               end
               local scale = 2 ^ math.random(4, 12) -- the loss scale the gradients carry
               c.gradScale = 1 / scale
               local x0 = R.rounded(R.rand(n), tn)
               local x, st = tensor(x0, tn), {}
               local grads = {}
               for s = 1, 3 do
                  local g = R.rounded(R.rand(n, -scale * 0.1, scale * 0.1), tn) -- stored in the model's dtype
                  grads[s] = {}
                  for i = 1, n do grads[s][i] = g[i] / scale end
                  local gt = tensor(g, tn)
                  optim[method](function() return 0, gt end, x, c, st)
               end
               local what = ('%s %s n=%d'):format(method, tn, n)
               assert.are.equal('torch.FloatTensor', st.master:type(), what)
               for _, k in ipairs { 'dfdx', 'm', 'v' } do
                  if st[k] then assert.are.equal('torch.FloatTensor', st[k]:type(), what .. ' state ' .. k) end
               end
               c.gradScale = nil
               util.assert_close(util.flat(st.master), mkref(segs)(x0, grads, c), F32, what .. ' master')
               -- the model's copy is the master rounded once
               same_bits(x, st.master:type(tn), what .. ' copy')
            end
         end
      end)
   end

   it('gradScale multiplies the gradient of a plain (float64) step as it is read', function()
      local n = 777
      local x0, g = R.rand(n), R.grads_for(n, 2)
      local c = { learningRate = 0.1, momentum = 0.5 }
      local want = R.sgd(x0, { (function() local r = {} for i = 1, n do r[i] = g[1][i] * 0.375 end return r end)(),
         (function() local r = {} for i = 1, n do r[i] = g[2][i] * 0.375 end return r end)() }, c)
      c.gradScale = 0.375
      util.assert_close(R.run('sgd', x0, g, c), want, R.F64, 'sgd with gradScale')
   end)

   it('config.master = true gives float32 parameters a float64 master; false keeps half masters', function()
      local x = torch.randn(100):float()
      local st = {}
      optim.sgd(function() return 0, torch.randn(100):float() end, x, { learningRate = 0.1, master = true }, st)
      assert.are.equal('torch.DoubleTensor', st.master:type())
      same_bits(x, st.master:float(), 'float copy of the double master')
      local h, st2 = torch.randn(10):half(), {}
      optim.sgd(function() return 0, torch.randn(10):half() end, h, { learningRate = 0.1, master = false }, st2)
      assert.is_nil(st2.master)
   end)

   it('rejects a bad gradScale and a mismatched copy', function()
      local x = torch.randn(10):half()
      local g = torch.randn(10):half()
      util.assert_error(function() optim.sgd(function() return 0, g end, x, { gradScale = 0 }) end,
         'optim.sgd', 'gradScale must be a finite number > 0')
      util.assert_error(function() optim.sgd(function() return 0, g end, x, { gradScale = 1 / 0 }) end, 'gradScale')
      local C = T.clib
      local m = torch.randn(10):float()
      assert.has_error(function()
         T.check(C.mt_sgd_step(m.h, g.h, nil, nil, nil, 0.1, 0, 0, 0, 0, 0, 1, torch.IntTensor(10):zero().h), 'sgd')
      end, 'sgd: sgd_step: parameter copy must be floating point, got int32')
      -- a copy of another dtype than the gradient (dist.rgc hands a half model float32 updates)
      -- still gets the stored master, rounded into its own dtype
      local cp = torch.randn(10):bfloat16()
      T.check(C.mt_sgd_step(m.h, g.h, nil, nil, nil, 0.1, 0, 0, 0, 0, 0, 1, cp.h), 'sgd')
      assert.equal(0, (cp:double() - m:bfloat16():double()):abs():max())
      assert.has_error(function()
         T.check(C.mt_sgd_step(m.h, g.h, nil, nil, nil, 0.1, 0, 0, 0, 0, 0, 1, torch.randn(9):half().h), 'sgd')
      end, 'sgd: sgd_step: parameter copy has 9 elements but the master parameters have 10')
   end)
end)

describe('optim.GradScaler', function()
   it('check() counts inf/NaN and sums the squares of the finite elements in one pass', function()
      for _, tn in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local n = 50000
         local vals = R.rounded(R.rand(n, -3, 3), tn)
         local bad = {}
         for _ = 1, 7 do bad[math.random(1, n)] = true end
         local k, specials = 0, { 1 / 0, -1 / 0, 0 / 0 }
         for i in pairs(bad) do k = k + 1 vals[i] = specials[k % 3 + 1] end
         local want = 0
         for i = 1, n do if not bad[i] then want = want + vals[i] * vals[i] end end
         local t = tensor(vals, tn)
         local nb, ss = optim.GradScaler.check(t)
         assert.are.equal(k, nb, tn)
         util.assert_close({ ss }, { want }, { atol = 0, rtol = 1e-6 }, tn .. ' sum of squares')
         -- a strided view is checked too
         local nb2 = optim.GradScaler.check(t:view(n / 2, 2):t())
         assert.are.equal(k, nb2, tn .. ' transposed')
      end
      util.assert_error(function() optim.GradScaler.check(torch.LongTensor(3):fill(1)) end, 'grad_check',
         'expected a floating dtype')
   end)

   it('an overflow skips the step, halves the scale and leaves master, state and parameters bit-identical', function()
      for _, method in ipairs { 'sgd', 'adam', 'lars' } do
         local n = 3000
         local x = torch.randn(n):half()
         local st, c = {}, { learningRate = 0.01, momentum = 0.9 }
         local scaler = optim.GradScaler{ initScale = 2 ^ 10, growthInterval = 3 }
         local function grad() return torch.randn(n):mul(scaler:getScale(st)):half() end
         local _, _, ok = scaler:step(optim[method], function() return 1, grad() end, x, c, st)
         assert.is_true(ok)
         local before = { x = x:clone(), master = st.master:clone() }
         for _, k in ipairs { 'dfdx', 'm', 'v' } do if st[k] then before[k] = st[k]:clone() end end
         local counter = st.evalCounter or st.t
         for trial, bad in ipairs { 1 / 0, 0 / 0 } do
            local g = grad()
            g[math.random(1, n)] = bad
            local scale = scaler:getScale(st)
            local _, f, stepped = scaler:step(optim[method], function() return 2, g end, x, c, st)
            assert.is_false(stepped, method)
            assert.are.equal(2, f[1])
            assert.are.equal(scale / 2, st.lossScale, method .. ' halves')
            assert.are.equal(trial, st.skippedSteps)
            for k, t in pairs(before) do
               same_bits(k == 'x' and x or st[k], t, method .. ' ' .. k .. ' after overflow')
            end
            assert.are.equal(counter, st.evalCounter or st.t)
         end
         -- growthInterval clean steps double the scale (and no sooner)
         local s0 = st.lossScale
         for i = 1, 3 do
            scaler:step(optim[method], function() return 1, grad() end, x, c, st)
            assert.are.equal(i < 3 and s0 or 2 * s0, st.lossScale, method .. ' growth after ' .. i)
         end
         assert.is_false(torch.equal(x, before.x), method .. ' clean steps moved the parameters')
      end
   end)

   it('scale() multiplies the loss gradient by the current scale; bf16 (dynamic = false) keeps scale 1', function()
      local scaler, st = optim.GradScaler{ initScale = 256 }, {}
      local x = torch.randn(8):half()
      scaler:step(optim.sgd, function()
         local g = torch.randn(8):float()
         local r = g:clone()
         scaler:scale(r)
         util.assert_close(util.flat(r), util.flat(g:mul(256)), R.F64, 'scaled')
         return 0, torch.randn(8):half()
      end, x, {}, st)
      local b = optim.GradScaler{ dynamic = false }
      assert.are.equal(1, b.initScale)
      local xb, sb = torch.randn(8):bfloat16(), {}
      local g = torch.randn(8):bfloat16()
      g[3] = 0 / 0
      local _, _, ok = b:step(optim.sgd, function() return 0, g end, xb, {}, sb)
      assert.is_false(ok)
      assert.are.equal(1, sb.lossScale)
      assert.are.equal(1, sb.skippedSteps)
   end)

   it('clip bounds the global norm of the unscaled gradient inside the same pass', function()
      local n = 2000
      local x0 = R.rounded(R.rand(n), 'torch.HalfTensor')
      local x, st = tensor(x0, 'torch.HalfTensor'), {}
      local scaler = optim.GradScaler{ initScale = 64, clip = 0.5 }
      local gvals = R.rounded(R.rand(n, -64, 64), 'torch.HalfTensor')
      scaler:step(optim.sgd, function() return 0, tensor(gvals, 'torch.HalfTensor') end, x, { learningRate = 0.1 }, st)
      local norm = 0
      for i = 1, n do norm = norm + (gvals[i] / 64) ^ 2 end
      norm = math.sqrt(norm)
      util.assert_close({ st.gradNorm }, { norm }, { atol = 0, rtol = 1e-9 }, 'gradNorm')
      assert.is_true(norm > 0.5)
      local g = {}
      for i = 1, n do g[i] = gvals[i] / 64 * 0.5 / norm end
      util.assert_close(util.flat(st.master), R.sgd(x0, { g }, { learningRate = 0.1 }), F32, 'clipped step')
   end)
end)

describe('what fp32 master weights are for', function()
   -- Updates smaller than half an ulp of the weights vanish when the weights themselves are the
   -- only copy; the master accumulates them until they show in the rounded copy.
   it('a model whose updates are below half/bfloat16 resolution still learns with a master, not without', function()
      for _, tn in ipairs(HALVES) do
         torch.manualSeed(7)
         local nIn, N = 16, 256
         local X = torch.randn(N, nIn)
         -- weights in [1, 2) in magnitude: half's ulp there is 2^-10, bfloat16's 2^-7, and every
         -- update (|lr * gradient| < 2^-11, checked) is less than half of either
         local w0 = torch.rand(1, nIn):mul(0.9):add(1):cmul(torch.rand(1, nIn):gt(0.5):float():mul(2):add(-1))
         local wstar = w0:clone():add(torch.randn(1, nIn):mul(0.02)) -- the target is close by
         local Y = X * wstar:t()
         local maxStep = 0
         local function run(master)
            local model = nn.Linear(nIn, 1, false):type(tn)
            model.weight:copy(w0)
            local crit = nn.MSECriterion():type(tn)
            local p, g = model:getParameters()
            local Xt, Yt = X:type(tn), Y:type(tn)
            local st, c = {}, { learningRate = 2e-3, master = master }
            local first, last
            for i = 1, 600 do
               optim.sgd(function()
                  g:zero()
                  local out = model:forward(Xt)
                  local l = crit:forward(out, Yt)
                  model:backward(Xt, crit:backward(out, Yt))
                  first = first or l
                  last = l
                  maxStep = math.max(maxStep, g:clone():float():abs():max() * c.learningRate)
                  return l, g
               end, p, c, st)
            end
            assert.is_true(maxStep < 2 ^ -11, 'every update is below half an ulp at 1: ' .. maxStep)
            return first, last, model.weight:clone()
         end
         local f1, l1 = run(nil) -- the default for half parameters: an fp32 master
         local f2, l2, w2 = run(false)
         assert.is_true(l1 < 0.2 * f1, ('%s with master: loss %g -> %g'):format(tn, f1, l1))
         -- without it every update rounds away: the weights never move
         same_bits(w2, w0:type(tn), tn .. ' half master weights')
         assert.are.equal(f2, l2)
      end
   end)
end)

describe('mixed-precision checkpoints', function()
   it('save master weights, optimizer and scaler state, and resume bit for bit', function()
      local dir = util.tmpdir()
      local function make()
         torch.manualSeed(11)
         return nn.Sequential():add(nn.Linear(12, 20)):add(nn.ReLU()):add(nn.Linear(20, 3)):half()
      end
      torch.manualSeed(5)
      local batches = {}
      for i = 1, 8 do batches[i] = { torch.randn(16, 12):half(), torch.LongTensor(16):random(1, 3) } end
      local crit = nn.CrossEntropyCriterion():half()
      local scaler = optim.GradScaler{ initScale = 2 ^ 12, growthInterval = 2 }
      local function steps(model, st, from, to)
         local p, g = model:getParameters()
         for i = from, to do
            local x, y = batches[i][1], batches[i][2]
            scaler:step(optim.adam, function()
               g:zero()
               local out = model:forward(x)
               local l = crit:forward(out, y)
               model:backward(x, scaler:scale(crit:backward(out, y)))
               if i == 3 then g[1] = 1 / 0 end -- one overflow before the checkpoint
               return l, g
            end, p, { learningRate = 1e-2 }, st)
         end
         return p
      end
      local a, sta = make(), {}
      steps(a, sta, 1, 4)
      assert.are.equal(1, sta.skippedSteps)
      tstate.save(dir .. '/ck.safetensors', a, sta, { iteration = 4 })
      local pa = steps(a, sta, 5, 8)
      local b = make()
      local stb = tstate.load(dir .. '/ck.safetensors', b, {})
      assert.are.equal('torch.FloatTensor', stb.master:type())
      assert.are.equal('torch.FloatTensor', stb.m:type())
      local pb = steps(b, stb, 5, 8)
      same_bits(pb, pa, 'parameters after resume')
      same_bits(stb.master, sta.master, 'master after resume')
      assert.are.equal(sta.lossScale, stb.lossScale)
      assert.are.equal(sta.skippedSteps, stb.skippedSteps)
      assert.are.equal(sta.lossScaleGrowth, stb.lossScaleGrowth)
   end)

   it('a half model with BatchNorm keeps fp32 running statistics through steps, checkpoint and resume', function()
      local dir = util.tmpdir()
      local function make()
         torch.manualSeed(12)
         return nn.Sequential():add(nn.Linear(12, 20)):add(nn.BatchNormalization(20, 1e-5, 0.01))
            :add(nn.ReLU(true)):add(nn.Linear(20, 3)):half()
      end
      torch.manualSeed(6)
      local batches = {}
      for i = 1, 6 do batches[i] = { torch.randn(16, 12):half(), torch.LongTensor(16):random(1, 3) } end
      local crit = nn.CrossEntropyCriterion():half()
      local scaler = optim.GradScaler{ initScale = 2 ^ 10 }
      local function steps(model, st, from, to)
         local p, g = model:getParameters()
         for i = from, to do
            local x, y = batches[i][1], batches[i][2]
            scaler:step(optim.sgd, function()
               g:zero()
               local out = model:forward(x)
               local l = crit:forward(out, y)
               model:backward(x, scaler:scale(crit:backward(out, y)))
               return l, g
            end, p, { learningRate = 0.05, momentum = 0.9 }, st)
         end
         return p
      end
      local a, sta = make(), {}
      local bn = a.modules[2]
      assert.are.equal('torch.FloatTensor', bn.running_var:type())
      assert.are.equal('torch.HalfTensor', bn.weight:type())
      steps(a, sta, 1, 3)
      tstate.save(dir .. '/bn.safetensors', a, sta, { iteration = 3 })
      local pa = steps(a, sta, 4, 6)
      local b = make()
      local stb = tstate.load(dir .. '/bn.safetensors', b, {})
      local pb = steps(b, stb, 4, 6)
      assert.are.equal('torch.HalfTensor', pb:type())
      same_bits(pb, pa, 'parameters after resume')
      same_bits(b.modules[2].running_mean, bn.running_mean, 'running_mean after resume')
      same_bits(b.modules[2].running_var, bn.running_var, 'running_var after resume')
   end)
end)

describe('gradient accumulation (train.Trainer accumulate = K)', function()
   local function source(n) return { nbatches = function() return n end, errors = function() return {} end } end
   it('K micro-batches give the step of one batch of K times their size (no BatchNorm)', function()
      torch.manualSeed(3)
      local batches = {}
      for i = 1, 3 do batches[i] = { torch.randn(30, 10), torch.LongTensor(30):random(1, 4) } end
      local function run(k, typename)
         torch.manualSeed(9)
         local model = nn.Sequential():add(nn.Linear(10, 16)):add(nn.Tanh()):add(nn.Linear(16, 4)):type(typename)
         local t = train.Trainer{ model = model, criterion = nn.CrossEntropyCriterion():type(typename),
            optimizer = optim.sgd, config = { learningRate = 0.1, momentum = 0.9 }, train = source(3), val = source(1),
            nEpochs = 1, quiet = true, accumulate = k }
         local losses = {}
         for i, b in ipairs(batches) do losses[i] = t:step(b[1]:type(typename), b[2]) end
         return t.params, losses
      end
      local p1, l1 = run(1, 'torch.DoubleTensor')
      for _, k in ipairs { 2, 4, 7 } do -- 30 rows: even and uneven splits
         local pk, lk = run(k, 'torch.DoubleTensor')
         util.assert_close(util.flat(pk), util.flat(p1), { atol = 1e-13, rtol = 1e-11 }, 'K=' .. k)
         util.assert_close(lk, l1, { atol = 1e-13, rtol = 1e-11 }, 'losses K=' .. k)
      end
      local pf = run(4, 'torch.FloatTensor')
      util.assert_close(util.flat(pf), util.flat(p1), { atol = 2e-6, rtol = 1e-5 }, 'float32 K=4')
      util.assert_error(function()
         train.Trainer{ model = nn.Linear(2, 2), criterion = nn.MSECriterion(), optimizer = optim.sgd, config = {},
            train = source(1), val = source(1), accumulate = 0 }
      end, 'accumulate must be a whole number >= 1')
   end)
end)
