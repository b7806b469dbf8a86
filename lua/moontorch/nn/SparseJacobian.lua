-- SparseJacobian.lua: nn.SparseJacobian, Torch7's derivative checker for modules whose input is a
-- sparse nnz x 2 tensor of (index, value) rows (nn.SparseLinear's): only the values, column 2,
-- are independent variables. The same calls as nn.Jacobian:
--   testJacobian(m, input [,minval=-2, maxval=2])
--   testJacobianParameters(m, input, param, dparam [,minval, maxval])
--   testJacobianUpdateParameters(m, input, param [,minval, maxval])
--        each draws input's values (and param) uniform in [minval, maxval] and returns the largest
--        absolute difference between the jacobian from backpropagation and from central differences
--   forward(m, input [,param]) / backward(m, input [,param, dparam]): rows are input's rows (or
--        param's elements), columns the output's elements
--   forwardUpdate(m, input, param) / backwardUpdate(m, input, param): row i is param[i] less the
--        derivative of the output by it / param after accUpdateGradParameters(lr = 1)
--   testIO(m, input [,minval, maxval]) -> forward and backward differences of a serialized copy
--   testAllUpdate(m, input, weightName, gradWeightName) -> the errors of the four update paths
-- The gradient with respect to the values is column 2 of a gradInput shaped as the input, or, for
-- a gradInput given as (index, value) rows (SparseLinear's), the value at each input row's index.
-- Any 2-d input with at least two columns works (Torch7's PartialLinear test passes a dense one).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local SJ = {}
nn.SparseJacobian = SJ

local PERTURBATION = 1e-6

local function check_input(input, level)
   if not torch.isTensor(input) or input:dim() ~= 2 or input:size(2) < 2 then
      local what = torch.isTensor(input) and ('a tensor of size ' .. table.concat(input:size():totable(), 'x'))
         or type(input)
      error('nn.SparseJacobian: expected an nnz x 2 input of (index, value) rows, got ' .. what, level + 1)
   end
end

local function check_param(param, what, level)
   if not torch.isTensor(param) then
      error(('nn.SparseJacobian: expected a tensor %s, got %s'):format(what, type(param)), level + 1)
   end
   if not param:isContiguous() then
      error('nn.SparseJacobian: ' .. what .. ' must be contiguous to be perturbed', level + 1)
   end
end

local function flat(t) return t:contiguous():view(t:nElement()) end

-- d(output)/d(values of input) from a gradInput: a tensor shaped as the input (its column 2) or
-- a table of one k x 2 tensor of (index, value) rows, read at each input row's index
local function value_grad(gradInput, input)
   if torch.isTensor(gradInput) and gradInput:dim() == 2 and gradInput:size(1) == input:size(1) then
      return gradInput:select(2, 2)
   end
   local rows = type(gradInput) == 'table' and #gradInput == 1 and gradInput[1] or gradInput
   if not torch.isTensor(rows) or rows:dim() ~= 2 or rows:size(2) ~= 2 then
      error('nn.SparseJacobian: the module\'s gradInput is neither shaped as its input nor (index, value) rows', 3)
   end
   local dense = {}
   for k = 1, rows:size(1) do
      local i = rows[k][1]
      dense[i] = (dense[i] or 0) + rows[k][2]
   end
   local g = torch.DoubleTensor(input:size(1))
   for r = 1, input:size(1) do g[r] = dense[input[r][1]] or 0 end
   return g
end

-- a zero tensor like the output with element j of its flat view set to 1
local function unit(output, j)
   local g = output.new():resizeAs(output):zero()
   g:view(g:nElement())[j] = 1
   return g
end

function SJ.backward(module, input, param, dparam)
   check_input(input, 2)
   local output = module:forward(input)
   local nout = output:nElement()
   local jac = torch.DoubleTensor(param and param:nElement() or input:size(1), nout)
   for j = 1, nout do
      local gout = unit(output, j)
      module:zeroGradParameters()
      local gin = module:updateGradInput(input, gout)
      module:accGradParameters(input, gout)
      jac:select(2, j):copy(param and flat(dparam) or value_grad(gin, input))
   end
   return jac
end

-- the values perturbed: input's column 2 or param's elements, as one 1-d view
local function variables(input, param)
   if param then
      check_param(param, 'parameter', 3)
      return param:view(param:nElement())
   end
   return input:select(2, 2)
end

-- jac[i] = d output / d v[i] by central differences
local function central(module, input, v)
   local nout = module:forward(input):nElement()
   local jac = torch.DoubleTensor(v:nElement(), nout)
   for i = 1, v:nElement() do
      local orig = v[i]
      v[i] = orig + PERTURBATION
      local plus = flat(module:forward(input)):double():clone()
      v[i] = orig - PERTURBATION
      local minus = flat(module:forward(input)):double()
      v[i] = orig
      jac:select(1, i):copy(plus:add(-1, minus):div(2 * PERTURBATION))
   end
   return jac
end

function SJ.forward(module, input, param)
   check_input(input, 2)
   return central(module, input, variables(input, param))
end

function SJ.forwardUpdate(module, input, param)
   check_input(input, 2)
   local v = variables(input, param)
   local jac = central(module, input, v)
   -- param - gradient: where a unit gradient at each output moves param under lr = 1
   jac:mul(-1):add(flat(param):double():view(v:nElement(), 1):expandAs(jac))
   return jac
end

function SJ.backwardUpdate(module, input, param)
   check_input(input, 2)
   check_param(param, 'parameter', 2)
   local output = module:forward(input)
   local nout = output:nElement()
   local params = module:parameters() or {}
   local saved = {}
   for i, p in ipairs(params) do saved[i] = p:clone() end
   local jac = torch.DoubleTensor(param:nElement(), nout)
   for j = 1, nout do
      for i, p in ipairs(params) do p:copy(saved[i]) end
      local gout = unit(output, j)
      module:zeroGradParameters()
      module:updateGradInput(input, gout)
      module:accUpdateGradParameters(input, gout, 1)
      jac:select(2, j):copy(flat(param))
   end
   for i, p in ipairs(params) do p:copy(saved[i]) end
   return jac
end

local function fill_values(input, minval, maxval)
   input:select(2, 2):uniform(minval or -2, maxval or 2)
end

local function maxdiff(a, b)
   if a:nElement() == 0 then return 0 end
   local d = (a - b):abs():max()
   if d ~= d then return math.huge end -- NaN never passes
   return d
end

function SJ.testJacobian(module, input, minval, maxval)
   check_input(input, 2)
   fill_values(input, minval, maxval)
   return maxdiff(SJ.forward(module, input), SJ.backward(module, input))
end

function SJ.testJacobianParameters(module, input, param, dparam, minval, maxval)
   check_input(input, 2)
   check_param(param, 'parameter', 2)
   fill_values(input, minval, maxval)
   param:uniform(minval or -2, maxval or 2)
   local jb = SJ.backward(module, input, param, dparam)
   return maxdiff(SJ.forward(module, input, param), jb)
end

function SJ.testJacobianUpdateParameters(module, input, param, minval, maxval)
   check_input(input, 2)
   check_param(param, 'parameter', 2)
   fill_values(input, minval, maxval)
   param:uniform(minval or -2, maxval or 2)
   local jb = SJ.backwardUpdate(module, input, param)
   return maxdiff(SJ.forwardUpdate(module, input, param), jb)
end

-- the floating tensors of a tensor or (nested) table, as one float64 vector
local function flatten(x)
   local parts = {}
   local function walk(v)
      if torch.isTensor(v) then
         if v:nElement() > 0 then parts[#parts + 1] = flat(v):double() end
      elseif type(v) == 'table' then
         for _, w in ipairs(v) do walk(w) end
      end
   end
   walk(x)
   if #parts == 0 then return torch.DoubleTensor() end
   return torch.cat(parts, 1)
end

-- forward and backward of m and of its copy written and read back through a MemoryFile
function SJ.testIO(module, input, minval, maxval)
   check_input(input, 2)
   minval, maxval = minval or -2, maxval or 2
   local function run(m, gout)
      local out = m:forward(input)
      gout = gout or out:clone():uniform(minval, maxval)
      m:zeroGradParameters()
      m:updateGradInput(input, gout)
      m:accGradParameters(input, gout)
      return flatten(m.output):clone(), flatten(m.gradInput):clone(), gout
   end
   local fo, bo, gout = run(module)
   local f = torch.MemoryFile('rw'):binary()
   f:writeObject(module)
   f:seek(1)
   local copy = f:readObject()
   f:close()
   local fo2, bo2 = run(copy, gout)
   return maxdiff(fo, fo2), maxdiff(bo, bo2)
end

-- nn.Jacobian's check of the four update paths (nothing in it reads the input's layout)
function SJ.testAllUpdate(module, input, weight, gradWeight)
   check_input(input, 2)
   return nn.Jacobian.testAllUpdate(module, input, weight, gradWeight)
end

return SJ
