-- module_utils_spec.lua: Module details Torch7 code relies on (sharing kept through type
-- conversion, sharedClone) and nn.utils' tensor helpers (recursiveType, addSingletonDimension,
-- contiguousView, clear), on fresh random values.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

describe('nn.Module sharing', function()
   it('keeps weights shared through :double() and :float()', function()
      local a = nn.Linear(3, 4)
      local b = a:clone('weight', 'bias')
      local net = nn.Sequential():add(a):add(nn.Tanh()):add(nn.Linear(4, 4)):add(b:clone())
      net:add(b)
      for _, to in ipairs { 'double', 'float', 'double' } do
         net[to](net)
         local v = math.random(1, 100) / 4 -- exact in float32
         a.weight:fill(v)
         assert.are.equal(v, b.weight[2][3])
         a.bias:fill(-v)
         assert.are.equal(-v, b.bias[4])
      end
   end)

   it('sharedClone shares parameters (and their gradients by default), not buffers', function()
      local m = nn.Linear(5, 2)
      local c = m:sharedClone()
      m.weight:copy(util.rand_tensor({ 2, 5 }, 'torch.FloatTensor', -1, 1))
      assert.are.equal(0, (c.weight - m.weight):abs():max())
      m.gradWeight:fill(3)
      assert.are.equal(3, c.gradWeight[1][1])
      local x = util.rand_tensor({ 4, 5 }, 'torch.FloatTensor', -1, 1)
      c:forward(x)
      assert.are_not.equal(m.output, c.output)
      local d = m:sharedClone(true, false)
      d.gradWeight:fill(7)
      assert.are.equal(3, m.gradWeight[1][1])
      m.bias:fill(0.5)
      assert.are.equal(0.5, d.bias[2])
   end)
end)

describe('nn.utils', function()
   it('recursiveType converts nested tables once per tensor', function()
      local t = util.rand_tensor({ 3 }, 'torch.FloatTensor', -1, 1)
      local p = { t, { t, util.rand_tensor({ 2, 2 }, 'torch.FloatTensor', -1, 1) }, 'label' }
      local q = nn.utils.recursiveType(p, 'torch.DoubleTensor')
      assert.are.equal('torch.DoubleTensor', q[1]:type())
      assert.are.equal(q[1], q[2][1]) -- one tensor in, one tensor out
      assert.are.equal('label', q[3])
      assert(math.abs(q[1][2] - t[2]) < 1e-7)
   end)

   it('addSingletonDimension inserts a size-1 dim as a view', function()
      local t = util.rand_tensor({ 3, 5 }, 'torch.DoubleTensor', -1, 1)
      for dim = 1, 3 do
         local v = nn.utils.addSingletonDimension(t, dim)
         assert.are.equal(3, v:dim())
         assert.are.equal(1, v:size(dim))
         assert.are.equal(0, (v:view(3, 5) - t):abs():max())
      end
      local tt = t:t()
      local v = nn.utils.addSingletonDimension(torch.DoubleTensor(), tt, 2)
      assert.are.same({ 5, 1, 3 }, v:size():totable())
      assert.are.equal(tt[4][2], v[4][1][2])
      v[4][1][2] = 42
      assert.are.equal(42, t[2][4])
      util.assert_error(function() nn.utils.addSingletonDimension(t, 4) end, 'dim 4 out of range')
   end)

   it('contiguousView views contiguous inputs and copies the others', function()
      local t = util.rand_tensor({ 4, 6 }, 'torch.DoubleTensor', -1, 1)
      local out = torch.DoubleTensor()
      local v = nn.utils.contiguousView(out, t, 24)
      v[1] = 9
      assert.are.equal(9, t[1][1])
      local w = nn.utils.contiguousView(out, t:t(), 24)
      assert.are.equal(t[2][1], w[2])
      assert.are.equal(24, out:nElement())
   end)

   it('clear empties named tensors and tables', function()
      local m = nn.Linear(2, 2)
      m:forward(torch.randn(3, 2))
      m.scratch = { 1, 2 }
      nn.utils.clear(m, 'output', 'scratch')
      assert.are.equal(0, m.output:nElement())
      assert.are.same({}, m.scratch)
      m:forward(torch.randn(3, 2))
      nn.utils.clear(m, { 'output' })
      assert.are.equal(0, m.output:nElement())
   end)
end)
