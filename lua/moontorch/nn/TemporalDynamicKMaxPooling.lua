-- nn.TemporalDynamicKMaxPooling(minK[, factor = 0]): keeps the k largest frames' values of each
-- feature along the sequence of a T x F (or N x T x F) input, in their original order, with
-- k = max(minK, ceil(factor * T)) (Kalchbrenner et al. 2014). T must be at least minK; when k
-- exceeds T, as Torch7 this is an error.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local TDKMP, parent = torch.class('nn.TemporalDynamicKMaxPooling', 'nn.Module')

function TDKMP:__init(minK, factor)
   if not T.is_int(minK) or minK < 1 then
      error('nn.TemporalDynamicKMaxPooling: expected a positive integer minK, got ' .. tostring(minK), 2)
   end
   parent.__init(self)
   self.minK = minK
   self.factor = factor or 0
end

function TDKMP:updateOutput(input)
   T.expect_tensor(input, 'nn.TemporalDynamicKMaxPooling', 'input', 2)
   if input:dim() ~= 2 and input:dim() ~= 3 then
      error('nn.TemporalDynamicKMaxPooling: expected a 2-d (T x F) or 3-d (N x T x F) input, got size '
         .. table.concat(T.sizes(input), 'x'), 2)
   end
   local seqDim = input:dim() - 1
   local len = input:size(seqDim)
   local k = math.max(self.minK, math.ceil(self.factor * len))
   if len < k then
      error(('nn.TemporalDynamicKMaxPooling: input sequence length (%d) too small for k = %d'):format(len, k), 2)
   end
   local _, order = input:sort(seqDim, true)
   -- the top k positions, back in sequence order
   self.indices = order:narrow(seqDim, 1, k):sort(seqDim)
   self.output = input:gather(seqDim, self.indices)
   return self.output
end

function TDKMP:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   if self.gradInput:type() ~= input:type() then self.gradInput = input.new() end
   if not gradOutput:isSameSizeAs(self.indices) then
      error(('nn.TemporalDynamicKMaxPooling: gradOutput of size %s does not match the output %s'):format(
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.indices), 'x')), 2)
   end
   -- the kept positions are distinct, so scattering into zeros routes each gradient once
   self.gradInput:resizeAs(input):zero():scatter(input:dim() - 1, self.indices, gradOutput)
   return self.gradInput
end

function TDKMP:clearState()
   self:_clearFields('indices')
   return parent.clearState(self)
end
