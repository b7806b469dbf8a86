-- torch7_methods_spec.lua: Torch7's other optim methods (adamax, adagrad, adadelta, rmsprop, nag,
-- asgd, rprop, lbfgs + lswolfe, cg), optim.Logger and optim.ConfusionMatrix.
--  * each method minimises the 2-D Rosenbrock function from (-1.2, 1) in a stated number of steps;
--  * where PyTorch 1.13 has the same method, a few steps on a fresh random quadratic
--    f(x) = x'Ax/2 - b'x match its trajectory in float64 (spec/fixtures/optim_torch_ref.py);
--    Torch7's names map to PyTorch's as listed in that script (learningRate = lr, eta0 = lr,
--    lambda = lambd, etaminus/etaplus = etas, stepsizemin/max = step_sizes, nCorrection =
--    history_size, learningRateDecay = an lr schedule lr/(1 + t*decay) for SGD).
local torch = require 'moontorch'
local optim = require 'moontorch.optim'
local util = require 'spec.util'

local TOL = { atol = 1e-12, rtol = 1e-10 }

local function rosenbrock(x)
   local a, b = x[1], x[2]
   return (1 - a) ^ 2 + 100 * (b - a * a) ^ 2,
      torch.Tensor { -2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a) }
end

-- fresh SPD A (n x n), b and x0, as Lua tables
local N = 5
local function problem()
   local M, A = {}, {}
   for i = 1, N do M[i] = util.rand_flat(N, -1, 1) end
   for i = 1, N do
      A[i] = {}
      for j = 1, N do
         local s = 0
         for k = 1, N do s = s + M[i][k] * M[j][k] end
         A[i][j] = s + (i == j and 1 or 0)
      end
   end
   return { A = A, b = util.rand_flat(N, -1, 1), x0 = util.rand_flat(N, -2, 2), steps = 6 }
end

local function json_list(t)
   local parts = {}
   for i, v in ipairs(t) do parts[i] = type(v) == 'table' and json_list(v) or ('%.17g'):format(v) end
   return '[' .. table.concat(parts, ',') .. ']'
end

local function quadratic(P)
   local A, b = torch.Tensor(P.A), torch.Tensor(P.b)
   return function(x)
      local Ax = torch.mv(A, x)
      return 0.5 * x:dot(Ax) - b:dot(x), Ax:add(-1, b)
   end
end

describe('optim methods on the Rosenbrock function', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   -- {method, config, calls, largest distance from (1, 1) allowed}
   local cases = {
      { 'sgd', { learningRate = 1e-3, momentum = 0.9, dampening = 0, nesterov = true }, 3000, 1e-5 },
      { 'nag', { learningRate = 1e-3, momentum = 0.9 }, 3000, 1e-5 },
      { 'adam', { learningRate = 0.05 }, 3000, 1e-6 },
      { 'adamax', { learningRate = 0.05 }, 4000, 1e-3 },
      { 'adagrad', { learningRate = 1 }, 5000, 5e-2 },
      { 'rmsprop', { learningRate = 3e-3 }, 4000, 5e-2 },
      -- Adadelta reaches the valley floor near (1, 1) quickly, then drifts slowly: its unit-free
      -- step does not shrink at the minimum (as in PyTorch, which it matches step by step below)
      { 'adadelta', { rho = 0.9995, eps = 1e-6 }, 10000, 5e-2 },
      { 'asgd', { eta0 = 2e-3, lambda = 0, t0 = 500 }, 6000, 2e-2 },
      { 'rprop', { stepsize = 0.01 }, 3000, 1e-2 },
      { 'lbfgs', { maxIter = 100, learningRate = 1 }, 1, 1e-4 },
      { 'lbfgs', { maxIter = 100, lineSearch = optim.lswolfe }, 1, 1e-4 },
      { 'cg', { maxEval = 200 }, 1, 1e-8 },
   }
   for _, c in ipairs(cases) do
      local name, config, calls, dist = c[1], c[2], c[3], c[4]
      it(('%s%s reaches (1, 1) within %g in %d call(s)'):format(name, config.lineSearch and ' + lswolfe' or '',
         dist, calls), function()
         local x, state = torch.Tensor { -1.2, 1 }, {}
         local f0 = rosenbrock(x)
         local xr, fs
         for _ = 1, calls do xr, fs = optim[name](rosenbrock, x, config, state) end
         assert.are.equal(x, xr)
         assert(type(fs) == 'table' and type(fs[1]) == 'number', 'second result is the table of f values')
         local d = math.sqrt((x[1] - 1) ^ 2 + (x[2] - 1) ^ 2)
         assert(d < dist, ('%s ended at (%.8g, %.8g), %.3g from (1, 1)'):format(name, x[1], x[2], d))
         if calls == 1 then -- lbfgs, cg: the history starts at f(x0) and ends lower
            assert.are.equal(f0, fs[1])
            assert(fs[#fs] < 1e-6, name .. ': last f ' .. fs[#fs])
         end
      end)
   end
end)

describe('optim methods against PyTorch 1.13 on a quadratic', function()
   local P, ref
   setup(function()
      P = problem()
      local json = ('{"A":%s,"b":%s,"x0":%s,"steps":%d}'):format(json_list(P.A), json_list(P.b), json_list(P.x0),
         P.steps)
      local path = os.tmpname()
      local w = assert(io.open(path, 'w'))
      w:write(json, '\n')
      w:close()
      local out, rc = util.sh(('%s spec/fixtures/optim_torch_ref.py < %q'):format(util.PY, path))
      os.remove(path)
      assert(rc == 0, 'PyTorch reference failed:\n' .. out)
      ref = {}
      for line in out:gmatch('[^\n]+') do
         local name, rest = line:match('^(%S+) (.*)$')
         if name then
            local vals = {}
            for v in rest:gmatch('%S+') do vals[#vals + 1] = tonumber(v) end
            ref[name] = vals
         end
      end
   end)
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   -- run `calls` calls of optim[name]; returns the flat trajectory (x, plus ax for asgd) and the
   -- f values the method returned
   local function trajectory(name, config, calls, with_ax)
      local feval = quadratic(P)
      local x, state, traj, fs = torch.Tensor(P.x0), {}, {}, {}
      for _ = 1, calls or P.steps do
         local _, f, ax = optim[name](feval, x, config, state)
         for _, v in ipairs(f) do fs[#fs + 1] = v end
         for _, v in ipairs(x:totable()) do traj[#traj + 1] = v end
         if with_ax then for _, v in ipairs(ax:totable()) do traj[#traj + 1] = v end end
      end
      return traj, fs
   end

   local cases = {
      { 'adamax', 'adamax', { learningRate = 0.05, beta1 = 0.8, beta2 = 0.95, epsilon = 1e-6, weightDecay = 0.1 } },
      { 'adagrad', 'adagrad', { learningRate = 0.3, learningRateDecay = 0.1, weightDecay = 0.05 } },
      { 'adadelta', 'adadelta', { rho = 0.8, eps = 1e-4, weightDecay = 0.05 } },
      { 'rmsprop', 'rmsprop', { learningRate = 0.02, alpha = 0.9, epsilon = 1e-6, weightDecay = 0.05 } },
      { 'asgd', 'asgd', { eta0 = 0.05, lambda = 0.01, alpha = 0.7, t0 = 2 }, nil, true },
      { 'rprop', 'rprop', { stepsize = 0.05, etaplus = 1.3, etaminus = 0.4, stepsizemax = 0.2, stepsizemin = 1e-3 } },
      { 'sgd_nesterov', 'sgd', { learningRate = 0.05, learningRateDecay = 0.2, momentum = 0.7, dampening = 0,
         nesterov = true, weightDecay = 0.03 } },
      -- L-BFGS: two calls of 4 iterations (the memory of 3 pairs carries over); tolerances 0 so
      -- that Torch7's L1 tests and PyTorch's max-norm tests never stop early
      { 'lbfgs_None', 'lbfgs', { maxIter = 4, maxEval = 100, tolFun = 0, tolX = 0, nCorrection = 3,
         learningRate = 0.5 }, 2 },
      -- with optim.lswolfe / PyTorch's 'strong_wolfe' (both after minFunc's WolfeLineSearch);
      -- PyTorch's f list holds every evaluation, Torch7's one per line search: x only
      { 'lbfgs_strong_wolfe', 'lbfgs', { maxIter = 4, maxEval = 100, tolFun = 0, tolX = 0, nCorrection = 3,
         lineSearch = optim.lswolfe }, 2, nil, true },
   }
   for _, c in ipairs(cases) do
      local key, name, config, calls, with_ax, x_only = c[1], c[2], c[3], c[4], c[5], c[6]
      it(('%s matches torch.optim (%s)'):format(name, key), function()
         local traj, fs = trajectory(name, config, calls, with_ax)
         assert(ref[key], 'no PyTorch result for ' .. key)
         util.assert_close(traj, ref[key], TOL, key .. ' trajectory')
         -- the f values: one per step, before its update (L-BFGS: each evaluation it keeps)
         if not x_only then util.assert_close(fs, ref[key .. '_f'], TOL, key .. ' f values') end
      end)
   end

   it('rprop with niter = 2 takes two steps per call', function()
      local cfg = { stepsize = 0.05, etaplus = 1.3, etaminus = 0.4, stepsizemax = 0.2, stepsizemin = 1e-3, niter = 2 }
      local traj, fs = trajectory('rprop', cfg, P.steps / 2)
      local want = {}
      for s = 2, P.steps, 2 do for i = 1, N do want[#want + 1] = ref.rprop[(s - 1) * N + i] end end
      util.assert_close(traj, want, TOL, 'rprop niter=2')
      assert.are.equal(P.steps, #fs)
   end)
end)

describe("optim methods with the state kept in config (Torch7's default)", function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('take the same steps as with a separate state table', function()
      local P = problem()
      local feval = quadratic(P)
      local configs = {
         adamax = { learningRate = 0.05 }, adagrad = { learningRate = 0.3 }, adadelta = { rho = 0.8 },
         rmsprop = { learningRate = 0.02 }, nag = { learningRate = 0.05, momentum = 0.5 },
         asgd = { eta0 = 0.05, t0 = 1 }, rprop = { stepsize = 0.05 }, lbfgs = { maxIter = 3, learningRate = 0.5 },
         cg = { maxEval = 8 },
      }
      for name, cfg in pairs(configs) do
         local a, b = torch.Tensor(P.x0), torch.Tensor(P.x0)
         local shared, sep, state = {}, {}, {}
         for k, v in pairs(cfg) do shared[k], sep[k] = v, v end
         for _ = 1, 3 do
            optim[name](feval, a, shared)
            optim[name](feval, b, sep, state)
         end
         util.assert_close(a, b, TOL, name .. ' with state in config')
      end
   end)
end)

describe('optim methods and the gradient feval returns', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('is left unchanged by weight decay (Torch7 adds it in place)', function()
      local g0 = torch.Tensor(util.rand_flat(N, -1, 1))
      for _, name in ipairs { 'adamax', 'adagrad', 'adadelta', 'rmsprop', 'nag' } do
         local g = g0:clone()
         optim[name](function() return 1, g end, torch.Tensor(util.rand_flat(N, 1, 2)), { weightDecay = 0.5 })
         util.assert_close(g, g0, TOL, name .. ' gradient')
      end
   end)
end)

describe('optim.nag', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('follows Sutskever et al.: gradient at x + mom*v, v = mom*v - lr_t*lrs*g (Lua reference)', function()
      local P = problem()
      local feval = quadratic(P)
      local lr, lrd, wd, mom = 0.05, 0.3, 0.02, 0.8
      local lrs = util.rand_flat(N, 0.5, 1.5)
      local cfg = { learningRate = lr, learningRateDecay = lrd, weightDecay = wd, momentum = mom,
         learningRates = torch.Tensor(lrs) }
      local x, state = torch.Tensor(P.x0), {}
      local rx, rv = {}, {}
      for i = 1, N do rx[i], rv[i] = P.x0[i], 0 end
      for t = 0, 5 do
         optim.nag(feval, x, cfg, state)
         -- reference: y = x + mom*v; g = A y - b + wd*y; v = mom*v - clr*lrs*g; x = y - clr*lrs*g
         local y = {}
         for i = 1, N do y[i] = rx[i] + (t > 0 and mom * rv[i] or 0) end
         local clr = lr / (1 + t * lrd)
         for i = 1, N do
            local g = -P.b[i] + wd * y[i]
            for j = 1, N do g = g + P.A[i][j] * y[j] end
            rv[i] = mom * rv[i] - clr * lrs[i] * g
            rx[i] = y[i] - clr * lrs[i] * g
         end
         util.assert_close(x, rx, TOL, 'nag step ' .. t)
      end
      util.assert_error(function() optim.nag(feval, x, { momentum = 0 }) end, 'optim.nag', 'momentum must be positive')
   end)
end)

describe('optim.lbfgs, optim.lswolfe, optim.polyinterp, optim.cg', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('lswolfe returns a step meeting the strong Wolfe conditions', function()
      local P = problem()
      local feval = quadratic(P)
      local x = torch.Tensor(P.x0)
      local f, g = feval(x)
      g = g:clone()
      local d = g:clone():mul(-1)
      local gtd = g:dot(d)
      local f1, g1, x1, t, n = optim.lswolfe(feval, x, 10, d, f, g, gtd, { c1 = 1e-4, c2 = 0.9 })
      assert.are.equal(x, x1)
      local fx, gx = feval(torch.Tensor(P.x0):add(t, d))
      util.assert_close({ f1 }, { fx }, TOL, 'f at the step')
      util.assert_close(g1, gx, TOL, 'g at the step')
      util.assert_close(x1, torch.Tensor(P.x0):add(t, d), TOL, 'x moved to x0 + t*d')
      assert(f1 <= f + 1e-4 * t * gtd, 'sufficient decrease')
      assert(math.abs(g1:dot(d)) <= -0.9 * gtd, 'curvature')
      assert(n >= 1)
   end)

   it('polyinterp: the cubic through two points (closed form and bounded form agree)', function()
      -- cubic p(x) = (x - 0.3)^2 (x + 2): minimum at x = 0.3 in [-1, 1]
      local function p(x) return (x - 0.3) ^ 2 * (x + 2), 2 * (x - 0.3) * (x + 2) + (x - 0.3) ^ 2 end
      local a, b = { -1, p(-1) }, { 1, p(1) }
      local pts = torch.Tensor { { -1, a[2], select(2, p(-1)) }, { 1, b[2], select(2, p(1)) } }
      util.assert_close({ optim.polyinterp(pts) }, { 0.3 }, TOL, 'closed form')
      util.assert_close({ (optim.polyinterp(pts, -1, 1)) }, { 0.3 }, TOL, 'bounded form')
      util.assert_close({ (optim.polyinterp(pts, 0.5, 2)) }, { 0.5 }, TOL, 'bounded, minimum outside the bounds')
      util.assert_error(function() optim.polyinterp(torch.Tensor(3, 3):fill(1)) end, 'optim.polyinterp', '2 points')
   end)

   it('cg minimises a quadratic in about N line searches; f history decreases', function()
      local P = problem()
      local x = torch.Tensor(P.x0)
      local _, fs, evals = optim.cg(quadratic(P), x, { maxEval = 200 })
      for i = 2, #fs do
         assert(fs[i] <= fs[i - 1] + 1e-12 * math.abs(fs[i - 1]),
            ('f history rises at %d: %.17g after %.17g'):format(i, fs[i], fs[i - 1]))
      end
      assert(fs[#fs] < fs[1])
      assert(evals <= 200)
      -- the minimiser solves A x = b
      local r = torch.mv(torch.Tensor(P.A), x):add(-1, torch.Tensor(P.b))
      assert(r:abs():max() < 1e-6, 'residual ' .. r:abs():max())
   end)

   it('lbfgs stops at once when the gradient is below tolFun; errors name the method', function()
      local x = torch.Tensor { 1, 1 }
      local _, fs, evals = optim.lbfgs(rosenbrock, x, {})
      assert.are.same({ 0 }, fs)
      assert.are.equal(1, evals)
      util.assert_error(function() optim.lbfgs(rosenbrock, x, { lineSearch = 3 }) end, 'optim.lbfgs', 'lineSearch')
      util.assert_error(function() optim.adagrad(function() return 0, torch.Tensor(3) end, x, {}) end,
         'optim.adagrad', 'gradient has 3 elements', 'parameters have 2')
      util.assert_error(function() optim.rprop(rosenbrock, x, { etaplus = 0.9 }) end, 'optim.rprop', 'etaplus > 1')
   end)
end)

describe('optim.Logger', function()
   local function read(path)
      local f = assert(io.open(path))
      local s = f:read('*a')
      f:close()
      return s
   end

   it("writes Torch7's file: names, then one row of '%11.4e<TAB>' per add; plot writes an SVG", function()
      local dir = util.tmpdir()
      local path = dir .. '/sub/accuracy.log' -- the directory is created, as Torch7 does
      local logger = optim.Logger(path)
      assert.are.equal(logger, logger:setNames { 'Training acc.', 'Test acc.' })
      local want = { 'Training acc.\tTest acc.\t\n' }
      local a, b = util.rand_flat(6, -1e3, 1e3), util.rand_flat(6, 0, 1e-3)
      for i = 1, 6 do
         logger:add { a[i], b[i] }
         want[#want + 1] = ('%11.4e\t%11.4e\t\n'):format(a[i], b[i])
         assert.are.equal(table.concat(want), read(path)) -- flushed after each row
      end
      logger:add { 'n/a', 7 }
      want[#want + 1] = 'n/a\t 7.0000e+00\t\n'
      assert.are.equal(table.concat(want), read(path))
      assert.are.same(a[3], logger.symbols[1][3])
      logger:style { '+-', '|' }
      logger:setlogscale(false)
      logger:display(false)
      assert.are.equal(path .. '.svg', logger:plot())
      local svg = read(path .. '.svg')
      assert(svg:find('^<svg') and svg:find('Training acc%.') and svg:find('<polyline') and svg:find('<circle'),
         svg:sub(1, 200))
      assert.are.equal(path .. '.svg', logger:plot('Test acc.'))
      util.assert_error(function() logger:plot('nope') end, 'optim.Logger.plot', 'nope')
      util.assert_error(function() logger:add { {} } end, 'optim.Logger.add', 'can only log numbers and strings')
   end)

   it('takes the names from the first add of a named table', function()
      local path = util.tmpdir() .. '/named.log'
      local logger = optim.Logger(path)
      logger:add { ['test error'] = 0.25, ['training error'] = 0.5 }
      logger:add { ['test error'] = 0.125, ['training error'] = 0.375 }
      -- named symbols are written in sorted order (Torch7 writes them in pairs() order)
      assert.are.equal('test error\ttraining error\t\n 2.5000e-01\t 5.0000e-01\t\n 1.2500e-01\t 3.7500e-01\t\n',
         read(path))
      logger:setlogscale(true)
      assert.are.equal(path .. '.svg', logger:plot('training error'))
   end)

   it('plots every series: its label, one point per number, finite coordinates', function()
      local path = util.tmpdir() .. '/chart.log'
      local logger = optim.Logger(path)
      local names = { 'loss <train>', 'loss & test', 'lr' }
      logger:setNames(names)
      logger:style { '-', '+-', '~' }
      local n, want = math.random(3, 30), { 0, 0, 0 }
      for i = 1, n do
         local row = { 1e4 * math.random(), i == 2 and 'n/a' or -math.random(), i == 3 and 0 / 0 or 1e-3 * i }
         for k = 1, 3 do
            if type(row[k]) == 'number' and row[k] == row[k] then want[k] = want[k] + 1 end
         end
         logger:add(row)
      end
      assert.are.equal(path .. '.svg', logger:plot())
      local svg = read(path .. '.svg')
      local i, j = svg:find('&lt;Logger::' .. path .. '&gt;', 1, true)
      assert.truthy(i, 'title')
      svg = svg:sub(1, i - 1) .. svg:sub(j + 1) -- the random path may spell nan or inf
      for _, label in ipairs({ 'loss &lt;train&gt;', 'loss &amp; test', 'lr' }) do
         assert.truthy(svg:find('>' .. label .. '<', 1, true), label)
      end
      local got = {}
      for pts in svg:gmatch('<polyline[^>]*points="([^"]*)"') do
         local k = 0
         for x, y in pts:gmatch('([^ ,]+),([^ ]+)') do
            assert.truthy(tonumber(x) and tonumber(y), x .. ',' .. y)
            k = k + 1
         end
         got[#got + 1] = k
      end
      assert.are.same(want, got)
      assert.falsy(svg:lower():find('nan') or svg:lower():find('inf'))
      assert.are.equal(path .. '.svg', logger:plot('lr'))
      local _, lines = read(path .. '.svg'):gsub('<polyline', '')
      assert.are.equal(1, lines)
   end)
end)

describe('optim.ConfusionMatrix', function()
   -- counts[t][p] computed here from the class lists
   local function counts(n, preds, targs)
      local m = {}
      for t = 1, n do m[t] = {} for p = 1, n do m[t][p] = 0 end end
      for i = 1, #targs do
         if targs[i] >= 1 then m[targs[i]][preds[i]] = m[targs[i]][preds[i]] + 1 end
      end
      return m
   end

   it('add, batchAdd (indices, columns, score matrices), updateValids, zero against counts', function()
      local n, B = 4, 37
      local scores, onehot, preds, targs = torch.DoubleTensor(B, n), torch.DoubleTensor(B, n):zero(), {}, {}
      for i = 1, B do
         for c = 1, n do scores[i][c] = math.random() end
         local _, am = scores[i]:max(1)
         preds[i] = am[1]
         targs[i] = math.random(0, n) -- 0: a missing target, ignored
         if targs[i] >= 1 then onehot[i][targs[i]] = 1 end
      end
      local want = counts(n, preds, targs)
      local conf = optim.ConfusionMatrix(n)
      conf:batchAdd(scores, torch.DoubleTensor(targs))
      assert.are.same(want, conf.mat:totable())
      local conf2 = optim.ConfusionMatrix({ 'a', 'b', 'c', 'd' })
      assert.are.equal(4, conf2.nclasses)
      conf2:batchAdd(torch.LongTensor(preds):view(B, 1), onehot)
      local ignored = {} -- batchAdd with one-hot targets: rows without a 1 pick class 1 (argmax of zeros)
      for i = 1, B do ignored[i] = targs[i] >= 1 and targs[i] or 1 end
      assert.are.same(counts(n, preds, ignored), conf2.mat:totable())
      local conf3 = optim.ConfusionMatrix(n)
      for i = 1, B do
         if i % 2 == 0 then conf3:add(scores[i], targs[i]) else conf3:add(preds[i], targs[i]) end
      end
      assert.are.same(want, conf3.mat:totable())

      conf:updateValids()
      local total, diag, nv, av, au, nu = 0, 0, 0, 0, 0, 0
      for t = 1, n do
         local row, col = 0, 0
         for p = 1, n do row, col = row + want[t][p], col + want[p][t] end
         total, diag = total + row, diag + want[t][t]
         local v, u = want[t][t] / row, want[t][t] / (row + col - want[t][t])
         if v == v then
            util.assert_close({ conf.valids[t] }, { v }, { atol = 1e-7, rtol = 1e-6 }, 'valids')
            av, nv = av + conf.valids[t], nv + 1
            if u == u then au, nu = au + conf.unionvalids[t], nu + 1 end
         else
            assert(conf.valids[t] ~= conf.valids[t], 'a class without samples has NaN valid')
         end
      end
      util.assert_close({ conf.totalValid }, { diag / total }, TOL, 'totalValid')
      util.assert_close({ conf.averageValid }, { av / nv }, TOL, 'averageValid')
      util.assert_close({ conf.averageUnionValid }, { au / nu }, TOL, 'averageUnionValid')
      conf:zero()
      assert.are.equal(0, conf.mat:sum())
      assert.are.equal(0, conf.totalValid)
      util.assert_error(function() conf:add(5, 1) end, 'optim.ConfusionMatrix', 'not a class index in 1..4')
      util.assert_error(function() conf:batchAdd(torch.Tensor { 1, 2 }, torch.Tensor { 1 }) end,
         'optim.ConfusionMatrix.batchAdd', '2 predictions but 1 targets')
   end)

   it("prints as Torch7's __tostring__", function()
      local conf = optim.ConfusionMatrix({ 'cat', 'dog' })
      conf:batchAdd(torch.Tensor { 1, 1, 2, 2, 2, 2 }, torch.Tensor { 1, 1, 1, 2, 2, 2 })
      -- valids are float32 in Torch7: 2/3 prints as 66.667 and averages as 83.333334326744
      assert.are.equal('ConfusionMatrix:\n' ..
         '[[       2       1]   66.667% \t[class: cat]\n' ..
         ' [       0       3]]  100.000% \t[class: dog]\n' ..
         ' + average row correct: 83.333334326744% \n' ..
         ' + average rowUcol correct (VOC measure): 70.833334326744% \n' ..
         ' + global correct: 83.333333333333%', tostring(conf))
      local plain = optim.ConfusionMatrix(2)
      plain:add(1, 1)
      assert(tostring(plain):find('[[       1       0]   100.000% \n', 1, true), tostring(plain))
   end)
end)
