-- nn.DistanceRatioCriterion([sizeAverage = true]): for a triplet embedding (Hoffer & Ailon,
-- arXiv:1610.00243), input {X, Y} of distances to a similar and a dissimilar sample:
-- loss = sum -log(exp(-X) / (exp(-X) + exp(-Y))) = sum log(1 + exp(X - Y)), divided by X:size(1)
-- with sizeAverage. Computed as a stable softplus of X - Y (Torch7 exponentiates X and Y
-- themselves, which overflows for large distances); dX = sigmoid(X - Y), dY = -dX.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local DistanceRatioCriterion, parent = torch.class('nn.DistanceRatioCriterion', 'nn.Criterion')

function DistanceRatioCriterion:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function args(input)
   if type(input) ~= 'table' or #input ~= 2 or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.DistanceRatioCriterion: expected a table {X, Y} of two distance tensors, got ' .. torch.type(input), 3)
   end
   local X, Y = input[1], input[2]
   if X:dim() == 0 or not X:isSameSizeAs(Y) then
      error(('nn.DistanceRatioCriterion: distances of sizes %s and %s do not match'):format(
         table.concat(T.sizes(X), 'x'), table.concat(T.sizes(Y), 'x')), 3)
   end
   return X, Y
end

local function buf(self, name, like)
   if not self[name] or self[name]:type() ~= like:type() then self[name] = like.new() end
   return self[name]:resizeAs(like)
end

function DistanceRatioCriterion:updateOutput(input)
   local X, Y = args(input)
   local d = buf(self, '_diff', X):copy(X):add(-1, Y)
   -- log(1 + e^d) = max(d, 0) + log(1 + e^-|d|)
   local loss = buf(self, 'loss', X):copy(d):abs():mul(-1):exp():log1p()
   loss:add(buf(self, '_relu', X):copy(d):clamp(0, math.huge))
   self.output = loss:sum()
   if self.sizeAverage then self.output = self.output / X:size(1) end
   return self.output
end

function DistanceRatioCriterion:updateGradInput(input)
   local X, Y = args(input)
   local dX = buf(self, 'dX', X):copy(X):add(-1, Y):sigmoid()
   local dY = buf(self, 'dY', Y):copy(dX):mul(-1)
   if self.sizeAverage then
      dX:div(X:size(1))
      dY:div(X:size(1))
   end
   self.gradInput = { dX, dY }
   return self.gradInput
end

function DistanceRatioCriterion:type(typename, tensorCache)
   if typename then self._diff, self._relu, self.loss, self.dX, self.dY = nil, nil, nil, nil, nil end
   return parent.type(self, typename, tensorCache)
end
