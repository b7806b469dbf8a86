-- table_spec.lua: Torch7's table layers and the containers Parallel, DepthConcat, Bottle and
-- MapTable: gradients by nn.Jacobian (table inputs and outputs), forward against float64 Lua
-- loops on random inputs, batch and non-batch forms, and the errors for bad input.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local TOL = 1e-6
local J = nn.Jacobian

-- largest |a - b| over two tensors of the same size (NaN compares as a failure)
local function maxdiff(a, b)
   assert.are.same(a:size():totable(), b:size():totable())
   local d = (a - b):abs():max()
   assert(d == d, 'NaN in result')
   return d
end

local function R(...) return torch.randn(...) end

-- elementwise reference over same-sized tensors: f(values...) at each element
local function ref_elementwise(input, f)
   local out = input[1]:clone()
   local flat = {}
   for i, x in ipairs(input) do flat[i] = x:contiguous():view(x:nElement()) end
   local o = out:view(out:nElement())
   for e = 1, out:nElement() do
      local vals = {}
      for i = 1, #flat do vals[i] = flat[i][e] end
      o[e] = f(unpack(vals))
   end
   return out
end

describe('nn table layers', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('CMulTable, CSubTable, CDivTable, CMaxTable, CMinTable match elementwise loops', function()
      local x = { R(3, 5), R(3, 5), R(3, 5) }
      assert(maxdiff(nn.CMulTable():forward(x), ref_elementwise(x, function(a, b, c) return a * b * c end)) < 1e-12)
      assert(maxdiff(nn.CMaxTable():forward(x), ref_elementwise(x, math.max)) == 0)
      assert(maxdiff(nn.CMinTable():forward(x), ref_elementwise(x, math.min)) == 0)
      local y = { x[1], x[2] }
      assert(maxdiff(nn.CSubTable():forward(y), ref_elementwise(y, function(a, b) return a - b end)) < 1e-12)
      assert(maxdiff(nn.CDivTable():forward(y), ref_elementwise(y, function(a, b) return a / b end)) < 1e-12)
      for _, m in ipairs({ nn.CMulTable(), nn.CMaxTable(), nn.CMinTable() }) do
         assert(J.testJacobian(m, { torch.Tensor(3, 5), torch.Tensor(3, 5), torch.Tensor(3, 5) }) < TOL)
      end
      assert(J.testJacobian(nn.CSubTable(), { torch.Tensor(7), torch.Tensor(7) }) < TOL)
      -- divisors away from 0, where central differences are accurate
      assert(J.testJacobian(nn.CDivTable(), { torch.Tensor(3, 5), torch.Tensor(3, 5) }, 0.5, 2) < TOL)
   end)

   it('CMaxTable and CMinTable send the gradient to the first input holding the extremum', function()
      local a, b = torch.Tensor({ 1, 5, 2 }), torch.Tensor({ 1, 3, 4 })
      local g = torch.Tensor({ 10, 20, 30 })
      local m = nn.CMaxTable()
      m:forward({ a, b })
      local gi = m:backward({ a, b }, g)
      assert.are.same({ 10, 20, 0 }, gi[1]:totable())
      assert.are.same({ 0, 0, 30 }, gi[2]:totable())
      local n = nn.CMinTable()
      n:forward({ a, b })
      gi = n:backward({ a, b }, g)
      assert.are.same({ 10, 0, 30 }, gi[1]:totable())
      assert.are.same({ 0, 20, 0 }, gi[2]:totable())
   end)

   it('DotProduct, PairwiseDistance, CosineDistance match row loops, batch and single', function()
      local a, b = R(4, 7), R(4, 7)
      local dot, dist = {}, { [1] = {}, [2] = {}, [3] = {}, [1.5] = {} }
      local cos = {}
      for r = 1, 4 do
         local s, na, nb = 0, 0, 0
         local ps = { [1] = 0, [2] = 0, [3] = 0, [1.5] = 0 }
         for c = 1, 7 do
            local x, y = a[r][c], b[r][c]
            s, na, nb = s + x * y, na + x * x, nb + y * y
            for p in pairs(ps) do ps[p] = ps[p] + math.abs(x - y) ^ p end
         end
         dot[r], cos[r] = s, s / math.sqrt((na + 1e-12) * (nb + 1e-12))
         for p in pairs(ps) do dist[p][r] = ps[p] ^ (1 / p) end
      end
      assert(maxdiff(nn.DotProduct():forward({ a, b }), torch.Tensor(dot)) < 1e-12)
      assert(maxdiff(nn.CosineDistance():forward({ a, b }), torch.Tensor(cos)) < 1e-12)
      assert(maxdiff(nn.PairwiseDistance():forward({ a, b }), torch.Tensor(dist[2])) < 1e-12)
      for _, p in ipairs({ 1, 1.5, 3 }) do
         assert(maxdiff(nn.PairwiseDistance(p):forward({ a, b }), torch.Tensor(dist[p])) < 1e-12)
      end
      -- vectors give an output of size 1
      local o = nn.DotProduct():forward({ a[2], b[2] })
      assert.are.same({ 1 }, o:size():totable())
      assert(math.abs(o[1] - dot[2]) < 1e-12)
      assert(math.abs(nn.CosineDistance():forward({ a[3], b[3] })[1] - cos[3]) < 1e-12)
      assert(math.abs(nn.PairwiseDistance():forward({ a[4], b[4] })[1] - dist[2][4]) < 1e-12)
      for _, m in ipairs({ nn.DotProduct(), nn.CosineDistance(), nn.PairwiseDistance(),
                            nn.PairwiseDistance(1), nn.PairwiseDistance(1.5), nn.PairwiseDistance(3) }) do
         assert(J.testJacobian(m, { torch.Tensor(3, 5), torch.Tensor(3, 5) }) < TOL, torch.type(m))
         assert(J.testJacobian(m, { torch.Tensor(5), torch.Tensor(5) }) < TOL, torch.type(m))
      end
      -- equal inputs: distance 0 and a zero (not NaN) gradient
      local pd = nn.PairwiseDistance()
      assert(maxdiff(pd:forward({ a, a }), torch.zeros(4)) == 0)
      local gi = pd:backward({ a, a }, torch.ones(4))
      assert(maxdiff(gi[1], torch.zeros(4, 7)) == 0)
   end)

   it('SplitTable: slices along a dimension, negative dimensions and nInputDims batches', function()
      local x = R(3, 4, 5)
      local out = nn.SplitTable(2):forward(x)
      assert.are.equal(4, #out)
      for i = 1, 4 do assert(maxdiff(out[i], x[{ {}, i, {} }]) == 0) end
      assert.are.equal(5, #nn.SplitTable(-1):forward(x))
      -- nInputDims = 2: a 3-d input is a batch, so dimension 1 means dimension 2
      local m = nn.SplitTable(1, 2)
      assert.are.equal(4, #m:forward(x))
      assert.are.equal(4, #m:forward(R(4, 5)))
      assert(J.testJacobian(nn.SplitTable(2), torch.Tensor(3, 4, 5)) < TOL)
      assert(J.testJacobian(nn.SplitTable(-1, 2), torch.Tensor(2, 3, 5)) < TOL)
      -- slices with no gradient get zeros
      local s = nn.SplitTable(1)
      s:forward(R(3, 2))
      local g = s:backward(R(3, 2), { [2] = torch.Tensor({ 7, 8 }) })
      assert.are.same({ { 0, 0 }, { 7, 8 }, { 0, 0 } }, g:totable())
      assert.has_error(function() nn.SplitTable(4):forward(x) end,
         'nn.SplitTable: dimension 4 out of range for an input of size 3x4x5')
   end)

   it('SelectTable: positive, negative and key indices into nested tables; zero gradients elsewhere', function()
      local x = { R(3), { R(2), R(4) }, R(5) }
      local m = nn.SelectTable(2)
      assert.are.equal(x[2], m:forward(x))
      assert.are.equal(x[3], nn.SelectTable(-1):forward(x))
      assert.are.equal(x[1], nn.SelectTable(-3):forward(x))
      local go = { R(2), R(4) }
      local gi = m:backward(x, go)
      assert(maxdiff(gi[2][1], go[1]) == 0 and maxdiff(gi[2][2], go[2]) == 0)
      assert(maxdiff(gi[1], torch.zeros(3)) == 0 and maxdiff(gi[3], torch.zeros(5)) == 0)
      assert.are.same({ 2, 4 }, { gi[2][1]:size(1), gi[2][2]:size(1) })
      local n = nn.SelectTable(1)
      n:forward(x)
      gi = n:backward(x, R(3))
      assert(maxdiff(gi[2][2], torch.zeros(4)) == 0)
      local k = nn.SelectTable('b')
      local y = { a = R(2), b = R(3) }
      assert.are.equal(y.b, k:forward(y))
      gi = k:backward(y, torch.ones(3))
      assert(maxdiff(gi.a, torch.zeros(2)) == 0 and maxdiff(gi.b, torch.ones(3)) == 0)
      assert(J.testJacobian(nn.SelectTable(-2), { torch.Tensor(3), { torch.Tensor(2), torch.Tensor(4) },
         torch.Tensor(5) }) < TOL)
      assert.are.equal('nn.SelectTable(-2)', tostring(nn.SelectTable(-2)))
      assert.has_error(function() nn.SelectTable(4):forward(x) end,
         'nn.SelectTable: index 4 does not exist in an input table of 3 elements')
   end)

   it('NarrowTable and FlattenTable', function()
      local x = { R(3), { R(2), R(4) }, R(5), R(1) }
      local m = nn.NarrowTable(2, 2)
      local out = m:forward(x)
      assert.are.equal(2, #out)
      assert.are.equal(x[2], out[1])
      assert.are.equal(x[3], out[2])
      assert.are.equal(x[1], nn.NarrowTable(1):forward(x)[1])
      assert(J.testJacobian(m, { torch.Tensor(3), { torch.Tensor(2), torch.Tensor(4) }, torch.Tensor(5),
         torch.Tensor(1) }) < TOL)
      assert.has_error(function() nn.NarrowTable(3, 3):forward(x) end,
         'nn.NarrowTable: elements 3 to 5 do not exist in an input table of 4 elements')

      local f = nn.FlattenTable()
      local flat = f:forward(x)
      assert.are.equal(5, #flat)
      for i, t in ipairs({ x[1], x[2][1], x[2][2], x[3], x[4] }) do assert.are.equal(t, flat[i]) end
      local go = { R(3), R(2), R(4), R(5), R(1) }
      local gi = f:backward(x, go)
      assert.are.equal(go[3], gi[2][2])
      assert.are.equal(go[5], gi[4])
      assert(J.testJacobian(f, { torch.Tensor(3), { torch.Tensor(2), { torch.Tensor(4) } }, torch.Tensor(5) }) < TOL)
   end)

   it('JoinTable (nInputDims, negative dimension) and CAddTable (inplace) follow their docs', function()
      local a, b = R(3, 2), R(3, 4)
      local j = nn.JoinTable(2, 2)
      assert.are.same({ 3, 6 }, j:forward({ a, b }):size():totable())
      -- a batch of 5: dimension 2 of each sample is dimension 3
      assert.are.same({ 5, 3, 6 }, j:forward({ R(5, 3, 2), R(5, 3, 4) }):size():totable())
      assert.are.same({ 3, 6 }, nn.JoinTable(-1):forward({ a, b }):size():totable())
      assert(J.testJacobian(nn.JoinTable(2, 2), { torch.Tensor(2, 3, 2), torch.Tensor(2, 3, 3) }) < TOL)
      local x, y = R(3, 4), R(3, 4)
      local expect = ref_elementwise({ x, y }, function(u, v) return u + v end)
      local c = nn.CAddTable(true)
      local o = c:forward({ x, y })
      assert(maxdiff(o, expect) < 1e-12)
      assert(maxdiff(x, expect) < 1e-12)      -- in place: the first input holds the sum
      assert(J.testJacobian(nn.CAddTable(), { torch.Tensor(3, 4), torch.Tensor(3, 4), torch.Tensor(3, 4) }) < TOL)
   end)

   it('elementwise table layers name themselves in errors on mismatched sizes', function()
      assert.has_error(function() nn.CMulTable():forward({ R(3), R(4) }) end,
         'nn.CMulTable: input 2 has size 4 but input 1 has size 3')
      assert.has_error(function() nn.CSubTable():forward({ R(3) }) end,
         'nn.CSubTable: expected a table of 2 tensors, got 1')
      assert.has_error(function() nn.CMaxTable():forward(R(3)) end,
         'nn.CMaxTable: expected a table of tensors, got torch.DoubleTensor')
      assert.has_error(function() nn.DotProduct():forward({ R(2, 3, 4), R(2, 3, 4) }) end,
         'nn.DotProduct: expected vectors or matrices (a batch of rows), got inputs of size 2x3x4')
   end)
end)

describe('nn containers Parallel, DepthConcat, Bottle, MapTable', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('Parallel: child i gets slice i along inputDimension; outputs join along outputDimension', function()
      local l1, l2 = nn.Linear(5, 3), nn.Linear(5, 2)
      local m = nn.Parallel(2, 2):add(l1):add(l2)
      local x = R(4, 2, 5)
      local out = m:forward(x)
      assert.are.same({ 4, 5 }, out:size():totable())
      assert(maxdiff(out:narrow(2, 1, 3), l1:forward(x:select(2, 1))) < 1e-12)
      assert(maxdiff(out:narrow(2, 4, 2), l2:forward(x:select(2, 2))) < 1e-12)
      local x3 = torch.Tensor(4, 2, 5)
      assert(J.testJacobian(m, x3) < TOL)
      assert(J.testJacobianParameters(m, x3, l1.weight, l1.gradWeight) < TOL)
      assert(J.testJacobianParameters(m, x3, l2.bias, l2.gradBias) < TOL)
      assert.has_error(function() m:forward(R(4, 3, 5)) end,
         'nn.Parallel: input has 3 slices along dimension 2 but there are only 2 modules')
   end)

   it('DepthConcat: smaller outputs are centred in zeros (odd padding after)', function()
      local c1 = nn.SpatialConvolution(2, 1, 1, 1)   -- 7x7
      local c3 = nn.SpatialConvolution(2, 2, 3, 3)   -- 5x5: starts at 2
      local c4 = nn.SpatialConvolution(2, 1, 4, 4)   -- 4x4: starts at floor(3/2)+1 = 2
      local m = nn.DepthConcat(1):add(c1):add(c3):add(c4)
      local x = R(2, 7, 7)
      local out = m:forward(x)
      assert.are.same({ 4, 7, 7 }, out:size():totable())
      local o1, o3, o4 = c1:forward(x), c3:forward(x), c4:forward(x)
      local expect = torch.zeros(4, 7, 7)
      for i = 1, 7 do for j = 1, 7 do
         expect[1][i][j] = o1[1][i][j]
         for k = 1, 2 do
            if i >= 2 and i <= 6 and j >= 2 and j <= 6 then expect[1 + k][i][j] = o3[k][i - 1][j - 1] end
         end
         if i >= 2 and i <= 5 and j >= 2 and j <= 5 then expect[4][i][j] = o4[1][i - 1][j - 1] end
      end end
      assert(maxdiff(out, expect) < 1e-12)
      local xs = torch.Tensor(2, 7, 7)
      assert(J.testJacobian(m, xs) < TOL)
      assert(J.testJacobianParameters(m, xs, c4.weight, c4.gradWeight) < TOL)
   end)

   it('Bottle: folds leading dimensions for a 2-d module and unfolds the output', function()
      local lin = nn.Linear(5, 3)
      local m = nn.Bottle(lin)
      local x = R(2, 3, 4, 5)
      local out = m:forward(x)
      assert.are.same({ 2, 3, 4, 3 }, out:size():totable())
      assert(maxdiff(out[2][3], lin:forward(x[2][3])) < 1e-12)
      assert(maxdiff(m:forward(x[1][1]), lin:forward(x[1][1])) < 1e-12)  -- 2-d input passes through
      local xs = torch.Tensor(2, 3, 5)
      assert(J.testJacobian(m, xs) < TOL)
      assert(J.testJacobianParameters(m, xs, lin.weight, lin.gradWeight) < TOL)
      assert(tostring(m):find('^nn.Bottle @ nn.Linear'))
      -- nInputDim = 4: a convolution over a batch of image sequences
      local conv = nn.SpatialConvolution(2, 3, 3, 3)
      local b = nn.Bottle(conv, 4)
      local v = R(2, 3, 2, 5, 5)
      assert.are.same({ 2, 3, 3, 3, 3 }, b:forward(v):size():totable())
      assert(maxdiff(b.output[2], conv:forward(v[2])) < 1e-12)
      assert(J.testJacobian(b, torch.Tensor(2, 2, 2, 4, 4)) < TOL)
      assert.has_error(function() m:forward(R(5)) end,
         'nn.Bottle: expected a tensor with at least 2 dimensions, got size 5')
   end)

   it('MapTable: one module over every element, clones sharing its parameters', function()
      local lin = nn.Linear(5, 3)
      local m = nn.MapTable(lin)
      local x = { R(2, 5), R(4, 5), R(5) }
      local out = m:forward(x)
      assert.are.equal(3, #out)
      for i = 1, 3 do assert(maxdiff(out[i], lin:clone():forward(x[i])) < 1e-12) end
      assert.are.equal(3, m:size())
      -- the shared gradient is the sum over the elements
      m:zeroGradParameters()
      local go = { R(2, 3), R(4, 3), R(3) }
      m:backward(x, go)
      local expect = torch.zeros(3, 5)
      for i = 1, 3 do
         local xi, gi = x[i], go[i]
         if xi:dim() == 1 then xi, gi = xi:view(1, 5), gi:view(1, 3) end
         expect:add(gi:t() * xi)
      end
      assert(maxdiff(lin.gradWeight, expect) < 1e-12)
      m:updateParameters(0.1)
      assert(maxdiff(m.modules[3].weight, lin.weight) == 0)
      local xs = { torch.Tensor(2, 5), torch.Tensor(3, 5) }
      assert(J.testJacobian(m, xs) < TOL)
      assert(J.testJacobianParameters(m, xs, lin.weight, lin.gradWeight) < TOL)
      -- getParameters counts the shared tensors once and keeps the clones on them
      local params = m:getParameters()
      assert.are.equal(18, params:nElement())
      params:add(1)
      assert(maxdiff(m.modules[2].weight, lin.weight) == 0)
      m:resize(5)
      assert.are.equal(5, m:size())
      assert(maxdiff(m.modules[5].weight, lin.weight) == 0)
      m:clearState()
      assert.are.equal(1, m:size())
      -- unshared clones are independent copies
      local u = nn.MapTable(nn.Linear(5, 3), false)
      u:forward(x)
      u.modules[2].weight:add(1)
      assert(maxdiff(u.modules[1].weight + 1, u.modules[2].weight) < 1e-12)
      assert.has_error(function() m:add(nn.Tanh()) end, 'nn.MapTable: holds a single module; it already has one')
   end)
end)
