-- fused_steps_spec.lua: fused optimizer steps (csrc/nn/optim*.c, lua/moontorch/optim) against direct
-- Lua transcriptions of Torch7's optim and of each method's paper, on fresh random data.
local torch = require 'moontorch'
local optim = require 'moontorch.optim'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local R = require 'spec.optim.ref'
local copy, rand, run, rounded = R.copy, R.rand, R.run, R.rounded
local grads_for, random_layers = R.grads_for, R.random_layers
local ref_sgd, ref_adam, ref_adamw, ref_lars, ref_lamb = R.sgd, R.adam, R.adamw, R.lars, R.lamb
local SIZES, F64, F32 = R.SIZES, R.F64, R.F32

---------------------------------------------------------------------------------------------
describe('optim.sgd', function()
   local configs = {
      { learningRate = 0.1 },
      { learningRate = 0.05, weightDecay = 1e-2 },
      { learningRate = 0.1, momentum = 0.9 },                      -- dampening defaults to 0.9
      { learningRate = 0.1, momentum = 0.9, dampening = 0.1, weightDecay = 5e-4 },
      { learningRate = 0.1, momentum = 0.8, dampening = 0, nesterov = true, weightDecay = 1e-3 },
      { learningRate = 0.3, learningRateDecay = 0.5, momentum = 0.5 },
   }
   it('matches Torch7 over several steps (float64, several sizes and configs)', function()
      for _, n in ipairs(SIZES) do
         for ci, c in ipairs(configs) do
            local x0, g = rand(n), grads_for(n, 4)
            local got = run('sgd', x0, g, c)
            util.assert_close(got, ref_sgd(x0, g, c), F64, ('sgd n=%d config %d'):format(n, ci))
         end
      end
   end)

   it('supports per-element learningRates and weightDecays', function()
      local n = 57
      local lrs, wds = rand(n, 0, 2), rand(n, 0, 0.1)
      local c = { learningRate = 0.1, momentum = 0.9, learningRates = T.from_flat(lrs, { n }, T.DOUBLE, T.CPU_DEVICE),
         weightDecays = T.from_flat(wds, { n }, T.DOUBLE, T.CPU_DEVICE) }
      local x0, g = rand(n), grads_for(n, 3)
      local got = run('sgd', x0, g, c)
      local rc = { learningRate = 0.1, momentum = 0.9, learningRatesFlat = lrs, weightDecaysFlat = wds }
      util.assert_close(got, ref_sgd(x0, g, rc), F64, 'sgd lrs/wds')
   end)

   it('works on float32, float16 and bfloat16 and on multi-dimensional flat storage', function()
      for _, tn in ipairs { 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local n = 101
         local c = { learningRate = 0.1, momentum = 0.9, weightDecay = 1e-3 }
         local x0, g = rounded(rand(n), tn), { rounded(rand(n), tn), rounded(rand(n), tn) }
         local got = run('sgd', x0, g, c, tn)
         local tol = tn == 'torch.FloatTensor' and F32 or util.tol[tn]
         util.assert_close(got, ref_sgd(x0, g, c), tol, 'sgd ' .. tn)
      end
      local x0, g = rand(33), grads_for(33, 3)
      local c = { learningRate = 0.2, momentum = 0.5 }
      util.assert_close(run('sgd', x0, g, c, nil, { 3, 11 }), ref_sgd(x0, g, c), F64, 'sgd 3x11')
   end)

   it('follows Torch7: the momentum buffer starts at the first gradient; dampening defaults to momentum', function()
      local n = 20
      local x0, g = rand(n), grads_for(n, 2)
      -- first step: x1 = x0 - lr*g0 exactly (not lr*(1-damp)*g0)
      local got1 = run('sgd', x0, { g[1] }, { learningRate = 0.5, momentum = 0.9 })
      local want1 = {}
      for i = 1, n do want1[i] = x0[i] - 0.5 * g[1][i] end
      util.assert_close(got1, want1, F64, 'first step')
      -- second step with default dampening 0.9: buf = 0.9*g0 + 0.1*g1
      local got2 = run('sgd', x0, g, { learningRate = 0.5, momentum = 0.9 })
      local want2 = {}
      for i = 1, n do want2[i] = want1[i] - 0.5 * (0.9 * g[1][i] + 0.1 * g[2][i]) end
      util.assert_close(got2, want2, F64, 'second step')
      -- learningRateDecay: lr / (1 + nevals*decay), nevals counted in state.evalCounter
      local _, st = run('sgd', x0, g, { learningRate = 0.5, learningRateDecay = 1 })
      assert.are.equal(2, st.evalCounter)
   end)

   it('rejects Nesterov without momentum or with dampening, and mismatched gradients', function()
      local x = torch.DoubleTensor(5):fill(1)
      local g = torch.DoubleTensor(5):fill(0.5)
      local f = function() return 0, g end
      util.assert_error(function() optim.sgd(f, x, { nesterov = true, momentum = 0.9 }) end, 'optim.sgd',
         'Nesterov', 'dampening 0.9')
      util.assert_error(function() optim.sgd(f, x, { nesterov = true }) end, 'Nesterov', 'momentum 0')
      util.assert_error(function() optim.sgd(function() return 0, torch.DoubleTensor(4):fill(1) end, x, {}) end,
         'optim.sgd', 'gradient has 4 elements', 'parameters have 5')
      -- a gradient of another floating dtype is mixed precision (optim/mixed_precision_spec.lua); integers are not
      util.assert_error(function() optim.sgd(function() return 0, torch.LongTensor(5):fill(1) end, x, {}) end,
         'optim.sgd', 'gradient must be floating point', 'int64')
      util.assert_error(function() optim.sgd(function() return 0, g end, torch.LongTensor(5):fill(1), {}) end,
         'must be floating point')
      util.assert_error(function()
         optim.sgd(function() return 0, g:view(5, 1):expand(5, 3) end, torch.DoubleTensor(5, 3):fill(1), {})
      end, 'gradient must be contiguous')
      util.assert_error(function() optim.sgd(function() return 0 end, x, {}) end,
         'feval must return f and the gradient')
   end)
end)

describe('optim.adam and optim.adamw', function()
   it('adam matches Kingma & Ba (Torch7 form) over several steps', function()
      local configs = {
         { learningRate = 1e-2 },
         { learningRate = 3e-3, beta1 = 0.8, beta2 = 0.99, epsilon = 1e-6, weightDecay = 1e-2 },
         { learningRate = 1e-2, learningRateDecay = 0.1 },
      }
      for _, n in ipairs(SIZES) do
         for ci, c in ipairs(configs) do
            local x0, g = rand(n), grads_for(n, 5)
            local got, st = run('adam', x0, g, c)
            util.assert_close(got, ref_adam(x0, g, c), F64, ('adam n=%d config %d'):format(n, ci))
            assert.are.equal(5, st.t)
         end
      end
   end)

   it('adamw matches Loshchilov & Hutter over several steps', function()
      local configs = { { learningRate = 1e-2 },
         { learningRate = 5e-3, weightDecay = 0.1, beta1 = 0.85, epsilon = 1e-7 } }
      for _, n in ipairs(SIZES) do
         for ci, c in ipairs(configs) do
            local x0, g = rand(n), grads_for(n, 5)
            util.assert_close(run('adamw', x0, g, c), ref_adamw(x0, g, c), F64, ('adamw n=%d config %d'):format(n, ci))
         end
      end
   end)

   it('decoupled decay differs from L2 decay (the two are not confused)', function()
      local n = 50
      local x0, g = rand(n), grads_for(n, 3)
      local a = run('adam', x0, g, { learningRate = 1e-2, weightDecay = 0.5 })
      local w = run('adamw', x0, g, { learningRate = 1e-2, weightDecay = 0.5 })
      local diff = 0
      for i = 1, n do diff = math.max(diff, math.abs(a[i] - w[i])) end
      assert.is_true(diff > 1e-4)
   end)

   it('works on float32, float16 and bfloat16', function()
      for _, tn in ipairs { 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local n = 64
         local c = { learningRate = 1e-2 }
         local x0, g = rounded(rand(n), tn), { rounded(rand(n), tn), rounded(rand(n), tn) }
         local tol = tn == 'torch.FloatTensor' and F32 or util.tol[tn]
         util.assert_close(run('adam', x0, g, c, tn), ref_adam(x0, g, c), tol, 'adam ' .. tn)
         util.assert_close(run('adamw', x0, g, c, tn), ref_adamw(x0, g, c), tol, 'adamw ' .. tn)
      end
   end)

   it('rejects bad betas', function()
      local x = torch.DoubleTensor(3):fill(1)
      util.assert_error(function() optim.adam(function() return 0, x:clone() end, x, { beta1 = 1 }) end,
         'optim.adam', 'beta1 and beta2 must be in [0, 1)')
      util.assert_error(function() optim.adamw(function() return 0, x:clone() end, x, { beta2 = -0.1 }) end,
         'optim.adamw', 'adamw_step')
   end)
end)

describe('optim.lars and optim.lamb', function()
   local layout = R.layout

   it('lars matches You et al. 2017 per layer, with excluded (BN/bias) layers', function()
      for _, n in ipairs { 9, 200, 40001 } do
         local layers, excl, segs = layout(n, 6)
         local c = { learningRate = 0.5, momentum = 0.9, weightDecay = 5e-4, eta = 0.02, layers = layers,
            lars_exclude = excl }
         local x0, g = rand(n), grads_for(n, 4, 0.1)
         local got, st = run('lars', x0, g, c)
         local want, trusts = ref_lars(x0, g, c, segs)
         util.assert_close(got, want, F64, 'lars n=' .. n)
         util.assert_close(st.trustRatios, trusts, F64, 'lars trust ratios')
         -- without layers: one segment for the whole vector
         local c2 = { learningRate = 0.1, momentum = 0, weightDecay = 1e-3 }
         util.assert_close(run('lars', x0, g, c2), (ref_lars(x0, g, c2, { { 1, n, false } })), F64, 'lars whole')
      end
   end)

   it('lamb matches You et al. 2019 per layer, with bias correction and trust clipping', function()
      for _, n in ipairs { 9, 200, 40001 } do
         local layers, excl, segs = layout(n, 5)
         for _, clip in ipairs { 10, 0, 0.5 } do
            local c = { learningRate = 1e-2, weightDecay = 0.01, maxTrust = clip, layers = layers, lars_exclude = excl }
            local x0, g = rand(n), grads_for(n, 4)
            local got, st = run('lamb', x0, g, c)
            local want, trusts = ref_lamb(x0, g, c, segs)
            util.assert_close(got, want, F64, ('lamb n=%d clip %g'):format(n, clip))
            util.assert_close(st.trustRatios, trusts, F64, 'lamb trust ratios')
         end
      end
   end)

   it('lamb on float32', function()
      local n = 300
      local layers, excl, segs = layout(n, 4)
      local c = { learningRate = 1e-2, layers = layers, lars_exclude = excl }
      local x0, g = rounded(rand(n), 'torch.FloatTensor'), { rounded(rand(n), 'torch.FloatTensor') }
      util.assert_close(run('lamb', x0, g, c, 'torch.FloatTensor'), (ref_lamb(x0, g, c, segs)), F32, 'lamb f32')
   end)

   it('accepts the exclusion as a ByteTensor mask, splitting layers that are partly excluded', function()
      local n = 120
      local layers = { { 1, 50 }, { 51, 70 } }
      local mask = torch.ByteTensor(n):zero()
      mask:narrow(1, 41, 20):fill(1) -- elements 41..60: the end of layer 1 and the start of layer 2
      local segs = { { 1, 40, false }, { 41, 50, true }, { 51, 60, true }, { 61, 120, false } }
      local c = { learningRate = 0.2, momentum = 0.9, weightDecay = 1e-3, layers = layers, lars_exclude = mask }
      local x0, g = rand(n), grads_for(n, 3)
      local got, st = run('lars', x0, g, c)
      local want, trusts = ref_lars(x0, g, c, segs)
      util.assert_close(got, want, F64, 'lars mask')
      util.assert_close(st.trustRatios, trusts, F64, 'lars mask trust')
      -- the same as ranges
      local c2 = { learningRate = 0.2, momentum = 0.9, weightDecay = 1e-3, layers = layers,
         lars_exclude = { { 41, 20 } } }
      util.assert_close(run('lars', x0, g, c2), got, F64, 'lars ranges = mask')
   end)

   it('optim.layerSegments reads a model\'s parameters inside its flat vector', function()
      local flat = torch.DoubleTensor(3 * 4 + 4 + 5 * 3 * 2 * 2 + 5):zero()
      local w1 = flat:narrow(1, 1, 12):view(3, 4)
      local b1 = flat:narrow(1, 13, 4)
      local w2 = flat:narrow(1, 17, 60):view(5, 3, 2, 2)
      local b2 = flat:narrow(1, 77, 5)
      local model = { parameters = function() return { w1, b1, w2, b2 } end }
      local layers, exclude = optim.layerSegments(model, flat)
      assert.are.same({ { 1, 12 }, { 13, 4 }, { 17, 60 }, { 77, 5 } }, layers)
      assert.are.same({ { 13, 4 }, { 77, 5 } }, exclude)
      util.assert_error(function() optim.layerSegments({ torch.DoubleTensor(3) }, flat) end,
         'not a view of the flat vector')
   end)

   it('rejects bad layer layouts', function()
      local x = torch.DoubleTensor(10):fill(1)
      local f = function() return 0, x:clone() end
      util.assert_error(function() optim.lars(f, x, { layers = { { 1, 11 } } }) end, 'optim.lars', 'layers entry 1',
         'inside the 10 parameters')
      util.assert_error(function() optim.lamb(f, x, { layers = { { 1, 6 }, { 5, 5 } } }) end, 'optim.lamb',
         'segment 2 starts at 4')
      util.assert_error(function() optim.lars(f, x, { lars_exclude = torch.ByteTensor(7):zero() }) end,
         'mask has 7 elements')
      util.assert_error(function() optim.lars(f, x, { eta = 0 }) end, 'eta must be > 0')
   end)
end)

describe('optim.schedule', function()
   local S = optim.schedule
   it('step and multistep', function()
      local lr = math.random() + 0.1
      local s = S.step(lr, 3, 0.5)
      for t = 0, 10 do util.assert_close({ s(t) }, { lr * 0.5 ^ math.floor(t / 3) }, F64, 'step ' .. t) end
      local m = S.multistep(lr, { 2, 5 }, 0.1)
      util.assert_close({ m(0), m(1.9), m(2), m(4), m(5), m(100) },
         { lr, lr, lr * 0.1, lr * 0.1, lr * 0.01, lr * 0.01 }, F64, 'multistep')
   end)

   it('cosine and polynomial', function()
      local lr, lo = math.random() + 0.5, math.random() * 0.1
      local c = S.cosine(lr, 10, lo)
      util.assert_close({ c(0), c(5), c(10), c(20) }, { lr, (lr + lo) / 2, lo, lo }, F64, 'cosine')
      for t = 0, 9 do assert.is_true(c(t + 1) < c(t)) end
      local p = S.polynomial(lr, 8, 2)
      util.assert_close({ p(0), p(4), p(8), p(9) }, { lr, lr / 4, 0, 0 }, F64, 'polynomial')
   end)

   it('linear warm-up composes with any schedule', function()
      local lr = math.random() + 0.5
      local w = S.warmup(4, S.cosine(lr, 10))
      local c = S.cosine(lr, 10)
      for t = 0, 3 do util.assert_close({ w(t) }, { lr * (t + 1) / 5 }, F64, 'warm-up ' .. t) end
      for t = 4, 14 do util.assert_close({ w(t) }, { c(t - 4) }, F64, 'after warm-up ' .. t) end
      local w2 = S.warmup(2, 0.3)
      util.assert_close({ w2(0), w2(1), w2(2), w2(50) }, { 0.1, 0.2, 0.3, 0.3 }, F64, 'warm-up to a constant')
   end)

   it('warm-up over a step schedule keeps its decays where they are', function()
      local lr, n, every = math.random() + 0.5, math.random(2, 5), math.random(6, 9)
      local st = S.step(lr, every, 0.1)
      local w = S.warmupOver(n, st)
      -- the ramp ends at the rate the schedule has at step n, reached at t = n
      for t = 0, n - 1 do util.assert_close({ w(t) }, { lr * (t + 1) / (n + 1) }, F64, 'warm-up ' .. t) end
      for t = n, 3 * every do util.assert_close({ w(t) }, { st(t) }, F64, 'after warm-up ' .. t) end
      util.assert_close({ w(every - 1), w(every) }, { lr, lr / 10 }, F64, 'the first decay stays at step ' .. every)
      -- S.warmup shifts the clock instead: its first decay comes n steps later
      util.assert_close({ S.warmup(n, st)(every) }, { lr }, F64, 'shifted decay')
      util.assert_error(function() S.warmupOver(-1, st) end, 'optim.schedule.warmupOver', 'warm-up length')
   end)

   it('drives an optimizer through config.learningRate', function()
      local n = 10
      local x0, g = rand(n), grads_for(n, 5)
      local sched = S.warmup(2, S.step(0.1, 2, 0.5))
      local x = T.from_flat(x0, { n }, T.DOUBLE, T.CPU_DEVICE)
      local config, want = {}, copy(x0)
      for t = 0, 4 do
         config.learningRate = sched(t)
         optim.sgd(function() return 0, T.from_flat(g[t + 1], { n }, T.DOUBLE, T.CPU_DEVICE) end, x, config)
         for i = 1, n do want[i] = want[i] - sched(t) * g[t + 1][i] end
      end
      util.assert_close(x, want, F64, 'scheduled sgd')
   end)

   it('rejects bad arguments', function()
      util.assert_error(function() S.cosine(0.1, 0) end, 'optim.schedule.cosine', 'tMax must be a number >= 1')
      util.assert_error(function() S.step(0.1, 2)(-1) end, 'optim.schedule.step', 'step counter')
      util.assert_error(function() S.warmup(3, 'x') end, 'optim.schedule.warmup', 'expected a schedule')
      util.assert_error(function() S.multistep(0.1, 5) end, 'milestones must be a list')
   end)
end)

describe('optimizer state in checkpoints', function()
   local checkpoint = require 'moontorch.checkpoint'
   it('resuming from a saved state gives the same result as an uninterrupted run', function()
      local n = 77
      local path = os.tmpname()
      for _, method in ipairs { 'sgd', 'adam', 'adamw', 'lars', 'lamb' } do
         local config = { learningRate = 0.05, momentum = 0.9, weightDecay = 1e-3, learningRateDecay = 0.1,
            layers = random_layers(n, 3) }
         local x0, g = rand(n), grads_for(n, 6)
         local function steps(x, state, from, to)
            for s = from, to do
               local function grad() return 0, T.from_flat(g[s], { n }, T.DOUBLE, T.CPU_DEVICE) end
               optim[method](grad, x, config, state)
            end
         end
         local xa, sa = T.from_flat(x0, { n }, T.DOUBLE, T.CPU_DEVICE), {}
         steps(xa, sa, 1, 6)
         local xb, sb = T.from_flat(x0, { n }, T.DOUBLE, T.CPU_DEVICE), {}
         steps(xb, sb, 1, 3)
         local ts, vals = optim.stateToCheckpoint(sb, 'optim.')
         ts.x = xb
         checkpoint.save(path, ts, { optim = vals })
         local back, meta = checkpoint.load(path)
         local sc = optim.stateFromCheckpoint(back, meta.optim, 'optim.')
         steps(back.x, sc, 4, 6)
         util.assert_close(back.x, xa, { atol = 0, rtol = 0 }, method .. ' resumed')
      end
      os.remove(path)
   end)
end)
