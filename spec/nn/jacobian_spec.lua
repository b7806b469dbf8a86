-- jacobian_spec.lua: nn.Jacobian (the public derivative checker Torch7 code uses) agrees
-- with the modules' own gradients, and catches a module whose gradient is wrong.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local TOL = 1e-6

describe('nn.Jacobian', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('checks input and parameter jacobians of Linear (and the parameter update)', function()
      local m = nn.Linear(5, 3)
      local x = torch.Tensor(4, 5)
      assert(nn.Jacobian.testJacobian(m, x) < TOL)
      assert(nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight) < TOL)
      assert(nn.Jacobian.testJacobianParameters(m, x, m.bias, m.gradBias) < TOL)
      assert(nn.Jacobian.testJacobianUpdateParameters(m, x, m.weight) < TOL)
      local jf = nn.Jacobian.forward(m, x)
      assert.are.same({ 20, 12 }, jf:size():totable())
      -- d out[b][o] / d x[b][i] = W[o][i], zero across samples
      assert(math.abs(jf[2][1] - m.weight[1][2]) < 1e-6)
      assert(math.abs(jf[6][1]) < 1e-9)
   end)

   it('takes table inputs and outputs (CAddTable, ConcatTable)', function()
      local x = { torch.Tensor(3, 4), torch.Tensor(3, 4) }
      assert(nn.Jacobian.testJacobian(nn.CAddTable(), x) < TOL)
      local ct = nn.ConcatTable():add(nn.Tanh()):add(nn.Sigmoid())
      assert(nn.Jacobian.testJacobian(ct, torch.Tensor(2, 3)) < TOL)
   end)

   it('catches a wrong gradient', function()
      local name = 'JacobianSpecBad' .. math.random(1e9)
      local Bad, parent = torch.class('nn.' .. name, 'nn.Tanh')
      function Bad:updateGradInput(input, gradOutput)
         parent.updateGradInput(self, input, gradOutput)
         self.gradInput:mul(1.01)
         return self.gradInput
      end
      assert(nn.Jacobian.testJacobian(nn[name](), torch.Tensor(7)) > 1e-4)
   end)

   it('testIO: a module read back from a MemoryFile computes the same', function()
      local m = nn.Sequential():add(nn.Linear(4, 6)):add(nn.ReLU()):add(nn.Linear(6, 2))
      local fo, bo = nn.Jacobian.testIO(m, torch.Tensor(3, 4))
      assert.are.equal(0, fo)
      assert.are.equal(0, bo)
   end)

   it('refuses what it cannot perturb', function()
      local m = nn.Tanh()
      local x = torch.Tensor(4, 3):t()
      assert.has_error(function() nn.Jacobian.forward(m, x) end)
      assert.has_error(function() nn.Jacobian.testJacobian(m, 'x') end)
   end)
end)
