-- nn.SpatialContrastiveNormalization([nInputPlane=1], [kernel=9x9 ones], [threshold=1e-4],
-- [thresval=threshold]) as in Torch7: nn.SpatialSubtractiveNormalization then
-- nn.SpatialDivisiveNormalization with the same kernel, in an nn.Sequential (its `normalizer`).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local SCN, parent = torch.class('nn.SpatialContrastiveNormalization', 'nn.Module')

local NAME = 'nn.SpatialContrastiveNormalization'

function SCN:__init(nInputPlane, kernel, threshold, thresval)
   parent.__init(self)
   self.nInputPlane, self.kernel = nn.SpatialDivisiveNormalization._args(NAME, nInputPlane, kernel, 3)
   self.threshold = threshold or 1e-4
   self.thresval = thresval or threshold or 1e-4
   self.normalizer = nn.Sequential()
      :add(nn.SpatialSubtractiveNormalization(self.nInputPlane, self.kernel))
      :add(nn.SpatialDivisiveNormalization(self.nInputPlane, self.kernel, self.threshold, self.thresval))
end

function SCN:updateOutput(input)
   self.output = self.normalizer:forward(input)
   return self.output
end

function SCN:updateGradInput(input, gradOutput)
   self.gradInput = self.normalizer:backward(input, gradOutput)
   return self.gradInput
end

function SCN:clearState()
   self.normalizer:clearState()
   return parent.clearState(self)
end

return SCN
