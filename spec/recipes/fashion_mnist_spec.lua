-- fashion_mnist_spec.lua: recipes/fashion_mnist.lua end to end on a tiny generated IDX dataset (a
-- few batches): it trains, writes checkpoint, log.csv and plot.svg, and -resume gives the same
-- numbers as an uninterrupted run.
local torch = require 'moontorch'
local util = require 'spec.util'
local idx = require 'moontorch.data.idx'
local logger = require 'moontorch.util.csvlog'

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute(('mkdir -p %q'):format(tmpdir))
local function tmp(name) return tmpdir .. '/' .. name end
local slurp = util.slurp

describe('recipes/fashion_mnist.lua', function()
   -- a tiny learnable dataset: class c lights up row block c of the image
   local data = tmp('data')
   os.execute(('mkdir -p %q'):format(data))
   local function make(prefix, n)
      local x = torch.ByteTensor(n, 28, 28):random(0, 60)
      local y = torch.ByteTensor(n):random(0, 9)
      for i = 1, n do x[i]:narrow(1, 2 * y[i] + 4, 2):add(150) end
      idx.write(('%s/%s-images-idx3-ubyte.gz'):format(data, prefix), x)
      idx.write(('%s/%s-labels-idx1-ubyte.gz'):format(data, prefix), y)
   end
   make('train', 200)
   make('t10k', 60)

   local function run(args)
      local cmd = ('luajit recipes/fashion_mnist.lua -data %q -threads 1 -quiet -nEpochs 2 -batchSize 16 ' ..
         '-limitBatches 4 -testBatchSize 25 %s 2>&1; echo "exit status $?"'):format(data, args)
      local p = io.popen(cmd)
      local out = p:read('*a')
      p:close()
      local code = tonumber(out:match('exit status (%d+)%s*$'))
      return out, code == 0
   end

   it('trains, evaluates, and writes checkpoint, log.csv and plot.svg', function()
      local out, ok = run(('-save %q -seed 7'):format(tmp('full')))
      assert.is_true(ok, out)
      local acc = out:match('final test accuracy: ([%d.]+)%%')
      assert.truthy(acc, out)
      assert.is_true(tonumber(acc) >= 0 and tonumber(acc) <= 100)
      local cols, rows = logger.read(tmp('full') .. '/log.csv')
      assert.truthy(cols, 'no log.csv')
      assert.are.equal(2, #rows)
      for _, r in ipairs(rows) do
         assert.is_true(r.train_loss == r.train_loss and r.train_loss > 0)
         assert.is_true(r.test_acc >= 0 and r.test_acc <= 1)
      end
      assert.are.equal(tonumber(acc), tonumber(('%.2f'):format(100 * rows[2].test_acc)))
      local svg = slurp(tmp('full') .. '/plot.svg')
      assert.truthy(svg and svg:match('^<svg'), 'no plot.svg')
      local ck = require 'moontorch.checkpoint'
      local tensors, meta = ck.load(tmp('full') .. '/checkpoint.safetensors')
      assert.are.equal(2, meta.epoch)
      assert.are.equal(0, meta.batch) -- an epoch-end checkpoint
      local n = 0
      for name, t in pairs(tensors) do
         n = n + 1
         local s = t:double():abs():sum()
         assert.is_true(s == s, name .. ' has NaN')
      end
      assert.is_true(n > 10)
      assert.truthy(tensors['optim.dfdx'] or tensors['optim.momentum'] or next(tensors), 'optimizer state saved')
   end)

   it('-resume gives the same results as an uninterrupted run', function()
      local _, ok1 = run(('-save %q -seed 11 -stopAfter 1'):format(tmp('resumed')))
      assert.is_true(ok1)
      local out2, ok2 = run(('-save %q -seed 11 -resume %q'):format(tmp('resumed'),
         tmp('resumed') .. '/checkpoint.safetensors'))
      assert.is_true(ok2, out2)
      local out3, ok3 = run(('-save %q -seed 11'):format(tmp('straight')))
      assert.is_true(ok3, out3)
      assert.are.equal(out3:match('final test accuracy: [%d.]+%%'), out2:match('final test accuracy: [%d.]+%%'))
      local _, a = logger.read(tmp('resumed') .. '/log.csv')
      local _, b = logger.read(tmp('straight') .. '/log.csv')
      assert.are.equal(2, #a)
      for e = 1, 2 do
         assert.are.equal(b[e].train_loss, a[e].train_loss)
         assert.are.equal(b[e].test_acc, a[e].test_acc)
      end
      local ck = require 'moontorch.checkpoint'
      local ta = ck.load(tmp('resumed') .. '/checkpoint.safetensors')
      local tb = ck.load(tmp('straight') .. '/checkpoint.safetensors')
      for name, t in pairs(tb) do
         assert.truthy(ta[name], name)
         util.assert_close(ta[name], t, { atol = 0, rtol = 0 }, name)
      end
   end)

   it('-checkpointEvery: resuming from inside an epoch gives the uninterrupted run bit for bit', function()
      -- 4 batches per epoch: stopping after iteration 6 leaves the checkpoint of epoch 2 batch 2;
      -- flips and dropout draw from the generator, so its state must come back too
      local args = ('-seed 13 -checkpointEvery 2 -save %q'):format(tmp('mid'))
      local out1, ok1 = run(args .. ' -stopAfterIter 6')
      assert.is_true(ok1, out1)
      local ck = require 'moontorch.checkpoint'
      local _, meta = ck.load(tmp('mid') .. '/checkpoint.safetensors')
      assert.are.same({ 1, 2, 6 }, { meta.epoch, meta.batch, meta.iteration })
      local out2, ok2 = run(args .. (' -resume %q'):format(tmp('mid')))
      assert.is_true(ok2, out2)
      assert.truthy(out2:find('after epoch 1 and batch 2 of epoch 2', 1, true), out2)
      local out3, ok3 = run(('-seed 13 -save %q'):format(tmp('unbroken')))
      assert.is_true(ok3, out3)
      assert.are.equal(out3:match('final test accuracy: [%d.]+%%'), out2:match('final test accuracy: [%d.]+%%'))
      local ta = ck.load(tmp('mid') .. '/checkpoint.safetensors')
      local tb = ck.load(tmp('unbroken') .. '/checkpoint.safetensors')
      for name, t in pairs(tb) do util.assert_close(ta[name], t, { atol = 0, rtol = 0 }, name) end
      local _, a = logger.read(tmp('mid') .. '/log.csv')
      local _, b = logger.read(tmp('unbroken') .. '/log.csv')
      assert.are.equal(2, #a)
      for e = 1, 2 do
         for _, c in ipairs({ 'train_loss', 'train_acc', 'test_acc', 'lr' }) do
            assert.are.equal(b[e][c], a[e][c], ('epoch %d %s'):format(e, c))
         end
      end
   end)

   it('-precision fp16 trains with loss scaling and resumes from inside an epoch bit for bit', function()
      -- an initial scale of 2^20 overflows float16 at once: the first steps are skipped and the
      -- scale halves until gradients fit; the log, the checkpoint and the resumed run show it
      local args = ('-seed 17 -precision fp16 -lossScale 1048576 -scaleWindow 3 -checkpointEvery 2 -save %q')
         :format(tmp('h'))
      local out1, ok1 = run(args .. ' -stopAfterIter 6')
      assert.is_true(ok1, out1)
      local ck = require 'moontorch.checkpoint'
      local t1, meta = ck.load(tmp('h') .. '/checkpoint.safetensors')
      assert.truthy(t1['optim.master'],
         ('no master in the checkpoint (%s steps skipped)'):format(tostring(meta.optim.skippedSteps)))
      assert.are.equal('torch.FloatTensor', t1['optim.master']:type())
      assert.are.equal('torch.FloatTensor', t1['optim.dfdx']:type())
      assert.are.equal('torch.HalfTensor', t1['2.weight']:type())
      assert.is_true(meta.optim.skippedSteps >= 1, 'no step was skipped')
      assert.is_true(meta.optim.lossScale < 1048576)
      local out2, ok2 = run(args .. (' -resume %q'):format(tmp('h')))
      assert.is_true(ok2, out2)
      local out3, ok3 = run(('-seed 17 -precision fp16 -lossScale 1048576 -scaleWindow 3 -save %q'):format(tmp('h2')))
      assert.is_true(ok3, out3)
      assert.are.equal(out3:match('final test accuracy: [%d.]+%%'), out2:match('final test accuracy: [%d.]+%%'))
      local ta = ck.load(tmp('h') .. '/checkpoint.safetensors')
      local tb, mb = ck.load(tmp('h2') .. '/checkpoint.safetensors')
      for name, t in pairs(tb) do util.assert_close(ta[name], t, { atol = 0, rtol = 0 }, name) end
      local cols, a = logger.read(tmp('h') .. '/log.csv')
      local _, b = logger.read(tmp('h2') .. '/log.csv')
      assert.truthy(table.concat(cols, ','):find('loss_scale,skipped_steps', 1, true))
      for e = 1, 2 do
         for _, c in ipairs({ 'train_loss', 'test_acc', 'loss_scale', 'skipped_steps' }) do
            assert.are.equal(b[e][c], a[e][c], ('epoch %d %s'):format(e, c))
         end
      end
      assert.are.equal(mb.optim.skippedSteps, b[1].skipped_steps + b[2].skipped_steps)
      -- bf16 takes the same path with a fixed scale of 1
      local out4, ok4 = run(('-seed 17 -precision bf16 -save %q'):format(tmp('b')))
      assert.is_true(ok4, out4)
      local _, r = logger.read(tmp('b') .. '/log.csv')
      assert.are.equal(1, r[2].loss_scale)
      assert.are.equal('torch.BFloat16Tensor', ck.load(tmp('b') .. '/checkpoint.safetensors')['2.weight']:type())
   end)

   it('-fuse (fused BatchNorm+ReLU) trains bit for bit like the unfused model and resumes only with -fuse', function()
      local out1, ok1 = run(('-seed 5 -save %q'):format(tmp('nf')))
      assert.is_true(ok1, out1)
      local out2, ok2 = run(('-seed 5 -fuse -save %q'):format(tmp('f')))
      assert.is_true(ok2, out2)
      local _, a = logger.read(tmp('nf') .. '/log.csv')
      local _, b = logger.read(tmp('f') .. '/log.csv')
      for e = 1, 2 do
         for _, c in ipairs({ 'train_loss', 'train_acc', 'test_acc' }) do assert.are.equal(a[e][c], b[e][c], c) end
      end
      -- the model's tensors in module order (the fused model has fewer modules, so other indices)
      local ck = require 'moontorch.checkpoint'
      local function ordered(t)
         local names = {}
         for k in pairs(t) do if k:match('^%d+%.') then names[#names + 1] = k end end
         table.sort(names, function(x, y)
            local ix, fx = x:match('^(%d+)%.(.*)$')
            local iy, fy = y:match('^(%d+)%.(.*)$')
            if ix ~= iy then return tonumber(ix) < tonumber(iy) end
            return fx < fy
         end)
         local out = {}
         for _, k in ipairs(names) do out[#out + 1] = t[k] end
         return out
      end
      local ta, tb = ck.load(tmp('nf') .. '/checkpoint.safetensors'), ck.load(tmp('f') .. '/checkpoint.safetensors')
      local la, lb = ordered(ta), ordered(tb)
      assert.are.equal(#la, #lb)
      for i = 1, #la do util.assert_close(lb[i], la[i], { atol = 0, rtol = 0 }, 'model tensor ' .. i) end
      for name, t in pairs(ta) do
         if name:find('^optim%.') then util.assert_close(tb[name], t, { atol = 0, rtol = 0 }, name) end
      end
      local out3, ok3 = run(('-seed 5 -fuse -resume %q'):format(tmp('nf')))
      assert.is_false(ok3)
      assert.truthy(out3:find('written without -fuse', 1, true), out3)
   end)

   it('counts correct predictions of large batches', function()
      local R = require 'recipes.fashion_mnist'
      for _, n in ipairs({ 7, 300, 1000 }) do
         local scores, flat = util.rand_tensor({ n, 10 }, 'torch.FloatTensor')
         local y = torch.LongTensor(n):random(1, 10)
         local want = 0
         for i = 1, n do
            local best = 1
            for c = 2, 10 do if flat[(i - 1) * 10 + c] > flat[(i - 1) * 10 + best] then best = c end end
            if best == y[i] then want = want + 1 end
         end
         assert.are.equal(want, R.count_correct(scores, y))
         assert.are.equal(n, R.count_correct(scores, select(2, scores:max(2)):view(-1)))
      end
   end)

   it('reports bad options and missing data clearly', function()
      local out, ok = run('-nEpochs two')
      assert.is_false(ok)
      assert.truthy(out:find('-nEpochs expects a number, got "two"', 1, true), out)
      out, ok = run('-data /nonexistent/dir')
      assert.is_false(ok)
      assert.truthy(out:find('no train-images-idx3-ubyte(.gz) in /nonexistent/dir', 1, true), out)
   end)
end)
