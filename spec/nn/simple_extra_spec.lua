-- simple_extra_spec.lua: the simple.md modules Constant, Collapse, ZeroGrad, WhiteNoise, OneHot,
-- Convert and Kmeans: forward against float64 references built element by element on random
-- inputs, gradients by nn.Jacobian where they pass one, and the errors for bad arguments.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local J = nn.Jacobian
local TOL = 1e-6

describe('nn simple modules (Constant ... Kmeans)', function()
   local saved
   before_each(function()
      saved = torch.getdefaulttensortype()
      torch.setdefaulttensortype('torch.DoubleTensor')
   end)
   after_each(function() torch.setdefaulttensortype(saved) end)

   it('Constant outputs its value, repeated per sample of a batch, with a zero gradient', function()
      local v = torch.randn(3, 2)
      local m = nn.Constant(v:clone(), 2)
      local x = torch.randn(5, 4, 7)
      local y = m:forward(x)
      assert.are.same({ 5, 3, 2 }, y:size():totable())
      for b = 1, 5 do for i = 1, 3 do for j = 1, 2 do assert.are.equal(v[i][j], y[b][i][j]) end end end
      local gi = m:backward(x, torch.randn(5, 3, 2))
      assert.are.same({ 5, 4, 7 }, gi:size():totable())
      assert.are.equal(0, gi:abs():max())
      -- not a batch: the value itself; a number is a 1-element tensor
      assert.are.equal(0, util.maxdiff(m:forward(torch.randn(4, 7)), v))
      local c = nn.Constant(2.5)
      assert.are.same({ 2.5 }, c:forward(torch.randn(3)):totable())
      assert.are.same({ 0, 0 }, c:backward(torch.randn(2), torch.randn(1)):totable())
      util.assert_error(function() nn.Constant('x') end, 'nn.Constant', 'number or a tensor')
   end)

   it('Collapse flattens each sample (copying non-contiguous input), gradients viewed back', function()
      local m = nn.Collapse(2)
      local x = torch.randn(4, 3, 5)
      local y = m:forward(x)
      assert.are.same({ 4, 15 }, y:size():totable())
      for b = 1, 4 do for i = 1, 3 do for j = 1, 5 do assert.are.equal(x[b][i][j], y[b][(i - 1) * 5 + j]) end end end
      local xt = torch.randn(5, 3, 4):transpose(1, 3) -- 4 x 3 x 5, not contiguous
      local yt = m:forward(xt)
      for b = 1, 4 do for i = 1, 3 do for j = 1, 5 do assert.are.equal(xt[b][i][j], yt[b][(i - 1) * 5 + j]) end end end
      local go = torch.randn(4, 15)
      local gi = m:backward(xt, go)
      assert.are.same({ 4, 3, 5 }, gi:size():totable())
      assert.are.equal(0, util.maxdiff(gi:contiguous():view(4, 15), go))
      assert.are.same({ 15 }, m:forward(torch.randn(3, 5)):size():totable())
      assert(J.testJacobian(nn.Collapse(2), torch.Tensor(2, 3, 4)) < TOL)
      util.assert_error(function() nn.Collapse() end, 'nn.Collapse', 'nInputDim')
   end)

   it('ZeroGrad is the identity forward and stops the gradient', function()
      local m = nn.ZeroGrad()
      local x = torch.randn(3, 4)
      assert.are.equal(0, util.maxdiff(m:forward(x), x))
      local gi = m:backward(x, torch.randn(3, 4))
      assert.are.same({ 3, 4 }, gi:size():totable())
      assert.are.equal(0, gi:abs():max())
      local t = { torch.randn(2), { torch.randn(3, 2) } }
      local gt = m:backward(t, t)
      assert.are.same({ 3, 2 }, gt[2][1]:size():totable())
      assert.are.equal(0, gt[1]:abs():max() + gt[2][1]:abs():max())
   end)

   it('WhiteNoise adds N(mean, std) noise in training, mean in evaluation', function()
      local m = nn.WhiteNoise(0.3, 0.5)
      local x = torch.randn(200, 100)
      local n = m:forward(x) - x
      assert(math.abs(n:mean() - 0.3) < 0.02, 'mean ' .. n:mean())
      assert(math.abs(n:std() - 0.5) < 0.02, 'std ' .. n:std())
      assert.are.equal(0, util.maxdiff(m.noise, n) < 1e-12 and 0 or 1)
      local go = torch.randn(200, 100)
      assert.are.equal(0, util.maxdiff(m:backward(x, go), go))
      m:evaluate()
      assert(util.maxdiff(m:forward(x), x + 0.3) < 1e-15)
      util.assert_error(function() m:backward(x, go) end, 'nn.WhiteNoise', 'training')
      local d = nn.WhiteNoise()
      assert.are.equal(0, d.mean)
      assert.are.equal(0.1, d.std)
      util.assert_error(function() nn.WhiteNoise(0, -1) end, 'nn.WhiteNoise', 'std')
   end)

   it('OneHot puts a 1 at each index along a new last dimension', function()
      local m = nn.OneHot(6)
      local idx = torch.LongTensor(3, 4):random(1, 6)
      local y = m:forward(idx)
      assert.are.same({ 3, 4, 6 }, y:size():totable())
      assert.are.equal('torch.DoubleTensor', torch.type(y))
      for i = 1, 3 do for j = 1, 4 do for c = 1, 6 do
         assert.are.equal(c == idx[i][j] and 1 or 0, y[i][j][c])
      end end end
      -- floating indices and one number
      assert.are.equal(0, util.maxdiff(m:forward(idx:double()), y))
      assert.are.same({ 0, 0, 1, 0, 0, 0 }, m:forward(3):totable())
      assert.are.equal(0, m:updateGradInput(3, torch.randn(6)))
      local gi = m:backward(idx, torch.randn(3, 4, 6))
      assert.are.same({ 3, 4 }, gi:size():totable())
      assert.are.equal(0, gi:abs():max())
      assert.are.equal('torch.FloatTensor', torch.type(nn.OneHot(4):float():forward(torch.LongTensor { 2 })))
      util.assert_error(function() m:forward(torch.LongTensor { 7 }) end, 'nn.OneHot', '1..6')
      util.assert_error(function() m:forward(torch.LongTensor { 0 }) end, 'nn.OneHot', '1..6')
      util.assert_error(function() nn.OneHot() end, 'nn.OneHot', 'outputSize')
   end)

   it('Convert transposes named axes, flattens to bf, adds and drops the batch axis', function()
      local x = torch.randn(2, 3, 4, 5)
      local c = nn.Convert('bchw', 'chwb')
      local y = c:forward(x)
      assert.are.same({ 3, 4, 5, 2 }, y:size():totable())
      for b = 1, 2 do for ch = 1, 3 do for h = 1, 4 do for w = 1, 5 do
         assert.are.equal(x[b][ch][h][w], y[ch][h][w][b])
      end end end end
      assert(J.testJacobian(nn.Convert('bchw', 'hbwc'), torch.Tensor(2, 3, 4, 5)) < TOL)
      local f = nn.Convert('bchw', 'bf')
      local yf = f:forward(x)
      assert.are.same({ 2, 60 }, yf:size():totable())
      assert.are.equal(0, util.maxdiff(yf, x:contiguous():view(2, 60)))
      assert(J.testJacobian(nn.Convert('bchw', 'bf'), torch.Tensor(2, 3, 4, 5)) < TOL)
      -- a batch of one stays a batch
      assert.are.same({ 1, 60 }, nn.Convert('bchw', 'bf'):forward(torch.randn(1, 3, 4, 5)):size():totable())
      -- the batch axis elsewhere: swapped with the first (c h w b -> b h w c), then flattened
      local fb = nn.Convert('chwb', 'bf'):forward(y)
      for ch = 1, 3 do for h = 1, 4 do for w = 1, 5 do
         assert.are.equal(x[2][ch][h][w], fb[2][((h - 1) * 5 + w - 1) * 3 + ch])
      end end end
      -- one sample (fewer dimensions than the shape): the batch axis comes and goes
      local s = torch.randn(3, 4, 5)
      local ys = nn.Convert('chw', 'hwc'):forward(s)
      assert.are.same({ 4, 5, 3 }, ys:size():totable())
      assert.are.equal(s[2][3][4], ys[3][4][2])
      assert(J.testJacobian(nn.Convert('chw', 'hwc'), torch.Tensor(3, 4, 5)) < TOL)
      assert.are.same({ 60 }, nn.Convert('chw', 'f'):forward(s):size():totable())
      -- bf -> b (one feature), b -> bt
      local col = torch.randn(5, 1)
      assert.are.equal(0, util.maxdiff(nn.Convert('bf', 'b'):forward(col), col:select(2, 1)))
      assert.are.same({ 5, 1 }, nn.Convert('b', 'bt'):forward(torch.randn(5)):size():totable())
      -- types: the input is converted to the module's type, gradInput back to the input's
      local t = nn.Convert():float()
      local yt = t:forward(x)
      assert.are.equal('torch.FloatTensor', torch.type(yt))
      assert(util.maxdiff(yt, x) < 1e-6)
      assert.are.equal('torch.DoubleTensor', torch.type(t:backward(x, yt)))
      util.assert_error(function() nn.Convert('bf', 'b'):forward(torch.randn(5, 2)) end, 'feature > 1')
      util.assert_error(function() nn.Convert('bchw', 'bxy'):forward(x) end, 'nn.Convert', 'bchw to bxy')
      util.assert_error(function() nn.Convert(nil, 'bf') end, 'nn.Convert', 'inputShape')
      util.assert_error(function() nn.Convert('b*', 'bf') end, 'nn.Convert', 'b*')
   end)

   it('Kmeans assigns each row its nearest centre and moves centres toward their rows\' mean', function()
      local k, dim, n = 4, 3, 30
      local m = nn.Kmeans(k, dim)
      local x = torch.randn(n, dim)
      local out = m:forward(x)
      local loss, count, sum = 0, torch.zeros(k), torch.zeros(k, dim)
      for i = 1, n do
         local best, bi = math.huge, 0
         for c = 1, k do
            local d = 0
            for j = 1, dim do d = d + (x[i][j] - m.weight[c][j]) ^ 2 end
            if d < best then best, bi = d, c end
         end
         assert.are.equal(bi, out[i])
         loss = loss + best
         count[bi] = count[bi] + 1
         for j = 1, dim do sum[bi][j] = sum[bi][j] + x[i][j] - m.weight[bi][j] end
      end
      assert(math.abs(m.loss - loss) < 1e-10)
      m:zeroGradParameters()
      local gi = m:backward(x, torch.randn(n))
      assert.are.equal(0, gi:abs():max())
      assert.are.equal(0, util.maxdiff(m.clusterSampleCount, count))
      for c = 1, k do
         for j = 1, dim do
            local want = -sum[c][j] / (count[c] + 1e-7)
            assert(math.abs(m.gradWeight[c][j] - want) < 1e-10)
         end
      end
      -- scale given to the constructor wins over backward's
      local s = nn.Kmeans(k, dim, 0.5)
      s.weight:copy(m.weight)
      s:zeroGradParameters()
      s:forward(x)
      s:backward(x, torch.randn(n), 3)
      assert(util.maxdiff(s.gradWeight, m.gradWeight * 0.5) < 1e-12)
      -- training finds well separated clusters (kmeans++ start)
      local pts = torch.randn(60, 2):mul(0.05)
      for i = 1, 60 do pts[i]:add((i % 3) * 10) end
      local km = nn.Kmeans(3, 2)
      km:initKmeansPlus(pts)
      for _ = 1, 10 do
         km:zeroGradParameters()
         km:forward(pts)
         km:backward(pts)
         km:updateParameters(1) -- the documented step: weight - gradWeight
      end
      assert(km.loss < 60 * 4 * 0.05 ^ 2 * 4, 'loss ' .. km.loss)
      km:initRandom(pts)
      util.assert_error(function() m:forward(torch.randn(5, dim + 1)) end, 'nn.Kmeans', 'n x 3')
      util.assert_error(function() nn.Kmeans(k, dim):initRandom(torch.randn(2, dim)) end, 'at least k')
      util.assert_error(function() nn.Kmeans(0, 2) end, 'nn.Kmeans', 'k must be')
   end)
end)
