-- nn.SpatialMaxUnpooling(poolingModule) as in Torch7: the inverse of a (non-overlapping)
-- nn.SpatialMaxPooling: each input value goes back to the position its maximum came from in the
-- pooling's last input, zeros elsewhere. Uses the pooling module's indices (0-based within a
-- plane) and its input size (iheight, iwidth); forward is the pooling's C backward (a scatter),
-- backward a gather.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local Unpool, parent = torch.class('nn.SpatialMaxUnpooling', 'nn.Module')

local NAME = 'nn.SpatialMaxUnpooling'

function Unpool:__init(poolingModule)
   parent.__init(self)
   if torch.type(poolingModule) ~= 'nn.SpatialMaxPooling' then
      error(('%s: the argument must be a nn.SpatialMaxPooling, got %s'):format(NAME, torch.type(poolingModule)), 2)
   end
   -- overlapping windows could send two values to one position
   if poolingModule.kH ~= poolingModule.dH or poolingModule.kW ~= poolingModule.dW then
      error(('%s: the pooling kernel %dx%d must equal its stride %d,%d'):format(NAME, poolingModule.kW,
         poolingModule.kH, poolingModule.dW, poolingModule.dH), 2)
   end
   self.pooling = poolingModule
end

function Unpool:setParams()
   self.indices = self.pooling.indices
   self.oheight, self.owidth = self.pooling.iheight, self.pooling.iwidth
   if not self.oheight or not torch.isTensor(self.indices) or self.indices:nElement() == 0 then
      error(('%s: run the pooling module forward first'):format(NAME), 3)
   end
end

-- flat 1-based positions in the unpooled output of each input element
local function checkInput(self, input, what)
   if input:nElement() ~= self.indices:nElement() then
      error(('%s: %s has size %s but the pooling produced %s'):format(NAME, what, table.concat(T.sizes(input), 'x'),
         table.concat(T.sizes(self.indices), 'x')), 3)
   end
end

-- Unpooling is max pooling's backward with the input as gradOutput (the windows do not
-- overlap: kernel = stride), so forward is that one C scatter. The C op reads its 'input'
-- argument for the size only: _shape has the pooling input's size but is never written or read
-- (its pages are never touched).
function Unpool:updateOutput(input)
   T.expect_tensor(input, NAME, 'input', 2)
   self:setParams()
   checkInput(self, input, 'input')
   local sz = T.sizes(input)
   sz[#sz - 1], sz[#sz] = self.oheight, self.owidth
   local shape = utils.result(self, '_shape', input)
   if table.concat(T.sizes(shape), 'x') ~= table.concat(sz, 'x') then shape:resize(torch.LongStorage(sz)) end
   local p = self.pooling
   T.check(T.clib.mt_maxpool2d_backward(utils.result(self, 'output', input).h, input.h, self.indices.h, shape.h, p.kW,
      p.kH, p.dW, p.dH, p.padW, p.padH, p.ceil_mode and 1 or 0))
   return self.output
end

-- the gradient gathers gradOutput at the indices: the C gather reads them 0-based (base 0) as
-- the pooling wrote them, with no 1-based copy
function Unpool:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 2)
   self:setParams()
   checkInput(self, input, 'input')
   local plane = self.oheight * self.owidth
   local d = input:dim()
   local L = input:size(d - 1) * input:size(d)
   local n = input:nElement() / L
   if gradOutput:nElement() ~= n * plane then
      error(('%s: gradOutput has %d elements, expected %d'):format(NAME, gradOutput:nElement(), n * plane), 2)
   end
   local ind = self.indices:isContiguous() and self.indices or self.indices:contiguous()
   local idx = ind:view(n, L)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   local gv = g:view(n, plane)
   local gi = utils.result(self, '_gi', gradOutput)
   T.check(T.clib.mt_gather(gi.h, gv.h, 1, idx.h, 0), NAME .. ' backward', 'gather')
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Unpool:clearState()
   self._shape, self._gi = nil, nil
   return parent.clearState(self)
end

function Unpool:__tostring__()
   return ('%s associated to %s'):format(torch.type(self), tostring(self.pooling))
end

return Unpool
