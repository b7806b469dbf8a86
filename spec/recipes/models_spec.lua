-- models_spec.lua: the model zoo of moontorch.models: parameter counts against the published
-- ones, output shapes, fb.resnet.torch's initialisation, and gradients through a whole small
-- ResNet against finite differences (the composition: ConcatTable, CAddTable, shortcuts).
-- ctest: noasan: whole ResNets at several times the run time; the nn specs cover their layers
local torch = require 'moontorch'
local util = require 'spec.util'
require 'moontorch.nn'
local models = require 'moontorch.models'

-- count of a conv (no bias) + BN pair
local function convbn(nIn, nOut, k) return nIn * nOut * k * k + 2 * nOut end

-- CIFAR ResNet 6n+2 with shortcut B, computed layer by layer from the paper's table
local function cifar_count(depth, nClasses)
   local n = (depth - 2) / 6
   local total, nIn = convbn(3, 16, 3), 16
   for s, w in ipairs({ 16, 32, 64 }) do
      for b = 1, n do
         total = total + convbn(nIn, w, 3) + convbn(w, w, 3)
         if nIn ~= w or (b == 1 and s > 1) then total = total + convbn(nIn, w, 1) end
         nIn = w
      end
   end
   return total + 64 * nClasses + nClasses
end

local function with_float_default(f)
   local old = torch.getdefaulttensortype()
   torch.setdefaulttensortype('torch.FloatTensor')
   local ok, err = pcall(f)
   torch.setdefaulttensortype(old)
   if not ok then error(err, 0) end
end

describe('model parameter counts', function()
   local published = {
      -- fb.resnet.torch / torchvision, shortcut type B, 1000 classes
      { 'resnet18', 11689512 }, { 'resnet34', 21797672 }, { 'resnet50', 25557032 },
      { 'resnet101', 44549160 }, { 'resnet152', 60192808 },
      -- torchvision's alexnet and googlenet (without the auxiliary classifiers)
      { 'alexnet', 61100840 }, { 'googlenet', 6624904 },
      -- ImageNet widths with a 3x3 stem for 32x32 inputs (the usual "CIFAR ResNet-18")
      { 'cifar_resnet18', 11173962 },
   }
   for _, case in ipairs(published) do
      it(case[1] .. ' has ' .. case[2], function()
         with_float_default(function()
            local m = models.create(case[1])
            assert.are.equal(case[2], models.nParameters(m))
            local p = m:getParameters()
            assert.are.equal(case[2], p:nElement())
         end)
      end)
   end
   for _, depth in ipairs({ 20, 32, 44, 56, 110 }) do
      it(('CIFAR ResNet-%d'):format(depth), function()
         local expect = cifar_count(depth, 10)
         assert.are.equal(expect, models.nParameters(models.create('cifar_resnet' .. depth)))
         assert.are.equal(cifar_count(depth, 100) ,
            models.nParameters(models.resnet{ depth = depth, dataset = 'cifar100' }))
      end)
   end
   it('CIFAR ResNet-20 is the 0.27M of He et al. plus its two projection shortcuts', function()
      -- 269,722 with the paper's zero-padding shortcuts (A); B adds 16*32+2*32 and 32*64+2*64
      assert.are.equal(269722 + 576 + 2176, models.nParameters(models.create('cifar_resnet20')))
   end)
   it('small CNN', function()
      local w, h = 32, 128
      local expect = (1 * w * 9 + w) + 2 * w + (w * 2 * w * 9 + 2 * w) + 4 * w + (2 * w * 49 * h + h) + 2 * h
         + (h * 10 + 10)
      assert.are.equal(expect, models.nParameters(models.create('small_cnn')))
   end)
   it('rejects unknown models and depths', function()
      util.assert_error(function() models.create('resnet19') end, 'invalid ImageNet depth 19')
      util.assert_error(function() models.create('cifar_resnet21') end, 'CIFAR depth must be 6n+2')
      util.assert_error(function() models.create('vgg') end, "unknown model 'vgg'")
      util.assert_error(function() models.resnet{ depth = 18, shortcutType = 'A' } end, 'shortcutType')
   end)
end)

describe('model outputs', function()
   local cases = {
      { 'small_cnn', { 3, 1, 28, 28 }, 10 },
      { 'cifar_resnet20', { 2, 3, 32, 32 }, 10 },
      { 'cifar_resnet18', { 2, 3, 32, 32 }, 10 },
      { 'resnet18', { 1, 3, 224, 224 }, 1000 },
      { 'resnet50', { 1, 3, 224, 224 }, 1000 },
      { 'alexnet', { 1, 3, 224, 224 }, 1000 },
      { 'googlenet', { 1, 3, 224, 224 }, 1000 },
   }
   for _, c in ipairs(cases) do
      it(('%s maps %s to %d scores'):format(c[1], table.concat(c[2], 'x'), c[3]), function()
         with_float_default(function()
            local m = models.create(c[1]):float()
            m:evaluate()
            local x = torch.FloatTensor(torch.LongStorage(c[2])):normal()
            local y = m:forward(x)
            assert.are.same({ c[2][1], c[3] }, y:size():totable())
            local s = y:sum()
            assert.is_true(s == s and math.abs(s) < math.huge, 'non-finite output')
            assert.is_true(y:std() > 0, 'constant output')
         end)
      end)
   end
end)

describe('fb.resnet.torch initialisation', function()
   it('draws conv weights from N(0, sqrt(2/(kW*kH*nOut))), BN 1/0, Linear bias 0', function()
      with_float_default(function()
         local m = models.create('resnet34')
         local convs = m:findModules('nn.SpatialConvolution')
         assert.is_true(#convs > 30)
         for _, c in ipairs(convs) do
            assert.is_nil(c.bias, 'convolutions carry no bias')
            local n = c.weight:nElement()
            if n > 200000 then -- large enough for tight moments
               local want = math.sqrt(2 / (c.kW * c.kH * c.nOutputPlane))
               local std, mean = c.weight:std(), c.weight:mean()
               assert.is_true(math.abs(std / want - 1) < 0.02, ('std %g, want %g'):format(std, want))
               assert.is_true(math.abs(mean) < 4 * want / math.sqrt(n), 'mean ' .. mean)
            end
         end
         for _, bn in ipairs(m:findModules('nn.SpatialBatchNormalization')) do
            assert.are.equal(1, bn.weight:min()); assert.are.equal(1, bn.weight:max())
            assert.are.equal(0, bn.bias:abs():max())
         end
         local fc = m:findModules('nn.Linear')[1]
         assert.are.equal(0, fc.bias:abs():max())
         assert.is_true(fc.weight:abs():max() > 0)
      end)
   end)

   it('zero-initialises the last BN of each block when asked', function()
      local plain = models.resnet{ depth = 20, dataset = 'cifar10' }
      local zeroed = models.resnet{ depth = 20, dataset = 'cifar10', zeroInitLastBN = true }
      local function zeros(m)
         local z = 0
         for _, bn in ipairs(m:findModules('nn.SpatialBatchNormalization')) do
            if bn.weight:abs():max() == 0 then z = z + 1 end
         end
         return z
      end
      assert.are.equal(0, zeros(plain))
      assert.are.equal(9, zeros(zeroed)) -- 3 stages x 3 blocks
      local bott = models.resnet{ depth = 50, zeroInitLastBN = true }
      assert.are.equal(16, zeros(bott))    -- 3 + 4 + 6 + 3 bottlenecks
   end)
end)

describe('gradients through a whole network', function()
   -- central differences of sum(out .* g) on a few random coordinates, float64, BN in training
   -- mode (batch statistics: the loss is a smooth function of every input and weight)
   local function check(m, x)
      m:training()
      local params, grads = m:getParameters()
      params:copy(torch.DoubleTensor(params:nElement()):uniform(-0.5, 0.5))
      local out = m:forward(x)
      local g = torch.DoubleTensor(out:size()):uniform(-1, 1)
      grads:zero()
      local gx = m:backward(x, g):clone()
      local gp = grads:clone()
      local function f() return m:forward(x):clone():cmul(g):sum() end
      local eps = 1e-6
      local function fd(t, i)
         local old = t[i]
         t[i] = old + eps
         local a = f()
         t[i] = old - eps
         local b = f()
         t[i] = old
         return (a - b) / (2 * eps)
      end
      local xf, gxf = x:view(-1), gx:view(-1)
      for _ = 1, 6 do
         local i = math.random(1, params:nElement())
         local want = fd(params, i)
         util.assert_close({ gp[i] }, { want }, { atol = 1e-5, rtol = 1e-4 }, 'dparam ' .. i)
         local j = math.random(1, xf:nElement())
         want = fd(xf, j)
         util.assert_close({ gxf[j] }, { want }, { atol = 1e-5, rtol = 1e-4 }, 'dinput ' .. j)
      end
   end

   it('CIFAR ResNet-8 (basic blocks, projection shortcuts)', function()
      local m = models.resnet{ depth = 8, dataset = 'cifar10' }:double()
      check(m, torch.DoubleTensor(3, 3, 32, 32):uniform(-1, 1))
   end)

   it('small CNN without dropout', function()
      local m = models.small_cnn{ width = 4, hidden = 8, dropout = 0 }:double()
      check(m, torch.DoubleTensor(5, 1, 28, 28):uniform(-1, 1))
   end)
end)
