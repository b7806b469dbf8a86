-- nn.VolumetricDilatedMaxPooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH], [padT=0], [padW=0], [padH=0],
-- [dilationT=1], [dilationW=1], [dilationH=1]) with :ceil()/:floor(), as in Torch7: nn.VolumetricMaxPooling
-- whose window taps are dilation apart (its separable passes honour the dilation fields).
local torch = require 'moontorch'
require 'moontorch.nn'
require 'moontorch.nn.VolumetricMaxPooling'

local Dilated, parent = torch.class('nn.VolumetricDilatedMaxPooling', 'nn.VolumetricMaxPooling')

function Dilated:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH, dilationT, dilationW, dilationH)
   self.dilationT, self.dilationW, self.dilationH = dilationT or 1, dilationW or 1, dilationH or 1
   parent.__init(self, kT, kW, kH, dT, dW, dH, padT, padW, padH)
end

return Dilated
