-- nn.Collapse(nInputDim): flattens each sample to a vector. An input of more than nInputDim
-- dimensions is a batch: batchSize x (the rest); else one vector. A non-contiguous input is copied
-- first. The gradient is gradOutput viewed back as the input.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Collapse, parent = torch.class('nn.Collapse', 'nn.Module')

function Collapse:__init(nInputDim)
   parent.__init(self)
   if type(nInputDim) ~= 'number' or nInputDim < 1 then
      error('nn.Collapse: nInputDim must be a positive number, got ' .. tostring(nInputDim), 3)
   end
   self.nInputDim = nInputDim
end

function Collapse:updateOutput(input)
   T.expect_tensor(input, 'nn.Collapse', 'input', 2)
   local src = input:isContiguous() and input or input:contiguous()
   if input:dim() > self.nInputDim then
      self.output = src:view(input:size(1), -1)
   else
      self.output = src:view(-1)
   end
   return self.output
end

function Collapse:updateGradInput(input, gradOutput)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   self.gradInput = g:view(input:size())
   return self.gradInput
end

Collapse.clearState = nn.utils.dropBuffers -- views of the input and gradOutput
