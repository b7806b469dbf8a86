-- nn.NaN(module[, id]): module itself, but forward and backward raise an error naming where a NaN
-- first shows up (the input, the parameters, the output; gradOutput, gradInput, the parameter
-- gradients), to find the layer that makes them. Each instance gets a number, id, for its messages.
local torch = require 'moontorch'
require 'moontorch.nn'

local NaN, parent = torch.class('nn.NaN', 'nn.Decorator')

local lastId = 0
function NaN.newId()
   lastId = lastId + 1
   return lastId
end

function NaN:__init(module, id)
   parent.__init(self, module)
   self.id = id or NaN.newId()
end

-- a tensor (or nested table of them) holding a NaN: its sum is NaN (an infinity of each sign
-- would give one too, as in Torch7, which also tests the sum)
function NaN:recursiveIsNaN(x)
   if torch.isTensor(x) then
      if x:nElement() == 0 then return false end
      local s = x:sum()
      return s ~= s
   elseif type(x) == 'table' then
      for _, v in pairs(x) do
         if self:recursiveIsNaN(v) then return true end
      end
   end
   return false
end

function NaN:_fail(where)
   error(('nn.NaN: NaN found in %s of module :\n%s'):format(where, self:__tostring__()), 3)
end

function NaN:updateOutput(input)
   self.output = self.modules[1]:updateOutput(input)
   if self:recursiveIsNaN(self.output) then
      if self:recursiveIsNaN(input) then self:_fail('input') end
      if self:recursiveIsNaN(self:parameters()) then self:_fail('parameters') end
      self:_fail('output')
   end
   return self.output
end

function NaN:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   if self:recursiveIsNaN(self.gradInput) then
      if self:recursiveIsNaN(gradOutput) then self:_fail('gradOutput') end
      self:_fail('gradInput')
   end
   return self.gradInput
end

function NaN:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(input, gradOutput, scale)
   local _, gradParams = self:parameters()
   if self:recursiveIsNaN(gradParams) then self:_fail('gradParameters') end
end

function NaN:__tostring__()
   local m = self.modules[1]
   local inner = m.__tostring__ and m:__tostring__() or torch.type(m)
   return ('%s(%s) @ %s'):format(torch.type(self), tostring(self.id), inner)
end
