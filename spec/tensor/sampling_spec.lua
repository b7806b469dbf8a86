-- sampling_spec.lua: logNormal, multinomial (with and without replacement, 1-d and 2-d) and the
-- alias method, checked statistically at fixed seeds: chi-square tests of the drawn counts
-- against the expected ones (critical value at p = 0.001, so a wrong sampler fails), moments of
-- log-normal draws, no repeated index without replacement, and the errors for bad arguments.
local torch = require 'moontorch'
local util = require 'spec.util'
local sqrt, log = math.sqrt, math.log

-- the chi-square 0.999 quantile for df degrees of freedom (Wilson-Hilferty, z = 3.090)
local function chi2_crit(df)
   local k = 2 / (9 * df)
   return df * (1 - k + 3.090 * sqrt(k)) ^ 3
end
-- chi-square statistic of counts against probabilities (p sums to 1) over n draws; categories
-- with p == 0 must have no draw at all
local function chi2_check(counts, p, n, what)
   local stat, df = 0, -1
   for j = 1, #p do
      if p[j] == 0 then
         assert(counts[j] == 0, ('%s: category %d has probability 0 but was drawn %d times'):format(what, j, counts[j]))
      else
         local e = n * p[j]
         stat, df = stat + (counts[j] - e) ^ 2 / e, df + 1
      end
   end
   assert(stat < chi2_crit(df), ('%s: chi-square %.2f over %d df exceeds %.2f (counts %s)'):format(what, stat, df,
      chi2_crit(df), table.concat(counts, ' ')))
   return stat
end
local function normalized(w)
   local s, p = 0, {}
   for _, v in ipairs(w) do s = s + v end
   for j, v in ipairs(w) do p[j] = v / s end
   return p
end
local function count(flat, K)
   local c = {}
   for j = 1, K do c[j] = 0 end
   for _, v in ipairs(flat) do c[v] = c[v] + 1 end
   return c
end
local function random_weights(K, zero_at)
   local w = {}
   for j = 1, K do w[j] = 0.2 + 3 * math.random() end
   if zero_at then w[zero_at] = 0 end
   return w
end

describe('multinomial', function()
   before_each(function() torch.manualSeed(1234); math.randomseed(1234) end)

   it('with replacement, 1-d: counts follow the weights (chi-square), a 0 weight is never drawn', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local w = random_weights(7, 4)
         local p = torch.DoubleTensor(w):type(ty)
         local n = 20001
         local s = torch.multinomial(p, n, true)
         assert.are.equal('torch.LongTensor', s:type())
         assert.are.same({ n }, s:size():totable())
         chi2_check(count(util.flat(s), 7), normalized(util.flat(p)), n, 'multinomial ' .. ty)
      end
   end)

   it('with replacement, 2-d: every row follows its own weights; result-first forms', function()
      local W = { random_weights(5), random_weights(5, 2), random_weights(5) }
      local p = torch.DoubleTensor(W)
      local n = 6001
      local s = torch.multinomial(p, n, true)
      assert.are.same({ 3, n }, s:size():totable())
      for r = 1, 3 do chi2_check(count(util.flat(s[r]), 5), normalized(W[r]), n, 'row ' .. r) end
      local res = torch.LongTensor(2, 2)
      assert.is_true(rawequal(res, torch.multinomial(res, p, 7, true)))
      assert.are.same({ 3, 7 }, res:size():totable())
      local res2 = torch.LongTensor()
      assert.is_true(rawequal(res2, p.multinomial(res2, p, 4))) -- Torch7's p.multinomial(res, p, n)
      assert.are.same({ 3, 4 }, res2:size():totable())
   end)

   it('without replacement: no index repeats, first and second draws follow their laws', function()
      local w = random_weights(5)
      local p1 = normalized(w)
      local R = 3001
      local p = torch.DoubleTensor(1, 5):copy(torch.DoubleTensor(w)):expand(R, 5) -- non-contiguous
      local s = torch.multinomial(p, 3)
      assert.are.same({ R, 3 }, s:size():totable())
      local rows = s:totable()
      local first, second = {}, {}
      for r = 1, R do
         local a, b, c = rows[r][1], rows[r][2], rows[r][3]
         assert(a ~= b and a ~= c and b ~= c, ('row %d repeats an index: %d %d %d'):format(r, a, b, c))
         first[r], second[r] = a, b
      end
      chi2_check(count(first, 5), p1, R, 'first draw')
      -- P(second = j) = sum over i ~= j of p_i p_j / (1 - p_i)
      local p2 = {}
      for j = 1, 5 do
         p2[j] = 0
         for i = 1, 5 do if i ~= j then p2[j] = p2[j] + p1[i] * p1[j] / (1 - p1[i]) end end
      end
      chi2_check(count(second, 5), p2, R, 'second draw')
      -- n = K: every row is a permutation; zero weights come last
      local perm = torch.multinomial(torch.DoubleTensor { 3, 0, 1, 2 }, 3)
      local seen = {}
      for _, v in ipairs(util.flat(perm)) do
         assert(v ~= 2 and not seen[v], 'without replacement drew a zero weight or a repeat')
         seen[v] = true
      end
   end)

   it('is reproducible from the seed', function()
      local p = torch.DoubleTensor(random_weights(9))
      torch.manualSeed(77)
      local a = util.flat(torch.multinomial(p, 50, true))
      torch.manualSeed(77)
      assert.are.same(a, util.flat(torch.multinomial(p, 50, true)))
   end)

   it('refuses bad arguments naming what is wrong', function()
      local p = torch.DoubleTensor { 1, 2, 3 }
      util.assert_error(function() torch.multinomial(torch.DoubleTensor(2, 2, 2):fill(1), 1) end, 'multinomial', '3-d')
      util.assert_error(function() torch.multinomial(torch.LongTensor { 1, 2 }, 1) end, 'multinomial', 'int64')
      util.assert_error(function() torch.multinomial(p, 0) end, 'multinomial', 'positive integer')
      util.assert_error(function() torch.multinomial(p, 4) end, 'multinomial', 'without replacement', '3 categories')
      util.assert_error(function() torch.multinomial(torch.DoubleTensor { 1, -1 }, 1) end, 'multinomial', 'invalid')
      util.assert_error(function() torch.multinomial(torch.DoubleTensor { { 1, 1 }, { 0, 0 } }, 1) end, 'row 2',
         'sums to 0')
      util.assert_error(function() torch.multinomial(torch.DoubleTensor { 0 / 0, 1 }, 1) end, 'multinomial', 'invalid')
      util.assert_error(function() torch.multinomial(torch.DoubleTensor(), p, 2) end, 'multinomial', 'LongTensor')
      util.assert_error(function() torch.multinomial(p, 2, 1) end, 'replacement must be a boolean')
   end)
end)

describe('the alias method', function()
   before_each(function() torch.manualSeed(99); math.randomseed(99) end)

   it('draws follow the probabilities (chi-square), into a reused state and a non-contiguous output', function()
      local w = random_weights(6, 5)
      local probs = torch.DoubleTensor(w)
      local state = { torch.LongTensor(), torch.DoubleTensor() }
      assert.is_true(rawequal(state, torch.multinomialAliasSetup(probs, state)))
      assert.are.same({ 6 }, state[1]:size():totable())
      assert.are.same({ 6 }, state[2]:size():totable())
      local N = 30001
      local buf = torch.LongTensor(N, 2):zero()
      local out = buf:select(2, 1)
      assert.is_false(out:isContiguous())
      assert.is_true(rawequal(out, torch.multinomialAlias(out, state)))
      chi2_check(count(util.flat(out), 6), normalized(w), N, 'alias')
      assert.are.equal(0, buf:select(2, 2):abs():sum(), 'the other column is untouched')
      -- a float probability vector and a fresh state give the same law
      local st2 = torch.multinomialAliasSetup(probs:float())
      local o2 = torch.multinomialAlias(torch.LongTensor(N), st2)
      chi2_check(count(util.flat(o2), 6), normalized(w), N, 'alias float')
   end)

   it('gives every column an alias in 1..K: itself exactly when it has none (q = 1)', function()
      for _ = 1, 20 do
         local K = math.random(1, 40)
         local w = random_weights(K, 5)
         if math.random() < 0.5 then w[math.random(1, K)] = 0 end
         if K > 1 then w[1] = w[1] + 1 end -- some weights above the mean, some below
         local J, q = unpack(torch.multinomialAliasSetup(torch.DoubleTensor(w)))
         for i = 1, K do
            assert.is_true(J[i] >= 1 and J[i] <= K, ('J[%d] = %d is outside 1..%d'):format(i, J[i], K))
            assert.are.equal(q[i] == 1, J[i] == i, ('column %d: q %.17g, alias %d'):format(i, q[i], J[i]))
            if w[i] == 0 then assert.are.equal(0, q[i]) end -- a zero weight is never kept
         end
      end
      -- Torch7's states mark "no alias" with 0: draws keep the column
      local n = math.random(3, 9)
      local out = torch.multinomialAlias(torch.LongTensor(200), { torch.LongTensor(n):zero(), torch.ones(n) * 0.5 })
      assert.is_true(out:min() >= 1 and out:max() <= n)
   end)

   it('refuses bad arguments', function()
      local st = torch.multinomialAliasSetup(torch.DoubleTensor { 0.2, 0.8 })
      util.assert_error(function() torch.multinomialAlias(torch.LongTensor(2, 2), st) end, 'multinomialAlias', '1-d')
      util.assert_error(function() torch.multinomialAlias(torch.DoubleTensor(3), st) end, 'LongTensor')
      util.assert_error(function() torch.multinomialAlias(torch.LongTensor(3), {}) end, 'state')
      util.assert_error(function() torch.multinomialAliasSetup(torch.DoubleTensor(2, 2):fill(1)) end, '1-d')
      util.assert_error(function() torch.multinomialAliasSetup(torch.DoubleTensor { 0, 0 }) end, 'sum to 0')
      util.assert_error(function() torch.multinomialAliasSetup(torch.DoubleTensor { 1, -2 }) end, 'invalid probability')
   end)
end)

describe('logNormal', function()
   before_each(function() torch.manualSeed(4321) end)

   -- the 10 deciles of the standard normal: equiprobable bins for a chi-square test
   local Z = { -1.2816, -0.8416, -0.5244, -0.2533, 0, 0.2533, 0.5244, 0.8416, 1.2816 }
   local function check_lognormal(flat, mean, std, what)
      local n, s, s2 = #flat, 0, 0
      local bins = {}
      for j = 1, 10 do bins[j] = 0 end
      for _, x in ipairs(flat) do
         assert(x > 0, what .. ': a log-normal draw must be positive, got ' .. x)
         local l = log(x)
         s, s2 = s + l, s2 + l * l
         local z, b = (l - mean) / std, 1
         while b <= 9 and z > Z[b] do b = b + 1 end
         bins[b] = bins[b] + 1
      end
      local m = s / n
      local sd = sqrt(s2 / n - m * m)
      assert(math.abs(m - mean) < 4 * std / sqrt(n), ('%s: mean of log %.4f, expected %.4f'):format(what, m, mean))
      assert(math.abs(sd - std) < 4 * std / sqrt(2 * n), ('%s: std of log %.4f, expected %.4f'):format(what, sd, std))
      local p = {}
      for j = 1, 10 do p[j] = 0.1 end
      chi2_check(bins, p, n, what .. ' deciles')
   end

   it('is exp of a normal with the given mean and stdv (Torch7 defaults 1 and 2)', function()
      local t = torch.DoubleTensor(20001)
      assert.is_true(rawequal(t, t:logNormal(0.3, 0.5)))
      check_lognormal(util.flat(t), 0.3, 0.5, 'double')
      local f = torch.FloatTensor(4001, 3):logNormal(-0.2, 0.25)
      check_lognormal(util.flat(f), -0.2, 0.25, 'float')
      local d = torch.DoubleTensor(20001):logNormal()
      check_lognormal(util.flat(d), 1, 2, 'defaults')
      local v = torch.logNormal(0, 1)
      assert(type(v) == 'number' and v > 0)
   end)

   it('refuses a non-positive stdv and integer tensors', function()
      util.assert_error(function() torch.DoubleTensor(3):logNormal(0, 0) end, 'logNormal', 'positive')
      util.assert_error(function() torch.DoubleTensor(3):logNormal(0, -1) end, 'logNormal', 'positive')
      util.assert_error(function() torch.LongTensor(3):logNormal(0, 1) end, 'logNormal', 'int64')
      util.assert_error(function() torch.DoubleTensor(3):logNormal('a', 1) end, 'logNormal', 'numbers')
   end)
end)
