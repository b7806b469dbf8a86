-- nn misc modules (issue 14): Bilinear, Cosine, L1Penalty, MaskedSelect, PixelShuffle,
-- TemporalDynamicKMaxPooling, AddConstant, MulConstant, CReLU, SpatialLogSoftMax, CriterionTable,
-- ClassSimplexCriterion, DistanceRatioCriterion, SpatialAutoCropMSECriterion. Forward against
-- float64 Lua loops and PyTorch (through /usr/bin/python3), module gradients with nn.Jacobian,
-- criterion gradients against central differences of forward; fresh random inputs each run.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local loss_diff = require('spec.nn.peer').loss_diff

local TOL = 1e-6
local close = util.assert_close

local function randn(...) return torch.DoubleTensor(...):normal() end

-- central differences of the criterion's loss against its gradInput (entry `which` of a table)
local function check_criterion_grad(crit, input, target, which)
   local grad = crit:backward(input, target)
   if which then grad = grad[which] end
   grad = grad:clone()
   local x = which and input[which] or input
   local fd = loss_diff(crit, input, target, x, 1e-6)
   close(grad, fd, { atol = 1e-7, rtol = 1e-6 }, torch.type(crit) .. ' gradient')
end

-- runs a python script (torch as t, F) printing one line of numbers per result
local function python(body)
   local lines = util.python_lines('try:\n    import torch as t, torch.nn.functional as F\nexcept ImportError:\n'
      .. '    print("no torch"); raise SystemExit\n' .. body)
   if #lines == 0 or lines[1] == 'no torch' then return nil end
   return lines
end

-- a float64 torch.tensor literal of a tensor's elements (row-major)
local function lit(x)
   local f = util.flat(x)
   for i = 1, #f do f[i] = ('%.17g'):format(f[i]) end
   return 't.tensor([' .. table.concat(f, ',') .. '], dtype=t.float64)'
end
local function numbers(line)
   local r = {}
   for v in line:gmatch('%S+') do r[#r + 1] = tonumber(v) end
   return r
end

describe('nn misc modules', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('Bilinear and PixelShuffle forward match PyTorch', function()
      local m = nn.Bilinear(3, 4, 5)
      local a, b = randn(6, 3), randn(6, 4)
      local ps = nn.PixelShuffle(3)
      local x = randn(2, 18, 3, 2)
      local lines = python(([[
w = %s.view(5, 3, 4)
bias = %s
a = %s.view(6, 3)
b = %s.view(6, 4)
x = %s.view(2, 18, 3, 2)
for o in [F.bilinear(a, b, w, bias), F.pixel_shuffle(x, 3), F.pixel_shuffle(x[1:2], 3)]:
    print(" ".join(repr(v) for v in o.flatten().tolist()))
]]):format(lit(m.weight), lit(m.bias), lit(a), lit(b), lit(x)))
      if not lines then return pending('no /usr/bin/python3 with torch') end
      close(m:forward({ a, b }), numbers(lines[1]), { atol = 1e-12, rtol = 1e-10 }, 'Bilinear')
      close(ps:forward(x), numbers(lines[2]), { atol = 0, rtol = 0 }, 'PixelShuffle batch')
      assert.are.same({ 2, 2, 9, 6 }, ps.output:size():totable())
      close(ps:forward(x[2]), numbers(lines[3]), { atol = 0, rtol = 0 }, 'PixelShuffle 3-d')
      assert.are.same({ 2, 9, 6 }, ps.output:size():totable())
   end)

   it('Bilinear: a Lua loop, jacobians, scale, no bias and bad sizes', function()
      local m = nn.Bilinear(3, 2, 4)
      local a, b = randn(5, 3), randn(5, 2)
      local want = {}
      for n = 1, 5 do
         for k = 1, 4 do
            local s = m.bias[k]
            for i = 1, 3 do for j = 1, 2 do s = s + a[n][i] * m.weight[k][i][j] * b[n][j] end end
            want[#want + 1] = s
         end
      end
      close(m:forward({ a, b }), want, { atol = 1e-12, rtol = 1e-10 }, 'Bilinear loop')
      local x = { torch.Tensor(3, 3), torch.Tensor(3, 2) }
      assert(nn.Jacobian.testJacobian(m, x) < TOL)
      assert(nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight) < TOL)
      assert(nn.Jacobian.testJacobianParameters(m, x, m.bias, m.gradBias) < TOL)
      -- scale multiplies the weight gradient too
      local go = randn(5, 4)
      m:zeroGradParameters()
      m:backward({ a, b }, go, 1)
      local g1 = m.gradWeight:clone()
      m:zeroGradParameters()
      m:backward({ a, b }, go, 0.5)
      close(m.gradWeight, g1 * 0.5, { atol = 1e-12 }, 'scaled gradWeight')
      local nb = nn.Bilinear(3, 2, 4, false)
      assert.is_nil(nb.bias)
      assert(nn.Jacobian.testJacobian(nb, x) < TOL)
      assert.has_error(function() m:forward({ randn(5, 2), b }) end,
         'nn.Bilinear: expected inputs of sizes Nx3 and Nx2, got 5x2 and 5x2')
      assert.has_error(function() m:forward(a) end)
      assert.has_error(function() nn.Bilinear(3, 0, 2) end)
   end)

   it('Cosine: vector and batch against a Lua loop, jacobians', function()
      local m = nn.Cosine(5, 3)
      local x = randn(4, 5)
      local want = {}
      for n = 1, 4 do
         for j = 1, 3 do
            local d, nx, nw = 0, 0, 0
            for i = 1, 5 do
               d = d + x[n][i] * m.weight[j][i]
               nx, nw = nx + x[n][i] ^ 2, nw + m.weight[j][i] ^ 2
            end
            want[#want + 1] = d / ((math.sqrt(nx) + 1e-12) * (math.sqrt(nw) + 1e-12))
         end
      end
      close(m:forward(x), want, { atol = 1e-12, rtol = 1e-10 }, 'Cosine batch')
      close(m:forward(x[3]), { want[7], want[8], want[9] }, { atol = 1e-12, rtol = 1e-10 }, 'Cosine vector')
      assert.are.same({ 3 }, m.output:size():totable())
      for _, inp in ipairs({ torch.Tensor(3, 5), torch.Tensor(5) }) do
         assert(nn.Jacobian.testJacobian(m, inp) < TOL)
         assert(nn.Jacobian.testJacobianParameters(m, inp, m.weight, m.gradWeight) < TOL)
      end
      assert.has_error(function() m:forward(randn(2, 4)) end, 'nn.Cosine: expected input of size 5 or Nx5, got 2x4')
   end)

   it('L1Penalty: passes the input through, records the loss, adds the L1 gradient', function()
      local x, go = randn(3, 5), randn(3, 5)
      local l1 = 0
      for i = 1, 3 do for j = 1, 5 do l1 = l1 + math.abs(x[i][j]) end end
      for _, sa in ipairs({ false, true }) do
         local m = nn.L1Penalty(0.3, sa)
         local w = sa and 0.3 / 15 or 0.3
         assert.are.equal(x, m:forward(x))
         close({ m.loss }, { w * l1 }, { atol = 1e-12, rtol = 1e-12 }, 'L1Penalty loss')
         local want = {}
         for i = 1, 3 do
            for j = 1, 5 do want[#want + 1] = go[i][j] + w * (x[i][j] > 0 and 1 or -1) end
         end
         close(m:backward(x, go), want, { atol = 1e-12, rtol = 1e-12 }, 'L1Penalty gradient')
      end
      local m = nn.L1Penalty(2, false, false)
      m:forward(x)
      close(m:backward(x, go), (x:clone():sign() * 2), { atol = 0 }, 'provideOutput = false')
      assert.has_error(function() nn.L1Penalty('a') end)
   end)

   it('MaskedSelect: selects in order and routes gradients back', function()
      local m = nn.MaskedSelect()
      local x = randn(4, 3)
      local mask = torch.ByteTensor(4, 3):bernoulli(0.5)
      mask[1][2], mask[3][3] = 1, 0
      local want = {}
      for i = 1, 4 do for j = 1, 3 do if mask[i][j] == 1 then want[#want + 1] = x[i][j] end end end
      close(m:forward({ x, mask }), want, { atol = 0 }, 'MaskedSelect')
      local go = randn(#want)
      local gi = m:backward({ x, mask }, go)
      local k, gwant = 0, {}
      for i = 1, 4 do
         for j = 1, 3 do
            if mask[i][j] == 1 then k = k + 1; gwant[#gwant + 1] = go[k] else gwant[#gwant + 1] = 0 end
         end
      end
      close(gi[1], gwant, { atol = 0 }, 'MaskedSelect gradient')
      assert.are.same({ 4, 3 }, gi[1]:size():totable())
      assert.are.equal(0, gi[2]:sum())
      assert.has_error(function() m:forward({ x, torch.ByteTensor(3, 4):fill(1) }) end,
         'nn.MaskedSelect: mask of size 3x4 does not match input of size 4x3')
   end)

   it('PixelShuffle: the index formula, jacobians, bad channel counts', function()
      local r = 2
      local m = nn.PixelShuffle(r)
      local x = randn(3, 4 * r * r, 3, 5)
      local y = m:forward(x)
      assert.are.same({ 3, 4, 6, 10 }, y:size():totable())
      for _, p in ipairs({ { 1, 1, 1, 1 }, { 2, 3, 5, 8 }, { 3, 4, 6, 10 }, { 1, 2, 4, 7 } }) do
         local n, c, h, w = p[1], p[2], p[3] - 1, p[4] - 1
         local i, j = h % r, w % r
         assert.are.equal(x[n][(c - 1) * r * r + i * r + j + 1][math.floor(h / r) + 1][math.floor(w / r) + 1],
            y[n][c][h + 1][w + 1])
      end
      assert(nn.Jacobian.testJacobian(m, torch.Tensor(2, 8, 2, 3)) < TOL)
      assert(nn.Jacobian.testJacobian(nn.PixelShuffle(3), torch.Tensor(18, 3, 1)) < TOL)
      assert.has_error(function() m:forward(randn(2, 6, 3, 3)) end,
         'nn.PixelShuffle: expected a [N x] C*4 x H x W input, got size 2x6x3x3')
   end)

   it('TemporalDynamicKMaxPooling: top k in sequence order, k from factor, jacobians', function()
      local function ref(x, k)
         local T, F = x:size(1), x:size(2)
         local out = torch.Tensor(k, F)
         for f = 1, F do
            local idx = {}
            for t = 1, T do idx[t] = t end
            table.sort(idx, function(p, q) return x[p][f] > x[q][f] end)
            local top = { unpack(idx, 1, k) }
            table.sort(top)
            for i = 1, k do out[i][f] = x[top[i]][f] end
         end
         return out
      end
      local m = nn.TemporalDynamicKMaxPooling(2, 0.6)
      local x = randn(7, 3)                                   -- k = max(2, ceil(4.2)) = 5
      close(m:forward(x), ref(x, 5), { atol = 0 }, 'TDKMP 2-d')
      local xb = randn(2, 3, 4)                               -- k = max(2, ceil(1.8)) = 2
      local yb = m:forward(xb)
      assert.are.same({ 2, 2, 4 }, yb:size():totable())
      close(yb[2], ref(xb[2], 2), { atol = 0 }, 'TDKMP batch')
      assert(nn.Jacobian.testJacobian(m, torch.Tensor(7, 3)) < TOL)
      assert(nn.Jacobian.testJacobian(nn.TemporalDynamicKMaxPooling(3), torch.Tensor(2, 5, 3)) < TOL)
      assert.has_error(function() nn.TemporalDynamicKMaxPooling(4):forward(randn(3, 2)) end,
         'nn.TemporalDynamicKMaxPooling: input sequence length (3) too small for k = 4')
      assert.has_error(function() m:forward(randn(5)) end)
   end)

   it('AddConstant and MulConstant: values, tensor constants, in place and restored', function()
      local x = randn(4, 3)
      close(nn.AddConstant(2.5):forward(x), x + 2.5, { atol = 0 }, 'AddConstant')
      close(nn.MulConstant(-1.5):forward(x), x * -1.5, { atol = 0 }, 'MulConstant')
      local c = randn(3)
      local want = x:clone()
      for i = 1, 4 do for j = 1, 3 do want[i][j] = want[i][j] + c[j] end end
      close(nn.AddConstant(c):forward(x), want, { atol = 0 }, 'AddConstant tensor')
      close(nn.AddConstant(c):forward(x[2]), want[2], { atol = 0 }, 'AddConstant tensor, vector input')
      assert.has_error(function() nn.AddConstant(c):forward(randn(4, 2)) end)
      assert(nn.Jacobian.testJacobian(nn.AddConstant(0.7), torch.Tensor(3, 5)) < TOL)
      assert(nn.Jacobian.testJacobian(nn.MulConstant(-2.3), torch.Tensor(3, 5)) < TOL)
      for _, m in ipairs({ nn.AddConstant(1.5, true), nn.AddConstant(c, true), nn.MulConstant(3, true) }) do
         local inp, orig, go = x:clone(), x:clone(), randn(4, 3)
         local out = m:forward(inp)
         assert.are.equal(inp, out)
         local want_gi = torch.type(m) == 'nn.MulConstant' and go * 3 or go:clone()
         close(m:backward(inp, go), want_gi, { atol = 1e-15 }, torch.type(m) .. ' in place gradient')
         close(inp, orig, { atol = 1e-14 }, torch.type(m) .. ' restores its input')
      end
      assert.has_error(function() nn.MulConstant(torch.Tensor(2)) end)
      assert.has_error(function() nn.AddConstant(1, 'yes') end)
   end)

   it('CReLU: [relu(x), relu(-x)] along the features, batch or not, jacobians', function()
      local m = nn.CReLU(3)
      local x = randn(2, 3, 2, 4)
      local y = m:forward(x)
      assert.are.same({ 2, 6, 2, 4 }, y:size():totable())
      for n = 1, 2 do
         for c = 1, 3 do
            close(y[n][c], x[n][c]:clone():clamp(0, math.huge), { atol = 0 }, 'CReLU positive half')
            close(y[n][c + 3], (-x[n][c]):clamp(0, math.huge), { atol = 0 }, 'CReLU negative half')
         end
      end
      local y1 = m:forward(x[2]):clone()
      assert.are.same({ 6, 2, 4 }, y1:size():totable())
      close(y1, y[2], { atol = 0 }, 'CReLU non-batch')
      assert(nn.Jacobian.testJacobian(m, torch.Tensor(2, 3, 2, 3)) < TOL)
      assert(nn.Jacobian.testJacobian(nn.CReLU(1), torch.Tensor(5)) < TOL)
      assert(nn.Jacobian.testJacobian(nn.CReLU(1, true), torch.Tensor(3, 5)) < TOL)
      assert.are.equal('CReLU()', tostring(m))
      assert.has_error(function() m:forward(randn(3, 4)) end,
         'nn.CReLU: expected a 3-d input or a 4-d batch, got size 3x4')
   end)

   it('SpatialLogSoftMax: log softmax over the planes at each pixel, jacobians', function()
      local m = nn.SpatialLogSoftMax()
      local x = randn(2, 4, 3, 2) * 3
      local y = m:forward(x):clone()
      for n = 1, 2 do
         for h = 1, 3 do
            for w = 1, 2 do
               local mx, s = -math.huge, 0
               for c = 1, 4 do mx = math.max(mx, x[n][c][h][w]) end
               for c = 1, 4 do s = s + math.exp(x[n][c][h][w] - mx) end
               for c = 1, 4 do
                  close({ y[n][c][h][w] }, { x[n][c][h][w] - mx - math.log(s) }, { atol = 1e-12, rtol = 1e-12 },
                     'SpatialLogSoftMax')
               end
            end
         end
      end
      close(m:forward(x[1]), y[1], { atol = 1e-15 }, 'SpatialLogSoftMax 3-d')
      assert(nn.Jacobian.testJacobian(m, torch.Tensor(2, 3, 2, 3)) < TOL)
      assert(nn.Jacobian.testJacobian(m, torch.Tensor(5, 3, 2)) < TOL)
   end)

   it('CriterionTable: the wrapped criterion on a {input, target} table', function()
      local crit = nn.MSECriterion()
      local m = nn.CriterionTable(crit)
      local x, t = randn(5), randn(5)
      assert.are.equal(0, m:forward({ x, x }))
      close({ m:forward({ x, t }) }, { (x - t):pow(2):mean() }, { atol = 1e-14 }, 'CriterionTable loss')
      local gi = m:backward({ x, t }, 1)
      assert.are.equal(1, #gi)
      close(gi[1], (x - t) * (2 / 5), { atol = 1e-14 }, 'CriterionTable gradient')
      assert.has_error(function() nn.CriterionTable(nn.Tanh()) end)
   end)

   it('ClassSimplexCriterion: a regular unit simplex, MSE to the class vertex, gradient', function()
      local k = 5
      local c = nn.ClassSimplexCriterion(k)
      local gram = c.simplex * c.simplex:t()
      for i = 1, k do
         for j = 1, k do
            close({ gram[i][j] }, { i == j and 1 or -1 / (k - 1) }, { atol = 1e-12 }, 'simplex gram')
         end
         assert.are.equal(0, c.simplex[i][k])
      end
      local x, y = randn(3, k), torch.LongTensor({ 2, 5, 1 })
      local s = 0
      for n = 1, 3 do for j = 1, k do s = s + (x[n][j] - c.simplex[y[n]][j]) ^ 2 end end
      close({ c:forward(x, y) }, { s / (3 * k) }, { atol = 1e-14, rtol = 1e-12 }, 'ClassSimplex loss')
      check_criterion_grad(c, x, y)
      local one = x[2]:clone()
      close({ c:forward(one, 4) }, { (one - c.simplex[4]):pow(2):mean() }, { atol = 1e-14 }, 'single sample')
      check_criterion_grad(c, one, 4)
      -- the prediction is the vertex nearest in angle
      local top = c:getTopPrediction(c.simplex:index(1, torch.LongTensor({ 3, 1, 5 })) + 0.01)
      assert.are.same({ 3, 1, 5 }, top:totable())
      assert.has_error(function() c:forward(x, torch.LongTensor({ 1, 6, 2 })) end,
         'nn.ClassSimplexCriterion: target classes must be integers in 1..5, got 1 to 6')
      assert.has_error(function() c:forward(x, torch.Tensor({ 1, 2.5, 2 })) end)
      assert.has_error(function() c:forward(x[1]:clone(), 0) end,
         'nn.ClassSimplexCriterion: target class 0 is not in 1..5')
      close({ c:forward(x, torch.Tensor({ 2, 5, 1 })) }, { s / (3 * k) }, { atol = 1e-14 }, 'double targets')
      assert.has_error(function() c:forward(randn(2, k), y) end)
      assert.has_error(function() nn.ClassSimplexCriterion(1) end)
   end)

   it('DistanceRatioCriterion: -log(e^-X / (e^-X + e^-Y)), gradients, no overflow', function()
      local X, Y = torch.DoubleTensor(6):uniform(0, 3), torch.DoubleTensor(6):uniform(0, 3)
      for _, sa in ipairs({ true, false }) do
         local c = nn.DistanceRatioCriterion(sa)
         local s = 0
         for i = 1, 6 do
            s = s - math.log(math.exp(-X[i]) / (math.exp(-X[i]) + math.exp(-Y[i])))
         end
         close({ c:forward({ X, Y }) }, { sa and s / 6 or s }, { atol = 1e-13, rtol = 1e-12 }, 'DistanceRatio loss')
         check_criterion_grad(c, { X, Y }, nil, 1)
         check_criterion_grad(c, { X, Y }, nil, 2)
      end
      local c = nn.DistanceRatioCriterion(false)
      close({ c:forward({ torch.Tensor({ 900 }), torch.Tensor({ 0 }) }) }, { 900 }, { atol = 1e-12 }, 'large X')
      close({ c:forward({ torch.Tensor({ 0 }), torch.Tensor({ 900 }) }) }, { 0 }, { atol = 1e-12 }, 'large Y')
      assert.has_error(function() c:forward({ randn(3), randn(4) }) end,
         'nn.DistanceRatioCriterion: distances of sizes 3 and 4 do not match')
   end)

   it('SpatialAutoCropMSECriterion: MSE against the centred crop of the target', function()
      for _, sa in ipairs({ true, false }) do
         local c = nn.SpatialAutoCropMSECriterion(sa)
         local x, t = randn(2, 3, 3, 2), randn(2, 3, 6, 5)
         local s = 0
         -- crop rows 1 + floor(3/2) = 2..4, columns 1 + floor(3/2) = 2..3
         for n = 1, 2 do
            for ch = 1, 3 do
               for h = 1, 3 do for w = 1, 2 do s = s + (x[n][ch][h][w] - t[n][ch][h + 1][w + 1]) ^ 2 end end
            end
         end
         close({ c:forward(x, t) }, { sa and s / x:nElement() or s }, { atol = 1e-13, rtol = 1e-12 }, 'loss')
         check_criterion_grad(c, x, t)
         local x3, t3 = randn(2, 4, 3), randn(2, 4, 3)
         close({ c:forward(x3, t3) }, { nn.MSECriterion(sa):forward(x3, t3) }, { atol = 1e-14 }, 'same size')
      end
      local c = nn.SpatialAutoCropMSECriterion()
      assert.has_error(function() c:forward(randn(2, 5, 3), randn(2, 4, 4)) end,
         'nn.SpatialAutoCropMSECriterion: input 2x5x3 must match target 2x4x4 but for a spatial size no larger')
      assert.has_error(function() c:forward(randn(2, 3, 3), randn(3, 4, 4)) end)
      assert.has_error(function() c:forward(randn(3, 3), randn(4, 4)) end)
   end)

   it('modules read back from a MemoryFile compute the same (testIO)', function()
      local cases = {
         { nn.Bilinear(3, 2, 4), { torch.Tensor(3, 3), torch.Tensor(3, 2) } },
         { nn.Cosine(3, 4), torch.Tensor(2, 3) },
         { nn.CReLU(2), torch.Tensor(3, 2, 4) },
         { nn.PixelShuffle(2), torch.Tensor(2, 4, 2, 3) },
         { nn.TemporalDynamicKMaxPooling(2, 0.5), torch.Tensor(5, 3) },
      }
      for _, c in ipairs(cases) do
         local fo, bo = nn.Jacobian.testIO(c[1], c[2])
         assert.are.equal(0, fo, torch.type(c[1]))
         assert.are.equal(0, bo, torch.type(c[1]))
      end
   end)
end)
