-- nn.Convert([inputShape = 'b*'][, outputShape = inputShape]): converts between data layouts named
-- by letters, 'b' the batch: a transposition when both name the same axes ('bchw' -> 'chwb'), else
-- one of the conversions to 'bf' (batch x features), 'b' or 'bt'. A shape without 'b' gets it
-- first, and an input of fewer dimensions than inputShape is one sample (the batch axis is added
-- and taken away again). The input is copied into the module's own tensor type first when it has
-- another, so nn.Convert() alone converts types; gradInput is handed back in the input's type.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Convert, parent = torch.class('nn.Convert', 'nn.Container')

function Convert:__init(inputShape, outputShape)
   parent.__init(self)
   if outputShape and not inputShape then
      error('nn.Convert: an outputShape needs an inputShape (argument 1)', 3)
   end
   for i, s in ipairs { inputShape or 'b*', outputShape or 'b*' } do
      if type(s) ~= 'string' or s == '' then
         error(('nn.Convert: argument %d must be a shape string such as \'bchw\', got %s'):format(i, tostring(s)), 3)
      end
   end
   inputShape = inputShape or 'b*'
   outputShape = outputShape or inputShape
   self.inputShape = inputShape:find('b') and inputShape or 'b' .. inputShape
   self.outputShape = outputShape:find('b') and outputShape or 'b' .. outputShape
   self.inputBatchDim = self.inputShape:find('b')
   self.outputBatchDim = self.outputShape:find('b')
   if self.inputShape == 'b*' or self.outputShape == 'b*' then
      if self.inputShape ~= self.outputShape then error('nn.Convert: both shapes or neither must be b*', 3) end
      self.nInputDim, self.nOutputDim, self.transposition = -1, -1, true
   else
      self.nInputDim, self.nOutputDim = #self.inputShape, #self.outputShape
      self.transposition = self.nInputDim == self.nOutputDim
      for i = 1, self.nOutputDim do
         if not self.inputShape:find(self.outputShape:sub(i, i), 1, true) then self.transposition = false end
      end
   end
end

function Convert:findAxis(axis, shape, silent)
   shape = shape or self.inputShape
   local pos = shape:find(axis, 1, true)
   if not pos and not silent then error(("nn.Convert: shape '%s' has no axis '%s'"):format(shape, axis), 2) end
   return pos
end

-- the swaps that reorder inputShape's letters into newShape's, as one nn.Transpose
function Convert:transpose(newShape)
   if newShape == self.inputShape then return nn.Identity() end
   local cur, swaps = {}, {}
   for i = 1, #self.inputShape do cur[i] = self.inputShape:sub(i, i) end
   for i = 1, #newShape do
      local want = newShape:sub(i, i)
      if cur[i] ~= want then
         local j = i + 1
         while cur[j] ~= want do j = j + 1 end
         cur[i], cur[j] = cur[j], cur[i]
         swaps[#swaps + 1] = { i, j }
      end
   end
   return nn.Transpose(unpack(swaps))
end

-- the converters that change the number of axes, by output shape (Reshape in batch mode: a batch
-- of one stays a batch)
local build = {}

function build.bf(self, input)
   if self.inputShape == 'bt' then error('nn.Convert: cannot convert shape bt to bf', 3) end
   local n = #self.inputShape
   if n == 1 then return nn.Reshape(1, true) end
   local b = self.inputBatchDim
   local m = b ~= 1 and nn.Transpose({ 1, b }) or nil
   if n > 2 then
      local reshape = nn.Reshape(input:select(b, 1):nElement(), true)
      m = m and nn.Sequential():add(m):add(reshape) or reshape
   end
   return m or nn.Identity()
end

function build.b(self, input)
   local s = self.inputShape
   if s == 'bt' or s == 'tb' then return nn.Select(self:findAxis('t'), 1) end
   if s == 'bf' or s == 'fb' then
      local f = self:findAxis('f')
      if input:size(f) > 1 then error('nn.Convert: cannot convert shape ' .. s .. ' to b when feature > 1', 3) end
      return nn.Select(f, 1)
   end
   error('nn.Convert: cannot convert shape ' .. s .. ' to shape b', 3)
end

function build.bt(self)
   if self.inputShape ~= 'b' then error("nn.Convert: cannot convert shape '" .. self.inputShape .. "' to bt", 3) end
   return nn.Reshape(1, true)
end

function Convert:buildConverter(input)
   local c
   if self.transposition then
      c = self:transpose(self.outputShape)
   elseif build[self.outputShape] then
      c = build[self.outputShape](self, input)
   else
      error(('nn.Convert: no conversion of shape %s to %s'):format(self.inputShape, self.outputShape), 3)
   end
   self.converter = c:type(self.output:type())
   self.modules[1] = self.converter
end

-- sizes with a 1 inserted at (or the dimension removed from) position d
local function withAxis(t, d)
   local s = T.sizes(t)
   table.insert(s, d, 1)
   return torch.LongStorage(s)
end
local function withoutAxis(t, d)
   local s = T.sizes(t)
   table.remove(s, d)
   return torch.LongStorage(s)
end

function Convert:updateOutput(input)
   T.expect_tensor(input, 'nn.Convert', 'input', 2)
   self._typed = input:type() ~= self.output:type()
   if self._typed then
      self._input = self._input and self._input:type() == self.output:type() and self._input or self.output.new()
      input = self._input:resize(input:size()):copy(input)
   end
   self.batchMode = input:dim() >= self.nInputDim
   if not self.batchMode then input = input:contiguous():view(withAxis(input, self.inputBatchDim)) end
   if not self.converter then self:buildConverter(input) end
   local out = self.converter:updateOutput(input)
   if not self.batchMode then out = out:contiguous():view(withoutAxis(out, self.outputBatchDim)) end
   self.output = out
   return self.output
end

-- the input and gradOutput as the converter saw them
function Convert:_inner(input, gradOutput)
   if self._typed then input = self._input end
   if not self.batchMode then
      input = input:contiguous():view(withAxis(input, self.inputBatchDim))
      gradOutput = gradOutput:contiguous():view(self.converter.output:size())
   end
   return input, gradOutput
end

function Convert:updateGradInput(input, gradOutput)
   local inner, go = self:_inner(input, gradOutput)
   local gi = self.converter:updateGradInput(inner, go)
   if not self.batchMode then gi = gi:contiguous():view(input:size()) end
   if self._typed then
      self._gradInput = self._gradInput and self._gradInput:type() == input:type() and self._gradInput or input.new()
      gi = self._gradInput:resize(input:size()):copy(gi)
   end
   self.gradInput = gi
   return self.gradInput
end

function Convert:accGradParameters(input, gradOutput, scale)
   local inner, go = self:_inner(input, gradOutput)
   self.converter:accGradParameters(inner, go, scale)
end

function Convert:accUpdateGradParameters(input, gradOutput, lr)
   local inner, go = self:_inner(input, gradOutput)
   self.converter:accUpdateGradParameters(inner, go, lr)
end

function Convert:clearState()
   self._input, self._gradInput = nil, nil
   nn.utils.dropBuffers(self)
   if self.converter then self.converter:clearState() end
   return self
end

function Convert:type(typename, tensorCache)
   if typename then self._input, self._gradInput = nil, nil end
   return parent.type(self, typename, tensorCache)
end

function Convert:__tostring__()
   return ('%s(%s -> %s)'):format(torch.type(self), self.inputShape, self.outputShape)
end
