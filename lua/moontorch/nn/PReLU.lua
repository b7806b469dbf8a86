-- nn.PReLU([nOutputPlane]): x where x > 0, w * x otherwise, with a learnt slope w (initially
-- 0.25): one shared by every element (nOutputPlane = 0, the default) or one per input plane. The
-- planes are dimension 1 of a vector and dimension 2 of anything larger (N x C [x ...]), as in
-- Torch7's THNN.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.transfer_common'

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

local C, check = T.clib, T.check

-- the planes must match the slopes (the C op checks too; this names the module's sizes)
local function checkPlanes(self, input)
   if self.nOutputPlane > 0 then
      local d = input:dim()
      local pd = d > 1 and 2 or 1
      if input:size(pd) ~= self.nOutputPlane then
         error(('nn.PReLU: expected %d input planes in dimension %d, got input of size %s'):format(self.nOutputPlane,
            pd, table.concat(T.sizes(input), 'x')), 4)
      end
   end
end

-- one C pass each way (mt_nn_prelu_forward / _backward), Torch7's THNN formulas
function PReLU:updateOutput(input)
   P.checkInput(self, input)
   checkPlanes(self, input)
   local out = P.buffer(self, 'output', input)
   check(C.mt_nn_prelu_forward(out.h, input.h, self.weight.h))
   return out
end

function PReLU:updateGradInput(input, gradOutput)
   P.checkInput(self, input)
   checkPlanes(self, input)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local gi = P.buffer(self, 'gradInput', gradOutput)
   check(C.mt_nn_prelu_backward(gi.h, nil, gradOutput.h, input.h, self.weight.h, 1))
   return gi
end

function PReLU:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   checkPlanes(self, input)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   check(C.mt_nn_prelu_backward(nil, self.gradWeight.h, gradOutput.h, input.h, self.weight.h, scale))
   return self.gradWeight
end
