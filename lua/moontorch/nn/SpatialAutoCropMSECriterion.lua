-- nn.SpatialAutoCropMSECriterion([sizeAverage = true]): MSE between a [N x] C x h x w input and
-- the centre h x w crop of a [N x] C x H x W target (h <= H, w <= W; the crop starts at
-- floor((H - h) / 2)). Unlike Torch7, whose backward wants the target already cropped, backward
-- takes the same (input, target) as forward.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local SACMSE, parent = torch.class('nn.SpatialAutoCropMSECriterion', 'nn.MSECriterion')

function SACMSE:__init(sizeAverage)
   parent.__init(self, sizeAverage)
end

local function sz(t) return table.concat(T.sizes(t), 'x') end

local function crop(input, target)
   T.expect_tensor(input, 'nn.SpatialAutoCropMSECriterion', 'input', 3)
   T.expect_tensor(target, 'nn.SpatialAutoCropMSECriterion', 'target', 3)
   local d = input:dim()
   if (d ~= 3 and d ~= 4) or target:dim() ~= d then
      error(('nn.SpatialAutoCropMSECriterion: expected 3-d or 4-d input and target of the same dimension, '
         .. 'got sizes %s and %s'):format(sz(input), sz(target)), 3)
   end
   local h, w, H, W = input:size(d - 1), input:size(d), target:size(d - 1), target:size(d)
   local same = true
   for i = 1, d - 2 do same = same and input:size(i) == target:size(i) end
   if not same or h > H or w > W then
      error(('nn.SpatialAutoCropMSECriterion: input %s must match target %s but for a spatial size no larger')
         :format(sz(input), sz(target)), 3)
   end
   return target:narrow(d - 1, 1 + math.floor((H - h) / 2), h):narrow(d, 1 + math.floor((W - w) / 2), w)
end

function SACMSE:updateOutput(input, target)
   return parent.updateOutput(self, input, crop(input, target))
end

function SACMSE:updateGradInput(input, target)
   return parent.updateGradInput(self, input, crop(input, target))
end
