-- nn.WhiteNoise([mean = 0][, std = 0.1]): in training adds Gaussian noise N(mean, std^2) to the input;
-- in evaluation adds mean only. The gradient is gradOutput (it is defined in training only).
local torch = require 'moontorch'
require 'moontorch.nn'

local WhiteNoise, parent = torch.class('nn.WhiteNoise', 'nn.Module')

function WhiteNoise:__init(mean, std)
   parent.__init(self)
   self.mean = mean or 0
   self.std = std or 0.1
   if type(self.mean) ~= 'number' or type(self.std) ~= 'number' or self.std < 0 then
      error(('nn.WhiteNoise: mean must be a number and std a number >= 0, got %s, %s')
         :format(tostring(mean), tostring(std)), 3)
   end
   self.noise = torch.Tensor()
end

function WhiteNoise:updateOutput(input)
   if self.output:type() ~= input:type() then self.output = input.new() end
   self.output:resizeAs(input):copy(input)
   if self.train ~= false then
      if self.noise:type() ~= input:type() then self.noise = input.new() end
      self.noise:resizeAs(input):normal(self.mean, self.std)
      self.output:add(self.noise)
   elseif self.mean ~= 0 then
      self.output:add(self.mean)
   end
   return self.output
end

function WhiteNoise:updateGradInput(input, gradOutput)
   if self.train == false then
      error('nn.WhiteNoise: backward is defined in training mode only (call :training())', 2)
   end
   if self.gradInput:type() ~= gradOutput:type() then self.gradInput = gradOutput.new() end
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   return self.gradInput
end

function WhiteNoise:clearState()
   self.noise:set()
   return parent.clearState(self)
end

function WhiteNoise:__tostring__()
   return ('%s mean: %f, std: %f'):format(torch.type(self), self.mean, self.std)
end
