-- sparse_spec.lua: nn.SparseLinear against a float64 nn.Linear on the densified input (single
-- samples, tables of them, the legacy B x k x 2 form, repeated indices), its sparse parameter
-- updates as Torch7 codes them, and nn.SparseJacobian's finite differences, which must also catch
-- a wrong gradient.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local TOL = 1e-10

-- k distinct random indices in 1..n with random nonzero values, as k x 2 (index, value) rows
local function sparse_rows(n, k)
   local r = torch.Tensor(k, 2)
   r:select(2, 1):copy(torch.randperm(n):narrow(1, 1, k))
   r:select(2, 2):uniform(0.5, 1.5):cmul(torch.Tensor(k):bernoulli(0.5):mul(2):add(-1))
   return r
end

-- the dense 1 x n row of a sample (repeated indices add up)
local function dense(rows, n)
   local d = torch.zeros(n)
   for i = 1, rows:size(1) do d[rows[i][1]] = d[rows[i][1]] + rows[i][2] end
   return d
end

local function maxdiff(a, b) return (a - b):abs():max() end

local function pair(nin, nout)
   local m = nn.SparseLinear(nin, nout, true)
   local ref = nn.Linear(nin, nout)
   ref.weight:copy(m.weight)
   m.bias:uniform(-1, 1) -- the default bias is tiny: a wrong bias term must show
   ref.bias:copy(m.bias)
   m:zeroGradParameters()
   ref:zeroGradParameters()
   return m, ref
end

describe('nn.SparseLinear', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('is Linear on the densified sample: output, gradInput, gradWeight, gradBias', function()
      local nin, nout = 13, 4
      local m, ref = pair(nin, nout)
      local x = sparse_rows(nin, 5)
      x = torch.cat(x, x:narrow(1, 1, 2):clone(), 1) -- a repeated index adds up
      local d = dense(x, nin)
      local y = m:forward(x)
      assert.are.same({ nout }, y:size():totable())
      assert(maxdiff(y, ref:forward(d)) < TOL)
      local go = torch.Tensor(nout):uniform(-1, 1)
      local gi = m:backward(x, go)
      local want = ref:backward(d, go)
      assert.are.equal(1, #gi)
      assert.are.same({ nin, 2 }, gi[1]:size():totable())
      assert(maxdiff(gi[1]:select(2, 1), torch.range(1, nin)) == 0)
      assert(maxdiff(gi[1]:select(2, 2), want) < TOL)
      assert(maxdiff(m.gradWeight, ref.gradWeight) < TOL)
      assert(maxdiff(m.gradBias, ref.gradBias) < TOL)
      assert(m.gradWeight:abs():sum() > 0)
   end)

   it('takes a batch as a table of samples of different lengths, or B x k x 2', function()
      local nin, nout, b = 11, 3, 4
      local m, ref = pair(nin, nout)
      local xs, ds = {}, torch.Tensor(b, nin)
      for i = 1, b do
         xs[i] = sparse_rows(nin, i + 1)
         ds[i]:copy(dense(xs[i], nin))
      end
      local go = torch.Tensor(b, nout):uniform(-1, 1)
      assert(maxdiff(m:forward(xs), ref:forward(ds)) < TOL)
      local gi = m:backward(xs, go)
      local want = ref:backward(ds, go)
      for i = 1, b do assert(maxdiff(gi[i]:select(2, 2), want[i]) < TOL) end
      assert(maxdiff(m.gradWeight, ref.gradWeight) < TOL)
      assert(maxdiff(m.gradBias, ref.gradBias) < TOL)

      local legacy = torch.Tensor(b, 3, 2)
      for i = 1, b do
         legacy[i]:copy(sparse_rows(nin, 3))
         ds[i]:copy(dense(legacy[i], nin))
      end
      m:zeroGradParameters()
      ref:zeroGradParameters()
      assert(maxdiff(m:forward(legacy), ref:forward(ds)) < TOL)
      local lgi = m:backward(legacy, go)
      assert.are.same({ b, nin, 2 }, lgi:size():totable())
      assert(maxdiff(lgi:select(3, 2), ref:backward(ds, go)) < TOL)
      assert(maxdiff(m.gradWeight, ref.gradWeight) < TOL)
   end)

   it('gives no gradInput values without doGradInput, and adds weightDecay * weight', function()
      local m = nn.SparseLinear(9, 2)
      local x = sparse_rows(9, 3)
      m:forward(x)
      m:zeroGradParameters()
      local go = torch.Tensor(2):uniform(-1, 1)
      assert.are.same({}, m:backward(x, go))
      local g1 = m.gradWeight:clone()
      m.weightDecay = 0.3
      m:zeroGradParameters()
      m:backward(x, go)
      assert(maxdiff(m.gradWeight, g1 + m.weight * 0.3) < TOL)
   end)

   it('updates and zeroes only the columns of the last input after one accumulation', function()
      local nin, nout = 10, 3
      local m = nn.SparseLinear(nin, nout)
      local x = torch.Tensor { { 2, 0.7 }, { 5, -1.2 }, { 7, 0 } } -- index 7 has a zero value: unused
      m.gradWeight:uniform(-1, 1) -- stale gradients the sparse update must leave alone
      local stale = m.gradWeight:clone()
      local w0, b0 = m.weight:clone(), m.bias:clone()
      m:forward(x)
      m:backward(x, torch.Tensor(nout):uniform(-1, 1))
      local g = m.gradWeight:clone()
      m:updateParameters(0.5)
      for j = 1, nin do
         local moved = maxdiff(m.weight:select(2, j), w0:select(2, j))
         if j == 2 or j == 5 then
            assert(maxdiff(m.weight:select(2, j), w0:select(2, j) - g:select(2, j) * 0.5) < TOL)
         else
            assert.are.equal(0, moved)
         end
      end
      assert(maxdiff(m.bias, b0 - m.gradBias * 0.5) < TOL)
      m:zeroGradParameters()
      assert.are.equal(0, m.gradBias:abs():max())
      for j = 1, nin do
         local want = (j == 2 or j == 5) and 0 or stale:select(2, j):abs():max()
         assert.are.equal(want, m.gradWeight:select(2, j):abs():max())
      end
      -- two accumulations: the update and the zeroing are dense again
      m.gradWeight:uniform(-1, 1)
      for _ = 1, 2 do
         m:forward(x)
         m:backward(x, torch.Tensor(nout):uniform(-1, 1))
      end
      local w1, g2 = m.weight:clone(), m.gradWeight:clone()
      m:updateParameters(0.5)
      assert(maxdiff(m.weight, w1 - g2 * 0.5) < TOL)
      m:zeroGradParameters()
      assert.are.equal(0, m.gradWeight:abs():max())
   end)

   it('passes nn.SparseJacobian: input values, weight, bias, direct update, I/O, update paths', function()
      local m = nn.SparseLinear(8, 3, true)
      local x = sparse_rows(8, 4)
      assert(nn.SparseJacobian.testJacobian(m, x) < 1e-6)
      assert(nn.SparseJacobian.testJacobianParameters(m, x, m.weight, m.gradWeight) < 1e-6)
      assert(nn.SparseJacobian.testJacobianParameters(m, x, m.bias, m.gradBias) < 1e-6)
      assert(nn.SparseJacobian.testJacobianUpdateParameters(m, x, m.weight) < 1e-6)
      assert(nn.SparseJacobian.testJacobianUpdateParameters(m, x, m.bias) < 1e-6)
      local fe, be = nn.SparseJacobian.testIO(m, x)
      assert.are.equal(0, fe)
      assert.are.equal(0, be)
      for what, err in pairs(nn.SparseJacobian.testAllUpdate(m, x, 'weight', 'gradWeight')) do
         assert(err < 1e-9, what .. ': ' .. err)
      end
      -- the finite differences themselves: d out[o] / d value[r] = weight[o][index[r]]
      local jf = nn.SparseJacobian.forward(m, x)
      for r = 1, 4 do
         for o = 1, 3 do assert(math.abs(jf[r][o] - m.weight[o][x[r][1]]) < 1e-7) end
      end
   end)

   it('refuses bad indices, bad shapes and a wrong-sized gradOutput with a clear error', function()
      local m = nn.SparseLinear(6, 2)
      local function err_of(fn)
         local ok, e = pcall(fn)
         assert(not ok)
         return tostring(e)
      end
      assert.matches('indices must be integers in 1..6', err_of(function() m:forward(torch.Tensor { { 7, 1 } }) end))
      assert.matches('indices must be integers', err_of(function() m:forward(torch.Tensor { { 0, 1 } }) end))
      assert.matches('indices must be integers', err_of(function() m:forward(torch.Tensor { { 1.5, 1 } }) end))
      assert.matches('k x 2 tensor', err_of(function() m:forward(torch.Tensor(3, 3)) end))
      assert.matches('batch element 2', err_of(function() m:forward({ torch.Tensor { { 1, 1 } }, 'x' }) end))
      local x = torch.Tensor { { 1, 1 }, { 3, 2 } }
      m:forward(x)
      assert.matches('gradOutput has size 3', err_of(function() m:backward(x, torch.Tensor(3)) end))
      assert.has_error(function() nn.SparseLinear(0, 2) end)
   end)
end)

describe('nn.SparseJacobian', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('checks PartialLinear on a dense input (values in column 2), as nn\'s test does', function()
      local m = nn.PartialLinear(5, 7)
      m:setPartition(torch.LongTensor { 2, 3, 6 })
      local x = torch.randn(4, 5)
      local lt = m.network:get(1):get(2)
      assert(nn.SparseJacobian.testJacobian(m, x) < 1e-6)
      assert(nn.SparseJacobian.testJacobianParameters(m, x, lt.weight, lt.gradWeight) < 1e-6)
      assert(nn.SparseJacobian.testJacobianParameters(m, x, m.bias, m.gradBias) < 1e-6)
      assert(nn.SparseJacobian.testJacobianUpdateParameters(m, x, lt.weight) < 1e-6)
      assert.are.same({ 4, 12 }, nn.SparseJacobian.forward(m, x):size():totable())
   end)

   it('catches a wrong gradient and refuses an input it cannot read', function()
      local name = 'SparseJacobianSpecBad' .. math.random(1e9)
      local Bad, parent = torch.class('nn.' .. name, 'nn.SparseLinear')
      function Bad:accGradParameters(input, gradOutput, scale)
         parent.accGradParameters(self, input, gradOutput, scale)
         self.gradWeight:mul(1.01)
      end
      local m = nn[name](8, 3, true)
      local x = sparse_rows(8, 4)
      assert(nn.SparseJacobian.testJacobian(m, x) < 1e-6)
      assert(nn.SparseJacobian.testJacobianParameters(m, x, m.weight, m.gradWeight) > 1e-4)
      assert.has_error(function() nn.SparseJacobian.testJacobian(m, torch.Tensor(4)) end,
         'nn.SparseJacobian: expected an nnz x 2 input of (index, value) rows, got a tensor of size 4')
   end)
end)
