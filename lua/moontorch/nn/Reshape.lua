-- nn.Reshape(sizes... [, batchMode]): the input reshaped (copied when not contiguous). An input
-- with more elements than the sizes hold, or batchMode = true, keeps its first dimension.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Reshape, parent = torch.class('nn.Reshape', 'nn.Module')

function Reshape:__init(...)
   parent.__init(self)
   local args = { ... }
   if type(args[#args]) == 'boolean' then
      self.batchMode = table.remove(args)
   end
   if #args == 1 and type(args[1]) == 'table' then args = args[1] end
   self.size = {}
   self.nelement = 1
   for i = 1, #args do
      if type(args[i]) ~= 'number' or args[i] < 1 then
         error('nn.Reshape: sizes must be positive integers, got ' .. tostring(args[i]), 2)
      end
      self.size[i] = args[i]
      self.nelement = self.nelement * args[i]
   end
end

function Reshape:updateOutput(input)
   if not torch.isTensor(input) then error('nn.Reshape: expected a tensor input, got ' .. torch.type(input), 2) end
   local src = input:isContiguous() and input or input:contiguous()
   local target
   if (self.batchMode == false) or (input:nElement() == self.nelement and self.batchMode ~= true) then
      target = self.size
   else
      target = { input:size(1) }
      for i = 1, #self.size do target[i + 1] = self.size[i] end
   end
   local total = 1
   for i = 1, #target do total = total * target[i] end
   if total ~= input:nElement() then
      error(('nn.Reshape: input of size %s (%d elements) cannot be reshaped to %s'):format(
         table.concat(T.sizes(input), 'x'), input:nElement(), table.concat(target, 'x')), 2)
   end
   self.output = src:view(target)
   return self.output
end

function Reshape:updateGradInput(input, gradOutput)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   self.gradInput = g:view(T.sizes(input))
   return self.gradInput
end

function Reshape:clearState()
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
   return self
end

function Reshape:__tostring__()
   return torch.type(self) .. '(' .. table.concat(self.size, 'x') .. ')'
end
