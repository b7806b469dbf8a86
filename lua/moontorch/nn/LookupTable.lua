-- nn.LookupTable(nIndex, size[, paddingValue = 0][, maxNorm][, normType = 2]): row input[i]
-- of weight (nIndex x size) for each index of a vector, or of each row of a batch matrix
-- (output n x size, or b x n x size). Rows at index paddingValue get no gradient. With
-- maxNorm, the rows a forward reads are first scaled down in place to normType-norm at most
-- maxNorm (Torch7: by maxNorm / (norm + 1e-7)). scaleGradByFreq() divides each index's
-- gradient by how often it occurs in the input. Indices may be any tensor type; they are
-- used as a LongTensor on the weight's device. Torch7's initialisation: weight ~ N(0, 1).
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local LookupTable, parent = torch.class('nn.LookupTable', 'nn.Module')

LookupTable.__version = 4

local function shape(t) return table.concat(T.sizes(t), 'x') end

function LookupTable:__init(nIndex, nOutput, paddingValue, maxNorm, normType)
   parent.__init(self)
   for _, v in ipairs { { nIndex, 'nIndex' }, { nOutput, 'size' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] % 1 ~= 0 then
         error(('nn.LookupTable: %s must be a positive integer, got %s'):format(v[2], tostring(v[1])), 2)
      end
   end
   self.weight = torch.Tensor(nIndex, nOutput)
   self.gradWeight = torch.Tensor(nIndex, nOutput):zero()
   self.paddingValue = paddingValue or 0
   self.maxNorm = maxNorm
   self.normType = normType
   self.shouldScaleGradByFreq = false
   self:reset()
end

function LookupTable:reset(stdv)
   self.weight:normal(0, stdv or 1)
   return self
end

function LookupTable:accUpdateOnly()
   self.gradWeight = nil
   return self
end

function LookupTable:setPadding(paddingValue)
   self.paddingValue = paddingValue
   return self
end

function LookupTable:setMaxNorm(maxNorm)
   self.maxNorm = maxNorm
   return self
end

function LookupTable:setNormType(normType)
   self.normType = normType
   return self
end

function LookupTable:scaleGradByFreq()
   self.shouldScaleGradByFreq = true
   return self
end

-- the indices as a flat LongTensor on the weight's device, checked to lie in 1..nIndex
local function indices(self, input)
   T.expect_tensor(input, 'nn.LookupTable', 'input of indices', 4)
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error(('nn.LookupTable: expected a vector or a matrix of indices, got a tensor of size %s')
         :format(shape(input)), 4)
   end
   local idx = input
   if idx:dtype() ~= T.LONG or idx:device() ~= self.weight:device() then
      idx = utils.result(self, '_input', T.empty_tensor(T.LONG, self.weight:device()))
      idx:resize(T.sizes(input)):copy(input)
   end
   idx = idx:contiguous():view(idx:nElement())
   if idx:nElement() > 0 then
      local lo, hi = idx:min(), idx:max()
      if lo < 1 or hi > self.weight:size(1) then
         error(('nn.LookupTable: indices must lie in 1..%d, got %d'):format(self.weight:size(1),
            lo < 1 and lo or hi), 4)
      end
      if T.dtypes[input:dtype() + 1].is_float and not torch.eq(torch.floor(input:double()), input:double()):all() then
         error('nn.LookupTable: indices must be whole numbers', 4)
      end
   end
   return idx
end

-- Scale the rows idx reads down to norm maxNorm where they exceed it (repeats are harmless:
-- each copy of a row is scaled the same and written back identically).
function LookupTable:renorm(input)
   if not self.maxNorm then return end
   local idx = indices(self, input)
   if idx:nElement() == 0 then return end
   local rows = self.weight:index(1, idx)
   rows:renorm(self.normType or 2, 1, self.maxNorm)
   self.weight:indexCopy(1, idx, rows)
end

function LookupTable:updateOutput(input)
   local idx = indices(self, input)
   self:renorm(input)
   local out = utils.result(self, 'output', self.weight)
   torch.index(out, self.weight, 1, idx)
   if input:dim() == 2 then
      self.output = out:view(input:size(1), input:size(2), self.weight:size(2))
   end
   return self.output
end

-- indices have no gradient: zeros of the input's size and type, as Torch7
function LookupTable:updateGradInput(input, gradOutput)
   if not torch.isTensor(self.gradInput) or self.gradInput:type() ~= input:type() then
      self.gradInput = T.empty_tensor(input:dtype(), input:device())
   end
   if not self.gradInput:isSameSizeAs(input) then self.gradInput:resizeAs(input):zero() end
   return self.gradInput
end

function LookupTable:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local idx = indices(self, input)
   local n, d = idx:nElement(), self.weight:size(2)
   T.expect_tensor(gradOutput, 'nn.LookupTable', 'gradOutput', 3)
   if gradOutput:nElement() ~= n * d or gradOutput:size(gradOutput:dim()) ~= d then
      error(('nn.LookupTable: gradOutput has size %s, expected %s'):format(shape(gradOutput),
         input:dim() == 2 and ('%dx%dx%d'):format(input:size(1), input:size(2), d) or ('%dx%d'):format(n, d)), 3)
   end
   if n == 0 then return end
   local go = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   if (self.paddingValue or 0) < 1 and not self.shouldScaleGradByFreq then
      -- no index can be the padding one (they start at 1) and rows are not reweighted: one pass
      self.gradWeight:indexAdd(1, idx, go:view(n, d), scale)
      return
   end
   -- per-index weights of each gradient row: 0 at the padding index, 1/frequency if asked
   local w = torch.ne(idx, self.paddingValue or 0):typeAs(gradOutput)
   if self.shouldScaleGradByFreq then
      local count = T.new_tensor(gradOutput:dtype(), gradOutput:device(), { self.weight:size(1) }):zero()
      count:indexAdd(1, idx, T.new_tensor(gradOutput:dtype(), gradOutput:device(), { n }):fill(1))
      w:cdiv(count:index(1, idx))
   end
   local g = torch.cmul(utils.result(self, '_gradRows', gradOutput), go:view(n, d),
      w:view(n, 1))
   self.gradWeight:indexAdd(1, idx, g:mul(scale))
end

function LookupTable:sharedAccUpdateGradParameters(input, gradOutput, lr)
   -- shared weights need no separate gradient: update the weight directly. The class's method,
   -- not self's: share() makes self.accUpdateGradParameters this very function.
   LookupTable.accUpdateGradParameters(self, input, gradOutput, lr)
end

function LookupTable:clearState()
   self._input, self._gradRows = nil, nil
   return parent.clearState(self)
end
