-- nn.Bottle(module [, nInputDim = 2, nOutputDim = nInputDim]): applies a module written for
-- nInputDim-dimensional input to input with more dimensions by folding all leading dimensions
-- into the first one, and unfolding them again in the output (e.g. Linear on b x t x n input).
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

-- Torch7's parent is nn.Decorator (a one-child container); the fields are the same
local Bottle, parent = torch.class('nn.Bottle', 'nn.Container')

function Bottle:__init(module, nInputDim, nOutputDim)
   parent.__init(self)
   if not torch.isTypeOf(module, 'nn.Module') then error('nn.Bottle: expected a module to wrap', 2) end
   self.modules[1] = module
   self.module = module
   self.nInputDim = nInputDim or 2
   self.nOutputDim = nOutputDim or self.nInputDim
   self.dimDelta = self.nInputDim - self.nOutputDim
end

-- the folded input sizes and the number of leading elements folded (nil when none are)
function Bottle:_fold(input)
   if not torch.isTensor(input) or input:dim() < self.nInputDim then
      error(('nn.Bottle: expected a tensor with at least %d dimensions, got %s'):format(self.nInputDim,
         torch.isTensor(input) and ('size ' .. utils.sizeString(input)) or torch.type(input)), 3)
   end
   local s = input:size():totable()
   local lead = #s - self.nInputDim + 1        -- dimensions 1..lead become one
   if lead <= 1 then return nil end
   local folded, n = {}, 1
   for d = 1, lead do n = n * s[d] end
   folded[1] = n
   for d = lead + 1, #s do folded[#folded + 1] = s[d] end
   return folded, s, lead
end

local function as(t, sizes)
   if not t:isContiguous() then t = t:contiguous() end
   return t:view(torch.LongStorage(sizes))
end

function Bottle:updateOutput(input)
   local folded, s, lead = self:_fold(input)
   if not folded then
      self.output = self:rethrowErrors(self.modules[1], 1, 'updateOutput', input)
      return self.output
   end
   local o = self:rethrowErrors(self.modules[1], 1, 'updateOutput', as(input, folded))
   if o:dim() ~= self.nOutputDim then
      error(('nn.Bottle: the module gave an output of %d dimensions (size %s), expected nOutputDim = %d'):format(
         o:dim(), utils.sizeString(o), self.nOutputDim), 2)
   end
   local size = {}
   for d = 1, lead do size[d] = s[d] end
   for d = 2, o:dim() do size[#size + 1] = o:size(d) end
   self.output = as(o, size)
   return self.output
end

-- input and gradOutput folded as in updateOutput
function Bottle:_folded(input, gradOutput)
   local folded = self:_fold(input)
   if not folded then return input, gradOutput, false end
   return as(input, folded), as(gradOutput, self.modules[1].output:size():totable()), true
end

function Bottle:updateGradInput(input, gradOutput)
   local x, g, folded = self:_folded(input, gradOutput)
   local gi = self:rethrowErrors(self.modules[1], 1, 'updateGradInput', x, g)
   self.gradInput = folded and as(gi, input:size():totable()) or gi
   return self.gradInput
end

function Bottle:accGradParameters(input, gradOutput, scale)
   local x, g = self:_folded(input, gradOutput)
   self:rethrowErrors(self.modules[1], 1, 'accGradParameters', x, g, scale or 1)
end

function Bottle:__tostring__()
   return torch.type(self) .. ' @ ' .. tostring(self.modules[1])
end
