-- nn.TemporalMaxPooling(kW, [dW=kW]) as in Torch7: the maximum over windows of kW frames, stepping
-- dW frames, of an nInputFrame x frameSize input (or batch x nInputFrame x frameSize), each
-- feature on its own. It is 2-d max pooling (csrc/nn/pool.c) with a kW x 1 window on a one-plane
-- view of the input; the pooling's indices are kept in self.indices for the backward pass.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'
local P = require 'moontorch.nn.pooling_common'
local C, check = T.clib, T.check

local Pool, parent = torch.class('nn.TemporalMaxPooling', 'nn.Module')

local NAME = 'nn.TemporalMaxPooling'

function Pool:__init(kW, dW)
   parent.__init(self)
   dW = dW or kW
   for _, v in ipairs { { kW, 'kW' }, { dW, 'dW' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.kW, self.dW = kW, dW
end

-- x viewed as N x 1 x frames x features
local function as4d(t, what)
   T.expect_tensor(t, NAME, what, 4)
   local d = t:dim()
   if d ~= 2 and d ~= 3 then
      error(('%s: expected a 2-d or 3-d %s (frames x features), got %d-d'):format(NAME, what, d), 4)
   end
   local x = t:isContiguous() and t or t:contiguous()
   if d == 2 then return x:view(1, 1, x:size(1), x:size(2)) end
   return x:view(x:size(1), 1, x:size(2), x:size(3))
end

function Pool:updateOutput(input)
   local x = as4d(input, 'input')
   if x:size(3) < self.kW then
      error(('%s: input has %d frames, fewer than kW %d'):format(NAME, x:size(3), self.kW), 2)
   end
   if not torch.isTensor(self.indices) or self.indices:device() ~= input:device() then
      self.indices = T.empty_tensor(torch.LongTensor():dtype(), input:device())
   end
   local y = utils.result(self, '_y', input) -- reused between calls, as Torch7 reuses output
   check(C.mt_maxpool2d_forward(y.h, self.indices.h, x.h, 1, self.kW, 1, self.dW, 0, 0, 0))
   local sz = T.sizes(input)
   sz[#sz - 1] = y:size(3)
   self.output = y:view(torch.LongStorage(sz))
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   local x = as4d(input, 'input')
   local g = as4d(gradOutput, 'gradOutput')
   local gi = utils.result(self, '_gi', input)
   check(C.mt_maxpool2d_backward(gi.h, g.h, self.indices.h, x.h, 1, self.kW, 1, self.dW, 0, 0, 0))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Pool:clearState()
   self._y, self._gi = nil, nil
   return P.clearIndices(self)
end

function Pool:__tostring__() return ('%s(%d, %d)'):format(torch.type(self), self.kW, self.dW) end

return Pool
