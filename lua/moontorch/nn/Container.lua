-- nn.Container: a module holding child modules in self.modules; parameters, modes, type
-- conversion and clearState reach every child.
local torch = require 'moontorch'
require 'moontorch.nn'

local Container, parent = torch.class('nn.Container', 'nn.Module')

function Container:__init(...)
   parent.__init(self, ...)
   self.modules = {}
end

function Container:add(module)
   table.insert(self.modules, module)
   return self
end

function Container:get(index) return self.modules[index] end

function Container:size() return #self.modules end

-- Run module[funcName](module, ...) and rethrow an error with a line naming the child that
-- failed; nested containers each add their line in front, so the path reads outermost first
-- ("In 2 module of nn.Sequential:\nIn 1 module of nn.Concat:\n<error>"), like Torch7's.
function Container:rethrowErrors(module, moduleIndex, funcName, ...)
   local results = { pcall(module[funcName], module, ...) }
   if not results[1] then
      local msg = results[2]
      if type(msg) == 'string' then
         msg = ('In %d module of %s:\n%s'):format(moduleIndex, torch.type(self), msg)
      end
      error(msg, 0)
   end
   return unpack(results, 2)
end

function Container:applyToModules(fn)
   for _, m in ipairs(self.modules) do fn(m) end
end

function Container:zeroGradParameters() self:applyToModules(function(m) m:zeroGradParameters() end) end
function Container:updateParameters(lr) self:applyToModules(function(m) m:updateParameters(lr) end) end
function Container:training() parent.training(self); self:applyToModules(function(m) m:training() end) end
function Container:evaluate() parent.evaluate(self); self:applyToModules(function(m) m:evaluate() end) end
function Container:reset(stdv) self:applyToModules(function(m) m:reset(stdv) end) end

function Container:share(mlp, ...)
   for i = 1, #self.modules do self.modules[i]:share(mlp.modules[i], ...) end
   return self
end

function Container:parameters()
   local w, gw = {}, {}
   for _, m in ipairs(self.modules) do
      local mw, mgw = m:parameters()
      if mw then
         for i = 1, #mw do
            w[#w + 1] = mw[i]
            gw[#gw + 1] = mgw[i]
         end
      end
   end
   return w, gw
end

function Container:clearState()
   parent.clearState(self)
   self:applyToModules(function(m) m:clearState() end)
   return self
end

-- The branching tree Torch7 prints for Concat, ConcatTable and ParallelTable.
function Container:_branchString(first, lastLine)
   local tab, line = '  ', '\n'
   local next, lastNext = '  |`-> ', '   `-> '
   local ext, extlast = '  |    ', '       '
   local str = torch.type(self) .. ' {' .. line .. tab .. first
   for i = 1, #self.modules do
      local s = tostring(self.modules[i])
      if i == #self.modules then
         str = str .. line .. tab .. lastNext .. '(' .. i .. '): ' .. s:gsub(line, line .. tab .. extlast)
      else
         str = str .. line .. tab .. next .. '(' .. i .. '): ' .. s:gsub(line, line .. tab .. ext)
      end
   end
   return str .. line .. tab .. lastLine .. line .. '}'
end

-- Helpers for tables of tensors (ConcatTable's gradInput over table inputs, ...).
local T = require 'moontorch.internal'
local function like(t) return T.empty_tensor(t:dtype(), t:device()) end
Container._like = like

-- dst = copy of src (tensor or nested table), reusing dst's tensors
function Container._copyInto(dst, src)
   if torch.isTensor(src) then
      if not torch.isTensor(dst) or dst:type() ~= src:type() then dst = like(src) end
      return dst:resizeAs(src):copy(src)
   end
   dst = type(dst) == 'table' and dst or {}
   for i = 1, #src do dst[i] = Container._copyInto(dst[i], src[i]) end
   for i = #src + 1, #dst do dst[i] = nil end
   return dst
end

-- dst += src (same structure)
function Container._addInto(dst, src)
   if torch.isTensor(src) then return dst:add(src) end
   for i = 1, #src do dst[i] = Container._addInto(dst[i], src[i]) end
   return dst
end
