-- decorator_spec.lua: nn.Decorator and the modules built on it (NaN, Profile, DontCast), and
-- PrintSize: each gives the decorated module's results (float64, random inputs, gradients by
-- nn.Jacobian through the decorator), plus what it adds: NaN's errors naming where the NaN is,
-- Profile's counts and prints, DontCast's types, PrintSize's printed sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local J = nn.Jacobian
local TOL = 1e-6

-- f() with print captured: returns the printed lines (print of the globals the modules see: busted
-- gives each spec file an environment of its own)
local function printed(f)
   local G = getfenv(nn.Profile.updateOutput)
   local lines, saved = {}, G.print
   G.print = function(...)
      local parts = {}
      for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
      lines[#lines + 1] = table.concat(parts, '\t')
   end
   local ok, err = pcall(f)
   G.print = saved
   assert(ok, err)
   return lines
end

-- a decorated module against a clone of the bare one: output, gradInput, parameter gradients
local function same_as_bare(dec, bare, x, go)
   local ref = bare:clone()
   dec:zeroGradParameters()
   ref:zeroGradParameters()
   assert(util.maxdiff(dec:forward(x), ref:forward(x)) == 0)
   assert(util.maxdiff(dec:backward(x, go), ref:backward(x, go)) == 0)
   local _, g1 = dec:parameters()
   local _, g2 = ref:parameters()
   assert.are.equal(#g2, #g1)
   for i = 1, #g1 do assert(util.maxdiff(g1[i], g2[i]) == 0) end
end

describe('nn decorators', function()
   local saved
   before_each(function()
      saved = torch.getdefaulttensortype()
      torch.setdefaulttensortype('torch.DoubleTensor')
   end)
   after_each(function() torch.setdefaulttensortype(saved) end)

   it('Decorator hands every call to its module and counts as a container of it', function()
      local lin = nn.Linear(5, 3)
      local d = nn.Decorator(lin)
      assert.are.equal(lin, d.modules[1])
      same_as_bare(d, lin, torch.randn(4, 5), torch.randn(4, 3))
      assert(J.testJacobian(d, torch.Tensor(4, 5)) < TOL)
      assert(J.testJacobianParameters(d, torch.Tensor(4, 5), lin.weight, lin.gradWeight) < TOL)
      assert(J.testJacobianUpdateParameters(d, torch.Tensor(4, 5), lin.bias) < TOL)
      assert(tostring(d):find('nn.Decorator @ nn.Linear', 1, true))
      util.assert_error(function() nn.Decorator(3) end, 'nn.Decorator', 'expects a module')
   end)

   it('Decorator.decorate gives another class the forwarding methods', function()
      nn.Decorator.decorate(torch.class('nn.DecoratorSpecTmp', 'nn.Container'))
      local m = nn.DecoratorSpecTmp()
      local t = nn.Tanh()
      m.modules[1] = t
      local x = torch.randn(3, 4)
      assert(util.maxdiff(m:forward(x), torch.tanh(x)) < 1e-15)
      nn.DecoratorSpecTmp = nil
   end)

   it('NaN passes results through and names where a NaN appears', function()
      local lin = nn.Linear(3, 4)
      local m = nn.NaN(lin)
      local id = m.id
      assert.are.equal(id + 1, nn.NaN(nn.Tanh()).id)
      assert.are.equal('custom', nn.NaN(nn.Tanh(), 'custom').id)
      same_as_bare(m, lin, torch.randn(2, 3), torch.randn(2, 4))
      assert(J.testJacobian(m, torch.Tensor(2, 3)) < TOL)
      local nan = 0 / 0
      local x = torch.randn(2, 3)
      x[1][2] = nan
      util.assert_error(function() m:forward(x) end, 'NaN found in input', 'nn.NaN(' .. id .. ') @ nn.Linear')
      lin.bias[2] = nan
      util.assert_error(function() m:forward(torch.randn(2, 3)) end, 'NaN found in parameters')
      lin.bias:uniform(0, 1)
      -- an output NaN from neither the input nor the parameters: log of a negative number
      local lg = nn.NaN(nn.Log())
      util.assert_error(function() lg:forward(-torch.rand(3):add(0.5)) end, 'NaN found in output')
      x = torch.randn(2, 3)
      m:forward(x)
      local go = torch.randn(2, 4)
      go[2][1] = nan
      util.assert_error(function() m:backward(x, go) end, 'NaN found in gradOutput')
      lin.weight[1][1] = nan
      util.assert_error(function() m:updateGradInput(x, torch.randn(2, 4)) end, 'NaN found in gradInput')
      lin.weight:uniform(-1, 1)
      lin.gradBias[3] = nan
      util.assert_error(function() m:accGradParameters(x, torch.randn(2, 4)) end, 'NaN found in gradParameters')
      -- tables of tensors are searched too
      assert(m:recursiveIsNaN({ torch.randn(2), { torch.Tensor({ 1, nan }) } }))
      assert(not m:recursiveIsNaN({ torch.randn(2), { torch.randn(3) } }))
   end)

   it('Profile times the module and prints every print_interval passes', function()
      local lin = nn.Linear(3, 4)
      local p = nn.Profile(lin, 2, 'lin')
      local x, go = torch.randn(5, 3), torch.randn(5, 4)
      same_as_bare(p, lin, x, go)
      assert.are.equal(1, p.numFwds)
      local lines = printed(function()
         p:forward(x)
         p:backward(x, go)
         p:forward(x)
      end)
      assert.are.equal(2, #lines)
      assert(lines[1]:match('^lin took %d+%.%d%d%d seconds for 2 forward passes$'), lines[1])
      assert(lines[2]:match('^lin took %d+%.%d%d%d seconds for 2 backward passes$'), lines[2])
      assert.are.equal(1, p.numFwds)
      assert.are.equal(0, p.numBwds)
      assert.are.equal('nn.Linear', nn.Profile(nn.Linear(2, 2)).name)
      assert(J.testJacobian(nn.Profile(nn.Tanh(), 1e9), torch.Tensor(3, 4)) < TOL)
      -- a profiled module serializes (Torch7 had to teach its Timer to)
      local f = torch.MemoryFile('rw')
      f:writeObject(p)
      f:seek(1)
      local r = f:readObject()
      assert.are.equal(1, #printed(function() assert(util.maxdiff(r:forward(x), lin:forward(x)) == 0) end))
      util.assert_error(function() nn.Profile(lin, 0) end, 'print_interval')
   end)

   it('DontCast keeps its module\'s type through :type() and casts across the boundary', function()
      local lin = nn.Linear(4, 2):float()
      local ref = lin:clone():double()
      local m = nn.DontCast(lin, true)
      assert.are.equal('torch.FloatTensor', m.moduleType)
      local x, go = torch.randn(3, 4), torch.randn(3, 2)
      local y = m:forward(x)
      assert.are.equal('torch.DoubleTensor', torch.type(y))
      assert(util.maxdiff(y, ref:forward(x)) < 1e-5)
      local gi = m:backward(x, go)
      assert.are.equal('torch.DoubleTensor', torch.type(gi))
      assert(util.maxdiff(gi, ref:backward(x, go)) < 1e-5)
      m:double()
      assert.are.equal('torch.FloatTensor', torch.type(lin.weight))
      m:float()
      assert.are.equal('torch.FloatTensor', torch.type(m:forward(x:float())))
      -- inside a container's :double() too
      local net = nn.Sequential():add(nn.DontCast(nn.Linear(4, 2):float(), true)):add(nn.Tanh())
      net:double()
      assert.are.equal('torch.FloatTensor', torch.type(net.modules[1].modules[1].weight))
      assert.are.equal('torch.DoubleTensor', torch.type(net:forward(x)))
      -- without casting, the module's own types come out
      local plain = nn.DontCast(nn.Linear(4, 2):float())
      assert.are.equal('torch.FloatTensor', torch.type(plain:forward(x:float())))
      -- tables of inputs and outputs
      local pt = nn.ParallelTable():add(nn.Linear(4, 2)):add(nn.Linear(4, 3)):float()
      local pref = pt:clone():double()
      local tm = nn.DontCast(pt, true)
      local xs = { torch.randn(3, 4), torch.randn(3, 4) }
      local ys = tm:forward(xs)
      local want = pref:forward(xs)
      for i = 1, 2 do
         assert.are.equal('torch.DoubleTensor', torch.type(ys[i]))
         assert(util.maxdiff(ys[i], want[i]) < 1e-5)
      end
      -- a module with no tensor in its output or parameters: the type must be given
      util.assert_error(function() nn.DontCast(nn.ZipTable(), true) end, 'moduleType')
      assert.are.equal('torch.FloatTensor', nn.DontCast(nn.ZipTable(), true, true, 'torch.FloatTensor').moduleType)
   end)

   it('PrintSize is the identity and prints the sizes it sees', function()
      local m = nn.PrintSize('here')
      local x, go = torch.randn(2, 3), torch.randn(2, 3)
      local lines = printed(function()
         assert.are.equal(x, m:forward(x))
         assert.are.equal(go, m:backward(x, go))
      end)
      local text = table.concat(lines, '\n')
      assert(text:find('here:input', 1, true) and text:find('here:gradOutput', 1, true), text)
      assert(text:find('2', 1, true) and text:find('3', 1, true), text)
      assert.are.equal('PrintSize', nn.PrintSize().prefix)
   end)
end)
