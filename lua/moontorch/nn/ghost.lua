-- ghost.lua: nn.utils.ghostBatchNorm, the model-wide switch for ghost batch norm (the slicing
-- itself is nn.BatchNormalization's).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

-- nn.utils.ghostBatchNorm(model, g): every batch norm of model (fused ones included) normalizes
-- training batches of more than g samples in ghost batches of about g (nn.BatchNormalization's
-- header); g = nil or 0 turns it off. Returns model and the number of modules set.
function nn.utils.ghostBatchNorm(model, g)
   if not torch.isTypeOf(model, 'nn.Module') then error('nn.utils.ghostBatchNorm: expected an nn.Module', 2) end
   if g ~= nil and (type(g) ~= 'number' or g < 0 or g ~= math.floor(g)) then
      error('nn.utils.ghostBatchNorm: the ghost batch size must be a non-negative integer, got ' .. tostring(g), 2)
   end
   local n = 0
   model:apply(function(m)
      if torch.isTypeOf(m, 'nn.BatchNormalization') then
         m.ghostBatch = (g or 0) > 0 and g or nil
         n = n + 1
      end
   end)
   return model, n
end
