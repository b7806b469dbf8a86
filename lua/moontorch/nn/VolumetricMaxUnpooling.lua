-- nn.VolumetricMaxUnpooling(poolingModule) as in Torch7: the inverse of a (non-overlapping)
-- nn.VolumetricMaxPooling: each input value goes back to the position its maximum came from in
-- the pooling's last input, zeros elsewhere. Uses the pooling module's indices (0-based within a
-- T x H x W volume) and its input size (itime, iheight, iwidth); forward is an indexCopy,
-- backward an index.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'
require 'moontorch.nn.VolumetricMaxPooling'

local Unpool, parent = torch.class('nn.VolumetricMaxUnpooling', 'nn.Module')

local NAME = 'nn.VolumetricMaxUnpooling'

function Unpool:__init(poolingModule)
   parent.__init(self)
   if torch.type(poolingModule) ~= 'nn.VolumetricMaxPooling' then
      error(('%s: the argument must be a nn.VolumetricMaxPooling, got %s'):format(NAME, torch.type(poolingModule)), 2)
   end
   -- overlapping windows could send two values to one position
   local p = poolingModule
   if p.kT ~= p.dT or p.kH ~= p.dH or p.kW ~= p.dW then
      error(('%s: the pooling kernel %dx%dx%d must equal its stride %d,%d,%d'):format(NAME, p.kT, p.kW, p.kH, p.dT,
         p.dW, p.dH), 2)
   end
   self.pooling = poolingModule
end

-- Torch7's fields, copied from the pooling module
function Unpool:setParams()
   local p = self.pooling
   self.indices = p.indices
   self.otime, self.oheight, self.owidth = p.itime, p.iheight, p.iwidth
   self.dT, self.dH, self.dW = p.dT, p.dH, p.dW
   self.padT, self.padH, self.padW = p.padT, p.padH, p.padW
   if not self.otime or not torch.isTensor(self.indices) or self.indices:nElement() == 0 then
      error(('%s: run the pooling module forward first'):format(NAME), 3)
   end
end

-- (flat 1-based positions in the unpooled output of each input element, its element count)
function Unpool:_positions(input)
   local d = input:dim()
   if (d ~= 4 and d ~= 5) or input:nElement() ~= self.indices:nElement() then
      error(('%s: input has size %s but the pooling produced %s'):format(NAME, table.concat(T.sizes(input), 'x'),
         table.concat(T.sizes(self.indices), 'x')), 3)
   end
   local volume = self.otime * self.oheight * self.owidth
   local planes = input:nElement() / (input:size(d - 2) * input:size(d - 1) * input:size(d))
   return nn.VolumetricMaxPooling._positions(self.indices, planes, volume), planes * volume
end

-- forward an indexCopy, backward an index (output sizes: the pooling's input sizes)
P.unpoolMethods(Unpool, NAME, 4, { 'otime', 'oheight', 'owidth' })

function Unpool:__tostring__()
   return ('%s associated to %s'):format(torch.type(self), tostring(self.pooling))
end

return Unpool
