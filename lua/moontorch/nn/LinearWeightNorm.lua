-- nn.LinearWeightNorm(inputSize, outputSize, [bias=true], [eps=1e-16]) as in Torch7: nn.Linear
-- with each output row's weight reparametrised as w = g * v / ||v|| (||v|| clamped below at
-- eps). Parameters: v (outputSize x inputSize), g (outputSize x 1) and bias; self.weight is
-- recomputed from v and g on every training forward pass. fromLinear/toLinear convert.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local LWN, parent = torch.class('nn.LinearWeightNorm', 'nn.Linear')

local NAME = 'nn.LinearWeightNorm'

function LWN:__init(inputSize, outputSize, bias, eps)
   nn.Module.__init(self)   -- not nn.Linear's: the parameters differ
   if type(inputSize) ~= 'number' or type(outputSize) ~= 'number' or inputSize < 1 or outputSize < 1 then
      error(('%s: expected positive inputSize and outputSize, got %s and %s'):format(NAME, tostring(inputSize),
         tostring(outputSize)), 2)
   end
   if bias == nil then bias = true end
   self.eps = eps or 1e-16
   self.inputSize, self.outputSize = inputSize, outputSize
   self.v = torch.Tensor(outputSize, inputSize)
   self.gradV = torch.Tensor(outputSize, inputSize):zero()
   self.weight = torch.Tensor(outputSize, inputSize)
   self.g = torch.Tensor(outputSize, 1)
   self.gradG = torch.Tensor(outputSize, 1):zero()
   self.norm = torch.Tensor(outputSize, 1)
   self.scale = torch.Tensor(outputSize, 1)
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize):zero()
   end
   self:reset()
end

-- v = weight, g = its row norms
function LWN:initFromWeight(weight)
   weight = weight or self.weight
   self.g:copy(torch.norm(weight, 2, 2)):clamp(self.eps, math.huge)
   self.v:copy(weight)
   return self
end

function LWN.fromLinear(linear)
   local m = nn.LinearWeightNorm(linear.weight:size(2), linear.weight:size(1), torch.isTensor(linear.bias))
   m.weight:copy(linear.weight)
   m:initFromWeight()
   if linear.bias then m.bias:copy(linear.bias) end
   return m
end

function LWN:toLinear()
   self:updateWeightMatrix()
   local m = nn.Linear(self.inputSize, self.outputSize, torch.isTensor(self.bias))
   m.weight:copy(self.weight)
   if self.bias then m.bias:copy(self.bias) end
   return m
end

function LWN:parameters()
   if self.bias then return { self.v, self.g, self.bias }, { self.gradV, self.gradG, self.gradBias } end
   return { self.v, self.g }, { self.gradV, self.gradG }
end

-- Torch7's default: a uniform weight in +-1/sqrt(inputSize) taken apart into v and g
function LWN:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.inputSize) end
   self.weight:uniform(-stdv, stdv)
   self:initFromWeight()
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

function LWN:updateWeightMatrix()
   -- clearState empties these
   if self.norm:dim() == 0 then self.norm:resizeAs(self.g) end
   if self.scale:dim() == 0 then self.scale:resizeAs(self.g) end
   if self.weight:dim() == 0 then self.weight:resizeAs(self.v) end
   self.norm:copy(torch.norm(self.v, 2, 2)):clamp(self.eps, math.huge)
   self.scale:copy(self.g):cdiv(self.norm)
   self.weight:copy(torch.cmul(self.v, self.scale:expandAs(self.v)))
end

function LWN:evaluate()
   if self.train ~= false then self:updateWeightMatrix() end
   parent.evaluate(self)
end

function LWN:updateOutput(input)
   if self.train ~= false then self:updateWeightMatrix() end
   return parent.updateOutput(self, input)
end

-- With dW = dL/dw of this call (scaled): dL/dg = sum(dW * v) / ||v|| and
-- dL/dv = g/||v|| * dW - g * dL/dg / ||v||^2 * v, added to gradG and gradV.
function LWN:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local dw
   if input:dim() == 1 then
      dw = torch.ger(gradOutput, input):mul(scale)
      if self.bias then self.gradBias:add(scale, gradOutput) end
   elseif input:dim() == 2 then
      dw = torch.mm(gradOutput:t(), input):mul(scale)
      if self.bias then self.gradBias:add(scale, gradOutput:sum(1):view(self.outputSize)) end
   else
      error(('%s: expected a 1-d or 2-d input, got %d-d'):format(NAME, input:dim()), 2)
   end
   local norm = self.norm:expandAs(self.v)
   local gscale = self.scale:expandAs(self.v)
   local dg = torch.cmul(dw, self.v):cdiv(norm):sum(2)
   -- both terms before any update: in accUpdateGradParameters gradV is v itself
   local dv = dw:cmul(gscale):add(-1, torch.cmul(self.v, gscale):cdiv(norm):cmul(dg:expandAs(self.v)))
   self.gradG:add(dg)
   self.gradV:add(dv)
end

-- the gradient step goes straight into v, g and the bias
function LWN:accUpdateGradParameters(input, gradOutput, lr)
   local gradV, gradG, gradBias = self.gradV, self.gradG, self.gradBias
   self.gradV, self.gradG, self.gradBias = self.v, self.g, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   self.gradV, self.gradG, self.gradBias = gradV, gradG, gradBias
end
LWN.defaultAccUpdateGradParameters = LWN.accUpdateGradParameters

function LWN:clearState()
   nn.utils.clear(self, 'weight', 'norm', 'scale')
   return parent.clearState(self)
end

function LWN:__tostring__()
   return torch.type(self) .. ('(%d -> %d)'):format(self.inputSize, self.outputSize) ..
      (self.bias == nil and ' without bias' or '')
end

return LWN
