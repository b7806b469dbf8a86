-- nn.Identity: passes its input (and gradOutput) through unchanged.
local torch = require 'moontorch'
require 'moontorch.nn'

local Identity = torch.class('nn.Identity', 'nn.Module')

function Identity:updateOutput(input)
   self.output = input
   return self.output
end

function Identity:updateGradInput(input, gradOutput)
   self.gradInput = gradOutput
   return self.gradInput
end

-- output and gradInput alias other modules' tensors: drop the references instead of emptying
function Identity:clearState()
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
   return self
end
