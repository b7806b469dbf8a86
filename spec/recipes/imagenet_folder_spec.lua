-- imagenet_folder_spec.lua: recipes/resnet50_imagenet.lua end to end on a tiny generated
-- ImageFolder (3 classes of random smooth JPEGs, one broken file): it trains and validates,
-- writes log.csv, plot.svg, a TensorBoard event file (read back by spec/fixtures/read_tfevents.py)
-- and a checkpoint; -resume after epoch 1 reproduces the uninterrupted run bit for bit; shards
-- packed by recipes/tools/pack.lua give the ImageFolder's numbers; -dist without a launcher (one
-- rank) gives the plain run's numbers; checkpoints of another depth and unsorted val/ folders are
-- refused with messages that name them; an empty training image is left out of the cache.
-- ctest: train
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local runs = require 'spec.recipes.runs'
local logger = require 'moontorch.util.csvlog'
local ck = require 'moontorch.checkpoint'
local C = require('moontorch.internal').clib

require 'recipes.resnet50_imagenet'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end
local slurp = util.slurp
local finite = runs.finite

-- run the recipe; returns its output (stdout and stderr) and exit status
local function run(args) return runs.run('resnet50_imagenet', args) end

local TINY = runs.IMAGENET_TINY

describe('recipes/resnet50_imagenet.lua on an ImageFolder', function()
   -- the runs leave checkpoints of ~90 MB each
   teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

   local data = require 'moontorch.data'
   local root = tmp('imagenet')
   local classes = { 'n01440764', 'n01443537', 'n01484850' }

   -- a random smooth image: a class tint plus a product of random sinusoids
   local function image(c)
      local h, w = 30, 40
      local img = torch.ByteTensor(h, w, 3)
      local fx, fy, px, py = 0.05 + 0.3 * math.random(), 0.05 + 0.3 * math.random(), 6 * math.random(),
         6 * math.random()
      for y = 1, h do
         for x = 1, w do
            local v = math.sin(fx * x + px) * math.cos(fy * y + py)
            for ch = 1, 3 do
               img[y][x][ch] = math.max(0, math.min(255, math.floor(128 + 70 * v + (ch == c and 50 or -20))))
            end
         end
      end
      return img
   end
   local function write(path, bytes)
      local f = assert(io.open(path, 'wb'))
      if type(bytes) == 'string' then f:write(bytes)
      else f:write(ffi.string(ffi.cast('const char *', C.mt_tensor_data(bytes.h)), bytes:nElement())) end
      f:close()
   end
   for _, split in ipairs({ 'train', 'val' }) do
      for c, name in ipairs(classes) do
         local dir = ('%s/%s/%s'):format(root, split, name)
         os.execute(('mkdir -p %q'):format(dir))
         for i = 1, split == 'train' and 6 or 2 do
            write(('%s/%s_%d.JPEG'):format(dir, name, i), data.image.encode(image(c), 'jpeg', 90))
         end
      end
   end
   -- an undecodable file in val: skipped and named, never fatal
   write(('%s/val/%s/broken.JPEG'):format(root, classes[2]), '\255\216\255\224 not really a JPEG')

   local function read_events(dir)
      local p = io.popen(('ls %q/events.out.tfevents.* 2>/dev/null'):format(dir))
      local path = p:read('*l')
      p:close()
      assert.truthy(path, 'no TensorBoard event file in ' .. dir)
      p = io.popen(('%s spec/fixtures/read_tfevents.py %q 2>&1; echo "rc=$?"'):format(util.PY, path))
      local text = p:read('*a')
      p:close()
      assert.truthy(text:match('rc=0%s*$'), text)
      local scalars = {}
      for step, value, taghex in text:gmatch('scalar %S+ (%d+) (%S+) (%x+)') do
         local tag = taghex:gsub('%x%x', function(x) return string.char(tonumber(x, 16)) end)
         scalars[tag] = scalars[tag] or {}
         scalars[tag][tonumber(step)] = tonumber(value)
      end
      return scalars
   end

   it('trains, validates, and writes log.csv, plot.svg, TensorBoard events and a checkpoint', function()
      local save = tmp('full')
      local out, code = run(('-data %q %s -save %q -seed 5'):format(root, TINY, save))
      assert.are.equal(0, code, out)
      assert.truthy(out:find('broken.JPEG', 1, true), 'the skipped file is named:\n' .. out)
      local cols, rows = logger.read(save .. '/log.csv')
      assert.truthy(cols, 'no log.csv')
      assert.are.equal(2, #rows)
      for e, r in ipairs(rows) do
         assert.are.equal(e, r.epoch)
         for _, c in ipairs({ 'train_loss', 'train_top1', 'val_loss', 'val_top1', 'val_top5', 'lr',
            'images_per_sec' }) do
            assert.is_true(finite(r[c]), ('epoch %d %s = %s'):format(e, c, tostring(r[c])))
         end
         assert.is_true(r.train_loss > 0 and r.val_loss > 0)
         assert.is_true(r.val_top1 >= 0 and r.val_top1 <= 1)
         assert.are.equal(1, r.val_top5) -- 3 classes: the target is always among the top 5
         util.assert_close({ r.lr }, { 0.1 * 4 / 256 }, { rtol = 1e-5 }, 'lr')
      end
      local svg = slurp(save .. '/plot.svg')
      assert.truthy(svg and svg:match('^<svg') and svg:match('</svg>\n$'), 'plot.svg')
      local ev = read_events(save)
      for tag, col in pairs({ ['train/loss'] = 'train_loss', ['train/top1'] = 'train_top1', ['val/top1'] = 'val_top1',
         ['val/top5'] = 'val_top5', ['train/lr'] = 'lr', ['train/images_per_sec'] = 'images_per_sec' }) do
         assert.truthy(ev[tag], 'no ' .. tag .. ' in the event file')
         for e = 1, 2 do -- float32 in the event file, 6 digits in the CSV
            util.assert_close({ ev[tag][e] }, { rows[e][col] }, { rtol = 2e-5, atol = 1e-6 }, tag)
         end
      end
      local tensors, meta = ck.load(save .. '/checkpoint.safetensors')
      assert.are.equal(2, meta.epoch)
      assert.are.equal(18, meta.depth)
      assert.are.equal(3, meta.nClasses)
      local n, linear = 0, false
      for name, t in pairs(tensors) do
         n = n + 1
         assert.is_true(finite(t:double():abs():sum()), name .. ' is not finite')
         if t:dim() == 2 and t:size(1) == 3 and t:size(2) == 512 then linear = true end
      end
      assert.is_true(n > 50, 'model tensors and optimizer state')
      assert.is_true(linear, 'a 3 x 512 classifier')
      assert.truthy(next(meta.optim or {}) or tensors['optim.dfdx'], 'optimizer state saved')
   end)

   it('-resume after epoch 1 gives exactly the uninterrupted run', function()
      local a, b = tmp('straight'), tmp('resumed')
      local args = ('-data %q %s -seed 9 -nesterov false -lrSchedule cosine'):format(root, TINY)
      local out1, code1 = run(('%s -save %q'):format(args, a))
      assert.are.equal(0, code1, out1)
      local out2, code2 = run(('%s -save %q -stopAfter 1'):format(args, b))
      assert.are.equal(0, code2, out2)
      local _, meta1 = ck.load(b .. '/checkpoint.safetensors')
      assert.are.equal(1, meta1.epoch)
      local out3, code3 = run(('%s -save %q -resume %q'):format(args, b, b))
      assert.are.equal(0, code3, out3)
      assert.truthy(out3:find('resumed from', 1, true), out3)
      local final = out1:match('final: train loss (%S+)')
      assert.truthy(final, out1)
      assert.are.equal(final, out3:match('final: train loss (%S+)'))
      local ta, ma = ck.load(a .. '/checkpoint.safetensors')
      local tb, mb = ck.load(b .. '/checkpoint.safetensors')
      assert.are.equal(ma.train_loss, mb.train_loss) -- the exact double
      assert.are.equal(ma.val_top1, mb.val_top1)
      for name, t in pairs(ta) do
         assert.truthy(tb[name], name)
         util.assert_close(tb[name], t, { atol = 0, rtol = 0 }, name)
      end
      local _, ra = logger.read(a .. '/log.csv')
      local _, rb = logger.read(b .. '/log.csv')
      assert.are.equal(2, #rb)
      for e = 1, 2 do
         for _, c in ipairs({ 'train_loss', 'train_top1', 'val_loss', 'val_top1', 'lr' }) do
            assert.are.equal(ra[e][c], rb[e][c], ('epoch %d %s'):format(e, c))
         end
      end
   end)

   it('reads shards packed by recipes/tools/pack.lua, with the numbers of the ImageFolder', function()
      local packed = tmp('packed')
      local p = io.popen(('luajit recipes/tools/pack.lua %q %q -quiet 2>&1; echo "exit status $?"')
         :format(root, packed))
      local pout = p:read('*a')
      p:close()
      assert.truthy(pout:match('exit status 0%s*$'), pout)
      local args = TINY .. ' -nEpochs 1 -save "" -seed 3 -cache off'
      local out1, code1 = run(('-data %q %s'):format(packed, args))
      assert.are.equal(0, code1, out1)
      assert.truthy(out1:find('(shards): 18 training and 7 validation images, 3 classes', 1, true), out1)
      local out2, code2 = run(('-data %q %s'):format(root, args))
      assert.are.equal(0, code2, out2)
      assert.truthy(out2:find('(folders)', 1, true), out2)
      -- the same samples in the same order: the same crops, hence the same training
      local final = out1:match('final: [^\n]*%)')
      assert.truthy(final, out1)
      assert.are.equal(final, out2:match('final: [^\n]*%)'))
   end)

   -- dist.init without a launcher is one process: its slice of each batch is the batch, its
   -- block of the cache the dataset, and averaging gradients over one rank changes nothing
   it('-dist without mpirun trains as one rank with the numbers of the plain run', function()
      local args = ('-data %q %s -nEpochs 1 -save "" -seed 3 -cache on'):format(root, TINY)
      local out1, code1 = run(args)
      assert.are.equal(0, code1, out1)
      local out2, code2 = run(args .. ' -dist -allreduce mpi -bucketMB 1')
      assert.are.equal(0, code2, out2)
      assert.truthy(out2:find('data-parallel on 1 ranks', 1, true), out2)
      assert.truthy(out2:find('-dist without a launcher: 1 rank; for N ranks start it as `mpirun -np N', 1, true), out2)
      assert.truthy(out2:find('cached train: 18 images', 1, true), out2)
      local final = out1:match('final: train loss (%S+)')
      assert.truthy(final, out1)
      assert.are.equal(final, out2:match('final: train loss (%S+)'))
   end)

   it('refuses a checkpoint of another depth', function()
      local out, code = run(('-data %q %s -save "" -depth 34 -resume %q'):format(root, TINY, tmp('full')))
      assert.are.equal(1, code, out)
      assert.truthy(out:find('the checkpoint is a ResNet-18, this run asks for -depth 34', 1, true), out)
   end)

   -- an empty training image is left out of the cache and skipped, not a reason to stream all
   it('caches train/ with an empty JPEG in it, skipping and naming that one', function()
      local withEmpty = tmp('withempty')
      os.execute(('mkdir -p %q && cp -r %q/train %q/val %q/'):format(withEmpty, root, root, withEmpty))
      write(('%s/train/%s/empty.JPEG'):format(withEmpty, classes[1]), '')
      local out, code = run(('-data %q %s -nEpochs 1 -save "" -cache on'):format(withEmpty, TINY))
      assert.are.equal(0, code, out)
      assert.truthy(out:find('cached train: 18 images', 1, true), out)
      assert.truthy(out:find('1 unreadable, left out and skipped (e.g. dataset cache: ' .. withEmpty .. '/train/'
         .. classes[1] .. '/empty.JPEG is empty)', 1, true), out)
      assert.falsy(out:find('not caching', 1, true), out)
   end)

   it('names a val/ folder that was not sorted into classes', function()
      local bad = tmp('flatval')
      os.execute(('mkdir -p %q/val && cp -r %q/train %q/'):format(bad, root, bad))
      local out, code = run(('-data %q %s -save ""'):format(bad, TINY))
      assert.are.equal(1, code, out)
      assert.truthy(out:find('flatval/val', 1, true), out)
      assert.truthy(out:find('no class folders', 1, true), out)
      assert.truthy(out:find('valprep.sh', 1, true), out)
   end)
end)
