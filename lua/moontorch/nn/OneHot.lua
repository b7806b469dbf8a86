-- nn.OneHot(outputSize): class indices (a tensor of any shape, or one number) to one-hot vectors:
-- the output has the input's sizes and one more, outputSize, with a 1 at each index and 0 elsewhere.
-- Indices are integers in 1..outputSize. The gradient with respect to the indices is zero.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local OneHot, parent = torch.class('nn.OneHot', 'nn.Module')

function OneHot:__init(outputSize)
   parent.__init(self)
   if type(outputSize) ~= 'number' or outputSize < 1 then
      error('nn.OneHot: outputSize must be a positive number, got ' .. tostring(outputSize), 3)
   end
   self.outputSize = outputSize
end

function OneHot:updateOutput(input)
   local sizes
   if type(input) == 'number' then
      input = torch.LongTensor { input }
      sizes = {}
   else
      T.expect_tensor(input, 'nn.OneHot', 'input (or a number)', 2)
      sizes = T.sizes(input)
   end
   -- scatter takes integer indices on the output's device
   local idx = input
   if idx:dtype() ~= T.LONG or idx:device() ~= self.output:device() then
      if not self._input or self._input:device() ~= self.output:device() then
         self._input = T.empty_tensor(T.LONG, self.output:device())
      end
      idx = self._input:resize(input:size()):copy(input)
   end
   if idx:nElement() > 0 then
      local lo, hi = idx:min(), idx:max()
      if lo < 1 or hi > self.outputSize then
         error(('nn.OneHot: indices must be in 1..%d, got one of %s'):format(self.outputSize,
            tostring(lo < 1 and lo or hi)), 2)
      end
   end
   local one = { unpack(sizes) }
   one[#one + 1] = 1
   sizes[#sizes + 1] = self.outputSize
   self.output:resize(torch.LongStorage(sizes)):zero()
   self.output:scatter(#sizes, idx:contiguous():view(torch.LongStorage(one)), 1)
   return self.output
end

function OneHot:updateGradInput(input)
   if type(input) == 'number' then return 0 end
   self.gradInput:resize(input:size()):zero()
   return self.gradInput
end

function OneHot:clearState()
   self._input = nil
   return parent.clearState(self)
end
