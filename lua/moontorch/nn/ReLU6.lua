-- nn.ReLU6([inplace]): min(max(0, x), 6), a HardTanh over [0, 6] (as Torch7 computes it).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
require 'moontorch.nn.HardTanh'
local P = require 'moontorch.nn.transfer_common'

local ReLU6, parent = torch.class('nn.ReLU6', 'nn.Module')

function ReLU6:__init(inplace)
   parent.__init(self)
   self.inplace = P.checkInplace('nn.ReLU6', inplace)
end

function ReLU6:updateOutput(input)
   return nn.HardTanh.clampForward(self, input, 0, 6, self.inplace)
end

function ReLU6:updateGradInput(input, gradOutput)
   return nn.HardTanh.clampBackward(self, input, gradOutput, 0, 6, self.inplace)
end
