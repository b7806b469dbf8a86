-- optim.ConfusionMatrix(nclasses [, classes]) or (classes): counts of (target, prediction) pairs,
-- as Torch7's: mat[t][p] (LongTensor) counts the samples of class t predicted as p.
--   conf = optim.ConfusionMatrix({'cat', 'dog'}); conf:add(output, label); print(conf)
-- add(prediction, target): each a class index, or a 1-D score vector (its argmax is the class).
-- batchAdd(predictions, targets): a vector of indices, an Nx1 column, or an NxC score matrix each.
-- Targets < 1 are missing values and ignored. updateValids() fills valids (per-class recall),
-- unionvalids (per-class intersection over union), totalValid (global accuracy), averageValid and
-- averageUnionValid (means over the classes that have samples); tostring(conf) calls it.
local torch = require 'moontorch'

local ConfusionMatrix = torch.class('optim.ConfusionMatrix')

function ConfusionMatrix:__init(nclasses, classes)
   if type(nclasses) == 'table' then
      classes = nclasses
      nclasses = #classes
   end
   if type(nclasses) ~= 'number' or nclasses < 1 or nclasses % 1 ~= 0 then
      error('optim.ConfusionMatrix: expected a number of classes >= 1 or a list of class names, got '
         .. tostring(nclasses), 2)
   end
   self.mat = torch.LongTensor(nclasses, nclasses):zero()
   self.valids = torch.FloatTensor(nclasses):zero()
   self.unionvalids = torch.FloatTensor(nclasses):zero()
   self.nclasses = nclasses
   self.totalValid = 0
   self.averageValid = 0
   self.classes = classes or {}
end

-- the class index of a prediction/target given as a number or a 1-D score vector
local function class_of(v, what)
   if type(v) == 'number' then return v end
   if not torch.isTensor(v) or v:dim() ~= 1 then
      error(('optim.ConfusionMatrix.add: %s must be a class index or a 1-D tensor of scores'):format(what), 3)
   end
   local _, i = v:double():max(1)
   return i[1]
end

function ConfusionMatrix:_add(p, t)
   if t > 0 then -- non-positive targets are missing values
      local n = self.nclasses
      if t > n or t % 1 ~= 0 or p < 1 or p > n or p % 1 ~= 0 then
         error(('optim.ConfusionMatrix: prediction %s / target %s is not a class index in 1..%d'):format(
            tostring(p), tostring(t), n), 3)
      end
      self.mat[t][p] = self.mat[t][p] + 1
   end
end

function ConfusionMatrix:add(prediction, target)
   self:_add(class_of(prediction, 'prediction'), class_of(target, 'target'))
end

-- a list of class indices from a vector, a column or a score matrix
local function classes_of(v, what)
   if not torch.isTensor(v) then error(('optim.ConfusionMatrix.batchAdd: %s must be a tensor'):format(what), 3) end
   local d = v:double()
   if d:dim() == 2 then
      if d:size(2) == 1 then d = d:select(2, 1)
      else
         local _, i = d:max(2)
         d = i:select(2, 1)
      end
   elseif d:dim() ~= 1 then
      error(('optim.ConfusionMatrix.batchAdd: %s has %d dimensions, expected 1 or 2'):format(what, d:dim()), 3)
   end
   return d:totable()
end

function ConfusionMatrix:batchAdd(predictions, targets)
   local p, t = classes_of(predictions, 'predictions'), classes_of(targets, 'targets')
   if #p ~= #t then
      error(('optim.ConfusionMatrix.batchAdd: %d predictions but %d targets'):format(#p, #t), 2)
   end
   -- count on the host, then add the counts in one tensor op
   local n, counts = self.nclasses, {}
   for i = 1, #t do
      if t[i] >= 1 then
         if t[i] > n or t[i] % 1 ~= 0 or p[i] < 1 or p[i] > n or p[i] % 1 ~= 0 then
            error(('optim.ConfusionMatrix.batchAdd: sample %d: prediction %s / target %s '
               .. 'is not a class index in 1..%d'):format(i, tostring(p[i]), tostring(t[i]), n), 2)
         end
         local k = (t[i] - 1) * n + p[i]
         counts[k] = (counts[k] or 0) + 1
      end
   end
   local add = torch.LongTensor(n * n):zero()
   for k, c in pairs(counts) do add[k] = c end
   self.mat:add(add:view(n, n))
end

function ConfusionMatrix:zero()
   self.mat:zero()
   self.valids:zero()
   self.unionvalids:zero()
   self.totalValid = 0
   self.averageValid = 0
end

function ConfusionMatrix:updateValids()
   local n, m = self.nclasses, self.mat:double()
   local rows, cols = m:sum(2):totable(), m:sum(1):totable()[1]
   local total = 0
   for t = 1, n do
      local d = m[t][t]
      self.valids[t] = d / rows[t][1]
      self.unionvalids[t] = d / (rows[t][1] + cols[t] - d)
      total = total + d
   end
   self.totalValid = total / m:sum()
   -- averages over the classes whose value is defined (NaN: no samples)
   local av, au, nv, nu = 0, 0, 0, 0
   for t = 1, n do
      local v, u = self.valids[t], self.unionvalids[t]
      if v == v then
         av, nv = av + v, nv + 1
         if u == u then au, nu = au + u, nu + 1 end
      end
   end
   self.averageValid = av / nv
   self.averageUnionValid = au / nu
end

function ConfusionMatrix:__tostring__()
   self:updateValids()
   local n = self.nclasses
   local str = { 'ConfusionMatrix:\n', '[' }
   local maxCnt = self.mat:max()
   local nDigits = math.max(8, 1 + math.ceil(math.log10(maxCnt)))
   local named = self.classes and self.classes[1]
   for t = 1, n do
      local pclass = ('%2.3f'):format(self.valids[t] * 100)
      str[#str + 1] = t == 1 and '[' or ' ['
      for p = 1, n do str[#str + 1] = ('%' .. nDigits .. 'd'):format(self.mat[t][p]) end
      local close = t == n and ']]  ' or ']   '
      if named then
         str[#str + 1] = close .. pclass .. '% \t[class: ' .. (self.classes[t] or '') .. ']\n'
      else
         str[#str + 1] = close .. pclass .. '% \n'
      end
   end
   str[#str + 1] = ' + average row correct: ' .. (self.averageValid * 100) .. '% \n'
   str[#str + 1] = ' + average rowUcol correct (VOC measure): ' .. (self.averageUnionValid * 100) .. '% \n'
   str[#str + 1] = ' + global correct: ' .. (self.totalValid * 100) .. '%'
   return table.concat(str)
end

return ConfusionMatrix
