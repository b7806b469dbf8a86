-- nn.VolumetricDilatedConvolution(nIn, nOut, kT, kW, kH, [dT=1], [dW=1], [dH=1], [padT=0], [padW=padT],
-- [padH=padW], [dilationT=1], [dilationW=1], [dilationH=1]) as in Torch7: nn.VolumetricConvolution
-- whose kernel taps are dilation apart (the shared passes in VolumetricConvolution.lua honour the
-- dilation fields). Output size per dimension: floor((n + 2*pad - dil*(k-1) - 1) / d) + 1.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
require 'moontorch.nn.VolumetricConvolution'

local Dilated = torch.class('nn.VolumetricDilatedConvolution', 'nn.VolumetricConvolution')

function Dilated:__init(nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH)
   nn.VolumetricConvolution._init(self, 'nn.VolumetricDilatedConvolution', nIn, nOut, kT, kW, kH, dT, dW, dH, padT,
      padW, padH, dilT or 1, dilW or 1, dilH or 1)
end

return Dilated
