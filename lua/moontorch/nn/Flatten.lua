-- nn.Flatten([startDim = 2]): merges dimensions startDim..last (a batch N x ... becomes N x M),
-- like View(-1) with the batch kept.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Flatten, parent = torch.class('nn.Flatten', 'nn.Module')

function Flatten:__init(startDim)
   parent.__init(self)
   self.startDim = startDim or 2
end

function Flatten:updateOutput(input)
   if not torch.isTensor(input) then error('nn.Flatten: expected a tensor input, got ' .. torch.type(input), 2) end
   local isz = T.sizes(input)
   local s = math.min(self.startDim, #isz)
   local target = {}
   for i = 1, s - 1 do target[i] = isz[i] end
   local m = 1
   for i = s, #isz do m = m * isz[i] end
   target[s] = m
   local src = input:isContiguous() and input or input:contiguous()
   self.output = src:view(target)
   return self.output
end

function Flatten:updateGradInput(input, gradOutput)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   self.gradInput = g:view(T.sizes(input))
   return self.gradInput
end

function Flatten:clearState()
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
   return self
end
