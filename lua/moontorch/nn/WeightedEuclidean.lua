-- nn.WeightedEuclidean(inputSize, outputSize): y_j = || c_j .* (w_j - x) || for outputSize
-- centres w_j (columns of weight) each with its own diagonal covariance c_j (columns of
-- diagCov); both inputSize x outputSize, Torch7's layout. x is a vector or a batch of rows.
-- Torch7's initialisation: weight uniform in +-1/sqrt(inputSize), diagCov all 1.
-- Gradients are taken as 0 where y_j = 0 (Torch7 divides by y_j + 1e-7).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'
require 'moontorch.nn.Euclidean'

local WeightedEuclidean, parent = torch.class('nn.WeightedEuclidean', 'nn.Module')
local Eu = nn.Euclidean

function WeightedEuclidean:__init(inputSize, outputSize)
   parent.__init(self)
   Eu.checkSizes('nn.WeightedEuclidean', inputSize, outputSize)
   self.weight = torch.Tensor(inputSize, outputSize)
   self.gradWeight = torch.Tensor(inputSize, outputSize):zero()
   self.diagCov = torch.Tensor(inputSize, outputSize)
   self.gradDiagCov = torch.Tensor(inputSize, outputSize):zero()
   self.fastBackward = true
   self:reset()
end

function WeightedEuclidean:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(1)) end
   self.weight:uniform(-stdv, stdv)
   self.diagCov:fill(1)
   return self
end

function WeightedEuclidean:parameters()
   return { self.weight, self.diagCov }, { self.gradWeight, self.gradDiagCov }
end

-- u = c .* (x - w) (batch x inputSize x outputSize) in self._u; x - w stays in self._diff
local function weighted(self, input)
   local diff = Eu.difference(self, input)
   local c = self.diagCov:view(1, self.diagCov:size(1), self.diagCov:size(2))
   return torch.cmul(utils.result(self, '_u', input), diff, c)
end

function WeightedEuclidean:updateOutput(input)
   local u = weighted(self, input)
   local out = utils.result(self, 'output', input)
   torch.norm(out, u, 2, 2)
   if input:dim() == 1 then return out:resize(self.weight:size(2)) end
   return out:resize(input:size(1), self.weight:size(2))
end

-- dy_j/dx = c_j .* u_j / y_j; dy_j/dw_j is its negative; dy_j/dc_j = u_j .* (x - w_j) / y_j
function WeightedEuclidean:updateGradInput(input, gradOutput)
   if not self.fastBackward then self:updateOutput(input) end
   local g = torch.cmul(utils.result(self, '_repeat', input), self._u, Eu.gradScale(self, input, gradOutput))
   g:cmul(self.diagCov:view(1, self.diagCov:size(1), self.diagCov:size(2)))
   local gi = utils.result(self, 'gradInput', input)
   torch.sum(gi, g, 3)
   return gi:resizeAs(input)
end

function WeightedEuclidean:accGradParameters(input, gradOutput, scale)
   if not self.fastBackward then self:updateOutput(input) end
   scale = scale or 1
   local n, m = self.weight:size(1), self.weight:size(2)
   local s = Eu.gradScale(self, input, gradOutput)
   -- weight first: accUpdateGradParameters makes gradDiagCov the diagCov used here
   local g = torch.cmul(utils.result(self, '_repeat', input), self._u, s):cmul(self.diagCov:view(1, n, m))
   self.gradWeight:add(-scale, g:sum(1):view(n, m))
   torch.cmul(g, self._u, s):cmul(self._diff)
   self.gradDiagCov:add(scale, g:sum(1):view(n, m))
end

function WeightedEuclidean:accUpdateGradParameters(input, gradOutput, lr)
   local gw, gc = self.gradWeight, self.gradDiagCov
   self.gradWeight, self.gradDiagCov = self.weight, self.diagCov
   self:accGradParameters(input, gradOutput, -lr)
   self.gradWeight, self.gradDiagCov = gw, gc
end

function WeightedEuclidean:clearState()
   self._diff, self._u, self._div, self._scale, self._repeat = nil, nil, nil, nil, nil
   return parent.clearState(self)
end
