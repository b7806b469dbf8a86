-- bench/large_batch.lua: large-batch training on Fashion-MNIST, CPU. Trains the default recipe
-- (recipes/fashion_mnist.lua) twice for the same number of epochs: SGD at batch 128, and LARS at
-- batch 4096 with a linear warm-up and polynomial (power 2) decay as Jia et al. 2018, BN and
-- bias parameters excluded from the trust ratio and weight decay. Prints one row per run, and
-- the mean gap over the seeds. -only sgd4096 trains the control instead: LARS's schedule as
-- plain SGD, at each -controlLR.
--   luajit bench/large_batch.lua [-threads 2] [-only sgd|lars|sgd4096] [-seeds 1,2,3,4]
--                                [-controlLR 0.2,0.4,0.8,1.6,3.2,6.4]
-- spec/recipes/large_batch_spec.lua requires this file for the same two commands (M.runs, M.run).
local modname = ...
local torch = require 'moontorch' -- the repository root's loader (lua/ on the path)
local progress = require 'moontorch.util.progress'

local M = {}

-- both runs: a narrow CNN, and 14 epochs (196 LARS steps): at 5 (70 steps) LARS stayed 2.27
-- points below SGD, at 8 1.55, at 12 0.93, at 14 0.68, at 16 0.50 (seed 1); at 14 over eight
-- draws (seeds 1-4, two builds whose exps differ) 0.54 below on average, spread 0.41
M.epochs, M.width = 14, 8
M.common = ('-nEpochs %d -width %d -quiet -save ""'):format(M.epochs, M.width)
M.runs = {
   { name = 'sgd', batch = 128,
     args = '-optimizer sgd -batchSize 128 -LR 0.2 -schedule cosine -warmup 0' },
   { name = 'lars', batch = 4096,
     args = '-optimizer lars -batchSize 4096 -LR 0.8 -eta 0.08 -schedule poly -polyPower 2 -warmup 1 '
        .. '-weightDecay 5e-4' },
}
-- the control, not trained by default: LARS's schedule and weight decay without the trust
-- ratio (plain SGD at batch 4096); -LR is the peak rate (0.8 as LARS, 6.4 is 0.2 scaled by 32;
-- 0.4 did best of 0.2 to 6.4)
M.control = { name = 'sgd4096', batch = 4096,
   args = '-optimizer sgd -batchSize 4096 -schedule poly -polyPower 2 -warmup 1 -weightDecay 5e-4' }

-- the command line of run r (threads: CPU threads of the recipe; seed: 1 unless given; lr:
-- appended -LR, for the control)
function M.command(r, threads, seed, lr)
   return ('OMP_WAIT_POLICY=PASSIVE luajit recipes/fashion_mnist.lua -threads %d -seed %d %s %s%s'):format(threads or 2,
      seed or 1, M.common, r.args, lr and (' -LR %s'):format(lr) or '')
end

-- trains run r from the repository root: its final test accuracy in percent (nil when the
-- output has none), its wall-clock seconds, the output and the exit status
function M.run(r, threads, seed, lr)
   local t0 = progress.now()
   local f = io.popen(M.command(r, threads, seed, lr) .. ' 2>&1; echo "exit=$?"')
   local out = f:read('*a')
   f:close()
   local seconds = progress.now() - t0
   local acc = out:match('final test accuracy: ([%d.]+)%%')
   return acc and tonumber(acc), seconds, out, tonumber(out:match('exit=(%d+)%s*$'))
end

local function numbers(s, what)
   local t = {}
   for v in s:gmatch('[^,]+') do
      t[#t + 1] = tonumber(v) or error(('large_batch: %s must be a comma-separated list of numbers, got %q')
         :format(what, s), 0)
   end
   return t
end

if modname ~= 'bench.large_batch' then -- run as a script
   local cli = torch.CmdLine()
   cli.name = 'large_batch'
   cli:text('bench/large_batch.lua: LARS at batch 4096 against SGD at batch 128 on Fashion-MNIST')
   cli:text('Options:')
   cli:option('-threads', 2, 'CPU threads of each run', { range = '[1, inf)', integer = true })
   cli:option('-only', 'both', 'the runs: both (sgd and lars), sgd, lars, or sgd4096 (the control)',
      { choices = { 'both', 'sgd', 'lars', 'sgd4096' } })
   cli:option('-seeds', '1', 'comma-separated seeds, each training the runs once')
   cli:option('-controlLR', '0.2,0.4,0.8,1.6,3.2,6.4', 'comma-separated peak rates of the control (-only sgd4096)')
   local opt = cli:parse(arg)
   local threads, seeds, controlLR = opt.threads, numbers(opt.seeds, '-seeds'), numbers(opt.controlLR, '-controlLR')
   local only = opt.only ~= 'both' and opt.only or nil
   -- the pair for every seed; the control only when asked for (-only sgd4096)
   local jobs = {}
   for _, seed in ipairs(seeds) do
      for _, r in ipairs(M.runs) do
         if not only or only == r.name then jobs[#jobs + 1] = { r = r, seed = seed } end
      end
      if only == 'sgd4096' then
         for _, lr in ipairs(controlLR) do jobs[#jobs + 1] = { r = M.control, seed = seed, lr = lr } end
      end
   end
   print('| seed | batch | optimizer | epochs | test accuracy % | seconds |')
   print('| ---: | ---: | --- | ---: | ---: | ---: |')
   local failed, acc = false, {}
   for _, j in ipairs(jobs) do
      local a, seconds, out, code = M.run(j.r, threads, j.seed, j.lr)
      if code ~= 0 or not a then
         io.stderr:write(('bench/large_batch.lua: the %s run failed (exit %s):\n%s\n%s\n'):format(j.r.name,
            tostring(code), M.command(j.r, threads, j.seed, j.lr), out))
         failed = true
      else
         local name = j.lr and ('%s -LR %g'):format(j.r.name, j.lr) or j.r.name
         print(('| %d | %d | %s | %d | %.2f | %.1f |'):format(j.seed, j.r.batch, name, M.epochs, a, seconds))
         acc[j.seed] = acc[j.seed] or {}
         acc[j.seed][j.r.name] = a
      end
   end
   -- the gap SGD - LARS per seed, and its mean and spread over the seeds that have both
   local gaps, sum = {}, 0
   for _, seed in ipairs(seeds) do
      local a = acc[seed]
      if a and a.sgd and a.lars then gaps[#gaps + 1] = a.sgd - a.lars; sum = sum + gaps[#gaps] end
   end
   if #gaps > 0 then
      local mean, ss = sum / #gaps, 0
      for _, g in ipairs(gaps) do ss = ss + (g - mean) ^ 2 end
      print(('\nSGD minus LARS over %d seed(s): mean %.2f points%s'):format(#gaps, mean,
         #gaps > 1 and (', spread (sample standard deviation) %.2f'):format(math.sqrt(ss / (#gaps - 1))) or ''))
   end
   if failed then os.exit(1) end
end
return M
