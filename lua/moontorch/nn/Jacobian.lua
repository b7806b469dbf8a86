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
      local col
      if param then
         for _, d in ipairs(tensors(dparam)) do d:zero() end
         module:accGradParameters(input, gout, 1)
         col = flatten(tensors(dparam))
      else
         col = flatten(tensors(module:updateGradInput(input, gout)))
      end
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
-- moves the parameters for a unit gradient at output element j.
function Jacobian.backwardUpdate(module, input, param)
   local nout = output_size(module, input)
   local list = tensors(param)
   local saved = {}
   for i, p in ipairs(list) do saved[i] = p:clone() end
   local jac = torch.DoubleTensor(count(list), nout)
   for j = 1, nout do
      local gout = unit_like(module.output, j)
      module:accUpdateGradParameters(input, gout, 1)
      local moved = flatten(saved):clone():add(-1, flatten(list))
      if moved:nElement() > 0 then jac:select(2, j):copy(moved) end
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
