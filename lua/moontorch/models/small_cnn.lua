-- small_cnn.lua: a small convolutional network for 28x28 single-channel images (MNIST,
-- Fashion-MNIST), sized to train to >= 92% Fashion-MNIST test accuracy in minutes on 2 cores.
--   local small_cnn = require 'moontorch.models.small_cnn'
--   local model = small_cnn{ nClasses = 10, width = 32, dropout = 0.3 }
-- conv 3x3 (w) -> BN -> ReLU -> max pool 2  (14x14)
-- conv 3x3 (2w) -> BN -> ReLU -> max pool 2 (7x7)
-- linear (2w*49 -> 128) -> BN -> ReLU -> dropout -> linear (128 -> nClasses)
-- Torch7's default initialisation. Output: scores (feed CrossEntropyCriterion).
local nn = require 'moontorch.nn'

return function(opt)
   opt = opt or {}
   local w = opt.width or 32
   local hidden = opt.hidden or 128
   local nIn = opt.nInputPlane or 1
   local flat = nn.View(2 * w * 7 * 7)
   if flat.setNumInputDims then flat:setNumInputDims(3) end
   local m = nn.Sequential()
      :add(nn.SpatialConvolution(nIn, w, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(w)):add(nn.ReLU(true))
      :add(nn.SpatialMaxPooling(2, 2, 2, 2))
      :add(nn.SpatialConvolution(w, 2 * w, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(2 * w))
      :add(nn.ReLU(true))
      :add(nn.SpatialMaxPooling(2, 2, 2, 2))
      :add(flat)
      :add(nn.Linear(2 * w * 7 * 7, hidden)):add(nn.BatchNormalization(hidden)):add(nn.ReLU(true))
   if (opt.dropout or 0.3) > 0 then m:add(nn.Dropout(opt.dropout or 0.3)) end
   m:add(nn.Linear(hidden, opt.nClasses or 10))
   return m
end
