-- peer.lua: shared by the nn specs that check forward passes against PyTorch 1.13's
-- torch.nn.functional through /usr/bin/python3 (one process per spec file) and gradients with
-- nn.Jacobian, all in float64: the tolerances, float64 inputs, PyTorch literals, the batched
-- peer runner and the Jacobian check; also central differences of a criterion's loss.
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local luassert = require 'luassert'

local peer = {}

peer.TOL = 1e-6                             -- nn.Jacobian's largest error
peer.dtol = { atol = 1e-10, rtol = 1e-9 }   -- float64 forward against PyTorch

-- a float64 tensor of the given sizes, uniform in [-1, 1)
function peer.rand(...) return (util.rand_tensor({ ... }, 'torch.DoubleTensor', -1, 1)) end

-- a tensor as a PyTorch float64 literal
function peer.py(t)
   local vals = {}
   for i, v in ipairs(util.flat(t)) do vals[i] = ('%.17g'):format(v) end
   return ('torch.tensor([%s], dtype=torch.float64).reshape(%s)'):format(table.concat(vals, ','),
      '[' .. table.concat(T.sizes(t), ',') .. ']')
end

-- A fresh set of cases: case(name, lua tensor computed here, PyTorch expression) records one;
-- check_case(name) compares it (size, then values within dtol) with PyTorch's result. The first
-- check runs every recorded case in one Python process.
function peer.cases()
   local cases, order = {}, {}
   local function case(name, lua, expr)
      assert(not cases[name], name)
      cases[name] = { lua = lua:clone(), expr = expr }
      order[#order + 1] = name
   end

   local ref
   local function run_python()
      if ref then return ref end
      local lines = { 'import torch, torch.nn.functional as F', 'def out(n, t):',
         "    print(n, ' '.join(str(s) for s in t.shape), '|', "
            .. "' '.join(repr(float(v)) for v in t.reshape(-1).tolist()))" }
      for _, n in ipairs(order) do lines[#lines + 1] = ('out(%q, %s)'):format(n, cases[n].expr) end
      local path = os.tmpname()
      local f = assert(io.open(path, 'w'))
      f:write(table.concat(lines, '\n'), '\n')
      f:close()
      local p = io.popen(('%s %q 2>&1'):format(util.PY, path))
      local text = p:read('*a')
      p:close()
      os.remove(path)
      ref = {}
      for line in text:gmatch('[^\n]+') do
         local n, shape, vals = line:match('^(%S+) ([%d ]*)|(.*)$')
         if n then
            local s, v = {}, {}
            for x in shape:gmatch('%d+') do s[#s + 1] = tonumber(x) end
            for x in vals:gmatch('%S+') do v[#v + 1] = tonumber(x) end
            ref[n] = { shape = s, vals = v }
         end
      end
      assert(next(ref), 'python failed:\n' .. text)
      return ref
   end

   local function check_case(name)
      local r = run_python()[name]
      assert(r, 'no PyTorch result for ' .. name)
      luassert.are.same(r.shape, T.sizes(cases[name].lua), name .. ': size')
      util.assert_close(cases[name].lua, r.vals, peer.dtol, name)
   end

   return case, check_case
end

-- input, weight and bias Jacobians of a module within TOL; nn.Jacobian refills x with uniform
-- values in [lo, hi] (default -2, 2)
function peer.jac(m, x, what, lo, hi)
   local TOL = peer.TOL
   local e = nn.Jacobian.testJacobian(m, x, lo, hi)
   assert(e < TOL, ('%s: input jacobian error %g'):format(what, e))
   if m.weight then
      e = nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight, lo, hi)
      assert(e < TOL, ('%s: weight jacobian error %g'):format(what, e))
   end
   if m.bias then
      e = nn.Jacobian.testJacobianParameters(m, x, m.bias, m.gradBias, lo, hi)
      assert(e < TOL, ('%s: bias jacobian error %g'):format(what, e))
   end
end

-- central differences of crit:forward(input, target) with respect to each element of x (a
-- tensor of input, perturbed in place by +-h and restored), in x's row-major order
function peer.loss_diff(crit, input, target, x, h)
   local flat, num = x:view(x:nElement()), {}
   for i = 1, flat:nElement() do
      local v = flat[i]
      flat[i] = v + h
      local fp = crit:forward(input, target)
      flat[i] = v - h
      local fm = crit:forward(input, target)
      flat[i] = v
      num[i] = (fp - fm) / (2 * h)
   end
   return num
end

return peer
