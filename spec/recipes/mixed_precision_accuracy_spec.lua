-- mixed_precision_accuracy_spec.lua: the default recipe's small CNN (-width 8, batch 128, 2 epochs,
-- seed 3) trained in fp32, in bf16 and in fp16 with dynamic loss scaling, both with fp32 master
-- weights, on the CPU. The half runs must track the fp32 run's training loss over the first 300
-- steps and end within 0.5 points of its test accuracy. Needs Debian's dataset-fashion-mnist;
-- about 7 CPU-minutes (fp16 is the slowest: its conversions are software on the CPU).
--
-- The loss tolerance: each half run rounds activations and gradients to 8 (bf16) or 11 (fp16)
-- significant bits, so single steps differ by around a percent and trajectories drift apart;
-- the mean loss over windows of 50 steps averages batch noise, and must stay within 0.03 + 3%
-- of fp32's. A broken path (no master weights, no unscaling, overflow not caught) misses by far
-- more: the loss would stall, or be off by the scale, or go to NaN.
-- ctest: train

local ARGS = { '-width', '8', '-batchSize', '128', '-nEpochs', '2', '-LR', '0.05', '-seed', '3', '-threads', '2',
   '-quiet', '-save', '' }
local WINDOW, STEPS = 50, 300

local function fashion_missing()
   local f = io.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz', 'rb')
   if f then f:close() return nil end
   return 'needs Debian\'s dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)'
end

local function train(precision)
   local R = require 'recipes.fashion_mnist'
   local args = { '-precision', precision }
   for _, a in ipairs(ARGS) do args[#args + 1] = a end
   local t0 = os.time()
   local acc, _, trainer = R.main(args)
   local means = {}
   for w = 1, STEPS / WINDOW do
      local s = 0
      for i = (w - 1) * WINDOW + 1, w * WINDOW do
         local l = trainer.losses[i]
         assert.is_number(l, ('%s: no loss at step %d'):format(precision, i))
         s = s + l
      end
      means[w] = s / WINDOW
   end
   local st = trainer.optimState
   io.stderr:write(('[%s: test accuracy %.2f%%, %d s, loss by %d steps: %s%s]\n'):format(precision, 100 * acc,
      os.time() - t0, WINDOW, table.concat((function()
         local r = {}
         for i, m in ipairs(means) do r[i] = ('%.4f'):format(m) end
         return r
      end)(), ' '), st.lossScale and (', loss scale %g, %d skipped'):format(st.lossScale, st.skippedSteps) or ''))
   return { acc = 100 * acc, means = means, state = st, losses = trainer.losses }
end

describe('mixed precision on Fashion-MNIST', function()
   local missing = fashion_missing()
   if missing then
      pending(missing)
      return
   end

   local fp32
   setup(function() fp32 = train('fp32') end)

   for _, precision in ipairs { 'bf16', 'fp16' } do
      it(precision .. ' tracks the fp32 loss for 300 steps and ends within 0.5 points of its accuracy', function()
         assert.is_true(fp32.acc > 85, ('fp32 reached only %.2f%%'):format(fp32.acc))
         local r = train(precision)
         for w, m in ipairs(r.means) do
            local want = fp32.means[w]
            assert.is_true(m == m, precision .. ' loss is NaN')
            assert.is_true(math.abs(m - want) <= 0.03 + 0.03 * want,
               ('%s: mean loss of steps %d-%d is %.4f, fp32 %.4f'):format(precision, (w - 1) * WINDOW + 1,
                  w * WINDOW, m, want))
         end
         -- every step's loss is finite (the forward pass of a half model does not overflow here)
         for i, l in ipairs(r.losses) do assert.is_true(l == l and l < math.huge, precision .. ' step ' .. i) end
         assert.is_true(math.abs(r.acc - fp32.acc) <= 0.5,
            ('%s test accuracy %.2f%%, fp32 %.2f%%'):format(precision, r.acc, fp32.acc))
         -- the master weights and optimizer state are fp32, the scale is the one the dtype needs
         assert.are.equal('torch.FloatTensor', r.state.master:type())
         assert.are.equal('torch.FloatTensor', r.state.dfdx:type())
         if precision == 'bf16' then
            assert.are.equal(1, r.state.lossScale)
         else
            assert.is_true(r.state.lossScale >= 1, 'fp16 loss scale collapsed to ' .. r.state.lossScale)
         end
      end)
   end
end)
