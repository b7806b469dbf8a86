-- torch.class, nn.Module semantics (backward accumulation, parameters, getParameters, type,
-- clone, traversal, clearState, tostring) and the containers/plumbing modules: Sequential,
-- Concat, ConcatTable, ParallelTable, CAddTable, JoinTable, Identity, View, Reshape, Flatten.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local function rand(shape, lo, hi) return (util.rand_tensor(shape, 'torch.DoubleTensor', lo, hi)) end
local dtol = util.tol['torch.DoubleTensor']

-- flat values of a tensor or a (nested) table of tensors
local function flat_all(x)
   if torch.isTensor(x) then return util.flat(x) end
   local out = {}
   for _, v in ipairs(x) do for _, e in ipairs(flat_all(v)) do out[#out + 1] = e end end
   return out
end
local function tensors_of(x, out)
   out = out or {}
   if torch.isTensor(x) then out[#out + 1] = x else for _, v in ipairs(x) do tensors_of(v, out) end end
   return out
end
local function rand_like(x)
   if torch.isTensor(x) then return rand(T.sizes(x)) end
   local r = {}
   for i, v in ipairs(x) do r[i] = rand_like(v) end
   return r
end

local function objective(m, x, go)
   local y, g = flat_all(m:forward(x)), flat_all(go)
   local s = 0
   for i = 1, #y do s = s + y[i] * g[i] end
   return s
end
local function numeric(m, x, go, t)
   local flat, out = t:view(t:nElement()), {}
   for i = 1, flat:nElement() do
      local v = flat[i]
      flat[i] = v + 1e-6
      local fp = objective(m, x, go)
      flat[i] = v - 1e-6
      local fm = objective(m, x, go)
      flat[i] = v
      out[i] = (fp - fm) / 2e-6
   end
   return out
end

-- whole-model check: gradInput (tensor or table) and the flat gradient from getParameters
local function gradcheck(m, x, what)
   m:double()
   local p, g = m:getParameters()
   local go = rand_like(m:forward(x))
   m:zeroGradParameters()
   local gi = flat_all(m:backward(x, go))
   local gflat = util.flat(g)
   -- finite differences on a contiguous copy (the analytical pass used x's own layout)
   local function contig(v)
      if torch.isTensor(v) then return v:clone() end
      local r = {}
      for i, e in ipairs(v) do r[i] = contig(e) end
      return r
   end
   local xc = contig(x)
   util.assert_close(gi, (function()
      local out = {}
      for _, t in ipairs(tensors_of(xc)) do for _, v in ipairs(numeric(m, xc, go, t)) do out[#out + 1] = v end end
      return out
   end)(), { atol = 1e-6, rtol = 1e-5 }, what .. ' gradInput')
   if p:nElement() > 0 then
      util.assert_close(gflat, numeric(m, x, go, p), { atol = 1e-6, rtol = 1e-5 }, what .. ' gradParameters')
   end
end

describe('torch.class', function()
   it('creates classes with parents, constructors, type names and isTypeOf', function()
      local name = 'spectest.Animal' .. math.random(1, 1e9)
      local Animal = torch.class(name)
      function Animal:__init(n) self.n = n end
      function Animal:speak() return 'animal ' .. self.n end
      local Dog, parent = torch.class(name .. 'Dog', name)
      assert.are.equal(Animal, parent)
      function Dog:__init(n) parent.__init(self, n * 2) end
      function Dog:bark() return 'woof' end
      local ns = rawget(_G, 'spectest')
      local d = ns[name:match('%.(.*)') .. 'Dog'](21)
      assert.are.equal(42, d.n)
      assert.are.equal('animal 42', d:speak())
      assert.are.equal('woof', d:bark())
      assert.are.equal(name .. 'Dog', torch.type(d))
      assert.are.equal(name .. 'Dog', torch.typename(d))
      assert.is_true(torch.isTypeOf(d, name))
      assert.is_true(torch.isTypeOf(d, Animal))
      assert.is_false(torch.isTypeOf(ns[name:match('%.(.*)')](1), name .. 'Dog'))
      util.assert_error(function() torch.class(name) end, 'already exists')
      util.assert_error(function() torch.class('spectest.X' .. math.random(1, 1e9), 'no.Such') end, 'unknown parent',
         'no.Such')
      -- tensors and plain values keep their type names
      assert.are.equal('torch.FloatTensor', torch.type(torch.FloatTensor(2)))
      assert.are.equal('number', torch.type(3))
      assert.are.equal('table', torch.type({}))
   end)

   it('puts nn classes in the nn table; nn modules are nn.Module', function()
      local l = nn.Linear(2, 3)
      assert.are.equal('nn.Linear', torch.type(l))
      assert.is_true(torch.isTypeOf(l, 'nn.Module'))
      assert.is_true(torch.isTypeOf(nn.Sequential(), nn.Container))
      assert.is_true(torch.isTypeOf(nn.SpatialBatchNormalization(3), 'nn.BatchNormalization'))
      assert.is_true(torch.isTypeOf(nn.MSECriterion(), 'nn.Criterion'))
   end)
end)

describe('nn.Module', function()
   it('backward accumulates scale * gradient; zeroGradParameters and updateParameters', function()
      local m = nn.Linear(4, 3):double()
      local x, go = rand { 2, 4 }, rand { 2, 3 }
      m:zeroGradParameters()
      for _, g in ipairs(select(2, m:parameters())) do assert.are.equal(0, g:abs():max()) end
      m:forward(x)
      m:backward(x, go)
      local g1 = util.flat(m.gradWeight)
      m:backward(x, go, 2)
      local g3 = util.flat(m.gradWeight)
      for i = 1, #g1 do assert(math.abs(g3[i] - 3 * g1[i]) < 1e-12) end
      local w0, gw = util.flat(m.weight), util.flat(m.gradWeight)
      m:updateParameters(0.1)
      local w1 = util.flat(m.weight)
      for i = 1, #w0 do assert(math.abs(w1[i] - (w0[i] - 0.1 * gw[i])) < 1e-12) end
   end)

   it('training() and evaluate() reach every module', function()
      local m = nn.Sequential():add(nn.Linear(2, 2)):add(nn.Dropout(0.5))
         :add(nn.Sequential():add(nn.BatchNormalization(2)))
      m:evaluate()
      for _, x in ipairs(m:listModules()) do assert.is_false(x.train) end
      m:training()
      for _, x in ipairs(m:listModules()) do assert.is_true(x.train) end
   end)

   it('getParameters: one flat storage, module tensors are views, a second call keeps it', function()
      local m = nn.Sequential():add(nn.Linear(3, 4)):add(nn.Tanh()):add(nn.Linear(4, 2, false))
         :add(nn.BatchNormalization(2))
      m:double()
      local before = {}
      for i, p in ipairs(m:parameters()) do before[i] = util.flat(p) end
      local p, g = m:getParameters()
      assert.are.equal(3 * 4 + 4 + 4 * 2 + 2 + 2, p:nElement())
      assert.are.equal(p:nElement(), g:nElement())
      -- values are preserved, in parameters() order
      util.assert_close(p, (function()
         local all = {}
         for _, b in ipairs(before) do for _, v in ipairs(b) do all[#all + 1] = v end end
         return all
      end)(), dtol, 'flat values')
      -- views: writing through the flat vector changes the modules, and back
      p:fill(0.25)
      assert.are.equal(0.25, m.modules[1].weight[2][3])
      assert.are.equal(0.25, m.modules[4].bias[1])
      m.modules[3].weight[1][1] = 7
      assert.are.equal(7, p[3 * 4 + 4 + 1])
      -- gradients land in the flat gradient vector
      g:zero()
      local x = rand { 5, 3 }
      m:forward(x)
      m:backward(x, rand { 5, 2 })
      assert.is_true(g:abs():sum() > 0)
      util.assert_close(g:narrow(1, 1, 12), util.flat(m.modules[1].gradWeight), dtol, 'flat gradient')
      -- a second call returns the same storage: earlier flat vectors stay valid
      local p2, g2 = m:getParameters()
      assert.is_true(p2:isSetTo(p))
      assert.is_true(g2:isSetTo(g))
      p2:fill(-1)
      assert.are.equal(-1, p[1])
      assert.are.equal(-1, m.modules[1].weight[1][1])
   end)

   it('getParameters survives type conversion and keeps shared weights shared', function()
      local m = nn.Sequential():add(nn.Linear(3, 3)):add(nn.ReLU()):add(nn.Linear(3, 3))
      local p = m:getParameters()
      m:double()
      assert.are.equal('torch.DoubleTensor', m.modules[1].weight:type())
      local p2 = m:getParameters()
      assert.are.equal(p:nElement(), p2:nElement())
      p2:fill(3)
      assert.are.equal(3, m.modules[3].bias[3])
      -- shared parameters are stored once
      local a = nn.Linear(4, 2):double()
      local b = a:clone('weight', 'bias', 'gradWeight', 'gradBias')
      local s = nn.Sequential():add(a):add(nn.Tanh()):add(nn.Linear(2, 4):double()):add(b)
      local sp, sg = s:getParameters()
      assert.are.equal(4 * 2 + 2 + 2 * 4 + 4, sp:nElement())
      assert.are.equal(sp:nElement(), sg:nElement())
      a.weight[1][1] = 42
      assert.are.equal(42, b.weight[1][1])
   end)

   it('type()/float()/double()/half() convert parameters, buffers and outputs', function()
      local m = nn.Sequential():add(nn.Linear(3, 2)):add(nn.BatchNormalization(2))
      assert.are.equal('torch.FloatTensor', m:type())
      m:double()
      assert.are.equal('torch.DoubleTensor', m:type())
      assert.are.equal('torch.DoubleTensor', m.modules[2].running_var:type())
      assert.are.equal('torch.DoubleTensor', m:forward(rand { 4, 3 }):type())
      m:half()
      assert.are.equal('torch.HalfTensor', m.modules[1].weight:type())
      m:float()
      local x = torch.randn(4, 3)
      assert.are.equal('torch.FloatTensor', m:forward(x):type())
      util.assert_error(function() m:type('torch.NoSuchTensor') end, 'NoSuchTensor')
   end)

   it('clone() is a deep copy; clone(names) shares those fields', function()
      local m = nn.Linear(3, 2)
      local c = m:clone()
      util.assert_close(c.weight, util.flat(m.weight), util.tol['torch.FloatTensor'], 'cloned weight')
      c.weight:fill(1)
      assert.are_not.equal(1, m.weight[1][1])
      local s = m:clone('weight')
      s.weight:fill(2)
      assert.are.equal(2, m.weight[1][1])
   end)

   it('apply, listModules, findModules and replace walk the tree', function()
      local inner = nn.Sequential():add(nn.Linear(2, 2)):add(nn.ReLU())
      local m = nn.Sequential():add(nn.Linear(3, 2)):add(inner):add(nn.ReLU())
      assert.are.equal(6, #m:listModules())
      assert.are.equal(inner, m:listModules()[3])
      local count = 0
      m:apply(function() count = count + 1 end)
      assert.are.equal(6, count)
      local relus, containers = m:findModules('nn.ReLU')
      assert.are.equal(2, #relus)
      assert.are.equal(inner, containers[1])
      assert.are.equal(m, containers[2])
      m:replace(function(x) if torch.type(x) == 'nn.ReLU' then return nn.Tanh() end return x end)
      assert.are.equal(0, #m:findModules('nn.ReLU'))
      assert.are.equal(2, #m:findModules('nn.Tanh'))
   end)

   it('clearState empties outputs and buffers but keeps parameters', function()
      local m = nn.Sequential():add(nn.Linear(3, 4)):add(nn.Dropout(0.5)):add(nn.BatchNormalization(4))
      local x = torch.randn(5, 3)
      m:forward(x)
      m:backward(x, torch.randn(5, 4))
      m:clearState()
      assert.are.equal(0, m.modules[1].output:nElement())
      assert.are.equal(0, m.modules[2].noise:nElement())
      assert.are.equal(12, m.modules[1].weight:nElement())
      assert.are.equal(4, m:forward(x):size(2))
   end)

   it('prints a readable tree like Torch7', function()
      local m = nn.Sequential():add(nn.Linear(10, 20)):add(nn.ReLU()):add(
         nn.Concat(2):add(nn.Linear(20, 3)):add(nn.Linear(20, 5, false)))
      local expected = table.concat({
         'nn.Sequential {',
         '  [input -> (1) -> (2) -> (3) -> output]',
         '  (1): nn.Linear(10 -> 20)',
         '  (2): nn.ReLU',
         '  (3): nn.Concat {',
         '    input',
         '      |`-> (1): nn.Linear(20 -> 3)',
         '       `-> (2): nn.Linear(20 -> 5) without bias',
         '       ... -> output',
         '  }',
         '}' }, '\n')
      assert.are.equal(expected, tostring(m))
   end)
end)

describe('containers', function()
   it('Sequential composes its modules and backpropagates (finite differences)', function()
      local m = nn.Sequential():add(nn.Linear(4, 5)):add(nn.Tanh()):add(nn.Linear(5, 3)):add(nn.LogSoftMax())
      m:double()
      local x = rand { 3, 4 }
      local ref = x
      for _, sub in ipairs(m.modules) do ref = sub:clone():forward(ref):clone() end
      util.assert_close(m:forward(x), util.flat(ref), dtol, 'composition')
      gradcheck(m, x, 'MLP')
      gradcheck(nn.Sequential():add(nn.Linear(3, 4)):add(nn.BatchNormalization(4)):add(nn.Sigmoid()), rand { 5, 3 },
         'BN MLP')
   end)

   it('Sequential insert/remove and error messages naming the failing module', function()
      local m = nn.Sequential():add(nn.Linear(3, 4)):add(nn.Linear(5, 2))
      util.assert_error(function() m:forward(torch.randn(2, 3)) end, 'nn.Linear', 'In 2 module of nn.Sequential')
      m:insert(nn.Linear(4, 5), 2)
      assert.are.equal(2, m:forward(torch.randn(2, 3)):size(2))
      m:remove(1)
      assert.are.equal(2, #m.modules)
      assert.are.equal(2, m:forward(torch.randn(6, 4)):size(2))
      util.assert_error(function() m:remove(5) end, 'remove', '5')
   end)

   it('Concat joins the outputs of its branches', function()
      local m = nn.Concat(2):add(nn.Linear(3, 2)):add(nn.Tanh()):add(nn.Linear(3, 4))
      m:double()
      local x = rand { 5, 3 }
      local y = m:forward(x)
      assert.are.same({ 5, 9 }, T.sizes(y))
      util.assert_close(y:narrow(2, 3, 3), util.flat(torch.tanh(x)), dtol, 'middle branch')
      gradcheck(m, x, 'Concat')
      util.assert_error(function() nn.Concat(2):add(nn.Linear(3, 2)):add(nn.View(-1)):forward(torch.randn(5, 3)) end,
         'nn.Concat')
   end)

   it('ConcatTable + CAddTable (a residual block) and ParallelTable + JoinTable', function()
      local res = nn.Sequential():add(nn.ConcatTable():add(nn.Linear(4, 4)):add(nn.Identity())):add(nn.CAddTable())
      res:double()
      local x = rand { 3, 4 }
      local lin = res.modules[1].modules[1]
      local ref = util.flat(lin:forward(x):clone():add(x))
      util.assert_close(res:forward(x), ref, dtol, 'residual')
      gradcheck(res, x, 'residual')
      local par = nn.Sequential():add(nn.ParallelTable():add(nn.Linear(3, 2)):add(nn.Tanh())):add(nn.JoinTable(2))
      par:double()
      local xs = { rand { 4, 3 }, rand { 4, 5 } }
      assert.are.same({ 4, 7 }, T.sizes(par:forward(xs)))
      gradcheck(par, xs, 'parallel+join')
      -- JoinTable with nInputDims: 1-d samples in a batch join along dim 2
      local j = nn.JoinTable(1, 1):double()
      assert.are.same({ 3, 5 }, T.sizes(j:forward({ rand { 3, 2 }, rand { 3, 3 } })))
      assert.are.same({ 5 }, T.sizes(j:forward({ rand { 2 }, rand { 3 } })))
      util.assert_error(function() nn.CAddTable():forward({ torch.randn(2), torch.randn(3) }) end, 'nn.CAddTable',
         '3', '2')
      util.assert_error(function() nn.JoinTable(2):forward({ torch.randn(2, 2), torch.randn(3, 2) }) end,
         'nn.JoinTable', '3x2')
   end)

   it('View, Reshape and Flatten reshape with batch handling', function()
      local x = rand { 4, 2, 3 }
      assert.are.same({ 4, 6 }, T.sizes(nn.View(6):forward(x)))          -- batch kept
      assert.are.same({ 24 }, T.sizes(nn.View(24):forward(x)))
      assert.are.same({ 4, 6 }, T.sizes(nn.View(-1):setNumInputDims(2):forward(x)))
      assert.are.same({ 3, 8 }, T.sizes(nn.View(-1, 8):forward(x)))
      assert.are.same({ 4, 3, 2 }, T.sizes(nn.Reshape(3, 2):forward(x)))
      assert.are.same({ 6, 4 }, T.sizes(nn.Reshape(6, 4):forward(x)))
      assert.are.same({ 4, 6 }, T.sizes(nn.Flatten():forward(x)))
      util.assert_error(function() nn.View(5):forward(x) end, 'nn.View', '4x2x3')
      util.assert_error(function() nn.Reshape(5):forward(x) end, 'nn.Reshape', '4x2x3')
      -- non-contiguous input and gradients with the input's shape
      for _, m in ipairs { nn.View(6), nn.Reshape(6), nn.Flatten() } do
         gradcheck(nn.Sequential():add(m):add(nn.Linear(6, 2)), rand({ 2, 3, 4 }):transpose(1, 3), torch.type(m))
      end
   end)
end)
