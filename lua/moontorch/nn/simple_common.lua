-- nn elementwise helpers: the argument checks and result tensors shared by Abs, Square, Sqrt,
-- Exp, Log, Power and Clamp (each stays a direct nn.Module subclass, as in Torch7), and how
-- the parameter of CMul/CAdd lines up with an input. Errors name the module.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local E = {}

local function shape(t) return table.concat(T.sizes(t), 'x') end
E.shape = shape

local function floating(self, x, what)
   T.expect_tensor(x, torch.type(self), what, 4)
   if not T.dtypes[x:dtype() + 1].is_float then
      error(('%s: expected a floating point %s, got a %s'):format(torch.type(self), what, x:type()), 4)
   end
end

-- self.output as a tensor of the input's type (checked), resized like the input
function E.output(self, input)
   floating(self, input, 'input')
   return utils.result(self, 'output', input):resizeAs(input)
end

-- self.gradInput likewise, once gradOutput is known to match the input's size
function E.gradInput(self, input, gradOutput)
   floating(self, input, 'input')
   floating(self, gradOutput, 'gradOutput')
   if not gradOutput:isSameSizeAs(input) then
      error(('%s: gradOutput has size %s but the input has size %s'):format(torch.type(self), shape(gradOutput),
         shape(input)), 3)
   end
   return utils.result(self, 'gradInput', input):resizeAs(input)
end

-- A parameter and the input must hold the same floating type (convert the module with :type()).
function E.sameType(self, input, param)
   floating(self, input, 'input')
   if input:type() ~= param:type() then
      error(('%s: input is a %s but the module holds %s (convert with :type())'):format(torch.type(self),
         input:type(), param:type()), 3)
   end
end

-- How CMul's weight or CAdd's bias meets an input (Torch7's three cases): the same number of
-- elements (matched in element order); the same number of dimensions (where the parameter has
-- size 1, it is expanded); else the first input dimension is a batch of parameter-sized
-- samples. Returns a view of the parameter that broadcasts against the input, and the case.
function E.paramView(self, param, input)
   local n = param:nElement()
   if input:nElement() == n then return param:view(T.sizes(input)), 'same' end
   if param:dim() == input:dim() then
      local ok = true
      for i = 1, param:dim() do
         if param:size(i) ~= 1 and param:size(i) ~= input:size(i) then ok = false end
      end
      if ok then return param, 'expand' end
   end
   if input:dim() >= 2 and input:nElement() == input:size(1) * n then
      local sizes = T.sizes(input)
      sizes[1] = 1
      return param:view(sizes), 'batch'
   end
   error(('%s: input of size %s does not fit the parameter of size %s (expected the same number of elements, '
      .. 'sizes that are equal or 1 in the parameter, or a batch of %d-element samples)'):format(torch.type(self),
      shape(input), shape(param), n), 3)
end

-- t (input-sized) summed down to the parameter's shape for the case paramView returned
function E.reduceToParam(t, param, input, case)
   if case == 'batch' then
      t = t:sum(1)
   elseif case == 'expand' then
      for i = 1, param:dim() do
         if param:size(i) == 1 and input:size(i) ~= 1 then t = t:sum(i) end
      end
   end
   return t:contiguous():view(T.sizes(param))
end

-- sizes given as numbers or one LongStorage/table, as a LongStorage (Torch7's self.size)
function E.sizeArg(what, ...)
   local sizes = T.size_list(...)
   if #sizes == 0 then error(what .. ': expected the parameter size (numbers or a LongStorage)', 3) end
   for i, s in ipairs(sizes) do
      if type(s) ~= 'number' or s < 1 or s % 1 ~= 0 then
         error(('%s: size %d must be a positive integer, got %s'):format(what, i, tostring(s)), 3)
      end
   end
   return torch.LongStorage(sizes)
end

return E
