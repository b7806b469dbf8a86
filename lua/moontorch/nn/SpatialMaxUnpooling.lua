-- nn.SpatialMaxUnpooling(poolingModule) as in Torch7: the inverse of a (non-overlapping)
-- nn.SpatialMaxPooling: each input value goes back to the position its maximum came from in the
-- pooling's last input, zeros elsewhere. Uses the pooling module's indices (0-based within a
-- plane) and its input size (iheight, iwidth); forward is an indexCopy, backward an index.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'

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
function Unpool:_positions(input)
   if input:nElement() ~= self.indices:nElement() then
      error(('%s: input has size %s but the pooling produced %s'):format(NAME, table.concat(T.sizes(input), 'x'),
         table.concat(T.sizes(self.indices), 'x')), 3)
   end
   local d = input:dim()
   local plane = self.oheight * self.owidth
   local n, L = input:nElement() / (input:size(d - 1) * input:size(d)), input:size(d - 1) * input:size(d)
   local base = torch.range(0, n - 1):long():mul(plane):add(1)
   if base:device() ~= input:device() then base = T.empty(base:dtype(), input:device()):resize(n):copy(base) end
   return self.indices:contiguous():view(n, L):clone():add(base:view(n, 1):expand(n, L)):view(n * L), n * plane
end

-- forward an indexCopy, backward an index (output sizes: the pooling's input sizes)
P.unpoolMethods(Unpool, NAME, 2, { 'oheight', 'owidth' })

function Unpool:__tostring__()
   return ('%s associated to %s'):format(torch.type(self), tostring(self.pooling))
end

return Unpool
