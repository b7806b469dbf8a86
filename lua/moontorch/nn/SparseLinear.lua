-- nn.SparseLinear(inputSize, outputSize [, doGradInput = false]): nn.Linear on sparse inputs
-- (Torch7's, simple.md). An input is a k x 2 tensor of (index, value) rows, one sample; a batch
-- is a table of them (output B x outputSize), or, the legacy form, a B x k x 2 tensor. With
-- doGradInput the gradInput is the dense gradient as (index, value) rows over every index: a table
-- of inputSize x 2 tensors (one per sample, also for a single sample), or B x inputSize x 2 for a
-- legacy input. weightDecay (default 0) adds weightDecay * weight to gradWeight on each
-- accGradParameters. Torch7's initialisation: weight uniform in +-1/sqrt(inputSize), bias that
-- times 1e-6.
-- zeroGradParameters and updateParameters touch only the weight columns the last input used
-- (indices with a nonzero value) when one input's gradients have been accumulated since the last
-- zeroGradParameters; after several (or none) they fall back to the whole tensors, as Torch7's do.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local SL, parent = torch.class('nn.SparseLinear', 'nn.Module')

local NAME = 'nn.SparseLinear'
-- sparseUpdate: what lastInput says about the gradients accumulated (Torch7's values)
local NO_LAST_INPUT, ONE_LAST_INPUT, ACC_MULTIPLE_TIMES = 0, 1, 2
-- entries gathered at once: bounds the nnz x outputSize buffers of a large input
local CHUNK = 2 ^ 20

function SL:__init(inputSize, outputSize, doGradInput)
   parent.__init(self)
   if type(inputSize) ~= 'number' or type(outputSize) ~= 'number' or inputSize < 1 or outputSize < 1 then
      error(('%s: expected positive inputSize and outputSize, got %s and %s'):format(NAME, tostring(inputSize),
         tostring(outputSize)), 2)
   end
   if doGradInput ~= nil and type(doGradInput) ~= 'boolean' then
      error(NAME .. ': doGradInput must be a boolean, got ' .. type(doGradInput), 2)
   end
   self.weightDecay = 0
   self.doGradInput = doGradInput or false
   self.weight = torch.Tensor(outputSize, inputSize):zero()
   self.bias = torch.Tensor(outputSize):zero()
   self.gradWeight = torch.Tensor(outputSize, inputSize):zero()
   self.gradBias = torch.Tensor(outputSize):zero()
   self.sparseUpdate = NO_LAST_INPUT
   self.gradInput = {}
   self.output:resize(outputSize)
   self:reset()
end

function SL:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(2)) end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv):mul(0.000001)
   return self
end

local function sizes(t) return table.concat(T.sizes(t), 'x') end

-- a LongTensor of indices on the weight's device (the index ops want them beside the data)
local function on_device(self, idx)
   local dev = self.weight:device()
   if idx:dtype() == T.LONG and idx:device() == dev then return idx end
   return T.empty_tensor(T.LONG, dev):resize(idx:nElement()):copy(idx)
end

-- the input as (row, index, value) triples: rows and cols LongTensors, vals in the weight's
-- type, and the batch size; plus whether it is a batch and whether it is the legacy form
local function coo(self, input, level)
   level = level + 1
   local parts, batch, legacy
   if torch.isTensor(input) and input:dim() == 3 and input:size(3) == 2 then
      legacy, batch = true, true
   elseif torch.isTensor(input) and input:dim() == 2 and input:size(2) == 2 then
      parts, batch = { input }, false
   elseif type(input) == 'table' and not torch.isTensor(input) then
      parts, batch = input, true
   else
      error(('%s: expected a k x 2 tensor of (index, value) rows, a table of them or a B x k x 2 tensor, got %s')
         :format(NAME, torch.isTensor(input) and 'a tensor of size ' .. sizes(input) or type(input)), level)
   end
   local rows, pairs_, nbatch
   if legacy then
      nbatch = input:size(1)
      local k = input:size(2)
      pairs_ = input:reshape(nbatch * k, 2)
      rows = torch.range(1, nbatch):long():view(nbatch, 1):expand(nbatch, k):reshape(nbatch * k)
   else
      nbatch = #parts
      local counts, total = {}, 0
      for i, p in ipairs(parts) do
         if not torch.isTensor(p) or (p:nElement() > 0 and (p:dim() ~= 2 or p:size(2) ~= 2)) then
            error(('%s: batch element %d must be a k x 2 tensor of (index, value) rows, got %s'):format(NAME, i,
               torch.isTensor(p) and 'size ' .. sizes(p) or type(p)), level)
         end
         counts[i] = p:nElement() > 0 and p:size(1) or 0
         total = total + counts[i]
      end
      pairs_ = self.weight.new(math.max(total, 1), 2)
      rows = torch.LongTensor(math.max(total, 1))
      local at = 1
      for i, p in ipairs(parts) do
         if counts[i] > 0 then
            pairs_:narrow(1, at, counts[i]):copy(p)
            rows:narrow(1, at, counts[i]):fill(i)
            at = at + counts[i]
         end
      end
      if total == 0 then pairs_, rows = pairs_:narrow(1, 1, 0), rows:narrow(1, 1, 0) end
   end
   local cols, vals = torch.LongTensor(), self.weight.new()
   if pairs_:size(1) > 0 then
      local idx = pairs_:select(2, 1):type('torch.DoubleTensor')
      local n = self.weight:size(2)
      if idx:min() < 1 or idx:max() > n or (idx - idx:clone():floor()):abs():max() > 0 then
         error(('%s: indices must be integers in 1..%d, got one in [%g, %g]'):format(NAME, n, idx:min(), idx:max()),
            level)
      end
      cols = idx:long()
      vals = pairs_:select(2, 2):typeAs(self.weight):contiguous()
   end
   return { rows = on_device(self, rows), cols = on_device(self, cols), vals = vals, n = nbatch }, batch, legacy
end

-- the triples as Torch7's formatted_input: nnz x 3 rows of (row, index, value)
local function formatted(self, c)
   local f = self.weight.new(c.cols:nElement(), 3)
   if c.cols:nElement() > 0 then
      f:select(2, 1):copy(c.rows)
      f:select(2, 2):copy(c.cols)
      f:select(2, 3):copy(c.vals)
   end
   return f
end

-- calls fn(rows, cols, vals) on successive slices of at most CHUNK / outputSize entries
local function chunks(self, c, fn)
   local nnz = c.cols:nElement()
   local step = math.max(1, math.floor(CHUNK / self.weight:size(1)))
   for a = 1, nnz, step do
      local k = math.min(step, nnz - a + 1)
      fn(c.rows:narrow(1, a, k), c.cols:narrow(1, a, k), c.vals:narrow(1, a, k))
   end
end

function SL:updateOutput(input)
   if self.sparseUpdate == ONE_LAST_INPUT then self.sparseUpdate = ACC_MULTIPLE_TIMES end
   local c, batch, legacy = coo(self, input, 2)
   self.legacyMode = legacy
   local nout = self.weight:size(1)
   local out = self.output:resize(c.n, nout)
   out:copy(self.bias:view(1, nout):expand(c.n, nout))
   -- out[row] += value * weight[:, index], from the weight's columns gathered as rows
   chunks(self, c, function(rows, cols, vals)
      local w = self.weight:t():index(1, cols)
      w:cmul(vals:view(-1, 1):expandAs(w))
      out:indexAdd(1, rows, w)
   end)
   if not batch then self.output:resize(nout) end
   return self.output
end

-- gradOutput as B x outputSize
local function grad2d(self, gradOutput, n, level)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', level + 1)
   local nout = self.weight:size(1)
   if gradOutput:nElement() ~= n * nout or gradOutput:size(gradOutput:dim()) ~= nout then
      error(('%s: gradOutput has size %s, expected %s'):format(NAME, sizes(gradOutput),
         n == 1 and tostring(nout) .. ' or 1x' .. nout or n .. 'x' .. nout), level + 1)
   end
   return gradOutput:contiguous():view(n, nout)
end

function SL:updateGradInput(input, gradOutput)
   local c, _, legacy = coo(self, input, 2)
   local go = grad2d(self, gradOutput, c.n, 2)
   local nin = self.weight:size(2)
   if legacy then
      if not torch.isTensor(self.gradInput) then self.gradInput = self.weight.new() end
   else
      self.gradInput = {}
   end
   if not self.doGradInput then
      if legacy then self.gradInput:resizeAs(input):zero() end
      return self.gradInput
   end
   -- the dense gradient gradOutput * weight, as (index, value) rows over all indices
   local gi = torch.mm(go, self.weight)
   local idx = torch.range(1, nin):typeAs(self.weight)
   if legacy then
      self.gradInput:resize(c.n, nin, 2)
      self.gradInput:select(3, 1):copy(idx:view(1, nin):expand(c.n, nin))
      self.gradInput:select(3, 2):copy(gi)
   else
      for i = 1, c.n do
         local g = self.weight.new(nin, 2)
         g:select(2, 1):copy(idx)
         g:select(2, 2):copy(gi[i])
         self.gradInput[i] = g
      end
   end
   return self.gradInput
end

function SL:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local c, _, legacy = coo(self, input, 2)
   self.legacyMode = legacy
   local go = grad2d(self, gradOutput, c.n, 2)
   if self.sparseUpdate == NO_LAST_INPUT then
      self.lastInput = formatted(self, c)
      self.sparseUpdate = ONE_LAST_INPUT
   elseif self.sparseUpdate == ONE_LAST_INPUT then
      self.sparseUpdate = ACC_MULTIPLE_TIMES
   end
   -- gradWeight[:, index] += scale * value * gradOutput[row]
   local gwt = self.gradWeight:t()
   chunks(self, c, function(rows, cols, vals)
      local g = go:index(1, rows)
      g:cmul(vals:view(-1, 1):expandAs(g))
      gwt:indexAdd(1, cols, g, scale)
   end)
   self.gradBias:add(scale, go:sum(1):view(-1))
   if (self.weightDecay or 0) ~= 0 then self.gradWeight:add(self.weightDecay, self.weight) end
end

-- the distinct indices of lastInput whose value is nonzero (nil when there are none)
local function used_columns(self)
   local li = self.lastInput
   local cols, vals
   if li:dim() == 3 then -- a legacy B x k x 2 input kept by a Torch7 file
      cols, vals = li:select(3, 1), li:select(3, 2)
   elseif li:dim() == 2 and li:size(2) == 3 then
      cols, vals = li:select(2, 2), li:select(2, 3)
   else
      return nil
   end
   local picked = cols:maskedSelect(vals:ne(0))
   if picked:nElement() == 0 then return nil end
   local mask = torch.ByteTensor(self.weight:size(2)):zero()
   mask:indexFill(1, picked:type('torch.LongTensor'), 1)
   return on_device(self, torch.nonzero(mask):view(-1))
end

local function sparse_ready(self)
   return self.lastInput ~= nil and self.sparseUpdate == ONE_LAST_INPUT
end

function SL:updateParameters(lr)
   if not sparse_ready(self) then return parent.updateParameters(self, lr) end
   self.bias:add(-lr, self.gradBias)
   local used = used_columns(self)
   if used then self.weight:indexAdd(2, used, self.gradWeight:index(2, used), -lr) end
end

function SL:zeroGradParameters()
   if sparse_ready(self) then
      self.gradBias:zero()
      local used = used_columns(self)
      if used then self.gradWeight:indexFill(2, used, 0) end
   else
      parent.zeroGradParameters(self)
   end
   self.sparseUpdate = NO_LAST_INPUT
end

function SL:clearState()
   self.lastInput = nil
   self.formatted_input = nil
   self.sparseUpdate = NO_LAST_INPUT
   self.gradInput = {}
   return parent.clearState(self)
end

function SL:__tostring__()
   return torch.type(self) .. ('(%d -> %d)'):format(self.weight:size(2), self.weight:size(1))
end

return SL
