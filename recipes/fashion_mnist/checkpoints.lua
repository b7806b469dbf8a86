-- fashion_mnist/checkpoints.lua: what recipes/fashion_mnist.lua's checkpoints hold besides the
-- harness's training state (moontorch.train.state), and which ones -resume accepts.
local precision = require 'moontorch.train.precision'

local M = {}
M.FORMAT = 'moontorch fashion_mnist 2'

-- the run's description saved with every checkpoint
function M.meta(opt)
   return { seed = opt.seed, optimizer = opt.optimizer, precision = opt.precision, fuse = opt.fuse,
      batchSize = opt.batchSize }
end

-- refuse a checkpoint of a model with another module list (-fuse)
function M.check(opt)
   return function(meta, path)
      local mismatch = precision.fuseMismatch(meta, opt)
      if mismatch then error(path .. ': ' .. mismatch, 0) end
   end
end

return M
