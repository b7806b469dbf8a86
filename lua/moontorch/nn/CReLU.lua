-- nn.CReLU(nInputDims[, inplace = false]): concatenated ReLU (Shang et al. 2016),
-- [relu(x), relu(-x)] along the feature dimension: a non-batch input (nInputDims dimensions) of
-- size C x ... gives 2C x ..., a batch (nInputDims + 1) N x C x ... gives N x 2C x .... As in
-- Torch7 it is a Sequential of ConcatTable(Identity, MulConstant(-1)), JoinTable(2), ReLU run
-- on each sample flattened to a row.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local CReLU, parent = torch.class('nn.CReLU', 'nn.Sequential')

function CReLU:__init(nInputDims, inplace)
   if not T.is_int(nInputDims) or nInputDims < 1 then
      error('nn.CReLU: expected a positive integer nInputDims, got ' .. tostring(nInputDims), 2)
   end
   parent.__init(self)
   self.nInputDims = nInputDims
   self.inplace = inplace or false
   self:add(nn.ConcatTable():add(nn.Identity()):add(nn.MulConstant(-1)))
   self:add(nn.JoinTable(2))
   self:add(nn.ReLU(self.inplace))
end

-- the input as rows, one per sample
local function rows(self, input)
   T.expect_tensor(input, 'nn.CReLU', 'input', 3)
   local d = input:dim()
   if d == self.nInputDims + 1 then return input:contiguous():view(input:size(1), -1), true end
   if d == self.nInputDims then return input:contiguous():view(1, -1), false end
   error(('nn.CReLU: expected a %d-d input or a %d-d batch, got size %s'):format(self.nInputDims,
      self.nInputDims + 1, table.concat(T.sizes(input), 'x')), 3)
end

function CReLU:updateOutput(input)
   local x, batched = rows(self, input)
   parent.updateOutput(self, x)
   local osize = T.sizes(input)
   local f = batched and 2 or 1
   osize[f] = osize[f] * 2
   self.output = self.output:view(osize)
   return self.output
end

-- the ReLU may work in place, so backward is only updateGradInput (no parameters), as in Torch7
function CReLU:backward(input, gradOutput)
   return self:updateGradInput(input, gradOutput)
end

function CReLU:updateGradInput(input, gradOutput)
   local x = rows(self, input)
   parent.updateGradInput(self, x, gradOutput:contiguous():view(x:size(1), -1))
   self.gradInput = self.gradInput:view(T.sizes(input))
   return self.gradInput
end

function CReLU:__tostring__() return 'CReLU()' end
