-- Jacobian.lua: nn.Jacobian, Torch7's derivative checker for modules (nn/doc/testing.md).
--   nn.Jacobian.testJacobian(m, input [,minval=-2, maxval=2, perturbation=1e-6])
--   nn.Jacobian.testJacobianParameters(m, input, param, dparam [,minval, maxval, perturbation])
--   nn.Jacobian.testJacobianUpdateParameters(m, input, param [,minval, maxval, perturbation])
--        each fills input (and param) with uniform draws in [minval, maxval] and returns the
--        largest absolute difference between the jacobian from backpropagation and from central
--        finite differences
--   nn.Jacobian.forward(m, input [,param, perturbation]) / backward(m, input [,param, dparam])
--        the two jacobians: rows are the independent variables (input's or param's elements in
--        order), columns the output's elements
--   nn.Jacobian.testIO(m, input [,minval, maxval]) -> forward error, backward error of a copy of
--        m written and read back through torch.MemoryFile (serialization round trip)
--   nn.Jacobian.testAllUpdate(m, input, 'weight', 'gradWeight') -> { [way] = error }: the four
--        update paths (plain and accUpdate, alone and shared) move the parameter alike
--   nn.Jacobian.testDiagHessian{Input,Weight,Bias}(m, input [,minval, maxval]) (after
--        nn.hessian.enable()): nn.hessian's diagonal against sum_k (dy_k/dx)^2, for layers
--        linear in their input and weights
-- `input` may be a tensor or a table of tensors (as may the output); the tensors perturbed must
-- be contiguous (fresh tensors are). Check in float64: finite differences in float32 are noise.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Jacobian = {}
nn.Jacobian = Jacobian

-- the tensors of x (a tensor or nested tables of tensors), in order
local function tensors(x, out)
   out = out or {}
   if torch.isTensor(x) then
      out[#out + 1] = x
   elseif type(x) == 'table' then
      for _, v in ipairs(x) do tensors(v, out) end
   else
      error('nn.Jacobian: expected a tensor or a table of tensors, got ' .. type(x), 3)
   end
   return out
end

local function count(list)
   local n = 0
   for _, t in ipairs(list) do n = n + t:nElement() end
   return n
end

-- 1-d views of the tensors (they must be contiguous: the views write through)
local function flat_views(list, what)
   local views = {}
   for i, t in ipairs(list) do
      if not t:isContiguous() then
         error(('nn.Jacobian: %s tensor %d must be contiguous to be perturbed'):format(what, i), 3)
      end
      views[i] = t:nElement() > 0 and t:view(t:nElement()) or nil
   end
   return views
end

-- the elements of a tensor list as one float64 vector
local function flatten(list)
   local n = count(list)
   local v = torch.DoubleTensor(math.max(n, 1)):zero()
   local at = 1
   for _, t in ipairs(list) do
      local k = t:nElement()
      if k > 0 then
         v:narrow(1, at, k):copy(t:contiguous():view(k))
         at = at + k
      end
   end
   return n > 0 and v:narrow(1, 1, n) or torch.DoubleTensor()
end

-- a zero tensor structure like the output, with element j (1-based over all tensors) set to 1
local function unit_like(output, j)
   local function build(o)
      if torch.isTensor(o) then
         local g = o.new():resizeAs(o):zero()
         local k = o:nElement()
         if j >= 1 and j <= k then g:view(k)[j] = 1 end
         j = j - k
         return g
      end
      local t = {}
      for i, v in ipairs(o) do t[i] = build(v) end
      return t
   end
   return build(output)
end

local function uniform_fill(list, minval, maxval)
   for _, t in ipairs(list) do t:uniform(minval or -2, maxval or 2) end
end

local function output_size(module, input)
   return count(tensors(module:forward(input)))
end

-- The jacobian by backpropagation.
function Jacobian.backward(module, input, param, dparam)
   local nout = output_size(module, input)
   local indep = param and tensors(param) or tensors(input)
   local jac = torch.DoubleTensor(count(indep), nout)
   for j = 1, nout do
      local gout = unit_like(module.output, j)
      -- the full backward step, as Torch7 runs it: a container's accGradParameters reads the
      -- gradInputs its children computed in updateGradInput
      module:zeroGradParameters()
      if param then
         for _, d in ipairs(tensors(dparam)) do d:zero() end
      end
      local din = module:updateGradInput(input, gout)
      module:accGradParameters(input, gout, 1)
      local col = flatten(tensors(param and dparam or din))
      if col:nElement() > 0 then jac:select(2, j):copy(col) end
   end
   return jac
end

-- The jacobian by central finite differences.
function Jacobian.forward(module, input, param, perturbation)
   perturbation = perturbation or 1e-6
   local list = param and tensors(param) or tensors(input)
   local views = flat_views(list, param and 'parameter' or 'input')
   local nout = output_size(module, input)
   local jac = torch.DoubleTensor(count(list), nout)
   local row = 0
   for i, v in ipairs(views) do
      for k = 1, list[i]:nElement() do
         row = row + 1
         local orig = v[k]
         v[k] = orig + perturbation
         local plus = flatten(tensors(module:forward(input))):clone()
         v[k] = orig - perturbation
         local minus = flatten(tensors(module:forward(input)))
         v[k] = orig
         jac:select(1, row):copy(plus:add(-1, minus):div(2 * perturbation))
      end
   end
   return jac
end

-- The jacobian of the parameter update: column j is how much accUpdateGradParameters (lr 1)
-- moves the parameters for a unit gradient at output element j. Every parameter of the module
-- is put back after each column: in a container the others move too, and would change the next.
function Jacobian.backwardUpdate(module, input, param)
   local nout = output_size(module, input)
   local list = tensors(param)
   local all = module:parameters() or {}
   local saved, savedAll = {}, {}
   for i, p in ipairs(list) do saved[i] = p:clone() end
   for i, p in ipairs(all) do savedAll[i] = p:clone() end
   local jac = torch.DoubleTensor(count(list), nout)
   for j = 1, nout do
      local gout = unit_like(module.output, j)
      module:updateGradInput(input, gout)
      module:accUpdateGradParameters(input, gout, 1)
      local moved = flatten(saved):clone():add(-1, flatten(list))
      if moved:nElement() > 0 then jac:select(2, j):copy(moved) end
      for i, p in ipairs(all) do p:copy(savedAll[i]) end
      for i, p in ipairs(list) do p:copy(saved[i]) end
   end
   return jac
end

local function maxdiff(a, b)
   if a:nElement() == 0 then return 0 end
   local d = (a - b):abs():max()
   if d ~= d then return math.huge end -- NaN never passes
   return d
end

function Jacobian.testJacobian(module, input, minval, maxval, perturbation)
   uniform_fill(tensors(input), minval, maxval)
   local jb = Jacobian.backward(module, input)
   local jf = Jacobian.forward(module, input, nil, perturbation)
   return maxdiff(jf, jb)
end

function Jacobian.testJacobianParameters(module, input, param, dparam, minval, maxval, perturbation)
   uniform_fill(tensors(input), minval, maxval)
   uniform_fill(tensors(param), minval, maxval)
   local jb = Jacobian.backward(module, input, param, dparam)
   local jf = Jacobian.forward(module, input, param, perturbation)
   return maxdiff(jf, jb)
end

function Jacobian.testJacobianUpdateParameters(module, input, param, minval, maxval, perturbation)
   uniform_fill(tensors(input), minval, maxval)
   uniform_fill(tensors(param), minval, maxval)
   local jb = Jacobian.backwardUpdate(module, input, param)
   local jf = Jacobian.forward(module, input, param, perturbation)
   return maxdiff(jf, jb)
end

-- Diagonal Hessians of F = sum_k y_k^2 / 2 (so d2F/dy2 = 1) with respect to the input or a
-- parameter, two ways: by nn.hessian's backpropagation (name: 'diagHessianInput',
-- 'diagHessianWeight', 'diagHessianBias'), and, for a module linear in its input and weights,
-- as sum_k (dy_k/dx)^2 from plain backpropagation (gradName: 'gradInput', 'gradWeight', 'gradBias').
function Jacobian.backwardDiagHessian(module, input, name)
   module:forward(input)
   local ones = module.output.new():resizeAs(module.output):fill(1)
   if module.diagHessianWeight then module.diagHessianWeight:zero() end
   if module.diagHessianBias then module.diagHessianBias:zero() end
   module:updateDiagHessianInput(input, ones)
   module:accDiagHessianParameters(input, ones)
   return module[name]
end

function Jacobian.linearModuleDiagHessian(module, input, gradName)
   local h
   module:forward(input)
   local nout = module.output:nElement()
   for j = 1, nout do
      local gout = unit_like(module.output, j)
      module:zeroGradParameters()
      module:updateGradInput(input, gout)
      module:accGradParameters(input, gout, 1)
      local g = module[gradName]:contiguous():view(-1)
      h = h or g.new():resizeAs(g):zero() -- sized after the first pass (gradInput starts empty)
      h:addcmul(g, g)
   end
   return h
end

function Jacobian.testDiagHessian(module, input, gradName, name, minval, maxval)
   if not nn.hessian or not module.updateDiagHessianInput then
      error('nn.Jacobian.testDiagHessian: call nn.hessian.enable() first', 2)
   end
   uniform_fill(tensors(input), minval, maxval)
   module:initDiagHessianParameters()
   local hb = flatten(tensors(Jacobian.backwardDiagHessian(module, input, name))):clone()
   local hl = flatten(tensors(Jacobian.linearModuleDiagHessian(module, input, gradName)))
   return maxdiff(hb, hl)
end

function Jacobian.testDiagHessianInput(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradInput', 'diagHessianInput', minval, maxval)
end

function Jacobian.testDiagHessianWeight(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradWeight', 'diagHessianWeight', minval, maxval)
end

function Jacobian.testDiagHessianBias(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradBias', 'diagHessianBias', minval, maxval)
end

-- The four ways a parameter (field `weight`, gradient field `gradWeight`) can be updated agree
-- with w - lr * dL/dw: accGradParameters + updateParameters, accUpdateGradParameters, and both
-- on two clones sharing the parameter (which then moves twice). Returns the error of each by
-- name; the module itself is not changed.
function Jacobian.testAllUpdate(module, input, weight, gradWeight)
   if not torch.isTensor(module[weight]) or not torch.isTensor(module[gradWeight]) then
      error(("nn.Jacobian.testAllUpdate: module has no tensor fields '%s' and '%s'"):format(weight, gradWeight), 2)
   end
   local lr = 0.1 + 0.9 * torch.rand(1)[1]
   local errors = {}
   local w0 = module[weight]:clone()

   local a = module:clone()
   a:forward(input)
   local gout = a.output:clone():uniform(0, 1)
   a:zeroGradParameters()
   a:updateGradInput(input, gout)
   a:accGradParameters(input, gout, 1)
   a:updateParameters(lr)
   local function err(m, times) return (w0 - a[gradWeight] * (lr * times) - m[weight]):norm() end
   errors.accGradParameters = err(a, 1)

   local b = module:clone()
   b:forward(input)
   b:updateGradInput(input, gout)
   b:accUpdateGradParameters(input, gout, lr)
   errors.accUpdateGradParameters = (b[weight] - a[weight]):norm()

   local s1, s2 = module:clone(), module:clone()
   s2:share(s1, weight)
   for _, m in ipairs { s1, s2 } do m:forward(input); m:zeroGradParameters() end
   for _, m in ipairs { s1, s2 } do m:updateGradInput(input, gout); m:accGradParameters(input, gout, 1) end
   s1:updateParameters(lr)
   s2:updateParameters(lr)
   errors['accGradParameters [shared]'] = err(s1, 2) + err(s2, 2)

   local u1, u2 = module:clone(), module:clone()
   u2:share(u1, weight)
   for _, m in ipairs { u1, u2 } do m:forward(input) end
   for _, m in ipairs { u1, u2 } do
      m:updateGradInput(input, gout)
      m:accUpdateGradParameters(input, gout, lr)
   end
   errors['accUpdateGradParameters [shared]'] = err(u1, 2) + err(u2, 2)
   return errors
end

-- forward and backward of m and of its copy through serialization agree
function Jacobian.testIO(module, input, minval, maxval)
   uniform_fill(tensors(input), minval, maxval)
   local out = module:forward(input)
   local gout = {}
   for i, t in ipairs(tensors(out)) do gout[i] = t:clone():uniform(minval or -2, maxval or 2) end
   local k = 0
   local function shaped(o) -- gout's tensors in out's table structure
      if torch.isTensor(o) then k = k + 1; return gout[k] end
      local t = {}
      for i, v in ipairs(o) do t[i] = shaped(v) end
      return t
   end
   local g = shaped(out)
   local fo = flatten(tensors(out)):clone()
   local bo = flatten(tensors(module:backward(input, g))):clone()
   local f = torch.MemoryFile('rw'):binary()
   f:writeObject(module)
   f:seek(1)
   local copy = f:readObject()
   f:close()
   local fo2 = flatten(tensors(copy:forward(input)))
   local bo2 = flatten(tensors(copy:backward(input, g)))
   return maxdiff(fo, fo2), maxdiff(bo, bo2)
end

return Jacobian
