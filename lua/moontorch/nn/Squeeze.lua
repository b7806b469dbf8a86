-- nn.Squeeze([dim, numInputDims]): input:squeeze() (every size-1 dimension) or
-- input:squeeze(dim) (that one, if its size is 1); the output is a view of the input. With
-- numInputDims, an input of numInputDims + 1 dimensions is a batch: dim counts past the batch
-- dimension, and a batch of one sample keeps its batch dimension.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Squeeze, parent = torch.class('nn.Squeeze', 'nn.Module')

function Squeeze:__init(dim, numInputDims)
   parent.__init(self)
   if dim ~= nil and not T.is_int(dim) then error('nn.Squeeze: dim must be an integer, got ' .. tostring(dim), 2) end
   self.dim = dim
   self:setNumInputDims(numInputDims)
end

function Squeeze:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

function Squeeze:updateOutput(input)
   T.expect_tensor(input, 'nn.Squeeze', 'input', 2)
   local dim, keepBatch = self.dim, false
   if self.numInputDims and input:dim() == self.numInputDims + 1 then
      if dim then
         dim = dim + 1
      elseif input:size(1) == 1 then
         keepBatch = true
      end
   end
   if dim and (dim < 1 or dim > input:dim()) then
      error(('nn.Squeeze: dimension %d is out of range for an input of size %s'):format(dim,
         table.concat(T.sizes(input), 'x')), 2)
   end
   local out = dim and input:squeeze(dim) or input:squeeze()
   if type(out) == 'number' then out = input:view(T.size_list {}) end -- t:squeeze() of one element is a number
   if keepBatch then out = out:unsqueeze(1) end
   self.output = out
   return self.output
end

function Squeeze:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, 'nn.Squeeze', 'gradOutput', 2)
   if gradOutput:nElement() ~= input:nElement() then
      error(('nn.Squeeze: gradOutput has %d elements but the input %d'):format(gradOutput:nElement(),
         input:nElement()), 2)
   end
   return nn.utils.viewGradOutput(self, input, gradOutput)
end

Squeeze.clearState = nn.utils.dropBuffers -- output and gradInput alias the input and gradOutput
