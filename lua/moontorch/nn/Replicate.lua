-- nn.Replicate(nFeature[, dim = 1, ndim]): the input repeated nFeature times along a new
-- dimension dim, with no copy: the output is a view of the input whose stride there is 0.
-- With ndim (the number of non-batch dimensions), an input with more dimensions is a batch and
-- the new dimension is dim + 1. Backward sums gradOutput over the new dimension.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Replicate, parent = torch.class('nn.Replicate', 'nn.Module')
local result = nn.utils.result

function Replicate:__init(nf, dim, ndim)
   parent.__init(self)
   if not T.is_int(nf) or nf < 1 then
      error('nn.Replicate: nFeature must be a positive integer, got ' .. tostring(nf), 2)
   end
   self.nfeatures = nf
   self.dim = dim or 1
   self.ndim = ndim
   if not T.is_int(self.dim) or self.dim < 1 then
      error('nn.Replicate: dim must be a positive integer, got ' .. tostring(dim), 2)
   end
end

-- where the new dimension goes for this input
function Replicate:_rdim(input)
   T.expect_tensor(input, 'nn.Replicate', 'input', 3)
   local batchOffset = (self.ndim and input:dim() > self.ndim) and 1 or 0
   local rdim = (self.dim or 1) + batchOffset
   if rdim > input:dim() + 1 then
      error(('nn.Replicate: cannot replicate along dimension %d of an input of size %s'):format(rdim,
         table.concat(T.sizes(input), 'x')), 3)
   end
   return rdim
end

function Replicate:updateOutput(input)
   local rdim = self:_rdim(input)
   local sizes = T.sizes(input)
   table.insert(sizes, rdim, self.nfeatures)
   self.output = input:unsqueeze(rdim):expand(sizes)
   return self.output
end

function Replicate:updateGradInput(input, gradOutput)
   local rdim = self:_rdim(input)
   T.expect_tensor(gradOutput, 'nn.Replicate', 'gradOutput', 2)
   local expected = T.sizes(input)
   table.insert(expected, rdim, self.nfeatures)
   local gsz = T.sizes(gradOutput)
   if table.concat(gsz, 'x') ~= table.concat(expected, 'x') then
      error(('nn.Replicate: gradOutput has size %s, the output size %s'):format(table.concat(gsz, 'x'),
         table.concat(expected, 'x')), 2)
   end
   result(self, 'gradInput', input):resizeAs(input)
   torch.sum(self.gradInput:unsqueeze(rdim), gradOutput, rdim)
   return self.gradInput
end

Replicate.clearState = nn.utils.dropBuffers -- the output is a view of the input
