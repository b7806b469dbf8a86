-- random_spec.lua: the Philox generator through Torch7's API: reproducibility, state,
-- distribution checks with statistical bounds (5 sigma, n = 100k), dtypes and errors.
local torch = require 'moontorch'
local util = require 'spec.util'

local N = 100000

local function moments(t)
   local v = util.flat(t)
   local s, s2, lo, hi = 0, 0, math.huge, -math.huge
   for i = 1, #v do
      local x = v[i]
      assert(x == x, 'NaN drawn')
      s, s2 = s + x, s2 + x * x
      lo, hi = math.min(lo, x), math.max(hi, x)
   end
   local mean = s / #v
   return mean, s2 / #v - mean * mean, lo, hi, v
end

local function seed() return math.random(1, 2 ^ 40) end

describe('random', function()
   it('the same seed gives the same numbers; different seeds differ', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local s = seed()
         torch.manualSeed(s)
         local a = util.flat(torch.Tensor(50):type(ty):uniform())
         local b = util.flat(torch.Tensor(50):type(ty):normal())
         torch.manualSeed(s)
         util.assert_close(torch.Tensor(50):type(ty):uniform(), a, { atol = 0, rtol = 0 }, 'uniform replay ' .. ty)
         util.assert_close(torch.Tensor(50):type(ty):normal(), b, { atol = 0, rtol = 0 }, 'normal replay ' .. ty)
         assert.are.equal(s, torch.initialSeed())
         torch.manualSeed(s + 1)
         local c = util.flat(torch.Tensor(50):type(ty):uniform())
         local same = 0
         for i = 1, 50 do if a[i] == c[i] then same = same + 1 end end
         assert.is_true(same < 5, ty .. ': seeds s and s+1 gave ' .. same .. ' equal draws of 50')
      end
   end)

   it('torch.seed() sets and returns a fresh seed', function()
      local a = torch.seed()
      assert.are.equal('number', type(a))
      assert.are.equal(a, torch.initialSeed())
      local x = util.flat(torch.rand(5))
      torch.manualSeed(a)
      assert.are.same(x, util.flat(torch.rand(5)))
      assert.are_not.equal(a, torch.seed())
   end)

   it('draws continue the stream: two draws of n equal one draw of 2n', function()
      local s = seed()
      torch.manualSeed(s)
      local a = util.flat(torch.rand(7))
      local b = util.flat(torch.rand(7))
      torch.manualSeed(s)
      local ab = util.flat(torch.rand(14))
      for i = 1, 7 do
         assert.are.equal(ab[i], a[i])
         assert.are.equal(ab[7 + i], b[i])
      end
   end)

   it('getRNGState / setRNGState reproduce draws', function()
      torch.manualSeed(seed())
      torch.randn(13)
      local state = torch.getRNGState()
      assert.are.equal('torch.ByteTensor', state:type())
      local a = util.flat(torch.randn(20))
      local r = util.flat(torch.randperm(10))
      torch.setRNGState(state)
      util.assert_close(torch.randn(20), a, { atol = 0, rtol = 0 }, 'randn after setRNGState')
      assert.are.same(r, util.flat(torch.randperm(10)))
      util.assert_error(function() torch.setRNGState(5) end, 'setRNGState')
   end)

   it('the numbers do not depend on the thread count', function()
      local s, n = seed(), 3 * 32768 + 17
      local threads = torch.getnumthreads()
      torch.manualSeed(s)
      torch.setnumthreads(1)
      local a = torch.DoubleTensor(n):normal()
      torch.setnumthreads(math.max(2, threads))
      torch.manualSeed(s)
      local b = torch.DoubleTensor(n):normal()
      torch.setnumthreads(threads)
      assert.are.equal(0, (a - b):abs():max())
   end)

   it('uniform(a, b): in [a, b), mean and variance within 5 sigma, float64/32/16 and bfloat16', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local a = math.random() * 4 - 2
         local b = a + 0.5 + math.random() * 3
         local t = torch.Tensor(N):type(ty)
         assert.is_true(rawequal(t, t:uniform(a, b)))
         local mean, var, lo, hi = moments(t)
         local w = b - a
         local q = ty == 'torch.HalfTensor' and 2 ^ -8 * math.max(math.abs(a), math.abs(b))
            or ty == 'torch.BFloat16Tensor' and 2 ^ -6 * math.max(math.abs(a), math.abs(b)) or 0
         assert.is_true(lo >= a - q and hi < b, ('%s: range [%g, %g] outside [%g, %g)'):format(ty, lo, hi, a, b))
         assert.is_true(lo < a + 0.001 * w + q and hi > b - 0.001 * w - q, ty .. ': draws do not fill the range')
         local sd = w / math.sqrt(12)
         assert.is_true(math.abs(mean - (a + b) / 2) < 5 * sd / math.sqrt(N) + q, ty .. ': mean ' .. mean)
         local var_sd = math.sqrt((w ^ 4 / 80 - sd ^ 4) / N)
         assert.is_true(math.abs(var - sd * sd) < 5 * var_sd + 2 * q * w, ty .. ': variance ' .. var)
      end
      local _, _, lo, hi = moments(torch.rand(1000))
      assert.is_true(lo >= 0 and hi < 1)
      assert.are.equal(torch.getdefaulttensortype(), torch.rand(2, 3):type())
   end)

   it('uniform on integer tensors takes the floor: t:random(a, b) covers [a, b]', function()
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.FloatTensor' } do
         local t = torch.Tensor(5000):type(ty):random(3, 9)
         local seen = {}
         for _, x in ipairs(util.flat(t)) do
            assert.is_true(x == math.floor(x) and x >= 3 and x <= 9, ty .. ': drew ' .. x)
            seen[x] = true
         end
         for k = 3, 9 do assert.is_true(seen[k], ty .. ': never drew ' .. k) end
      end
      local r = torch.random(5)
      assert.is_true(r >= 1 and r <= 5 and r == math.floor(r))
      local u = torch.uniform(2, 3)
      assert.is_true(u >= 2 and u < 3)
   end)

   it('normal(mean, std): sample mean and std within 5 sigma, float64/32/16', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         local mu, sd = math.random() * 4 - 2, 0.5 + math.random() * 2
         local t = torch.Tensor(N):type(ty)
         assert.is_true(rawequal(t, t:normal(mu, sd)))
         local mean, var, lo, hi = moments(t)
         local q = ty == 'torch.HalfTensor' and 0.01 or 0
         assert.is_true(math.abs(mean - mu) < 5 * sd / math.sqrt(N) + q, ty .. ': mean ' .. mean .. ' vs ' .. mu)
         assert.is_true(math.abs(math.sqrt(var) - sd) < 5 * sd / math.sqrt(2 * N) + q, ty .. ': std ' .. math.sqrt(var))
         -- the tails exist but are not absurd: a few draws beyond 3 sigma, none beyond 7
         assert.is_true(lo < mu - 3 * sd and hi > mu + 3 * sd and lo > mu - 7 * sd and hi < mu + 7 * sd)
      end
      local mean, var = moments(torch.randn(N))
      assert.is_true(math.abs(mean) < 5 / math.sqrt(N) and math.abs(var - 1) < 5 * math.sqrt(2 / N))
   end)

   it('bernoulli(p): only 0 and 1, rate within 5 sigma; probability tensors', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.HalfTensor', 'torch.ByteTensor', 'torch.LongTensor' } do
         local p = 0.05 + 0.9 * math.random()
         local t = torch.Tensor(N):type(ty)
         assert.is_true(rawequal(t, t:bernoulli(p)))
         local ones = 0
         for _, x in ipairs(util.flat(t)) do
            assert.is_true(x == 0 or x == 1, ty .. ': drew ' .. x)
            ones = ones + x
         end
         assert.is_true(math.abs(ones / N - p) < 5 * math.sqrt(p * (1 - p) / N),
            ty .. ': rate ' .. ones / N .. ' vs ' .. p)
      end
      local probs = torch.DoubleTensor(N):fill(0.25)
      probs:narrow(1, 1, N / 2):fill(0.75)
      local t = torch.FloatTensor(N):bernoulli(probs)
      local first = t:narrow(1, 1, N / 2):sum() / (N / 2)
      local second = t:narrow(1, N / 2 + 1, N / 2):sum() / (N / 2)
      local sd = 5 * math.sqrt(0.75 * 0.25 / (N / 2))
      assert.is_true(math.abs(first - 0.75) < sd and math.abs(second - 0.25) < sd, first .. ' ' .. second)
   end)

   it('non-contiguous tensors get the row-major draws of a contiguous one', function()
      local s = seed()
      torch.manualSeed(s)
      local want = util.flat(torch.DoubleTensor(4, 6):uniform(-1, 1))
      local base = torch.DoubleTensor(6, 4):zero()
      torch.manualSeed(s)
      base:t():uniform(-1, 1)
      util.assert_close(base:t(), want, { atol = 0, rtol = 0 }, 'transposed uniform')
   end)

   it('randperm(n) is a permutation of 1..n (default type) and depends on the seed', function()
      for _, n in ipairs { 1, 2, 17, 1000 } do
         local p = torch.randperm(n)
         assert.are.equal(torch.getdefaulttensortype(), p:type())
         local seen = {}
         for _, x in ipairs(util.flat(p)) do
            assert.is_true(x >= 1 and x <= n and not seen[x], 'not a permutation')
            seen[x] = true
         end
      end
      local s = seed()
      torch.manualSeed(s)
      local a = util.flat(torch.randperm(50))
      torch.manualSeed(s + 7)
      local b = util.flat(torch.randperm(50))
      assert.are_not.same(a, b)
      -- first position roughly uniform over 1..n
      local counts = { 0, 0, 0, 0 }
      for _ = 1, 4000 do
         local f = torch.randperm(4)[1]
         counts[f] = counts[f] + 1
      end
      for k = 1, 4 do
         assert.is_true(math.abs(counts[k] - 1000) < 5 * math.sqrt(4000 * 0.25 * 0.75), 'randperm bias')
      end
   end)

   it('rand/randn accept a result tensor and a size storage', function()
      local r = torch.DoubleTensor()
      assert.is_true(rawequal(r, torch.rand(r, 3, 4)))
      assert.are.same({ 3, 4 }, r:size():totable())
      local x = torch.randn(torch.LongStorage { 2, 5 })
      assert.are.same({ 2, 5 }, x:size():totable())
   end)

   it('cuts a fractional seed toward zero, as Torch7 does', function()
      local s = seed() % 100000
      torch.manualSeed(s + 0.75)
      local a = torch.rand(5)
      assert.are.equal(s, torch.initialSeed())
      torch.manualSeed(s)
      assert.is_true(torch.equal(a, torch.rand(5)))
      torch.manualSeed(-s - 0.5)
      assert.are.equal(-s, torch.initialSeed())
   end)

   it('refuses bad parameters with clear messages', function()
      util.assert_error(function() torch.rand(3):uniform(2, 1) end, 'uniform', '2', '1')
      util.assert_error(function() torch.rand(3):normal(0, -1) end, 'normal', '-1')
      util.assert_error(function() torch.rand(3):bernoulli(1.5) end, 'bernoulli', '1.5')
      util.assert_error(function() torch.LongTensor(3):normal() end, 'normal', 'int64')
      util.assert_error(function() torch.manualSeed(0 / 0) end, 'manualSeed', 'nan')
      util.assert_error(function() torch.manualSeed(1 / 0) end, 'manualSeed', 'inf')
      util.assert_error(function() torch.randperm(-1) end, 'randperm')
   end)

   util.gpu_it('CUDA draws the same numbers as the CPU for a seed', function()
      local s = seed()
      torch.manualSeed(s)
      local cpu_u = torch.FloatTensor(1000):uniform(-2, 3)
      local cpu_n = torch.FloatTensor(1000):normal(1, 2)
      torch.manualSeed(s)
      local gpu_u = torch.FloatTensor(1000):cuda():uniform(-2, 3):float()
      local gpu_n = torch.FloatTensor(1000):cuda():normal(1, 2):float()
      util.assert_close(gpu_u, cpu_u, { atol = 1e-6, rtol = 1e-6 }, 'uniform cuda vs cpu')
      util.assert_close(gpu_n, cpu_n, { atol = 1e-5, rtol = 1e-5 }, 'normal cuda vs cpu')
   end)
end)
