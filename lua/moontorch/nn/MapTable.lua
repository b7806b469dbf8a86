-- nn.MapTable([module [, shared = true]]): applies one module to every element of the input
-- table. The module is cloned as needed; with shared, the clones share weight, bias, gradWeight
-- and gradBias with it. resize(n) sets the number of clones; clearState drops them.
local torch = require 'moontorch'
require 'moontorch.nn'

local MapTable, parent = torch.class('nn.MapTable', 'nn.Container')

function MapTable:__init(module, shared)
   parent.__init(self)
   self.shared = shared == nil or shared
   self.sharedparams = { 'weight', 'bias', 'gradWeight', 'gradBias' }
   self.output = {}
   self.gradInput = {}
   if module then self:add(module) end
end

function MapTable:add(module)
   if self.module then error('nn.MapTable: holds a single module; it already has one', 2) end
   self.module = module
   self.modules[1] = module
   return self
end

function MapTable:_extend(n)
   if not self.module then error('nn.MapTable: no module to apply (call add(module) first)', 3) end
   self.modules[1] = self.module
   for i = 2, n do
      if not self.modules[i] then
         self.modules[i] = self.shared and self.module:clone(unpack(self.sharedparams)) or self.module:clone()
      end
   end
end

function MapTable:resize(n)
   self:_extend(n)
   for i = #self.modules, math.max(n, 1) + 1, -1 do
      self.modules[i]:clearState()
      self.modules[i] = nil
   end
   return self
end

local function check(input)
   if type(input) ~= 'table' or torch.isTensor(input) then
      error('nn.MapTable: expected a table, got ' .. torch.type(input), 3)
   end
end

function MapTable:updateOutput(input)
   check(input)
   self:_extend(#input)
   local out = {}
   for i = 1, #input do out[i] = self:rethrowErrors(self.modules[i], i, 'updateOutput', input[i]) end
   self.output = out
   return self.output
end

function MapTable:updateGradInput(input, gradOutput)
   check(input)
   self:_extend(#input)
   local gi = {}
   for i = 1, #input do
      gi[i] = self:rethrowErrors(self.modules[i], i, 'updateGradInput', input[i], gradOutput[i])
   end
   self.gradInput = gi
   return self.gradInput
end

function MapTable:accGradParameters(input, gradOutput, scale)
   check(input)
   self:_extend(#input)
   for i = 1, #input do
      self:rethrowErrors(self.modules[i], i, 'accGradParameters', input[i], gradOutput[i], scale or 1)
   end
end

function MapTable:accUpdateGradParameters(input, gradOutput, lr)
   check(input)
   self:_extend(#input)
   for i = 1, #input do
      self:rethrowErrors(self.modules[i], i, 'accUpdateGradParameters', input[i], gradOutput[i], lr or 1)
   end
end

-- shared clones hold views of the module's tensors: act on them once
function MapTable:zeroGradParameters()
   if not self.module then return end
   if self.shared then self.module:zeroGradParameters() else parent.zeroGradParameters(self) end
end

function MapTable:updateParameters(lr)
   if not self.module then return end
   if self.shared then self.module:updateParameters(lr) else parent.updateParameters(self, lr) end
end

function MapTable:clearState()
   for i = #self.modules, 2, -1 do
      self.modules[i]:clearState()
      self.modules[i] = nil
   end
   return parent.clearState(self)
end

function MapTable:__tostring__()
   if not self.module then return torch.type(self) .. ' { }' end
   return torch.type(self) .. ' {\n  ' .. tostring(self.module):gsub('\n', '\n        ') .. '\n}'
end
