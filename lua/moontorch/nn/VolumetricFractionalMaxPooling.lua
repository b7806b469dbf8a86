-- nn.VolumetricFractionalMaxPooling(poolSizeT, poolSizeW, poolSizeH, outT, outW, outH) or
-- (poolSizeT, poolSizeW, poolSizeH, ratioT, ratioW, ratioH) as in Torch7: the 3-d form of
-- nn.SpatialFractionalMaxPooling (Graham's fractional max pooling). Input C x H x W x T (time
-- last, as Torch7's docs and C code take it, unlike the other volumetric layers) or a batch of
-- those, output C x outH x outW x outT; window starts are pseudo-random increasing sequences
-- drawn per sample and plane from self.randomSamples (batch x plane x 3: [1] time, [2] width,
-- [3] height), the same sequence rule as the spatial module, new every forward pass unless
-- :fixPoolingRegions().
-- Composed from gather (a running max over the window offsets) and indexAdd for the gradient.
local torch = require 'moontorch'
local P = require 'moontorch.nn.pooling_common'

local Pool, parent = torch.class('nn.VolumetricFractionalMaxPooling', 'nn.Module')

local NAME = 'nn.VolumetricFractionalMaxPooling'
local AXES = { 'T', 'W', 'H' }

function Pool:__init(poolSizeT, poolSizeW, poolSizeH, arg1, arg2, arg3)
   parent.__init(self)
   local pools = { poolSizeT, poolSizeW, poolSizeH }
   for i, v in ipairs(pools) do
      if type(v) ~= 'number' or v < 2 or v ~= math.floor(v) then
         error(('%s: poolSize%s must be an integer >= 2, got %s'):format(NAME, AXES[i], tostring(v)), 2)
      end
   end
   self.poolSizeT, self.poolSizeW, self.poolSizeH = poolSizeT, poolSizeW, poolSizeH
   self.newRandomPool = false
   local args = { arg1, arg2, arg3 }
   for i = 1, 3 do
      if type(args[i]) ~= 'number' then
         error(('%s: expected output sizes or ratios, got %s for %s'):format(NAME, tostring(args[i]), AXES[i]), 2)
      end
   end
   if arg1 >= 1 and arg2 >= 1 and arg3 >= 1 then
      for i = 1, 3 do
         if args[i] ~= math.floor(args[i]) then
            error(('%s: output sizes must be integers, got %s for %s'):format(NAME, args[i], AXES[i]), 2)
         end
      end
      self.outT, self.outW, self.outH = arg1, arg2, arg3
   else
      for i = 1, 3 do
         if not (args[i] > 0 and args[i] < 1) then
            error(('%s: ratios must lie in (0, 1), got %s for %s'):format(NAME, args[i], AXES[i]), 2)
         end
      end
      self.ratioT, self.ratioW, self.ratioH = arg1, arg2, arg3
   end
end

-- randomSamples[.][.][1] drives the time, [2] the width, [3] the height (Torch7's layout)
P.fractionalMethods(Pool, NAME, { 'H', 'W', 'T' }, { 3, 2, 1 })

function Pool:__tostring__()
   return ('%s(%sx%sx%s, %d,%d,%d)'):format(torch.type(self), tostring(self.outT or self.ratioT),
      tostring(self.outW or self.ratioW), tostring(self.outH or self.ratioH), self.poolSizeT, self.poolSizeW,
      self.poolSizeH)
end

return Pool
