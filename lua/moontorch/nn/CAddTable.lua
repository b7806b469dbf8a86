-- nn.CAddTable([inplace]): the elementwise sum of a table of same-sized tensors.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local CAddTable, parent = torch.class('nn.CAddTable', 'nn.Module')

function CAddTable:__init(ip)
   parent.__init(self)
   self.inplace = ip
   self.gradInput = {}
end

function CAddTable:updateOutput(input)
   if type(input) ~= 'table' or #input == 0 then error('nn.CAddTable: expected a table of tensors', 2) end
   for i = 2, #input do
      if not input[i]:isSameSizeAs(input[1]) then
         error(('nn.CAddTable: input %d has size %s but input 1 has size %s'):format(i,
            table.concat(T.sizes(input[i]), 'x'), table.concat(T.sizes(input[1]), 'x')), 2)
      end
   end
   if self.inplace then
      self.output:set(input[1])
   else
      if self.output:type() ~= input[1]:type() then
         self.output = T.empty_tensor(input[1]:dtype(), input[1]:device())
      end
      T.follow_layout(self.output:resizeAs(input[1]), input[1]):copy(input[1]) -- keeps a channels-last layout
   end
   for i = 2, #input do self.output:add(input[i]) end
   return self.output
end

function CAddTable:updateGradInput(input, gradOutput)
   for i = 1, #input do
      self.gradInput[i] = self.gradInput[i] or T.empty_tensor(gradOutput:dtype(), gradOutput:device())
      if self.inplace then
         self.gradInput[i]:set(gradOutput)
      else
         if self.gradInput[i]:type() ~= gradOutput:type() then
            self.gradInput[i] = T.empty_tensor(gradOutput:dtype(), gradOutput:device())
         end
         T.follow_layout(self.gradInput[i]:resizeAs(input[i]), input[i]):copy(gradOutput)
      end
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end
