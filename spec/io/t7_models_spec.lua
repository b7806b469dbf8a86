-- t7_models_spec.lua: a ResNet-50 (moontorch.models) through Torch7's format and back: every
-- parameter and buffer, and the output of one forward pass. Kept apart from io/t7_compat_spec.lua
-- because it takes seconds: ASAN_SKIP's and the fast suite's pattern "models" skip it too.
local torch = require 'moontorch'
local util = require 'spec.util'

describe('a ResNet-50 (moontorch.models) saved and loaded', function()
   it('keeps every parameter and buffer and computes the same output', function()
      local models = require 'moontorch.models'
      local m = models.create('resnet50')
      -- in memory: the same encoder and reader as torch.save/load, without syncing 200 MB to disk
      local back = torch.deserialize(torch.serialize(m))
      local p1, p2 = m:parameters(), back:parameters()
      assert.are.equal(#p1, #p2)
      assert.are.equal(161, #p1)
      for i = 1, #p1 do
         assert.is_true(p1[i]:isSameSizeAs(p2[i]) and p1[i]:eq(p2[i]):all(), 'parameter ' .. i)
      end
      local m1, m2 = m:listModules(), back:listModules()
      assert.are.equal(#m1, #m2)
      local nbuf = 0
      for i = 1, #m1 do
         assert.are.equal(torch.type(m1[i]), torch.type(m2[i]))
         for _, k in ipairs { 'running_mean', 'running_var' } do
            if m1[i][k] then
               assert.is_true(m1[i][k]:eq(m2[i][k]):all(), k .. ' of module ' .. i)
               nbuf = nbuf + 1
            end
         end
      end
      assert.are.equal(2 * 53, nbuf)
      m:evaluate()
      back:evaluate()
      local x = util.rand_tensor({ 1, 3, 224, 224 }, 'torch.FloatTensor')
      local want = m:forward(x):clone()
      local got = back:forward(x)
      assert.is_true(want:eq(got):all() and want:ne(want):sum() == 0, 'forward output')
   end)
end)
