-- nn.WeightNorm(module, [outputDim=1]) as in Torch7: the wrapped module's weight is
-- reparametrised as w = g * v / ||v||, one norm per output unit (outputDim is the weight's output
-- dimension; v is the weight viewed as nOutput x everything else). The parameters are v, g and the
-- module's bias; the module's weight is recomputed from them on every training forward pass.
-- ||v|| is sqrt(sum v^2 + 1e-4), as Torch7 computes it.
-- Torch7's parent is nn.Decorator (a one-child container); the fields are the same.
local torch = require 'moontorch'
require 'moontorch.nn'

local WN, parent = torch.class('nn.WeightNorm', 'nn.Container')

local NAME = 'nn.WeightNorm'

function WN:__init(module, outputDim)
   parent.__init(self)
   if not torch.isTypeOf(module, 'nn.Module') or not torch.isTensor(module.weight) then
      error(NAME .. ': expected a module with a weight to wrap', 2)
   end
   self.modules[1] = module
   self.module = module
   if module.bias then self.bias, self.gradBias = module.bias, module.gradBias end
   self.weight, self.gradWeight = module.weight, module.gradWeight
   self.outputDim = outputDim or 1
   if self.outputDim < 1 or self.outputDim > self.weight:dim() then
      error(('%s: outputDim %s is not a dimension of the %d-d weight'):format(NAME, tostring(self.outputDim),
         self.weight:dim()), 2)
   end
   local n = self.weight:size(self.outputDim)
   self.otherDims = self.weight:nElement() / n
   self.viewIn = torch.LongStorage { n, self.otherDims }
   -- the weight's sizes with outputDim moved to the front
   self.weightSize = self.weight:size()
   self.viewOut = self.weight:size()
   for i = self.outputDim - 1, 1, -1 do self.viewOut[i], self.viewOut[i + 1] = self.viewOut[i + 1], self.viewOut[i] end
   self.v = torch.Tensor(n, self.otherDims)
   self.g = torch.Tensor(n)
   self._norm = torch.Tensor(n)
   self._scale = torch.Tensor(n)
   self.gradG = torch.Tensor(n):zero()
   self.gradV = torch.Tensor(n, self.otherDims):zero()
   self:resetInit()
end

-- the weight's layout <-> outputDim first
function WN:permuteIn(t)
   for i = self.outputDim - 1, 1, -1 do t = t:transpose(i, i + 1) end
   return t
end

function WN:permuteOut(t)
   for i = 1, self.outputDim - 1 do t = t:transpose(i, i + 1) end
   return t
end

-- Torch7's initialisation: v normal with std sqrt(2/fan-in), g = ||v||, bias zero
function WN:resetInit()
   self.v:normal(0, math.sqrt(2 / self.viewIn[2]))
   self.g:copy(torch.norm(self.v, 2, 2))
   if self.bias then self.bias:zero() end
   return self
end

-- Torch7 leaves weight and gradWeight out of its files: rebuild them from v and g
function WN:_restore()
   if self.weight then return end
   local m = self.modules[1]
   m.weight = self.v.new(self.weightSize)
   m.gradWeight = self.v.new(self.weightSize):zero()
   self.weight, self.gradWeight = m.weight, m.gradWeight
   self:updateWeight()
   self.gradWeight:copy(self:permuteOut(self.gradV:view(self.viewOut)))
end

function WN:__afterLoad() self:_restore() end

-- w = g * v / ||v|| into the module's weight
function WN:updateWeight()
   self:_restore()
   local n, k = self.viewIn[1], self.viewIn[2]
   self._norm:resize(n):copy(torch.pow(self.v, 2):sum(2):view(n)):add(1e-4):sqrt()
   self._scale:resize(n):copy(self.g):cdiv(self._norm)
   local w = torch.cmul(self.v, self._scale:view(n, 1):expand(n, k))
   self.weight:copy(self:permuteOut(w:view(self.viewOut)))
end

function WN:evaluate()
   if self.train ~= false then self:updateWeight() end
   parent.evaluate(self)
end

function WN:updateOutput(input)
   if self.train ~= false then self:updateWeight() end
   self.output = self.modules[1]:updateOutput(input)
   return self.output
end

function WN:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   return self.gradInput
end

-- With dW = dL/dw of this call: dL/dg = sum(dW * v) / ||v|| and
-- dL/dv = g/||v|| * dW - g * dL/dg / ||v||^2 * v, added to gradG and gradV. The module's gradWeight
-- is its scratch space (it ends holding gradV in the weight's layout, as in Torch7).
function WN:accGradParameters(input, gradOutput, scale)
   self:_restore()
   local n, k = self.viewIn[1], self.viewIn[2]
   self.gradWeight:zero()
   self.modules[1]:accGradParameters(input, gradOutput, scale or 1)   -- the bias accumulates as usual
   local dw = self:permuteIn(self.gradWeight):contiguous():view(n, k)
   local norm = self._norm:view(n, 1):expand(n, k)
   local gscale = self._scale:view(n, 1):expand(n, k)
   local dg = torch.cmul(dw, self.v):cdiv(norm):sum(2):view(n)
   self.gradG:view(n):add(dg)   -- g and gradG from a Torch7 file may be n x 1
   self.gradV:add(torch.cmul(dw, gscale))
   self.gradV:add(-1, torch.cmul(self.v, gscale):cdiv(norm):cmul(dg:view(n, 1):expand(n, k)))
   self.gradWeight:copy(self:permuteOut(self.gradV:view(self.viewOut)))
end

function WN:zeroGradParameters()
   self.modules[1]:zeroGradParameters()
   self.gradV:zero()
   self.gradG:zero()
end

function WN:updateParameters(lr)
   self.modules[1]:updateParameters(lr)
   self.g:view(self.g:nElement()):add(-lr, self.gradG:view(self.gradG:nElement()))
   self.v:add(-lr, self.gradV)
end

-- the gradient step straight into v, g and the bias (the module's own default would step its
-- weight, which the next forward pass overwrites); the accumulated gradients are kept
function WN:accUpdateGradParameters(input, gradOutput, lr)
   local _, grads = self:parameters()
   local saved = {}
   for i, gt in ipairs(grads) do saved[i] = gt:clone(); gt:zero() end
   self:accGradParameters(input, gradOutput, 1)
   local params = self:parameters()
   for i, p in ipairs(params) do
      p:view(p:nElement()):add(-lr, grads[i]:view(grads[i]:nElement()))
      grads[i]:copy(saved[i])
   end
end

function WN:parameters()
   if self.bias then return { self.v, self.g, self.bias }, { self.gradV, self.gradG, self.gradBias } end
   return { self.v, self.g }, { self.gradV, self.gradG }
end

function WN:__tostring__()
   return torch.type(self) .. ' @ ' .. tostring(self.modules[1])
end

return WN
