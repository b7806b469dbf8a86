-- nn.Sequential: children applied one after another.
local torch = require 'moontorch'
require 'moontorch.nn'

local Sequential = torch.class('nn.Sequential', 'nn.Container')

function Sequential:__len() return #self.modules end

function Sequential:add(module)
   if #self.modules == 0 then self.gradInput = module.gradInput end
   table.insert(self.modules, module)
   self.output = module.output
   return self
end

function Sequential:insert(module, index)
   index = index or (#self.modules + 1)
   if index > #self.modules + 1 or index < 1 then
      error(('nn.Sequential:insert: index %d out of range 1..%d'):format(index, #self.modules + 1), 2)
   end
   table.insert(self.modules, index, module)
   self.output = self.modules[#self.modules].output
   self.gradInput = self.modules[1].gradInput
end

function Sequential:remove(index)
   index = index or #self.modules
   if index > #self.modules or index < 1 then
      error(('nn.Sequential:remove: index %d out of range 1..%d'):format(index, #self.modules), 2)
   end
   table.remove(self.modules, index)
   if #self.modules > 0 then
      self.output = self.modules[#self.modules].output
      self.gradInput = self.modules[1].gradInput
   else
      self.output = torch.Tensor()
      self.gradInput = torch.Tensor()
   end
end

function Sequential:updateOutput(input)
   local cur = input
   for i = 1, #self.modules do
      cur = self:rethrowErrors(self.modules[i], i, 'updateOutput', cur)
   end
   self.output = cur
   return cur
end

function Sequential:updateGradInput(input, gradOutput)
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local prev = self.modules[i - 1]
      g = self:rethrowErrors(self.modules[i], i, 'updateGradInput', prev.output, g)
   end
   g = self:rethrowErrors(self.modules[1], 1, 'updateGradInput', input, g)
   self.gradInput = g
   return g
end

-- accGradParameters and accUpdateGradParameters walk back the same way: each module gets the
-- gradient its successor computed in updateGradInput (these methods return nothing).
local function accumulateBackwards(self, method, input, gradOutput, arg)
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local cur, prev = self.modules[i], self.modules[i - 1]
      self:rethrowErrors(cur, i, method, prev.output, g, arg)
      g = cur.gradInput
   end
   self:rethrowErrors(self.modules[1], 1, method, input, g, arg)
end

function Sequential:accGradParameters(input, gradOutput, scale)
   accumulateBackwards(self, 'accGradParameters', input, gradOutput, scale or 1)
end

function Sequential:backward(input, gradOutput, scale)
   scale = scale or 1
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local prev = self.modules[i - 1]
      g = self:rethrowErrors(self.modules[i], i, 'backward', prev.output, g, scale)
   end
   g = self:rethrowErrors(self.modules[1], 1, 'backward', input, g, scale)
   self.gradInput = g
   return g
end

function Sequential:accUpdateGradParameters(input, gradOutput, lr)
   accumulateBackwards(self, 'accUpdateGradParameters', input, gradOutput, lr)
end

function Sequential:__tostring__()
   local tab, line, next = '  ', '\n', ' -> '
   local str = torch.type(self) .. ' {' .. line .. tab .. '[input'
   for i = 1, #self.modules do str = str .. next .. '(' .. i .. ')' end
   str = str .. next .. 'output]'
   for i = 1, #self.modules do
      str = str .. line .. tab .. '(' .. i .. '): ' .. tostring(self.modules[i]):gsub(line, line .. tab)
   end
   return str .. line .. '}'
end
