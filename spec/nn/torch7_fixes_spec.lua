-- torch7_fixes_spec.lua: nn behaviour that Torch7's own nn/test.lua relies on (issue 37), each
-- checked on fresh random inputs against float64 references or finite differences.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local function rand(...) return (util.rand_tensor({ ... }, 'torch.DoubleTensor', -2, 2)) end

describe('Torch7 nn fixes', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('Jacobian: parameters inside a container get the gradient of the whole net', function()
      local net = nn.Sequential():add(nn.Linear(4, 5)):add(nn.Tanh()):add(nn.Linear(5, 3))
      local first, last = net.modules[1], net.modules[3]
      local x = torch.Tensor(3, 4)
      assert.is_true(nn.Jacobian.testJacobianParameters(net, x, first.weight, first.gradWeight) < 1e-6)
      assert.is_true(nn.Jacobian.testJacobianParameters(net, x, first.bias, first.gradBias) < 1e-6)
      assert.is_true(nn.Jacobian.testJacobianParameters(net, x, last.weight, last.gradWeight) < 1e-6)
      assert.is_true(nn.Jacobian.testJacobianUpdateParameters(net, x, first.weight) < 1e-6)
      -- the backpropagated jacobian itself, column by column, against central differences
      x:uniform(-2, 2)
      local jb = nn.Jacobian.backward(net, x, first.weight, first.gradWeight)
      local w = first.weight:view(-1)
      for k = 1, w:size(1), 3 do
         local orig = w[k]
         w[k] = orig + 1e-6
         local plus = net:forward(x):clone():view(-1)
         w[k] = orig - 1e-6
         local minus = net:forward(x):clone():view(-1)
         w[k] = orig
         util.assert_close(jb[k], (plus - minus) / 2e-6, { atol = 1e-6, rtol = 0 }, 'row ' .. k)
      end
   end)

   it('Jacobian.testAllUpdate: the four update paths agree, and a wrong one shows', function()
      local m = nn.Linear(5, 4)
      local x = rand(3, 5)
      for _, names in ipairs { { 'weight', 'gradWeight' }, { 'bias', 'gradBias' } } do
         local errs = nn.Jacobian.testAllUpdate(m, x, names[1], names[2])
         local n = 0
         for way, e in pairs(errs) do
            n = n + 1
            assert(e < 1e-10, names[1] .. ' ' .. way .. ': ' .. e)
         end
         assert.are.equal(4, n)
      end
      local w0 = m.weight:clone()
      nn.Jacobian.testAllUpdate(m, x, 'weight', 'gradWeight')
      assert.are.equal(0, (m.weight - w0):abs():max()) -- the module itself is untouched
      -- accUpdateGradParameters that moves twice as far
      local name = 'Torch7FixesBadUpdate' .. math.random(1e9)
      local Bad = torch.class('nn.' .. name, 'nn.Linear')
      function Bad:accUpdateGradParameters(input, gradOutput, lr)
         nn.Linear.accUpdateGradParameters(self, input, gradOutput, 2 * lr)
      end
      local bad = nn[name](5, 4)
      local errs = nn.Jacobian.testAllUpdate(bad, x, 'weight', 'gradWeight')
      assert(errs.accGradParameters < 1e-10)
      assert(errs.accUpdateGradParameters > 1e-3)
      util.assert_error(function() nn.Jacobian.testAllUpdate(m, x, 'kernel', 'gradKernel') end, 'kernel')
   end)

   it('nn.hessian: diagonal Hessians of Linear match direct float64 sums', function()
      nn.hessian.enable()
      local m = nn.Linear(4, 3)
      m.weight:copy(rand(3, 4))
      local x = rand(5, 4)
      local dho = torch.Tensor(5, 3):uniform(0.5, 2)
      m:initDiagHessianParameters()
      m:forward(x)
      m.diagHessianWeight:zero()
      m.diagHessianBias:zero()
      local hin = m:updateDiagHessianInput(x, dho)
      m:accDiagHessianParameters(x, dho)
      for b = 1, 5 do
         for j = 1, 4 do -- sum_k d2F/dy_k2 * W_kj^2
            local ref = 0
            for k = 1, 3 do ref = ref + dho[b][k] * m.weight[k][j] ^ 2 end
            assert(math.abs(hin[b][j] - ref) < 1e-12)
         end
      end
      for k = 1, 3 do
         local rb = 0
         for b = 1, 5 do rb = rb + dho[b][k] end
         assert(math.abs(m.diagHessianBias[k] - rb) < 1e-12)
         for j = 1, 4 do
            local ref = 0
            for b = 1, 5 do ref = ref + dho[b][k] * x[b][j] ^ 2 end
            assert(math.abs(m.diagHessianWeight[k][j] - ref) < 1e-12)
         end
      end
      -- the forward on x.^2 inside accDiagHessianParameters leaves the real output alone
      util.assert_close(m.output, m:clone():forward(x), nil, 'output')
      for _, mod in ipairs { nn.Linear(6, 4), nn.SpatialConvolution(2, 3, 3, 3) } do
         local inp = mod.nInputPlane and torch.Tensor(2, 5, 5) or torch.Tensor(3, 6)
         assert(nn.Jacobian.testDiagHessianInput(mod, inp) < 1e-9)
         assert(nn.Jacobian.testDiagHessianWeight(mod, inp) < 1e-9)
         assert(nn.Jacobian.testDiagHessianBias(mod, inp) < 1e-9)
      end
      -- a chain: Tanh squares its derivative
      local net = nn.Sequential():add(nn.Linear(3, 4)):add(nn.Tanh())
      local xi = rand(2, 3)
      net:forward(xi)
      local ones = torch.Tensor(2, 4):fill(1)
      net:initDiagHessianParameters()
      local h = net:updateDiagHessianInput(xi, ones)
      local d2 = (1 - net.output:clone():pow(2)):pow(2) -- tanh'(z)^2
      local W = net.modules[1].weight
      util.assert_close(h, d2 * torch.cmul(W, W), nil, 'chain')
      local _, _, hs = net:parameters()
      assert.are.equal(2, #hs)
      -- Square: (2x)^2 d2F/dy2; MSECriterion: 2 (2/n when averaged)
      local sq = nn.Square()
      local dh = torch.Tensor(2, 3):uniform(0.5, 2)
      sq:forward(xi)
      util.assert_close(sq:updateDiagHessianInput(xi, dh), torch.cmul(xi, xi):mul(4):cmul(dh), nil, 'Square')
      local ts = nn.TanhShrink() -- Torch7's sum: tanh'(x)^2 d2F/dy2 + d2F/dy2
      ts:forward(xi)
      local th2 = (1 - torch.tanh(xi):pow(2)):pow(2)
      util.assert_close(ts:updateDiagHessianInput(xi, dh), th2:cmul(dh):add(dh), nil, 'TanhShrink')
      local mse = nn.MSECriterion()
      util.assert_close(mse:updateDiagHessianInput(xi, xi), torch.Tensor(2, 3):fill(2 / 6), nil, 'MSE')
      util.assert_error(function() nn.ReLU():updateDiagHessianInput(xi, xi) end, 'nn.ReLU', 'updateDiagHessianInput')
   end)

   it('type() keeps one tensor held in two fields one tensor', function()
      local m = nn.Linear(3, 2)
      m.alias = m.weight
      m.list = { m.bias, m.weight }
      local w = m.weight:clone()
      m:float()
      assert.are.equal('torch.FloatTensor', m.weight:type())
      assert.is_true(rawequal(m.alias, m.weight))
      assert.is_true(rawequal(m.list[2], m.weight))
      assert.is_true(rawequal(m.list[1], m.bias))
      util.assert_close(m.weight:double(), w, { atol = 1e-6, rtol = 0 }, 'values')
      local net = nn.Sequential():add(m):add(nn.Linear(2, 2))
      net.modules[2].shared = m.weight
      net:double()
      assert.is_true(rawequal(net.modules[2].shared, net.modules[1].weight))
   end)

   it('nested container errors name each level, outermost first', function()
      local l = nn.Linear(2, 2)
      local model = nn.Sequential():add(nn.Identity()):add(nn.Concat(1):add(nn.Parallel(1, 1):add(l)))
      local err = util.assert_error(function() model:forward(torch.randn(1, 3, 3)) end, 'size mismatch')
      local a = err:find('In 2 module of nn.Sequential:\nIn 1 module of nn.Concat:\nIn 1 module of nn.Parallel:\n',
         1, true)
      assert(a, err)
      assert(a < err:find('size mismatch', 1, true))
   end)

   it('FlattenTable keeps its output table while the input keeps its tensors', function()
      local m = nn.FlattenTable()
      local input = { rand(2), { rand(3), { rand(1) } } }
      local out = m:forward(input)
      assert.is_true(rawequal(out[2], input[2][1]))
      assert.is_true(rawequal(m:forward(input), out))
      input[2][1] = rand(3)
      local out2 = m:forward(input)
      assert.is_false(rawequal(out2, out))
      assert.is_true(rawequal(out2[2], input[2][1]))
      assert.are.equal(3, #out2)
   end)

   it('Contiguous keeps its output object, and a copy never writes into an earlier input', function()
      local m = nn.Contiguous()
      local x = rand(4, 3)
      local out = m:forward(x)
      assert.is_false(rawequal(out, x))
      assert.are.equal(0, (out - x):abs():max())
      local saved = x:clone()
      local y = x:t()
      local out2 = m:forward(y)
      assert.is_true(rawequal(out2, out))
      assert.is_true(out2:isContiguous())
      assert.are.equal(0, (out2 - saved:t()):abs():max())
      assert.are.equal(0, (x - saved):abs():max()) -- x untouched
      local g = rand(3, 4):t()
      local gi = m:backward(y, g)
      assert.is_true(gi:isContiguous())
      assert.are.equal(0, (gi - g):abs():max())
   end)

   it('View: batch dimensions become one leading dimension', function()
      local x = rand(2, 5, 4, 10)
      local v = nn.View(4, -1):setNumInputDims(2)
      local y = v:forward(x)
      assert.are.same({ 10, 4, 10 }, y:size():totable())
      assert.are.equal(0, (y:view(-1) - x:view(-1)):abs():max())
      assert.are.same({ 10, 6 }, nn.View(6):forward(rand(5, 2, 6)):size():totable())
      assert.are.same({ 5, 10 }, nn.View(-1):setNumInputDims(1):forward(rand(5, 10)):size():totable())
      assert.are.same({ 5, 40 }, nn.View(-1):setNumInputDims(2):forward(rand(5, 4, 10)):size():totable())
      assert.are.same({ 5, 2 }, nn.View(5, 2):forward(rand(10)):size():totable())
      local gi = nn.View(6):backward(x:view(2, 5, 4, 10):narrow(4, 1, 6):contiguous(), rand(40, 6))
      assert.are.same({ 2, 5, 4, 6 }, gi:size():totable())
      util.assert_error(function() nn.View(7):forward(rand(5, 2, 6)) end, 'nn.View', '5x2x6')
   end)

   it('BatchNormalization: one sample in evaluation, and a one-sample training batch uses running statistics',
      function()
      for _, case in ipairs { { 'BatchNormalization', { 4 } }, { 'SpatialBatchNormalization', { 4, 3, 2 } } } do
         local m = nn[case[1]](4)
         m.weight:copy(rand(4))
         m.bias:copy(rand(4))
         m.running_mean:copy(rand(4))
         m.running_var:uniform(0.5, 2)
         m:evaluate()
         local x = rand(table.unpack(case[2]))
         local y = m:forward(x)
         assert.are.same(case[2], y:size():totable())
         -- float64 reference: (x - mean) / sqrt(var + eps) * w + b per channel
         local ref = x:clone()
         for c = 1, 4 do
            ref:narrow(1, c, 1):add(-m.running_mean[c]):div(math.sqrt(m.running_var[c] + m.eps))
               :mul(m.weight[c]):add(m.bias[c])
         end
         util.assert_close(y, ref, nil, case[1] .. ' sample')
         assert.is_true(nn.Jacobian.testJacobian(m, x) < 1e-6)
         assert.is_true(nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight) < 1e-6)
         m:training()
         util.assert_error(function() m:forward(x) end, case[1])
      end
      local m = nn.BatchNormalization(3)
      m.running_mean:copy(rand(3))
      m.running_var:uniform(0.5, 2)
      local rm = m.running_mean:clone()
      local x = rand(1, 3)
      local y = m:forward(x):clone()
      assert.are.equal(0, (m.running_mean - rm):abs():max())
      m:evaluate()
      util.assert_close(y, m:forward(x), nil, 'one-sample batch')
   end)

   it('CrossEntropyCriterion exposes nll and lsm; nll.sizeAverage is the setting in force', function()
      local x, t = rand(4, 6), torch.Tensor { 2, 6, 1, 3 }
      local w = torch.Tensor(6):uniform(0.2, 1)
      local function ref(avg) -- float64: sum_i w[t_i] * -(x[i][t_i] - logsumexp(x[i])) (/ sum w[t_i])
         local loss, tw = 0, 0
         for i = 1, 4 do
            local lse = math.log(torch.exp(x[i]):sum())
            loss = loss - w[t[i]] * (x[i][t[i]] - lse)
            tw = tw + w[t[i]]
         end
         return avg and loss / tw or loss
      end
      local c = nn.CrossEntropyCriterion(w)
      assert.are.equal('nn.LogSoftMax', torch.type(c.lsm))
      assert.are.equal('nn.ClassNLLCriterion', torch.type(c.nll))
      assert(math.abs(c:forward(x, t) - ref(true)) < 1e-12)
      c.nll.sizeAverage = false -- set directly: kept
      assert(math.abs(c:forward(x, t) - ref(false)) < 1e-12)
      assert.is_false(c.nll.sizeAverage)
      local c2 = nn.CrossEntropyCriterion(w)
      c2.sizeAverage = false -- set on the criterion: passed on
      assert(math.abs(c2:forward(x, t) - ref(false)) < 1e-12)
      assert.is_false(c2.nll.sizeAverage)
      local g = c2:backward(x, t)
      local e = 1e-6
      for k = 1, 24, 5 do
         local xv = x:view(-1)
         local orig = xv[k]
         xv[k] = orig + e
         local p = c2:forward(x, t)
         xv[k] = orig - e
         local m = c2:forward(x, t)
         xv[k] = orig
         assert(math.abs(g:view(-1)[k] - (p - m) / (2 * e)) < 1e-6)
      end
   end)

   it('LookupTable shared with share() updates the weight once per call (no endless recursion)', function()
      local a = nn.LookupTable(7, 3)
      local b = a:clone():share(a, 'weight')
      local idx = torch.LongTensor { 2, 5, 2 }
      local go = rand(3, 3)
      local w0 = a.weight:clone()
      b:forward(idx)
      b:updateGradInput(idx, go)
      b:accUpdateGradParameters(idx, go, 0.5)
      local ref = w0:clone()
      for i = 1, 3 do ref[idx[i]]:add(-0.5, go[i]) end
      util.assert_close(a.weight, ref, nil, 'shared update')
      util.assert_close(b.weight, ref, nil, 'shared update (b)')
   end)

   it('Spatial{Reflection,Replication}Padding: negative pads crop', function()
      local x = rand(2, 3, 7, 8)
      for _, name in ipairs { 'SpatialReflectionPadding', 'SpatialReplicationPadding' } do
         local m = nn[name](-2, 1, 2, -3)
         local y = m:forward(x)
         assert.are.same({ 2, 3, 7 + 2 - 3, 8 - 2 + 1 }, y:size():totable())
         -- the cropped input padded by the positive pads alone
         local ref = nn[name](0, 1, 2, 0):forward(x:narrow(4, 3, 6):narrow(3, 1, 4):contiguous())
         util.assert_close(y, ref, nil, name)
         assert.is_true(nn.Jacobian.testJacobian(m, x:clone()) < 1e-6)
         local gi = m:backward(x, rand(2, 3, 6, 7))
         assert.are.same({ 2, 3, 7, 8 }, gi:size():totable())
         assert.are.equal(0, gi:narrow(4, 1, 2):abs():max()) -- cropped columns get no gradient
         assert.are.equal(0, gi:narrow(3, 5, 3):abs():max())
         util.assert_error(function() nn[name](-4, -4, 0, 0):forward(x) end, name, 'crop')
      end
   end)

   it('full convolution with a target input: gradInput[2] is one zero expanded to the target', function()
      local m = nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 1, 1)
      local x, target = rand(2, 4, 5), rand(8, 10)
      local y = m:forward({ x, target })
      assert.are.same({ 3, 8, 10 }, y:size():totable())
      local ref = nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1)
      ref.weight:copy(m.weight)
      ref.bias:copy(m.bias)
      util.assert_close(y, ref:forward(x), nil, 'adj from target')
      local go = rand(3, 8, 10)
      local gi = m:backward({ x, target }, go)
      util.assert_close(gi[1], ref:backward(x, go), nil, 'gradInput[1]')
      assert.are.same({ 8, 10 }, gi[2]:size():totable())
      assert.are.equal(1, gi[2]:storage():size())
      assert.are.equal(0, gi[2]:abs():max())
   end)

   it('manualSeed truncates a fractional seed', function()
      torch.manualSeed(12345.75)
      local a = torch.rand(5)
      torch.manualSeed(12345)
      local b = torch.rand(5)
      assert.are.equal(0, (a - b):abs():max())
      assert.are.equal(12345, torch.initialSeed())
   end)
end)
