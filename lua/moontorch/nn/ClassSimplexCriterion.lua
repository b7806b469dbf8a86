-- nn.ClassSimplexCriterion(nClasses): MSE between the input (a vector or N x nClasses batch) and
-- the embedding of the target class (a number, or a 1-d tensor of N class indices): the vertices
-- of a regular simplex centred at the origin with unit norms (nClasses - 1 dimensions), padded
-- with a zero coordinate to nClasses (Sablayrolles et al., arXiv:1506.08230). A 2-d target is
-- taken as already embedded. The vertices are self.simplex (nClasses x nClasses), as Torch7's.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local ClassSimplexCriterion, parent = torch.class('nn.ClassSimplexCriterion', 'nn.MSECriterion')

-- (n+1) x n coordinates of a regular simplex's vertices, row k's last non-zero entry at k, each
-- row of norm 1 and every pair at the same angle (Wikipedia, "Simplex", Cartesian coordinates)
local function regsplex(n)
   local a = {}
   for k = 1, n + 1 do
      a[k] = {}
      for j = 1, n do a[k][j] = 0 end
   end
   for k = 1, n do
      local s = 0
      for j = 1, k - 1 do s = s + a[k][j] ^ 2 end
      a[k][k] = math.sqrt(1 - s)
      local c = (a[k][k] ^ 2 - 1 - 1 / n) / a[k][k]
      for i = k + 1, n + 1 do a[i][k] = c end
   end
   return a
end

function ClassSimplexCriterion:__init(nClasses)
   if not T.is_int(nClasses) or nClasses < 2 then
      error('nn.ClassSimplexCriterion: expected an integer nClasses > 1, got ' .. tostring(nClasses), 2)
   end
   parent.__init(self)
   self.nClasses = nClasses
   -- one spare dimension beyond the nClasses - 1 the simplex needs: it matters for training
   local a = regsplex(nClasses - 1)
   for k = 1, nClasses do a[k][nClasses] = 0 end
   self.simplex = torch.Tensor(a)
   self._target = torch.Tensor(nClasses)
end

local function class_index(self, c)
   if not T.is_int(c) or c < 1 or c > self.nClasses then
      error(('nn.ClassSimplexCriterion: target class %s is not in 1..%d'):format(tostring(c), self.nClasses), 4)
   end
   return c
end

-- the embedded target, of the input's type and size
local function embed(self, input, target)
   T.expect_tensor(input, 'nn.ClassSimplexCriterion', 'input', 3)
   if self.simplex:type() ~= input:type() then self.simplex = self.simplex:type(input:type()) end
   if self._target:type() ~= input:type() then self._target = input.new() end
   if type(target) == 'number' then
      self._target:resize(self.nClasses):copy(self.simplex[class_index(self, target)])
   elseif torch.isTensor(target) and target:dim() == 1 then
      if target:nElement() > 0 then
         local lo, hi = target:min(), target:max()
         if lo < 1 or hi > self.nClasses or target:ne(target:clone():floor()):sum() > 0 then
            error(('nn.ClassSimplexCriterion: target classes must be integers in 1..%d, got %s to %s'):format(
               self.nClasses, tostring(lo), tostring(hi)), 3)
         end
      end
      self._target:resize(target:size(1), self.nClasses):copy(self.simplex:index(1, target:long()))
   elseif torch.isTensor(target) and target:dim() == 2 then
      self._target:resize(T.sizes(target)):copy(target)
   else
      error('nn.ClassSimplexCriterion: expected a class number or a 1-d tensor of classes as target, got '
         .. torch.type(target), 3)
   end
   if input:nElement() ~= self._target:nElement() then
      error(('nn.ClassSimplexCriterion: input of size %s does not match %d target embeddings of size %d'):format(
         table.concat(T.sizes(input), 'x'), self._target:nElement() / self.nClasses, self.nClasses), 3)
   end
   return self._target:view(T.sizes(input))
end

function ClassSimplexCriterion:updateOutput(input, target)
   return parent.updateOutput(self, input, embed(self, input, target))
end

function ClassSimplexCriterion:updateGradInput(input, target)
   return parent.updateGradInput(self, input, embed(self, input, target))
end

-- the inner products of the input rows with every class's vertex (N x nClasses)
function ClassSimplexCriterion:getPredictions(input)
   if input:dim() == 1 then input = input:view(1, -1) end
   return torch.mm(input, self.simplex:type(input:type()):t())
end

-- the most similar class of each row (a 1-d LongTensor)
function ClassSimplexCriterion:getTopPrediction(input)
   local prod = self:getPredictions(input)
   local _, idx = prod:max(prod:dim())
   return idx:view(-1)
end
