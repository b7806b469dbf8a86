-- trainer_spec.lua: the training harness's parts on their own: data.Synthetic (batches that
-- depend on (seed, epoch, batch) only) and train.Trainer with train.state (a tiny classifier
-- whose resume from a mid-epoch checkpoint repeats the unbroken run exactly; the epoch loop
-- written out of its parts, as the recipes do, gives fit()'s run; unknown options refused).
local torch = require 'moontorch'
local util = require 'spec.util'
local data = require 'moontorch.data'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local train = require 'moontorch.train'
local ck = require 'moontorch.checkpoint'

local tmpdir = util.tmpdir()
teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

describe('data.Synthetic', function()
   it('gives the same batch b of epoch e however the epoch was started', function()
      local n, bs = math.random(20, 40), math.random(3, 6)
      local src = data.Synthetic{ n = n, batchSize = bs, shape = { 2, 3 }, nClasses = 7, seed = 5 }
      assert.are.equal(math.ceil(n / bs), src:nbatches())
      local xs, ys, b = {}, {}, 0
      for x, y, info in src:run(2) do
         b = b + 1
         assert.are.equal(b, info.index)
         assert.are.equal(math.min(bs, n - (b - 1) * bs), info.count)
         assert.are.same({ info.count, 2, 3 }, x:size():totable())
         assert.is_true(y:min() >= 1 and y:max() <= 7)
         xs[b], ys[b] = x:clone(), y:clone()
      end
      assert.are.equal(src:nbatches(), b)
      local first = math.random(2, b)
      local x, y, info = src:run(2, first)()
      assert.are.equal(first, info.index)
      util.assert_close(x, xs[first], { atol = 0, rtol = 0 }, 'images of batch ' .. first)
      util.assert_close(y, ys[first], { atol = 0, rtol = 0 }, 'labels of batch ' .. first)
      local other = src:run(3)()
      assert.is_true(other:clone():add(-1, xs[1]):abs():max() > 0, 'another epoch, other images')
      local dropped = data.Synthetic{ n = n, batchSize = bs, shape = { 1 }, nClasses = 2, dropLast = true }
      assert.are.equal(math.floor(n / bs), dropped:nbatches())
      util.assert_error(function() data.Synthetic{ n = 0, batchSize = 1, shape = { 1 }, nClasses = 1 } end, 'n must be')
   end)
end)

-- batches drawn from the global generator seeded once per epoch (as recipes/fashion_mnist.lua
-- shuffles and flips): a resume inside an epoch needs the generator's state back
local function stream(nb)
   return { nbatches = function() return nb end, errors = function() return {} end,
      run = function(_, epoch, first)
         torch.manualSeed(100 + epoch)
         local b = (first or 1) - 1
         return function()
            b = b + 1
            if b > nb then return nil end
            return torch.FloatTensor(8, 4):normal(), torch.LongTensor(8):random(1, 3), { count = 8 }
         end
      end }
end

-- a linear classifier with dropout (more draws from the generator)
local function classifier(save, extra)
   torch.manualSeed(3)
   local model = nn.Sequential():add(nn.Linear(4, 3)):add(nn.Dropout(0.2))
   local src = stream(5)
   local o = { model = model, criterion = nn.CrossEntropyCriterion(), optimizer = optim.sgd,
      config = { learningRate = 0.1, momentum = 0.9 }, schedule = optim.schedule.warmup(3, 0.1), train = src,
      val = data.Synthetic{ n = 16, batchSize = 8, shape = { 4 }, nClasses = 3, seed = 10 }, nEpochs = 2,
      save = save, checkpointEvery = 2, quiet = true, format = 'spec 1' }
   for k, v in pairs(extra or {}) do o[k] = v end
   return train.Trainer(o)
end

describe('train.Trainer', function()
   it('resumes from a mid-epoch checkpoint to the unbroken run bit for bit', function()
      local a, b = tmpdir .. '/a', tmpdir .. '/b'
      local lastA = classifier(a):fit()
      classifier(b, { stopAfterIter = 7 }):fit() -- 5 batches per epoch: epoch 2, batch 2
      local tensors, meta = ck.load(b .. '/checkpoint.safetensors')
      assert.are.same({ 1, 2, 7 }, { meta.epoch, meta.batch, meta.iteration })
      assert.truthy(tensors['optim.dfdx'], 'momentum buffer saved')
      local t = classifier(b)
      t:resume(b)
      local lastB = t:fit()
      assert.are.equal(lastA.loss, lastB.loss)
      local ta = train.state.tensors(classifier(nil).model)
      local sa, sb = ck.load(a .. '/checkpoint.safetensors'), ck.load(b .. '/checkpoint.safetensors')
      for name in pairs(ta) do util.assert_close(sb[name], sa[name], { atol = 0, rtol = 0 }, name) end
      util.assert_close(sb['optim.dfdx'], sa['optim.dfdx'], { atol = 0, rtol = 0 }, 'momentum')
   end)

   -- channels-last changes strides only: every op computes the same values in the same order
   -- (the CPU convolution and batch norm work on NCHW copies), so the losses match bit for bit
   it("layout = 'nhwc' trains the small CNN and a ResNet to the nchw losses bit for bit", function()
      local models = require 'moontorch.models'
      -- cl_weights: the convolution weights channels-last too (Trainer does it on CUDA only),
      -- inside the flat parameters the optimizer steps
      local function losses(layout, build, shape, cl_weights)
         torch.manualSeed(7)
         local model = build()
         if cl_weights then model:channelsLast() end
         local src = data.Synthetic{ n = 12, batchSize = 4, shape = shape, nClasses = 10, seed = 3 }
         local t = train.Trainer{ model = model, criterion = nn.CrossEntropyCriterion(), optimizer = optim.sgd,
            config = { learningRate = 0.1, momentum = 0.9, weightDecay = 1e-4 }, schedule = function() return 0.1 end,
            train = src, val = src, nEpochs = 1, quiet = true, layout = layout }
         t:fit()
         return t.losses, model
      end
      for _, c in ipairs {
         { 'small CNN', function() return models.small_cnn{ nClasses = 10, width = 8 } end, { 1, 28, 28 } },
         { 'ResNet-8', function() return models.resnet{ depth = 8, dataset = 'cifar10' } end, { 3, 32, 32 } } } do
         local a = losses('nchw', c[2], c[3])
         local b, model = losses('nhwc', c[2], c[3])
         local w, wmodel = losses('nhwc', c[2], c[3], true)
         assert.are.equal(3, #b)
         for i = 1, #a do
            assert.is_true(a[i] == a[i] and a[i] > 0, c[1] .. ': a real loss')
            assert.are.equal(a[i], b[i], c[1] .. ' loss ' .. i)
            assert.are.equal(a[i], w[i], c[1] .. ' loss ' .. i .. ' with channels-last weights')
         end
         local conv = model:findModules('nn.SpatialConvolution')[1]
         assert.is_true(conv.output:isChannelsLast(), c[1] .. ': ran channels-last')
         assert.is_false(conv.weight:isChannelsLast(), c[1] .. ': NCHW weights on the CPU')
         assert.is_true(wmodel:findModules('nn.SpatialConvolution')[1].weight:isChannelsLast())
      end
      util.assert_error(function() classifier(nil, { layout = 'nchwc' }) end, "layout must be 'nchw' or 'nhwc'")
      -- the optimizer's flat state is in the layout's order: a checkpoint resumes in its own layout only
      local dir = tmpdir .. '/nhwc'
      classifier(dir, { layout = 'nhwc', stopAfterIter = 2 }):fit()
      util.assert_error(function() classifier(dir):resume(dir) end, 'written with layout nhwc', '-layout nhwc')
      classifier(dir, { layout = 'nhwc' }):resume(dir)
   end)

   it('the epoch loop written out of its parts, as the recipes write it, is fit()', function()
      local a, b = tmpdir .. '/fit', tmpdir .. '/loop'
      local lastA, bestA = classifier(a, { stopAfter = 2, nEpochs = 3 }):fit()
      local t = classifier(b, { stopAfter = 2, nEpochs = 3 })
      assert.are.same({ 1, 2 }, { t.startEpoch, t.lastEpoch })
      local epochs = 0
      for epoch = t.startEpoch, t.lastEpoch do
         local tr = t:trainEpoch(epoch)
         if not tr then break end
         local va = t:validate(epoch)
         t:record(epoch, tr, va)
         t:checkpoint(epoch)
         epochs = epochs + 1
      end
      local lastB, bestB = t:finish()
      assert.are.equal(2, epochs)
      assert.are.same(lastA, lastB)
      assert.are.same(bestA, bestB)
      local sa, ma = ck.load(a .. '/checkpoint.safetensors')
      local sb, mb = ck.load(b .. '/checkpoint.safetensors')
      assert.are.same({ 2, 0 }, { mb.epoch, mb.batch })
      assert.are.equal(ma.train_loss, mb.train_loss)
      for name, x in pairs(sa) do util.assert_close(sb[name], x, { atol = 0, rtol = 0 }, name) end
      local logger = require 'moontorch.util.csvlog'
      local _, ra = logger.read(a .. '/log.csv')
      local _, rb = logger.read(b .. '/log.csv')
      assert.are.equal(2, #rb)
      for e = 1, 2 do assert.are.equal(ra[e].train_loss, rb[e].train_loss) end
   end)

   it('redraws its progress bar in place, with an ETA, when stdout is a terminal', function()
      -- a training run under a pseudo-terminal (script(1)); batches of about 60 ms, so the bar
      -- (redrawn every 0.2 s) is drawn several times before the epoch ends
      local prog = tmpdir .. '/tty_run.lua'
      local f = assert(io.open(prog, 'w'))
      f:write([[
local torch, nn, optim, train = require 'moontorch', require 'moontorch.nn', require 'moontorch.optim',
   require 'moontorch.train'
local now = require('moontorch.util.progress').now
local nb = 12
local src = { nbatches = function() return nb end, errors = function() return {} end,
   run = function(_, _, first)
      local b = (first or 1) - 1
      return function()
         b = b + 1
         if b > nb then return nil end
         local t = now()
         while now() - t < 0.06 do end
         return torch.FloatTensor(8, 4):normal(), torch.LongTensor(8):random(1, 3), { count = 8 }
      end
   end }
local val = require('moontorch.data').Synthetic{ n = 16, batchSize = 8, shape = { 4 }, nClasses = 3, seed = 10 }
train.Trainer{ model = nn.Sequential():add(nn.Linear(4, 3)), criterion = nn.CrossEntropyCriterion(),
   optimizer = optim.sgd, config = { learningRate = 0.1 }, schedule = function() return 0.1 end, train = src,
   val = val, nEpochs = 1,
   format = 'tty spec' }:fit()
]])
      f:close()
      local out = tmpdir .. '/tty_run.out'
      local cmd = ('LUA_PATH=%q script -qec %q /dev/null > %q 2>&1'):format(package.path,
         'luajit ' .. prog, out)
      assert.is_true(os.execute(cmd) == 0, 'the run under script(1) failed: ' .. (io.open(out):read('*a')))
      local text = io.open(out):read('*a')
      local _, redraws = text:gsub('\r[^\n]', '') -- not the terminal's \r\n for a newline
      assert.is_true(redraws >= 3, ('expected the bar redrawn in place (carriage returns), got %d:\n%s')
         :format(redraws, text))
      assert.matches('ETA %d', text)
      assert.matches('12/12', text)
   end)

   it('refuses an unknown option, naming it', function()
      util.assert_error(function() classifier(nil, { checkpointEvry = 100 }) end,
         "train.Trainer: unknown option 'checkpointEvry'", 'checkpointEvery')
      local ok, err = pcall(classifier, nil, { saev = 'x' })
      assert.is_false(ok)
      assert.matches("unknown option 'saev'", err)
      -- a missing required option is named, not an index error inside
      local t = classifier()
      local function without(k)
         local o = { model = t.model, criterion = t.criterion, optimizer = t.optimizer, schedule = t.schedule,
            train = t.train, val = t.val, nEpochs = 1, quiet = true }
         o[k] = nil
         return o
      end
      util.assert_error(function() train.Trainer(without('val')) end, "option 'val' is required")
      util.assert_error(function() train.Trainer(without('schedule')):fit() end, 'training needs schedule')
      util.assert_error(function() train.Trainer(without('nEpochs')):fit() end, 'fit needs nEpochs')
   end)

   it('refuses a checkpoint of another format', function()
      local t = classifier(nil, { format = 'other 1', name = 'spec' })
      util.assert_error(function() t:resume(tmpdir .. '/a') end, 'not a checkpoint of this recipe', 'spec 1')
   end)
end)
