-- nn.PReLU([nOutputPlane]): x where x > 0, w * x otherwise, with a learnt slope w (initially
-- 0.25): one shared by every element (nOutputPlane = 0, the default) or one per input plane. The
-- planes are dimension 1 of a vector and dimension 2 of anything larger (N x C [x ...]), as in
-- Torch7's THNN.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pointwise'

local PReLU, parent = torch.class('nn.PReLU', 'nn.Module')

function PReLU:__init(nOutputPlane)
   parent.__init(self)
   if nOutputPlane ~= nil and not (T.is_int(nOutputPlane) and nOutputPlane >= 1) then
      error('nn.PReLU: nOutputPlane must be a positive integer, got ' .. tostring(nOutputPlane), 2)
   end
   self.nOutputPlane = nOutputPlane or 0
   self.weight = torch.Tensor(nOutputPlane or 1):fill(0.25)
   self.gradWeight = torch.Tensor(nOutputPlane or 1):zero()
end

-- The weight viewed to broadcast against input: all ones but the plane dimension.
local function slopeView(self, input)
   local d = input:dim()
   local sizes = {}
   for i = 1, d do sizes[i] = 1 end
   if self.nOutputPlane > 0 then
      local pd = d > 1 and 2 or 1
      if input:size(pd) ~= self.nOutputPlane then
         error(('nn.PReLU: expected %d input planes in dimension %d, got input of size %s'):format(self.nOutputPlane,
            pd, table.concat(T.sizes(input), 'x')), 4)
      end
      sizes[pd] = self.nOutputPlane
   end
   return self.weight:contiguous():view(sizes)
end

-- the passes write into buffers kept on the module (_neg, _pos): fresh full-size temporaries
-- cost more than the arithmetic
function PReLU:updateOutput(input)
   P.checkInput(self, input)
   local w = slopeView(self, input)
   local neg = torch.cmin(P.buffer(self, '_neg', input), input, 0):cmul(w)
   return torch.cmax(P.buffer(self, 'output', input), input, 0):add(neg)
end

function PReLU:updateGradInput(input, gradOutput)
   P.checkInput(self, input)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   -- slope w where x <= 0, 1 where x > 0
   local factor = P.buffer(self, '_neg', input):le(input, 0):cmul(slopeView(self, input))
   factor:add(P.buffer(self, '_pos', input):gt(input, 0))
   return torch.cmul(P.buffer(self, 'gradInput', gradOutput), gradOutput, factor)
end

function PReLU:clearState()
   self._neg, self._pos = nil, nil
   return parent.clearState(self)
end

function PReLU:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   slopeView(self, input)   -- checks the planes
   local prod = torch.cmin(P.buffer(self, '_neg', input), input, 0):cmul(gradOutput)
   if self.nOutputPlane == 0 then
      self.gradWeight:add(scale * prod:sum())
   else
      local d, C = input:dim(), self.nOutputPlane
      local bs = d > 1 and input:size(1) or 1
      local perPlane = prod:view(bs, C, input:nElement() / (bs * C)):sum(3):sum(1):view(C)
      self.gradWeight:add(scale, perPlane)
   end
   return self.gradWeight
end
