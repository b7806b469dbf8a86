-- nn.MaskedSelect(): {input, mask} -> the 1-d tensor of input's elements where mask (a ByteTensor
-- of input's size) is 1, in order. Backward scatters gradOutput back to those positions; the
-- mask's gradient is zeros.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local MaskedSelect, parent = torch.class('nn.MaskedSelect', 'nn.Module')

function MaskedSelect:__init()
   parent.__init(self)
   self._maskIndices = torch.LongTensor()
   self._maskIndexBuffer = torch.LongTensor()
   self._gradBuffer = torch.Tensor()
   self._gradMask = torch.ByteTensor()
end

local function args(input)
   if type(input) ~= 'table' or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.MaskedSelect: expected a table {input, mask} of two tensors, got ' .. torch.type(input), 3)
   end
   local x, mask = input[1], input[2]
   if not x:isSameSizeAs(mask) then
      error(('nn.MaskedSelect: mask of size %s does not match input of size %s'):format(
         table.concat(T.sizes(mask), 'x'), table.concat(T.sizes(x), 'x')), 3)
   end
   return x, mask
end

function MaskedSelect:updateOutput(input)
   local x, mask = args(input)
   if self.output:type() ~= x:type() then self.output = x.new() end
   self.output:maskedSelect(x, mask)
   return self.output
end

function MaskedSelect:updateGradInput(input, gradOutput)
   local x, mask = args(input)
   -- the (1-based) flat positions the mask selected, on the input's device
   local device = x:device()
   if self._maskIndexBuffer:device() ~= device then
      self._maskIndexBuffer, self._maskIndices = T.empty_tensor(T.LONG, device), T.empty_tensor(T.LONG, device)
   end
   self._maskIndexBuffer:range(1, mask:nElement()):resize(T.sizes(mask))
   self._maskIndices:maskedSelect(self._maskIndexBuffer, mask)
   if gradOutput:nElement() ~= self._maskIndices:nElement() then
      error(('nn.MaskedSelect: gradOutput has %d elements, the mask selects %d'):format(gradOutput:nElement(),
         self._maskIndices:nElement()), 2)
   end
   if self._gradBuffer:type() ~= x:type() then self._gradBuffer = x.new() end
   self._gradBuffer:resize(x:nElement()):zero()
   if gradOutput:nElement() > 0 then
      self._gradBuffer:scatter(1, self._maskIndices, gradOutput:contiguous():view(gradOutput:nElement()))
   end
   if self._gradMask:type() ~= mask:type() then self._gradMask = mask.new() end
   self.gradInput = { self._gradBuffer:view(T.sizes(x)), self._gradMask:resizeAs(mask):zero() }
   return self.gradInput
end

function MaskedSelect:clearState()
   self:_clearFields('output', '_maskIndexBuffer', '_maskIndices', '_gradBuffer', '_gradMask')
   self.gradInput = {}
   return self
end
