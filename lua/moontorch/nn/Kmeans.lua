-- nn.Kmeans(k, dim[, scale]): online hard k-means. weight holds the k centres (k x dim); forward on
-- a batch (n x dim) gives each row's nearest centre (its index, as the output's type) and sets
-- self.loss, the sum of the squared distances to them. It has its own criterion: gradInput is zero,
-- and accGradParameters adds -scale * mean(x - c) over each centre's rows to gradWeight, so a
-- gradient step weight:add(-lr, gradWeight) moves each centre lr*scale of the way to its rows' mean.
-- initRandom(x) and initKmeansPlus(x[, p = 0.95]) set the centres from rows of x.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Kmeans, parent = torch.class('nn.Kmeans', 'nn.Module')

function Kmeans:__init(k, dim, scale)
   parent.__init(self)
   if type(k) ~= 'number' or k < 1 then error('nn.Kmeans: k must be a positive number, got ' .. tostring(k), 3) end
   if type(dim) ~= 'number' or dim < 1 then
      error('nn.Kmeans: dim must be a positive number, got ' .. tostring(dim), 3)
   end
   self.k, self.dim, self.scale = k, dim, scale
   self.weight = torch.Tensor(k, dim)
   self.gradWeight = torch.Tensor(k, dim):zero()
   self.loss = 0
   self.clusterSampleCount = torch.Tensor(k):zero()
   self:reset()
end

function Kmeans:reset(stdev)
   stdev = stdev or 1
   self.weight:uniform(-stdev, stdev)
end

function Kmeans:_check(input, what)
   T.expect_tensor(input, 'nn.Kmeans', what, 3)
   if input:dim() ~= 2 or input:size(2) ~= self.dim then
      error(('nn.Kmeans: %s must be n x %d (dim), got %s'):format(what, self.dim,
         input:dim() == 0 and 'empty' or table.concat(T.sizes(input), 'x')), 3)
   end
end

-- squared distances from every row of x to every centre: n x k
function Kmeans:_distances(input)
   local n = input:size(1)
   local d = input:view(n, 1, self.dim):expand(n, self.k, self.dim)
      - self.weight:view(1, self.k, self.dim):expand(n, self.k, self.dim)
   return d:cmul(d):sum(3):view(n, self.k)
end

function Kmeans:initRandom(input)
   self:_check(input, 'input')
   local n = input:size(1)
   if n < self.k then error(('nn.Kmeans: initRandom needs at least k = %d rows, got %d'):format(self.k, n), 2) end
   for i = 1, self.k do self.weight[i]:copy(input[torch.random(1, n)]) end
end

-- k-means++ as Torch7 has it: each next centre is drawn from the (1 - p) fraction of rows farthest
-- from the centres chosen so far
function Kmeans:initKmeansPlus(input, p)
   self.p = p or self.p or 0.95
   if self.p < 0 or self.p > 1 then error('nn.Kmeans: p must be in [0, 1], got ' .. tostring(self.p), 2) end
   self:_check(input, 'input')
   local n = input:size(1)
   local top = math.max(1, math.ceil((1 - self.p) * n))
   self.weight[1]:copy(input[torch.random(1, n)])
   local nearest = input.new(n):fill(math.huge)
   for c = 2, self.k do
      local d = input - self.weight[c - 1]:view(1, self.dim):expand(n, self.dim)
      nearest:cmin(d:cmul(d):sum(2):view(n))
      local _, order = nearest:sort(1, true)
      self.weight[c]:copy(input[order[torch.random(1, top)]])
   end
end

function Kmeans:updateOutput(input)
   self:_check(input, 'input')
   local best, idx = torch.min(self:_distances(input), 2)
   self._minIndx = idx:view(input:size(1))
   self.output:resize(input:size(1)):copy(self._minIndx)
   self.loss = best:sum()
   return self.output
end

function Kmeans:updateGradInput(input)
   self.gradInput:resizeAs(input):zero()
   return self.gradInput
end

function Kmeans:accGradParameters(input, gradOutput, scale)
   scale = self.scale or scale or 1
   if scale <= 0 then error('nn.Kmeans: scale must be positive, got ' .. tostring(scale), 2) end
   if not self._minIndx then error('nn.Kmeans: accGradParameters needs a forward first', 2) end
   local n = input:size(1)
   self.clusterSampleCount:zero():indexAdd(1, self._minIndx, self.weight.new(n):fill(1))
   -- (x - c) for each row and its centre, summed per centre
   local diff = input - self.weight:index(1, self._minIndx)
   local sum = self.weight.new(self.k, self.dim):zero():indexAdd(1, self._minIndx, diff)
   local count = self.clusterSampleCount:clone():add(1e-7):view(self.k, 1):expand(self.k, self.dim)
   self.gradWeight:add(-scale, sum:cdiv(count))
end

function Kmeans:clearState()
   self._minIndx = nil
   return parent.clearState(self)
end
