-- forms_spec.lua: Torch7's other spellings of existing functions (tensor/forms.lua), the
-- lower-level class functions, and the exponential, Cauchy and geometric draws (checked by their
-- quantiles and a chi-square test at a fixed seed: tests that a wrong formula fails).
local torch = require 'moontorch'
local util = require 'spec.util'

describe('method and function forms', function()
   it('x:zeros/ones/rand/randn/eye/randperm resize and fill x', function()
      local x = torch.FloatTensor(7)
      assert.are.equal(x, x:zeros(3, 5))
      assert.are.same({ 3, 5 }, x:size():totable())
      assert.are.equal(0, x:abs():max())
      x:ones(2, 3)
      assert.are.equal(6, x:sum())
      x:rand(4, 9)
      assert(x:min() >= 0 and x:max() < 1 and x:std() > 0.1)
      x:randn(33)
      assert(x:std() > 0.5)
      x:eye(3, 4)
      assert.are.equal(3, x:sum())
      assert.are.equal(1, x[3][3])
      local p = torch.LongTensor():randperm(9)
      local seen = {}
      for i = 1, 9 do seen[p[i]] = true end
      for i = 1, 9 do assert(seen[i], 'randperm misses ' .. i) end
   end)

   it('torch.f(x) forms of methods, mod/cmod, cdata and totable', function()
      local x = util.rand_tensor({ 3, 4 }, 'torch.DoubleTensor', -5, 5)
      assert.are.equal(12, torch.numel(x))
      assert.are.equal(2, torch.nDimension(x))
      assert.are.equal(1, torch.storageOffset(x))
      assert.are.equal(x:storage():size(), torch.storage(x):size())
      assert.are.equal('torch.ByteTensor', torch.byte(x):type())
      assert.are.equal(x:cdata(), torch.cdata(x))
      local y = util.rand_tensor({ 3, 4 }, 'torch.DoubleTensor', 1, 3)
      assert.are.equal(0, (torch.mod(x, 1.5) - torch.fmod(x, 1.5)):abs():max())
      assert.are.equal(0, (torch.cmod(x, y) - torch.cfmod(x, y)):abs():max())
      assert.are.equal(0, (x:clone():mod(2) - x:clone():fmod(2)):abs():max())
      local tt = torch.totable(x)
      assert.are.equal(x[2][3], tt[2][3])
      assert.are.same(torch.LongStorage { 4, 2 }:totable(), torch.totable(torch.LongStorage { 4, 2 }))
      util.assert_error(function() torch.numel(3) end, 'torch.numel', 'expected a tensor')
      util.assert_error(function() torch.totable('x') end, 'torch.totable', 'expected a tensor or a storage')
   end)

   it('x:real() converts to the default tensor type', function()
      local before = torch.getdefaulttensortype()
      local h = util.rand_tensor({ 2, 5 }, 'torch.HalfTensor', -4, 4)
      for _, default in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         torch.setdefaulttensortype(default)
         local r = h:real()
         assert.are.equal(default, r:type())
         util.assert_close(r:double(), h:double(), { atol = 0, rtol = 0 }, 'values')
         assert.are.equal(r, r:real()) -- already of that type: the same tensor, as x:type(t) gives
      end
      torch.setdefaulttensortype(before)
      util.assert_error(function() torch.DoubleTensor.real(3) end, 'real')
   end)

   it('newmetatable and setmetatable make and join classes', function()
      local name = 'formsSpec' .. math.random(1e9)
      local made
      local mt = torch.newmetatable(name .. '.Thing', nil, function(v) made = v; return v end)
      function mt:twice() return 2 * self.v end
      assert.are.equal(5, _G[name].Thing(5))
      assert.are.equal(5, made)
      local obj = torch.setmetatable({ v = 21 }, name .. '.Thing')
      assert.are.equal(42, obj:twice())
      assert.are.equal(name .. '.Thing', torch.type(obj))
      util.assert_error(function() torch.setmetatable({}, name .. '.None') end, 'unknown class')
      _G[name] = nil
   end)
end)

describe('exponential, cauchy and geometric draws', function()
   local N = 20000
   local function sorted(t)
      local s = t:double():view(t:nElement()):sort()
      return function(q) return s[math.max(1, math.floor(q * N))] end
   end

   it('exponential has the quantiles -log(1 - q) / lambda', function()
      torch.manualSeed(11)
      local lambda = 2.5
      local q = sorted(torch.FloatTensor(N):exponential(lambda))
      for _, p in ipairs { 0.1, 0.25, 0.5, 0.75, 0.9 } do
         local want = -math.log(1 - p) / lambda
         assert(math.abs(q(p) - want) < 0.05 * want + 0.01, ('q%.2f: %g vs %g'):format(p, q(p), want))
      end
      local x = torch.exponential(lambda)
      assert(type(x) == 'number' and x >= 0)
   end)

   it('cauchy has median m and quartiles m -+ sigma', function()
      torch.manualSeed(12)
      local m, sigma = -1.5, 0.7
      local q = sorted(torch.DoubleTensor(N):cauchy(m, sigma))
      assert(math.abs(q(0.5) - m) < 0.05, 'median ' .. q(0.5))
      assert(math.abs(q(0.25) - (m - sigma)) < 0.06, 'q1 ' .. q(0.25))
      assert(math.abs(q(0.75) - (m + sigma)) < 0.06, 'q3 ' .. q(0.75))
   end)

   it('geometric gives integers i >= 1 with P(i) = (1-p) p^(i-1) (chi-square)', function()
      torch.manualSeed(13)
      local p = 0.35
      local g = torch.IntTensor(N):geometric(p)
      assert(g:min() >= 1)
      local chi2, tail = 0, N
      for i = 1, 5 do
         local want = N * (1 - p) * p ^ (i - 1)
         local got = g:eq(i):sum()
         chi2 = chi2 + (got - want) ^ 2 / want
         tail = tail - want
      end
      local got_tail = g:gt(5):sum()
      chi2 = chi2 + (got_tail - tail) ^ 2 / tail
      assert(chi2 < 20.5, 'chi-square ' .. chi2 .. ' over 5 degrees of freedom (p = 0.001)')
   end)

   it('take a generator, reproduce with it, and name bad parameters', function()
      local g = torch.Generator()
      torch.manualSeed(g, 99)
      local a = torch.DoubleTensor(5):cauchy(g, 0, 1)
      torch.manualSeed(g, 99)
      local b = torch.DoubleTensor(5):cauchy(g)
      assert.are.equal(0, (a - b):abs():max())
      util.assert_error(function() torch.FloatTensor(3):exponential(0) end, 'exponential', 'lambda')
      util.assert_error(function() torch.FloatTensor(3):cauchy(0, -1) end, 'cauchy', 'sigma')
      util.assert_error(function() torch.geometric(1) end, 'geometric', '0 < p < 1')
   end)
end)
