-- nn.utils: Torch7's nn.utils (the recursive* helpers for nested tables of tensors, used by the
-- table layers and by user code), and what several module files share (pooling-window checks and
-- printing, result tensors, the buffers of modules whose output is a view).
local torch = require 'moontorch'
local T = require 'moontorch.internal'

local utils = {}

-- A pooling window: kW and kH numbers >= 1, else 'nn.X: kW must be a positive integer, got v'
-- at the caller's caller (the line constructing the module).
function utils.checkWindow(self, kW, kH)
   for _, v in ipairs { { kW, 'kW' }, { kH, 'kH' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 then
         error(('%s: %s must be a positive integer, got %s'):format(torch.type(self), v[2], tostring(v[1])), 3)
      end
   end
end

-- Max and average pooling print alike, as Torch7 does: 'nn.X(kWxkH, dW,dH[, padW,padH])'.
function utils.poolToString(self)
   local s = ('%s(%dx%d, %d,%d'):format(torch.type(self), self.kW, self.kH, self.dW, self.dH)
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   return s .. ')'
end

-- self[field] as a result tensor of like's type, made anew when the module was converted
-- with :type() or moved to another device (the C op resizes it).
function utils.result(self, field, like)
   local r = self[field]
   if r == nil or not torch.isTensor(r) or r:type() ~= like:type() then
      r = T.empty_tensor(like:dtype(), like:device())
      self[field] = r
   end
   return r
end

-- View, Reshape, Flatten: the output is the input (made contiguous) viewed as `sizes`, and the
-- gradient is gradOutput viewed back as the input.
function utils.viewInput(self, input, sizes)
   local src = input:isContiguous() and input or input:contiguous()
   self.output = src:view(sizes)
   return self.output
end

function utils.viewGradOutput(self, input, gradOutput)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   self.gradInput = g:view(T.sizes(input))
   return self.gradInput
end

-- clearState for modules whose output and gradInput alias other tensors: drop the references
-- instead of emptying (and so resizing) tensors that belong to someone else.
function utils.dropBuffers(self)
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
   return self
end

-- Torch7's helpers for (nested) tables of tensors ---------------------------------------------
-- t resized like src (a tensor or nested table), reusing t's tensors where the type matches
function utils.recursiveResizeAs(t, src)
   if torch.isTensor(src) then
      if not torch.isTensor(t) or t:type() ~= src:type() then t = src.new() end
      return t:resizeAs(src)
   elseif type(src) == 'table' then
      t = type(t) == 'table' and not torch.isTensor(t) and t or {}
      for k, v in pairs(src) do t[k] = utils.recursiveResizeAs(t[k], v) end
      for k in pairs(t) do if src[k] == nil then t[k] = nil end end
      return t
   end
   error('nn.utils.recursiveResizeAs: expected a tensor or a table, got ' .. torch.type(src), 2)
end

function utils.recursiveFill(t, v)
   if torch.isTensor(t) then t:fill(v)
   elseif type(t) == 'table' then for _, x in pairs(t) do utils.recursiveFill(x, v) end
   else error('nn.utils.recursiveFill: expected a tensor or a table, got ' .. torch.type(t), 2) end
   return t
end

-- t = copy of src (same structure), reusing t's tensors
function utils.recursiveCopy(t, src)
   t = utils.recursiveResizeAs(t, src)
   if torch.isTensor(src) then return t:copy(src) end
   for k, v in pairs(src) do t[k] = utils.recursiveCopy(t[k], v) end
   return t
end

-- t += alpha * src (same structure)
function utils.recursiveAdd(t, alpha, src)
   if src == nil then alpha, src = 1, alpha end
   if torch.isTensor(t) then t:add(alpha, src)
   else for k, v in pairs(t) do utils.recursiveAdd(v, alpha, src[k]) end end
   return t
end

-- a zeroed structure like src
function utils.zeroLike(t, src) return utils.recursiveFill(utils.recursiveResizeAs(t, src), 0) end

local function sizestr(t) return t:dim() == 0 and 'empty' or table.concat(t:size():totable(), 'x') end
utils.sizeString = sizestr

-- Checks that input is a table of (exactly n, when given; else at least one) tensors of one size;
-- errors name the module. level: the error level of the module's caller.
function utils.checkTensorTable(name, input, n, level)
   level = (level or 2) + 1
   if type(input) ~= 'table' or torch.isTensor(input) then
      error(('%s: expected a table of tensors, got %s'):format(name, torch.type(input)), level)
   end
   if (n and #input ~= n) or #input == 0 then
      error(('%s: expected a table of %s tensors, got %d'):format(name, n or 'one or more', #input), level)
   end
   for i = 1, #input do
      if not torch.isTensor(input[i]) then
         error(('%s: input %d is a %s, not a tensor'):format(name, i, torch.type(input[i])), level)
      end
      if not input[i]:isSameSizeAs(input[1]) then
         error(('%s: input %d has size %s but input 1 has size %s'):format(name, i,
            sizestr(input[i]), sizestr(input[1])), level)
      end
   end
end

-- DotProduct, PairwiseDistance, CosineDistance: the pair {x, y} as two b x n matrices (a pair of
-- vectors is one row)
function utils.rowPairs(name, input)
   utils.checkTensorTable(name, input, 2, 3)
   local a, b = input[1], input[2]
   if a:dim() ~= 1 and a:dim() ~= 2 then
      error(('%s: expected vectors or matrices (a batch of rows), got inputs of size %s'):format(name,
         sizestr(a)), 3)
   end
   if not a:isContiguous() then a = a:contiguous() end
   if not b:isContiguous() then b = b:contiguous() end
   if a:dim() == 1 then return a:view(1, a:size(1)), b:view(1, b:size(1)) end
   return a, b
end

-- param (a tensor or nested table of tensors) converted to typename; tensorCache keeps shared
-- tensors shared (one conversion each)
function utils.recursiveType(param, typename, tensorCache)
   tensorCache = tensorCache or {}
   if torch.isTensor(param) then
      if param:type() == typename then return param end
      local key = torch.pointer(param)
      local done = tensorCache[key]
      if done == nil then done = param:type(typename); tensorCache[key] = done end
      return done
   elseif type(param) == 'table' then
      if torch.isTypeOf(param, 'nn.Module') or torch.isTypeOf(param, 'nn.Criterion') then
         return param:type(typename, tensorCache)
      end
      for k, v in pairs(param) do param[k] = utils.recursiveType(v, typename, tensorCache) end
      return param
   end
   return param
end

-- a view of t with a dimension of size 1 inserted at dim (default 1): ([view,] t [, dim])
function utils.addSingletonDimension(a, b, c)
   local view, t, dim
   if torch.isTensor(b) then view, t, dim = a, b, c else t, dim = a, b end
   if not torch.isTensor(t) then
      error('nn.utils.addSingletonDimension: expected a tensor, got ' .. torch.type(t), 2)
   end
   dim = dim or 1
   if dim < 1 or dim > t:dim() + 1 then
      error(('nn.utils.addSingletonDimension: dim %s out of range for a %d-d tensor'):format(tostring(dim), t:dim()), 2)
   end
   local sizes, strides = {}, {}
   for i = 1, t:dim() do sizes[i], strides[i] = t:size(i), t:stride(i) end
   table.insert(sizes, dim, 1)
   table.insert(strides, dim, dim <= t:dim() and sizes[dim + 1] * strides[dim] or 1)
   view = view or t.new()
   view:set(t:storage(), t:storageOffset(), torch.LongStorage(sizes), torch.LongStorage(strides))
   return view
end

-- input viewed as sizes...: a view when input is contiguous, else a view of output holding a
-- contiguous copy of it
function utils.contiguousView(output, input, ...)
   output = output or input.new()
   if input:isContiguous() then return input:view(...) end
   output:resizeAs(input):copy(input)
   return output:view(...)
end

-- self's named fields emptied (tensors resized to nothing, tables to {}); also Module:clearState's
-- helper in Torch7: utils.clear(self, 'output', 'gradInput') or utils.clear(self, {names})
function utils.clear(self, ...)
   local names = select('#', ...) == 1 and type((...)) == 'table' and (...) or { ... }
   for _, name in ipairs(names) do
      local v = self[name]
      if torch.isTensor(v) then v:set()
      elseif type(v) == 'table' then self[name] = {}
      else self[name] = nil end
   end
   return self
end

return utils
