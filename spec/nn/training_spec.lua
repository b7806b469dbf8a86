-- training_spec.lua: nn.ModuleCriterion (a criterion behind input and target modules) against the
-- modules and criterion run by hand, with its gradient by finite differences; and
-- nn.StochasticGradient (training.md) against plain per-example SGD written out here.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

-- f() with the modules' print silenced (busted gives spec files their own globals)
local function quiet(f)
   local G = getfenv(nn.StochasticGradient.train)
   local saved = G.print
   G.print = function() end
   local ok, err = pcall(f)
   G.print = saved
   assert(ok, err)
end

describe('nn training helpers', function()
   local saved
   before_each(function()
      saved = torch.getdefaulttensortype()
      torch.setdefaulttensortype('torch.DoubleTensor')
   end)
   after_each(function() torch.setdefaulttensortype(saved) end)

   it('ModuleCriterion is the criterion of the transformed input and target', function()
      local x, t = torch.randn(6, 4), torch.randn(6, 4)
      local mc = nn.ModuleCriterion(nn.MSECriterion(), nn.Tanh(), nn.MulConstant(2))
      local err = mc:forward(x, t)
      local want = 0
      for i = 1, 6 do for j = 1, 4 do want = want + (math.tanh(x[i][j]) - 2 * t[i][j]) ^ 2 end end
      want = want / 24
      assert(math.abs(err - want) < 1e-12)
      local gi = mc:backward(x, t)
      -- central differences of the loss in each input element
      local h = 1e-6
      for i = 1, 6 do
         for j = 1, 4 do
            local v = x[i][j]
            x[i][j] = v + h
            local up = mc:forward(x, t)
            x[i][j] = v - h
            local down = mc:forward(x, t)
            x[i][j] = v
            assert(math.abs((up - down) / (2 * h) - gi[i][j]) < 1e-6)
         end
      end
      -- modules are optional
      local plain = nn.ModuleCriterion(nn.AbsCriterion())
      assert(math.abs(plain:forward(x, t) - (x - t):abs():mean()) < 1e-12)
      util.assert_error(function() nn.ModuleCriterion(nn.Tanh()) end, 'nn.ModuleCriterion', 'criterion')
   end)

   it('ModuleCriterion:type leaves the target module alone when castTarget is false', function()
      local target = nn.Linear(2, 2)
      local mc = nn.ModuleCriterion(nn.MSECriterion(), nn.Tanh(), target, false)
      mc:float()
      assert.are.equal('torch.DoubleTensor', torch.type(target.weight))
      assert.are.equal('torch.FloatTensor', torch.type(mc.inputModule.output))
      local cast = nn.ModuleCriterion(nn.MSECriterion(), nil, nn.Linear(2, 2)):float()
      assert.are.equal('torch.FloatTensor', torch.type(cast.targetModule.weight))
   end)

   it('StochasticGradient runs per-example SGD with the documented schedule and hooks', function()
      local data = { size = function() return 5 end }
      for i = 1, 5 do data[i] = { torch.randn(3), torch.randn(2) } end
      local net = nn.Linear(3, 2)
      local ref = net:clone()
      local crit = nn.MSECriterion()
      local sg = nn.StochasticGradient(net, crit)
      assert.are.same({ 0.01, 0, 25, true, true },
         { sg.learningRate, sg.learningRateDecay, sg.maxIteration, sg.shuffleIndices, sg.verbose })
      sg.learningRate, sg.learningRateDecay, sg.maxIteration = 0.1, 0.5, 3
      sg.shuffleIndices = false
      local seen, errors = 0, {}
      sg.hookExample = function(self, ex)
         assert.are.equal(sg, self)
         seen = seen + 1
         assert.are.equal(data[(seen - 1) % 5 + 1], ex)
      end
      sg.hookIteration = function(_, it, e) errors[it] = e end
      quiet(function() sg:train(data) end)
      assert.are.equal(15, seen)
      -- the same by hand: w -= lr * grad each example; lr = 0.1 / (1 + epoch_after * 0.5)
      local lr = 0.1
      for epoch = 1, 3 do
         local sum = 0
         for i = 1, 5 do
            local x, t = data[i][1], data[i][2]
            local y = ref:forward(x)
            sum = sum + crit:forward(y, t)
            ref:zeroGradParameters()
            ref:backward(x, crit:backward(y, t))
            ref:updateParameters(lr)
         end
         assert(math.abs(errors[epoch] - sum / 5) < 1e-12)
         lr = 0.1 / (1 + (epoch + 1) * 0.5)
      end
      assert(util.maxdiff(net.weight, ref.weight) < 1e-12)
      assert(util.maxdiff(net.bias, ref.bias) < 1e-12)
      util.assert_error(function() nn.StochasticGradient(nn.Tanh(), nn.Tanh()) end, 'argument 2 must be a criterion')
      util.assert_error(function() sg:train({}) end, 'dataset')
   end)

   it('StochasticGradient visits every example once per epoch when shuffling', function()
      local data = { size = function() return 7 end }
      for i = 1, 7 do data[i] = { torch.randn(2), torch.randn(1) } end
      local sg = nn.StochasticGradient(nn.Linear(2, 1), nn.MSECriterion())
      sg.maxIteration, sg.verbose = 2, false
      local count = {}
      sg.hookExample = function(_, ex) count[ex] = (count[ex] or 0) + 1 end
      quiet(function() sg:train(data) end)
      for i = 1, 7 do assert.are.equal(2, count[data[i]]) end
   end)
end)
