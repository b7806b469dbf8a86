-- nn.Identity: passes its input (and gradOutput) through unchanged.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Identity = torch.class('nn.Identity', 'nn.Module')

function Identity:updateOutput(input)
   self.output = input
   return self.output
end

function Identity:updateGradInput(input, gradOutput)
   self.gradInput = gradOutput
   return self.gradInput
end

Identity.clearState = nn.utils.dropBuffers -- output and gradInput alias other modules' tensors
