-- imagenet_spec.lua: recipes/resnet50_imagenet.lua in short runs (a ResNet-18 on 32x32 random
-- images, 2 batches of 4 per epoch): without data it explains how to get ImageNet (exit 1); bad
-- options are named; top-k counting and the schedules against references; -synthetic trains with
-- the rate it promises, resumes from inside an epoch bit for bit on 1 rank and on 2 (mpirun), in
-- bf16/fp16 with gradient accumulation, and with fused batch norm. The runs on an ImageFolder are
-- recipes/imagenet_folder_spec.lua (training tier).
local torch = require 'moontorch'
local util = require 'spec.util'
local runs = require 'spec.recipes.runs'
local logger = require 'moontorch.util.csvlog'
local ck = require 'moontorch.checkpoint'

local R = require 'recipes.resnet50_imagenet'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end
local finite = runs.finite

-- run the recipe; returns its output (stdout and stderr) and exit status
local function run(args) return runs.run('resnet50_imagenet', args) end

local TINY = runs.IMAGENET_TINY

describe('recipes/resnet50_imagenet.lua', function()
   -- the runs leave checkpoints of ~90 MB each
   teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

   it('without -data explains how to get ImageNet and exits with status 1', function()
      local out, code = run('')
      assert.are.equal(1, code, out)
      for _, s in ipairs({ 'image-net.org', 'ILSVRC2012_img_train.tar', 'ILSVRC2012_img_val.tar', 'valprep.sh',
         'recipes/tools/pack.lua', '-data DIR', '-synthetic' }) do
         assert.truthy(out:find(s, 1, true), s .. ' missing from:\n' .. out)
      end
   end)

   it('rejects bad options with a message naming them', function()
      local cases = {
         { '-depth 20', '-depth: "20" is not one of 18, 34, 50, 101, 152' },
         { '-synthetic -batchSize 0', '-batchSize must be an integer >= 1, got 0' },
         { '-synthetic -cropSize 12.5', '-cropSize must be an integer >= 16' },
         { '-synthetic -optimizer adam', '"adam" is not one of sgd, lars, lamb' },
         { '-synthetic -lrSchedule linear', '"linear" is not one of step, cosine, poly' },
         { '-synthetic -nEpochs 2 -warmupEpochs 3', '-warmupEpochs must be in [0, nEpochs = 2)' },
         { '-synthetic -cache sometimes', '"sometimes" is not one of auto, on, off' },
         { '-synthetic -LR -1', '-LR must be > 0' },
         { '-batchSize four', '-batchSize expects a number, got "four"' },
         { '-data /nonexistent/imagenet', '-data /nonexistent/imagenet: no such directory' },
         { '-synthetic -dist -allreduce tree', '"tree" is not one of auto, mpi, ring, multicolor, hierarchical, nccl' },
         { '-synthetic -dist -bucketMB -1', '-bucketMB must be >= 0, got -1' },
         { '-synthetic -save "" -resume /nonexistent/ck.safetensors ' .. TINY,
            '-resume /nonexistent/ck.safetensors: no such checkpoint' },
      }
      if not util.has_gpu() then cases[#cases + 1] = { '-synthetic -device cuda', '-device cuda but' } end
      for _, c in ipairs(cases) do
         local out, code = run(c[1])
         assert.are.equal(1, code, c[1] .. ':\n' .. out)
         assert.truthy(out:find(c[2], 1, true), c[1] .. ': expected "' .. c[2] .. '" in:\n' .. out)
         assert.falsy(out:find('traceback', 1, true), out)
      end
   end)

   it('counts top-1 and top-5 as a plain reference does', function()
      for _, shape in ipairs({ { 9, 3 }, { 37, 10 }, { 300, 1000 } }) do
         local n, k = shape[1], shape[2]
         local scores, flat = util.rand_tensor(shape, 'torch.FloatTensor')
         local y = torch.LongTensor(n):random(1, k)
         local want1, want5 = 0, 0
         for i = 1, n do
            local row = {}
            for c = 1, k do row[c] = flat[(i - 1) * k + c] end
            local above = 0 -- classes scoring higher than the target
            for c = 1, k do if row[c] > row[y[i]] then above = above + 1 end end
            if above == 0 then want1 = want1 + 1 end
            if above < 5 then want5 = want5 + 1 end
         end
         local got = R.count_topk(scores, y, { 1, 5 })
         assert.are.same({ want1, want5 }, got)
      end
   end)

   it('schedules: step /10 every 30 epochs after warm-up, cosine and poly ending at 0', function()
      local iters = math.random(3, 50)
      local base = { nEpochs = 90, warmupEpochs = 0, lr = math.random(), polyPower = 2 } -- opts.lua's default power
      local function sched(kind, warm)
         local o = {}
         for k, v in pairs(base) do o[k] = v end
         o.lrSchedule, o.warmupEpochs = kind, warm or 0
         return R.make_schedule(o, iters)
      end
      local lr = base.lr
      local s = sched('step')
      util.assert_close({ s(0), s(30 * iters - 1), s(30 * iters), s(60 * iters), s(89 * iters) },
         { lr, lr, lr / 10, lr / 100, lr / 100 }, { rtol = 1e-12 }, 'step')
      s = sched('step', 5) -- warm-up does not move the decay epochs
      util.assert_close({ s(0), s(5 * iters - 1), s(5 * iters), s(30 * iters), s(60 * iters - 1) },
         { lr / (5 * iters + 1), lr * 5 * iters / (5 * iters + 1), lr, lr / 10, lr / 10 }, { rtol = 1e-12 },
         'warm step')
      s = sched('cosine')
      util.assert_close({ s(0), s(45 * iters), s(90 * iters) }, { lr, lr / 2, 0 }, { rtol = 1e-12, atol = 1e-15 },
         'cosine')
      s = sched('poly')
      util.assert_close({ s(0), s(45 * iters), s(90 * iters) }, { lr, lr / 4, 0 }, { rtol = 1e-12, atol = 1e-15 },
         'poly')
   end)

   it('-synthetic trains with the scaled, warmed-up cosine rate it promises', function()
      local save = tmp('synthetic')
      local out, code = run(('-synthetic %s -save %q -optimizer lars -lrSchedule cosine -warmupEpochs 1 ' ..
         '-labelSmoothing 0.1 -zeroInitResidual -LR 0.2'):format(TINY, save))
      assert.are.equal(0, code, out)
      assert.truthy(out:find('final: train loss', 1, true), out)
      local _, rows = logger.read(save .. '/log.csv')
      assert.are.equal(2, #rows)
      -- logged: the rate of each epoch's last batch. peak 0.2 * 4 / 256, 2 warm-up iterations,
      -- then a cosine over the remaining 2: t=1 -> peak * 2/3, t=3 -> peak * (1 + cos(pi/2)) / 2
      local peak = 0.2 * 4 / 256
      util.assert_close({ rows[1].lr, rows[2].lr }, { peak * 2 / 3, peak / 2 }, { rtol = 1e-5 }, 'lr')
      for _, r in ipairs(rows) do
         assert.is_true(finite(r.train_loss) and r.train_loss > 0, 'train loss')
         assert.is_true(r.val_top5 >= r.val_top1 and r.val_top1 >= 0 and r.val_top5 <= 1, 'top-k')
      end
   end)

   it('-synthetic -checkpointEvery: a resume from inside an epoch repeats the unbroken run exactly', function()
      local args = TINY .. ' -synthetic -lrSchedule cosine -seed 4 -checkpointEvery 1'
      local a, b = tmp('syn_unbroken'), tmp('syn_mid')
      local out1, code1 = run(('%s -save %q'):format(args, a))
      assert.are.equal(0, code1, out1)
      -- 2 batches per epoch: iteration 3 is batch 1 of epoch 2
      local out2, code2 = run(('%s -save %q -stopAfterIter 3'):format(args, b))
      assert.are.equal(0, code2, out2)
      local _, meta = ck.load(b .. '/checkpoint.safetensors')
      assert.are.same({ 1, 1, 3 }, { meta.epoch, meta.batch, meta.iteration })
      assert.truthy(meta.rng and meta.partial, 'the generator state and the epoch so far')
      local out3, code3 = run(('%s -save %q -resume %q'):format(args, b, b))
      assert.are.equal(0, code3, out3)
      assert.truthy(out3:find('after epoch 1 and batch 1 of epoch 2', 1, true), out3)
      assert.are.equal(out1:match('final: train loss (%S+)'), out3:match('final: train loss (%S+)'))
      local ta, ma = ck.load(a .. '/checkpoint.safetensors')
      local tb, mb = ck.load(b .. '/checkpoint.safetensors')
      assert.are.equal(ma.train_loss, mb.train_loss)
      assert.are.equal(2, mb.epoch)
      for name, t in pairs(ta) do util.assert_close(tb[name], t, { atol = 0, rtol = 0 }, name) end
   end)

   it('-precision bf16/fp16 -accumulate 2: a half ResNet with fp32 masters, logged loss scale, exact resume', function()
      for _, p in ipairs { 'bf16', 'fp16' } do
         -- a random ResNet-18 at batch 4 has huge gradients: fp16 starts at a small scale so that
         -- steps are taken (2^16 would overflow them all)
         local scale0 = p == 'bf16' and 1 or 8
         local args = TINY .. ' -synthetic -lrSchedule cosine -seed 5 -checkpointEvery 1 -accumulate 2 ' ..
            '-precision ' .. p .. ' -lossScale ' .. scale0
         local a, b = tmp('half_unbroken_' .. p), tmp('half_mid_' .. p)
         local out1, code1 = run(('%s -save %q'):format(args, a))
         assert.are.equal(0, code1, out1)
         assert.truthy(out1:find('in ' .. p .. ';', 1, true), out1)
         assert.truthy(out1:find('2 micro-batches per batch', 1, true), out1)
         local cols, rows = logger.read(a .. '/log.csv')
         assert.truthy(table.concat(cols, ','):find('loss_scale,skipped_steps', 1, true))
         assert.are.equal(scale0, rows[1].loss_scale * 2 ^ rows[1].skipped_steps)
         local ta, ma = ck.load(a .. '/checkpoint.safetensors')
         local names = {} for k in pairs(ta) do if k:match('optim') then names[#names + 1] = k end end
         assert.truthy(ta['optim.master'], p .. ': checkpoint optimizer tensors: ' .. table.concat(names, ' ') .. out1)
         assert.are.equal('torch.FloatTensor', ta['optim.master']:type())
         assert.are.equal(p == 'bf16' and 'torch.BFloat16Tensor' or 'torch.HalfTensor', ta['2.weight']:type())
         assert.are.equal(p, ma.precision)
         if p == 'fp16' then -- (the resume path is the same for both; fp16 also carries a scale)
         local out2, code2 = run(('%s -save %q -stopAfterIter 3'):format(args, b))
         assert.are.equal(0, code2, out2)
         local out3, code3 = run(('%s -save %q -resume %q'):format(args, b, b))
         assert.are.equal(0, code3, out3)
         assert.are.equal(out1:match('final: train loss (%S+)'), out3:match('final: train loss (%S+)'))
         local tb = ck.load(b .. '/checkpoint.safetensors')
         for name, t in pairs(ta) do util.assert_close(tb[name], t, { atol = 0, rtol = 0 }, p .. ' ' .. name) end
         end
      end
   end)

   it('-fuse (fused BatchNorm) repeats the unfused synthetic run exactly, and resumes only with -fuse', function()
      local args = TINY .. ' -synthetic -lrSchedule cosine -seed 5 -precision bf16'
      local a, b = tmp('unfused'), tmp('fused')
      local out1, code1 = run(('%s -save %q'):format(args, a))
      assert.are.equal(0, code1, out1)
      local out2, code2 = run(('%s -fuse -save %q'):format(args, b))
      assert.are.equal(0, code2, out2)
      assert.truthy(out1:match('final: train loss (%S+)'), out1)
      assert.are.equal(out1:match('final: train loss (%S+)'), out2:match('final: train loss (%S+)'))
      local _, ra = logger.read(a .. '/log.csv')
      local _, rb = logger.read(b .. '/log.csv')
      for e = 1, 2 do
         for _, c in ipairs { 'train_loss', 'val_top1', 'val_top5' } do assert.are.equal(ra[e][c], rb[e][c], c) end
      end
      local tb = ck.load(b .. '/checkpoint.safetensors')
      assert.are.equal('torch.FloatTensor', tb['optim.master']:type())
      local out3, code3 = run(('%s -save %q -resume %q'):format(args, tmp('cross'), b))
      assert.are_not.equal(0, code3)
      assert.truthy(out3:find('written with -fuse', 1, true), out3)
   end)

   -- each rank takes its half of every global batch of 4; the checkpoint of rank 0 holds the
   -- model and optimizer state every rank shares
   it('-dist on 2 ranks (mpirun): a resume from inside an epoch repeats the unbroken run exactly', function()
      local missing = util.mpi_missing()
      if missing then
         pending(missing)
         return
      end
      local function run2(args) return runs.run('resnet50_imagenet', args, runs.mpirun(2)) end
      local args = TINY .. ' -synthetic -dist -allreduce ring -lrSchedule cosine -seed 6 -checkpointEvery 1'
      local a, b = tmp('dist_unbroken'), tmp('dist_mid')
      local out1, code1 = run2(('%s -save %q'):format(args, a))
      assert.are.equal(0, code1, out1)
      assert.truthy(out1:find('data-parallel on 2 ranks', 1, true), out1)
      local out2, code2 = run2(('%s -save %q -stopAfterIter 3'):format(args, b))
      assert.are.equal(0, code2, out2)
      local out3, code3 = run2(('%s -save %q -resume %q'):format(args, b, b))
      assert.are.equal(0, code3, out3)
      assert.truthy(out3:find('after epoch 1 and batch 1 of epoch 2', 1, true), out3)
      local final = out1:match('final: train loss (%S+)')
      assert.truthy(final, out1)
      assert.are.equal(final, out3:match('final: train loss (%S+)'))
      local ta, ma = ck.load(a .. '/checkpoint.safetensors')
      local tb, mb = ck.load(b .. '/checkpoint.safetensors')
      assert.are.equal(ma.train_loss, mb.train_loss)
      assert.are.equal(2, mb.epoch)
      for name, t in pairs(ta) do util.assert_close(tb[name], t, { atol = 0, rtol = 0 }, name) end
   end)
end)
