-- nn.Criterion: the base of loss functions (forward -> number, backward -> gradInput).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Criterion = torch.class('nn.Criterion')

function Criterion:__init()
   self.gradInput = torch.Tensor()
   self.output = 0
end

function Criterion:updateOutput(input, target) end

function Criterion:forward(input, target) return self:updateOutput(input, target) end

function Criterion:backward(input, target) return self:updateGradInput(input, target) end

function Criterion:updateGradInput(input, target) end

function Criterion:clone() return nn.Module._deepcopy(self) end

function Criterion:type(typename, tensorCache)
   if not typename then return self._type end
   nn.Module.type(self, typename, tensorCache)
   return self
end

function Criterion:float() return self:type('torch.FloatTensor') end
function Criterion:double() return self:type('torch.DoubleTensor') end
function Criterion:half() return self:type('torch.HalfTensor') end
function Criterion:cuda() return self:type('torch.CudaTensor') end

function Criterion:__call__(input, target)
   self.output = self:forward(input, target)
   self.gradInput = self:backward(input, target)
   return self.output, self.gradInput
end

-- (not in Torch7's Criterion) like Module's: a tensor gradInput emptied, a table one dropped
function Criterion:clearState() return nn.Module._clearFields(self, 'gradInput') end

function Criterion:__tostring__() return torch.type(self) end
