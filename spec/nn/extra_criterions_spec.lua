-- extra_criterions_spec.lua: nn.L1Cost, nn.WeightedMSECriterion and nn.SpatialClassNLLCriterion
-- (criterions nn ships without documenting them) against float64 loops written from THNN's
-- code, their gradients against central differences of the loss, on fresh random inputs.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local peer = require 'spec.nn.peer'
local rand = peer.rand
local TOL = { atol = 1e-12, rtol = 1e-10 }
local DIFF = { atol = 1e-7, rtol = 1e-6 } -- central differences, h = 1e-6

local function U(lo, hi, ...) return (util.rand_tensor({ ... }, 'torch.DoubleTensor', lo, hi)) end

-- the criterion's gradient against central differences of its loss
local function check_grad(crit, x, t, what)
   local g = util.flat(crit:backward(x, t):clone())
   util.assert_close(g, peer.loss_diff(crit, x, t, x, 1e-6), DIFF, what .. ' gradient')
end

describe('nn.L1Cost', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('is the sum of |x| (never averaged), whatever the target; its gradient is sign(x)', function()
      local c = nn.L1Cost()
      local x = rand(3, 4, 5)
      local want = 0
      for _, v in ipairs(util.flat(x)) do want = want + math.abs(v) end
      util.assert_close({ c:forward(x) }, { want }, TOL, 'loss')
      util.assert_close({ c:forward(x, rand(7)) }, { want }, TOL, 'loss with a target')
      check_grad(c, x, nil, 'L1Cost')
      x[2][3][4] = 0
      local g = c:backward(x)
      assert.are.equal(0, g[2][3][4])
      for i, v in ipairs(util.flat(x)) do
         assert.are.equal(v > 0 and 1 or v < 0 and -1 or 0, util.flat(g)[i], 'sign at ' .. i)
      end
   end)

   it('names itself when the input is not a floating point tensor', function()
      assert.has_error(function() nn.L1Cost():forward({ 1, 2 }) end, 'nn.L1Cost: expected a tensor input, got table')
      assert.has_error(function() nn.L1Cost():forward(torch.LongTensor(3):fill(1)) end,
         'nn.L1Cost: expected a floating point input, got a torch.LongTensor')
   end)
end)

describe('nn.WeightedMSECriterion', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   -- mean (or sum) of (x - w .* t)^2, w repeated over the samples when it has one dimension fewer
   local function ref(x, t, w, average)
      local xf, tf, wf = util.flat(x), util.flat(t), util.flat(w)
      local s = 0
      for i = 1, #xf do
         local d = xf[i] - wf[(i - 1) % #wf + 1] * tf[i]
         s = s + d * d
      end
      return average and s / #xf or s
   end

   it('is the MSE between the input and the weighted target, per sample or whole', function()
      local w = U(0.5, 2, 4, 5)
      local c = nn.WeightedMSECriterion(w)
      assert.are_not.equal(w, c.weight) -- a copy
      local x, t = rand(3, 4, 5), rand(3, 4, 5)
      util.assert_close({ c:forward(x, t) }, { ref(x, t, w, true) }, TOL, 'per sample')
      check_grad(c, x, t, 'per sample')
      local x2, t2 = rand(4, 5), rand(4, 5)
      util.assert_close({ c:forward(x2, t2) }, { ref(x2, t2, w, true) }, TOL, 'whole')
      check_grad(c, x2, t2, 'whole')
      c.sizeAverage = false
      util.assert_close({ c:forward(x, t) }, { ref(x, t, w, false) }, TOL, 'summed')
      check_grad(c, x, t, 'summed')
   end)

   it('names itself when the weight does not fit', function()
      local c = nn.WeightedMSECriterion(rand(4))
      assert.has_error(function() c:forward(rand(3, 5), rand(3, 5)) end,
         'nn.WeightedMSECriterion: the weight has 4 elements but each sample has 5')
      assert.has_error(function() c:forward(rand(4), rand(5)) end,
         'nn.WeightedMSECriterion: target has 5 elements but the input has 4')
      assert.has_error(function() nn.WeightedMSECriterion() end,
         'nn.WeightedMSECriterion: expected a tensor weight, got nil')
   end)
end)

describe('nn.SpatialClassNLLCriterion', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   local function targets(C, N, H, W)
      local t = torch.LongTensor(N, H, W)
      return t:apply(function() return math.random(1, C) end)
   end

   -- minus the (weighted) sum of the target pixels' inputs, over their total weight when averaged
   local function ref(x, t, w, average)
      local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
      local xf, tf = util.flat(x), util.flat(t)
      local s, total = 0, 0
      for n = 1, N do
         for p = 1, H * W do
            local c = tf[(n - 1) * H * W + p]
            local wc = w and w[c] or 1
            s = s - wc * xf[((n - 1) * C + c - 1) * H * W + p]
            total = total + wc
         end
      end
      return average and s / total or s, total
   end

   it('sums the negative log-probabilities at the target classes of every pixel', function()
      local x, t = rand(2, 4, 3, 5), targets(4, 2, 3, 5)
      local c = nn.SpatialClassNLLCriterion()
      local loss, total = c:forward(x, t)
      local want, wtotal = ref(x, t, nil, true)
      util.assert_close({ loss, total }, { want, wtotal }, TOL, 'averaged')
      check_grad(c, x, t, 'averaged')
      local w = U(0.5, 2, 4)
      local cw = nn.SpatialClassNLLCriterion(w, false)
      util.assert_close({ (cw:forward(x, t)) }, { (ref(x, t, w, false)) }, TOL, 'weighted, summed')
      check_grad(cw, x, t, 'weighted, summed')
      local ca = nn.SpatialClassNLLCriterion(w)
      local l2, t2 = ca:forward(x, t)
      local w2, wt2 = ref(x, t, w, true)
      util.assert_close({ l2, t2 }, { w2, wt2 }, TOL, 'weighted, averaged')
      util.assert_close({ ca.total_weight_tensor[1] }, { wt2 }, TOL, 'total_weight_tensor')
      check_grad(ca, x, t, 'weighted, averaged')
      assert.are.equal(4, ca:__len()) -- LuaJIT's # does not call __len on tables
      -- a target of another integer type is read as classes too
      util.assert_close({ (c:forward(x, t:double())) }, { want }, TOL, 'double target')
   end)

   it('names itself and what is wrong in its errors', function()
      local c = nn.SpatialClassNLLCriterion()
      local N = 'nn.SpatialClassNLLCriterion: '
      assert.has_error(function() c:forward(rand(4, 3, 5), targets(4, 1, 3, 5)) end,
         N .. 'only batches of spatial inputs (4-d, N x C x H x W) are supported, got size 4x3x5')
      assert.has_error(function() c:forward(rand(2, 4, 3, 5), targets(4, 2, 15, 1):view(2, 15)) end,
         N .. 'only batches of spatial targets (3-d, N x H x W) are supported, got size 2x15')
      assert.has_error(function() c:forward(rand(2, 4, 3, 5), targets(4, 2, 5, 3)) end,
         N .. 'size mismatch (input 2x4x3x5, target 2x5x3)')
      local c3 = nn.SpatialClassNLLCriterion(rand(3))
      assert.has_error(function() c3:forward(rand(2, 4, 3, 5), targets(4, 2, 3, 5)) end,
         N .. '3 class weights for 4 classes (give one per class or none)')
      assert.has_error(function() nn.SpatialClassNLLCriterion(rand(2, 2)) end, N .. 'weights must be a 1-d tensor')
      local ok = pcall(c.forward, c, rand(1, 3, 2, 2), torch.LongTensor(1, 2, 2):fill(4))
      assert.is_false(ok, 'a class beyond C is refused')
      assert.are.equal(0, c:__len())
   end)
end)
