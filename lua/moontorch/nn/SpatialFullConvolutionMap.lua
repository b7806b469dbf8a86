-- nn.SpatialFullConvolutionMap(connTable, kW, kH, [dW=1], [dH=1]) as in Torch7: the transposed
-- (full) convolution of nn.SpatialConvolutionMap's connection table, each row {input plane,
-- output plane} with its own kH x kW kernel (weight: K x kH x kW, bias: nOutputPlane). Output
-- planes are (H-1)*dH + kH x (W-1)*dW + kW. As nn.SpatialConvolutionMap does, the rows are added
-- into a dense kernel, here nInputPlane x nOutputPlane, for the C convolution's passes run the
-- other way (csrc/nn/conv.c, as nn.SpatialFullConvolution runs them). Torch7 takes 3-d inputs
-- only; a 4-d batch is accepted too.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local FMap = torch.class('nn.SpatialFullConvolutionMap', 'nn.Module')

local NAME = 'nn.SpatialFullConvolutionMap'

-- nn.SpatialConvolutionMap's constructor and initialisation (fan-in counted per output plane):
-- the same fields, errors naming this class
FMap.__init = nn.SpatialConvolutionMap.__init
FMap.reset = nn.SpatialConvolutionMap.reset

-- the dense kernel, nIn x nOut x kH x kW: the weight of the convolution from the output planes
-- to the input planes whose transpose this module is (nn.SpatialConvolutionMap's, column 1 first)
FMap._major = 1
FMap._rows = nn.SpatialConvolutionMap._rows
FMap._dense = nn.SpatialConvolutionMap._dense

-- the input as 4-d (and whether it was 3-d), checked
local function batched(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if (d ~= 3 and d ~= 4) or input:size(d - 2) ~= self.nInputPlane then
      error(('%s: expected a 3-d or 4-d input of %d planes, got size %s'):format(NAME, self.nInputPlane,
         table.concat(T.sizes(input), 'x')), 4)
   end
   cc.check_type(NAME, 'input', input, self.weight, 4)
   if d == 3 then return input:view(1, input:size(1), input:size(2), input:size(3)), true end
   return input, false
end

-- gradOutput as 4-d, of the output's size
local function grad4d(self, x, gradOutput)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   local oH, oW = (x:size(3) - 1) * self.dH + self.kH, (x:size(4) - 1) * self.dW + self.kW
   if gradOutput:nElement() ~= x:size(1) * self.nOutputPlane * oH * oW then
      error(('%s: gradOutput has size %s, expected %d planes of %dx%d'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), self.nOutputPlane, oH, oW), 4)
   end
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   return g:view(x:size(1), self.nOutputPlane, oH, oW)
end

function FMap:updateOutput(input)
   local x, single = batched(self, input)
   local N, H, W = x:size(1), x:size(3), x:size(4)
   local out = x.new(N, self.nOutputPlane, (H - 1) * self.dH + self.kH, (W - 1) * self.dW + self.kW)
   -- the convolution's input gradient reads its 'input' argument for the size only
   cc.backward_input(out, out, x, self:_dense(), self.dW, self.dH, 0, 0, 1)
   out:add(self.bias:view(1, self.nOutputPlane, 1, 1):expandAs(out))
   self.output = single and out:select(1, 1) or out
   return self.output
end

function FMap:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = batched(self, input)
   local gi = cc.forward(x.new(), grad4d(self, x, gradOutput), self:_dense(), nil, self.dW, self.dH, 0, 0, 1)
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function FMap:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = batched(self, input)
   local dy = grad4d(self, x, gradOutput)
   local nIn, nOut, K = self.nInputPlane, self.nOutputPlane, self.connTable:size(1)
   local gw = x.new(nIn, nOut, self.kH, self.kW):zero()
   cc.backward_params(gw, nil, dy, x, scale, self.dW, self.dH, 0, 0, 1)
   self.gradWeight:view(K, self.kH * self.kW):add(gw:view(nIn * nOut, self.kH * self.kW):index(1, self:_rows()))
   self.gradBias:add(scale, cc.plane_sums(dy))
end

return FMap
