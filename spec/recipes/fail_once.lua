-- fail_once.lua: recipes/fashion_mnist.lua as a script, with a failure planted for
-- spec/recipes/restart_spec.lua: the first time any run of it reaches its 5th training step,
-- rank 1 raises (the file $MT_FAIL_ONCE records that it happened, so the restarted job runs
-- through).
require 'moontorch' -- the repository root's loader: lua/ on the path
local Trainer = getmetatable(require 'moontorch.train.trainer').__index
local marker = assert(os.getenv('MT_FAIL_ONCE'), 'set MT_FAIL_ONCE to a file name')
local step, steps = Trainer.step, 0
function Trainer:step(...)
   steps = steps + 1
   local rank = self.dist and self.dist.rank() or 0
   if steps == 5 and rank == 1 and not io.open(marker, 'r') then
      io.open(marker, 'w'):close()
      error('planted failure at step 5', 0)
   end
   return step(self, ...)
end
dofile('recipes/fashion_mnist.lua')
