-- nn.SpatialFractionalMaxPooling(poolSizeW, poolSizeH, outW, outH) or (poolSizeW, poolSizeH, ratioW,
-- ratioH) as in Torch7 (Graham's fractional max pooling): the maximum over poolSizeW x poolSizeH
-- windows whose starts are pseudo-random increasing sequences, drawn per sample and plane from
-- self.randomSamples (batch x plane x 2: [1] for the width, [2] for the height). Window i of n
-- over an input of size `in` starts at floor((i + u) * a) - floor(u * a), a = (in - pool) / (n - 1),
-- the last at in - pool. New samples are drawn every forward pass unless :fixPoolingRegions().
-- Composed from gather (one per window offset, a running max) and indexAdd for the gradient.
local torch = require 'moontorch'
local P = require 'moontorch.nn.pooling_common'

local Pool, parent = torch.class('nn.SpatialFractionalMaxPooling', 'nn.Module')

local NAME = 'nn.SpatialFractionalMaxPooling'

function Pool:__init(poolSizeW, poolSizeH, arg1, arg2)
   parent.__init(self)
   for _, v in ipairs { { poolSizeW, 'poolSizeW' }, { poolSizeH, 'poolSizeH' } } do
      if type(v[1]) ~= 'number' or v[1] < 2 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be an integer >= 2, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.poolSizeW, self.poolSizeH = poolSizeW, poolSizeH
   self.newRandomPool = false -- Torch7's name: true keeps the samples (see fixPoolingRegions)
   if type(arg1) ~= 'number' or type(arg2) ~= 'number' then
      error(('%s: expected an output size or ratios, got %s, %s'):format(NAME, tostring(arg1), tostring(arg2)), 2)
   end
   if arg1 >= 1 and arg2 >= 1 then
      if arg1 ~= math.floor(arg1) or arg2 ~= math.floor(arg2) then
         error(('%s: output sizes must be integers, got %s, %s'):format(NAME, arg1, arg2), 2)
      end
      self.outW, self.outH = arg1, arg2
   else
      if not (arg1 > 0 and arg1 < 1 and arg2 > 0 and arg2 < 1) then
         error(('%s: ratios must lie in (0, 1), got %s, %s'):format(NAME, arg1, arg2), 2)
      end
      self.ratioW, self.ratioH = arg1, arg2
   end
end

-- randomSamples[.][.][1] drives the width, [2] the height (Torch7's layout)
P.fractionalMethods(Pool, NAME, { 'H', 'W' }, { 2, 1 })

function Pool:__tostring__()
   return ('%s(%sx%s, %d,%d)'):format(torch.type(self), tostring(self.outW or self.ratioW),
      tostring(self.outH or self.ratioH), self.poolSizeW, self.poolSizeH)
end

return Pool
