-- nn.SpatialClassNLLCriterion([weights], [sizeAverage=true]) as in Torch7: nn.ClassNLLCriterion
-- at every pixel. Input: N x C x H x W log-probabilities; target: N x H x W classes 1..C. The loss
-- is minus the (class-weighted) sum of the target pixels' log-probabilities, divided by the total
-- weight of those pixels under sizeAverage. Composed: the input seen as (N*H*W) x C rows for
-- nn.ClassNLLCriterion's C loss, and its gradient moved back.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local SNLL, parent = torch.class('nn.SpatialClassNLLCriterion', 'nn.Criterion')

local NAME = 'nn.SpatialClassNLLCriterion'

function SNLL:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights ~= nil then
      if not torch.isTensor(weights) or weights:dim() ~= 1 then error(NAME .. ': weights must be a 1-d tensor', 2) end
      self.weights = weights
   end
   self.output_tensor = torch.zeros(1)
   self.total_weight_tensor = torch.ones(1)
end

function SNLL:__len() return self.weights and self.weights:nElement() or 0 end

local function shape(t) return table.concat(T.sizes(t), 'x') end

-- the input as pixel rows (N*H*W) x C and the target as N*H*W classes, after Torch7's checks
local function rows(self, input, target)
   T.expect_tensor(input, NAME, 'input', 4)
   if input:dim() ~= 4 then
      error(('%s: only batches of spatial inputs (4-d, N x C x H x W) are supported, got size %s'):format(NAME,
         shape(input)), 4)
   end
   T.expect_tensor(target, NAME, 'target', 4)
   if target:dim() ~= 3 then
      error(('%s: only batches of spatial targets (3-d, N x H x W) are supported, got size %s'):format(NAME,
         shape(target)), 4)
   end
   local N, Cn, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
   if target:size(1) ~= N or target:size(2) ~= H or target:size(3) ~= W then
      error(('%s: size mismatch (input %s, target %s)'):format(NAME, shape(input), shape(target)), 4)
   end
   if self.weights and self.weights:nElement() ~= Cn then
      error(('%s: %d class weights for %d classes (give one per class or none)'):format(NAME,
         self.weights:nElement(), Cn), 4)
   end
   if target:type() ~= 'torch.LongTensor' and target:device() == input:device() then target = target:long() end
   self.target = target
   local x = input:permute(1, 3, 4, 2):contiguous():view(N * H * W, Cn)
   return x, target:contiguous():view(N * H * W)
end

-- the ClassNLLCriterion doing the work, with this criterion's settings (made per call: a field
-- would be one more object for :type() and files to carry)
local function nll(self) return nn.ClassNLLCriterion(self.weights, self.sizeAverage) end

function SNLL:updateOutput(input, target)
   local x, t = rows(self, input, target)
   local c = nll(self)
   self.output = c:updateOutput(x, t)
   self.weights = c.weights -- converted to the input's type
   self.output_tensor:fill(self.output)
   self.total_weight_tensor:fill(c.total_weight)
   return self.output, c.total_weight
end

function SNLL:updateGradInput(input, target)
   local x, t = rows(self, input, target)
   local g = nll(self):updateGradInput(x, t)
   local N, Cn, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
   self.gradInput = g:view(N, H, W, Cn):permute(1, 4, 2, 3):contiguous()
   return self.gradInput
end

