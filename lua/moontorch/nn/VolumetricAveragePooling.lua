-- nn.VolumetricAveragePooling(kT, kW, kH, [dT=kT], [dW=kW], [dH=kH], [padT=0], [padW=0], [padH=0])
-- as in Torch7 (the padding as in its later THNN and cudnn versions), with :ceil()/:floor() and
-- the padding counted in the divisor by default (:setCountExcludePad() / :setCountIncludePad(),
-- as nn.SpatialAveragePooling). Input: C x T x H x W or N x C x T x H x W. One C op each way
-- (csrc/nn/vol_pool.c): one pass over the input, row by row.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
require 'moontorch.nn.VolumetricMaxPooling'

local Pool, parent = torch.class('nn.VolumetricAveragePooling', 'nn.Module')

function Pool:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self)
   self.kT, self.kW, self.kH = kT, kW, kH
   self.dT, self.dW, self.dH = dT or kT, dW or kW, dH or kH
   self.padT, self.padW, self.padH = padT or 0, padW or 0, padH or 0
   self.ceil_mode = false
   self.count_include_pad = true
   nn.VolumetricMaxPooling._checkWindow(self, 3)
end

function Pool:ceil() self.ceil_mode = true return self end
function Pool:floor() self.ceil_mode = false return self end
function Pool:setCountIncludePad() self.count_include_pad = true return self end
function Pool:setCountExcludePad() self.count_include_pad = false return self end

-- the window arguments of the C op (count_include_pad: absent in a Torch7 file, so true)
local function window(self)
   return self.kT, self.kW, self.kH, self.dT, self.dW, self.dH, self.padT or 0, self.padW or 0, self.padH or 0,
      self.ceil_mode and 1 or 0, self.count_include_pad == false and 0 or 1
end

local function expect(self, t, what, level)
   local name = torch.type(self)
   T.expect_tensor(t, name, what, level + 1)
   local d = t:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: expected a 4-d or 5-d %s ([batch x] planes x T x H x W), got size %s'):format(name, what,
         table.concat(T.sizes(t), 'x')), level + 1)
   end
end

function Pool:updateOutput(input)
   expect(self, input, 'input', 2)
   -- a module saved by Torch7's older VolumetricAveragePooling has no padding fields
   self.padT, self.padW, self.padH = self.padT or 0, self.padW or 0, self.padH or 0
   nn.VolumetricMaxPooling._checkWindow(self, 3)
   local y = self.output
   if not torch.isTensor(y) or y:type() ~= input:type() or y == input then y = input.new(); self.output = y end
   T.check(T.clib.mt_nn_avgpool3d_forward(y.h, input.h, window(self)))
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   expect(self, gradOutput, 'gradOutput', 2)
   local gi = self.gradInput
   if not torch.isTensor(gi) or gi:type() ~= input:type() then gi = input.new(); self.gradInput = gi end
   T.check(T.clib.mt_nn_avgpool3d_backward(gi.h, gradOutput.h, input.h, window(self)))
   return self.gradInput
end

function Pool:__tostring__()
   local s = ('%s(%dx%dx%d, %d,%d,%d'):format(torch.type(self), self.kT, self.kW, self.kH, self.dT, self.dW, self.dH)
   if (self.padT or 0) ~= 0 or (self.padW or 0) ~= 0 or (self.padH or 0) ~= 0 then
      s = s .. (', %d,%d,%d'):format(self.padT, self.padW, self.padH)
   end
   return s .. ')'
end

return Pool
