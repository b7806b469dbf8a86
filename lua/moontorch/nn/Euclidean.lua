-- nn.Euclidean(inputSize, outputSize): y_j = || w_j - x || for outputSize centres w_j, the
-- columns of weight (inputSize x outputSize, Torch7's layout). x is a vector or a batch of
-- rows. Torch7's initialisation: weight uniform in +-1/sqrt(inputSize).
-- The gradient (x - w_j) / y_j is taken as 0 where y_j = 0 (Torch7 divides by y_j + 1e-7).
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local Euclidean, parent = torch.class('nn.Euclidean', 'nn.Module')

function Euclidean.checkSizes(what, inputSize, outputSize)
   for _, v in ipairs { { inputSize, 'inputSize' }, { outputSize, 'outputSize' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] % 1 ~= 0 then
         error(('%s: %s must be a positive integer, got %s'):format(what, v[2], tostring(v[1])), 3)
      end
   end
end

function Euclidean:__init(inputSize, outputSize)
   parent.__init(self)
   Euclidean.checkSizes('nn.Euclidean', inputSize, outputSize)
   self.weight = torch.Tensor(inputSize, outputSize)
   self.gradWeight = torch.Tensor(inputSize, outputSize):zero()
   self.fastBackward = true
   self:reset()
end

function Euclidean:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(1)) end
   self.weight:uniform(-stdv, stdv)
   return self
end

-- x - w_j for every sample and centre: a batch x inputSize x outputSize tensor in self._diff
function Euclidean.difference(self, input)
   E.sameType(self, input, self.weight)
   local n = self.weight:size(1)
   local d = input:dim()
   if (d ~= 1 and d ~= 2) or input:size(d) ~= n then
      error(('%s: expected input of size %d or Nx%d, got %s'):format(torch.type(self), n, n, E.shape(input)), 3)
   end
   local batch = d == 2 and input:size(1) or 1
   local m = self.weight:size(2)
   -- both expanded: with batch == m the two views hold as many elements, and pointwise ops pair
   -- such operands in element order (Torch7's rule) rather than broadcast them
   local x = input:contiguous():view(batch, n, 1):expand(batch, n, m)
   return torch.csub(utils.result(self, '_diff', input), x, self.weight:view(1, n, m):expand(batch, n, m))
end

-- y with its zeros replaced by 1 (divisor of the gradient; the numerator is 0 there)
function Euclidean.divisor(self)
   local out = self.output
   return utils.result(self, '_div', out):resizeAs(out):copy(out):maskedFill(torch.eq(out, 0), 1)
end

-- gradOutput_j / y_j as a batch x 1 x outputSize tensor, checked against the output's size
function Euclidean.gradScale(self, input, gradOutput)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 4)
   if not gradOutput:isSameSizeAs(self.output) then
      error(('%s: gradOutput has size %s but the output has size %s'):format(torch.type(self),
         E.shape(gradOutput), E.shape(self.output)), 4)
   end
   local m = self.weight:size(2)
   local batch = input:dim() == 2 and input:size(1) or 1
   return torch.cdiv(utils.result(self, '_scale', input), gradOutput, Euclidean.divisor(self)):view(batch, 1, m)
end

function Euclidean:updateOutput(input)
   local diff = Euclidean.difference(self, input)
   local out = utils.result(self, 'output', input)
   torch.norm(out, diff, 2, 2)
   if input:dim() == 1 then return out:resize(self.weight:size(2)) end
   return out:resize(input:size(1), self.weight:size(2))
end

function Euclidean:updateGradInput(input, gradOutput)
   if not self.fastBackward then self:updateOutput(input) end
   local g = torch.cmul(utils.result(self, '_repeat', input), self._diff, Euclidean.gradScale(self, input, gradOutput))
   local gi = utils.result(self, 'gradInput', input)
   torch.sum(gi, g, 3)
   return gi:resizeAs(input)
end

function Euclidean:accGradParameters(input, gradOutput, scale)
   if not self.fastBackward then self:updateOutput(input) end
   local g = torch.cmul(utils.result(self, '_repeat', input), self._diff, Euclidean.gradScale(self, input, gradOutput))
   self.gradWeight:add(-(scale or 1), g:sum(1):view(self.weight:size(1), self.weight:size(2)))
end

function Euclidean:clearState()
   self._diff, self._div, self._scale, self._repeat = nil, nil, nil, nil
   return parent.clearState(self)
end
