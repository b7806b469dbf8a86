-- lr_schedule_spec.lua: the learning rates of the poly schedule with linear warm-up (Jia et al.
-- 2018) against the formula, in both recipes; the large-batch options (-polyPower, -eta,
-- -ghostBatch) refused with messages that name them; LARS's -eta and its exclusion of batch-norm
-- parameters and biases in the ResNet recipe.
local torch = require 'moontorch'
local util = require 'spec.util'

-- expected rate at iteration t (from 0) of `warm` warm-up iterations then poly decay over the
-- remaining total - warm: a ramp (t+1)/(warm+1) of the peak, then peak * (1 - s/(total-warm))^power
-- with s the iterations since the warm-up ended, and 0 from the end of the run on
local function expected(t, peak, warm, total, power)
   if t < warm then return peak * (t + 1) / (warm + 1) end
   local frac = math.min((t - warm) / (total - warm), 1)
   return peak * (1 - frac) ^ power
end

local function check(sched, peak, warm, total, power, what)
   -- start and end of the ramp, the peak, the decay's half-way point, its last step, the end
   local ts = { 0, warm - 1, warm, warm + math.floor((total - warm) / 2), total - 1, total, total + 3 }
   local got, want = {}, {}
   for _, t in ipairs(ts) do
      if t >= 0 then got[#got + 1], want[#want + 1] = sched(t), expected(t, peak, warm, total, power) end
   end
   util.assert_close(got, want, { rtol = 1e-12, atol = 1e-15 }, what)
   -- the half-way point in closed form, for an even decay length: peak / 2^power
   if (total - warm) % 2 == 0 then
      util.assert_close({ sched(warm + (total - warm) / 2) }, { peak / 2 ^ power }, { rtol = 1e-12 },
         what .. ' half-way')
   end
end

describe('poly schedule with warm-up', function()
   it('fashion_mnist -schedule poly: linear ramp to -LR, then (1 - t/T)^polyPower', function()
      local R = require 'recipes.fashion_mnist'
      for _, power in ipairs { 2, 1, 0.5 + math.random() * 3 } do
         local iters = 2 * math.random(3, 30)
         local o = { schedule = 'poly', LR = 0.5 + math.random() * 4, nEpochs = math.random(4, 20),
            warmup = math.random(1, 3), polyPower = power }
         local s = R.schedule(o, iters)
         check(s, o.LR, o.warmup * iters, o.nEpochs * iters, power, ('fashion_mnist poly power %g'):format(power))
      end
      -- a fractional warm-up rounds down to whole iterations
      local o = { schedule = 'poly', LR = 2, nEpochs = 5, warmup = 0.5, polyPower = 2 }
      check(R.schedule(o, 15), 2, 7, 75, 2, 'fashion_mnist half-epoch warm-up')
      -- without warm-up the decay starts at the peak
      o.warmup = 0
      check(R.schedule(o, 15), 2, 0, 75, 2, 'fashion_mnist no warm-up')
   end)

   it('resnet50_imagenet -lrSchedule poly -polyPower: the same shape on the scaled rate', function()
      local R = require 'recipes.resnet50_imagenet'
      local iters = 2 * math.random(3, 30)
      local o = { lrSchedule = 'poly', lr = 0.1 * 8192 / 256, nEpochs = 90, warmupEpochs = 5, polyPower = 3 }
      check(R.make_schedule(o, iters), o.lr, 5 * iters, 90 * iters, 3, 'imagenet poly power 3')
   end)
end)

describe('large-batch options', function()
   it('a negative -polyPower or a non-positive -eta is refused, naming the option', function()
      local R = require 'recipes.fashion_mnist'
      util.assert_error(function()
         R.schedule({ schedule = 'poly', LR = 1, nEpochs = 2, warmup = 0, polyPower = -1 }, 10)
      end, '-polyPower must be >= 0', '-1')
      local opts = require 'recipes.imagenet.opts'
      util.assert_error(function() opts.parse { '-synthetic', '-polyPower', '-2' } end, '-polyPower must be >= 0', '-2')
      util.assert_error(function() opts.parse { '-synthetic', '-optimizer', 'lars', '-eta', '0' } end,
         '-eta must be > 0', '0')
      util.assert_error(function() R.main { '-ghostBatch', '-1', '-data', '/nonexistent' } end,
         '-ghostBatch must be an integer >= 0', '-1')
      util.assert_error(function() R.main { '-ghostBatch', '2.5', '-data', '/nonexistent' } end,
         '-ghostBatch must be an integer >= 0', '2.5')
      util.assert_error(function() opts.parse { '-synthetic', '-ghostBatch', '-4' } end,
         '-ghostBatch must be an integer >= 0', '-4')
   end)

   it('resnet50_imagenet gives LARS -eta and excludes BN and biases for LARS and LAMB', function()
      local opts = require 'recipes.imagenet.opts'
      local model = require 'recipes.imagenet.model'
      for _, name in ipairs { 'lars', 'lamb' } do
         local o = opts.parse { '-synthetic', '-optimizer', name, '-eta', '0.02', '-depth', '18', '-device', 'cpu' }
         local net, _, config = model.setup(o, 10)
         local flat = net:getParameters()
         model.layers(net, flat, config, o)
         if name == 'lars' then assert.are.equal(0.02, config.eta) end
         assert.is_nil(net:findModules('nn.SpatialBatchNormalization')[1].ghostBatch,
            name .. ': no ghost batches by default')
         -- one segment per parameter tensor; the 1-D ones (BN scale and shift, biases) excluded
         local params, oneD = net:parameters(), 0
         for _, p in ipairs(params) do if p:dim() <= 1 then oneD = oneD + 1 end end
         assert.are.equal(#params, #config.layers, name .. ' layers')
         assert.are.equal(oneD, #config.lars_exclude, name .. ' excluded segments')
         assert.is_true(oneD > 0 and oneD < #params, name .. ': ResNet-18 has both kinds')
      end
      -- -ghostBatch reaches every batch norm, fused ones too
      for _, fuse in ipairs { {}, { '-fuse' } } do
         local args = { '-synthetic', '-optimizer', 'lars', '-depth', '18', '-device', 'cpu', '-ghostBatch', '32' }
         for _, a in ipairs(fuse) do args[#args + 1] = a end
         local net = model.setup(opts.parse(args), 10)
         local n = 0
         net:apply(function(m)
            if torch.isTypeOf(m, 'nn.BatchNormalization') then
               assert.are.equal(32, m.ghostBatch, torch.type(m))
               n = n + 1
            end
         end)
         assert.is_true(n >= 20, ('ResNet-18 with %s: %d batch norms set'):format(fuse[1] or 'no -fuse', n))
      end
   end)
end)
