-- nn.Reshape(sizes... [, batchMode]): the input reshaped (copied when not contiguous). An input
-- with more elements than the sizes hold, or batchMode = true, keeps its first dimension.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
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
   T.expect_tensor(input, torch.type(self), 'input')
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
   return nn.utils.viewInput(self, input, target)
end

Reshape.updateGradInput = nn.utils.viewGradOutput
Reshape.clearState = nn.utils.dropBuffers -- output and gradInput alias the input and gradOutput

function Reshape:__tostring__()
   return torch.type(self) .. '(' .. table.concat(self.size, 'x') .. ')'
end
