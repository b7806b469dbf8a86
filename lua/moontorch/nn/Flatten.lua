-- nn.Flatten([startDim = 2]): merges dimensions startDim..last (a batch N x ... becomes N x M),
-- like View(-1) with the batch kept.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Flatten, parent = torch.class('nn.Flatten', 'nn.Module')

function Flatten:__init(startDim)
   parent.__init(self)
   self.startDim = startDim or 2
end

function Flatten:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input')
   local isz = T.sizes(input)
   local s = math.min(self.startDim, #isz)
   local target = {}
   for i = 1, s - 1 do target[i] = isz[i] end
   local m = 1
   for i = s, #isz do m = m * isz[i] end
   target[s] = m
   return nn.utils.viewInput(self, input, target)
end

Flatten.updateGradInput = nn.utils.viewGradOutput
Flatten.clearState = nn.utils.dropBuffers -- output and gradInput alias the input and gradOutput
