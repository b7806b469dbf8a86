-- nn.TanhShrink(): x - tanh(x) elementwise, as Torch7 computes it, through an nn.Tanh it holds
-- (its `tanh` field, so files Torch7 saved load as they are); the gradient is
-- gradOutput - gradOutput * (1 - tanh(x)^2).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local TanhShrink, parent = torch.class('nn.TanhShrink', 'nn.Module')

function TanhShrink:__init()
   parent.__init(self)
   self.tanh = nn.Tanh()
end

function TanhShrink:updateOutput(input)
   P.checkInput(self, input)
   local th = self.tanh:updateOutput(input)
   self.output = P.output(self, input, false):add(-1, th)
   return self.output
end

function TanhShrink:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local dth = self.tanh:updateGradInput(input, gradOutput)
   self.gradInput = P.gradInput(self, gradOutput, false):add(-1, dth)
   return self.gradInput
end

function TanhShrink:clearState()
   self.tanh:clearState()
   return parent.clearState(self)
end
