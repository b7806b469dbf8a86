-- data.Synthetic: random batches with the Loader's interface, for throughput runs and tests.
--   local src = data.Synthetic{ n = 1281167, batchSize = 256, shape = {3, 224, 224},
--                               nClasses = 1000, device = 'cuda', seed = 1, dropLast = true }
--   for input, target, info in src:run(epoch, firstBatch) do ... end
-- Images are N(0, 1) and labels uniform in 1..nClasses, drawn on the device into buffers
-- reused by every batch (a batch is valid until the next one). Batch b of epoch e comes from
-- the generator seeded by (seed, e, b) alone, so starting an epoch at any batch (a resume
-- mid-epoch) gives the batches of an uninterrupted epoch. The draws reseed the global
-- generator: callers that need its stream save and restore it (moontorch.train does).
local torch = require 'moontorch'

local Synthetic = {}
Synthetic.__index = Synthetic

local function int(v, what, min)
   if type(v) ~= 'number' or v ~= math.floor(v) or v < min then
      error(('data.Synthetic: %s must be an integer >= %d, got %s'):format(what, min, tostring(v)), 3)
   end
   return v
end

function Synthetic:nbatches() return self.nb end

-- batches first..nbatches() of epoch (>= 1)
function Synthetic:run(epoch, first)
   local b = (first or 1) - 1
   return function()
      b = b + 1
      if b > self.nb then return nil end
      torch.manualSeed((self.seed * 1000003 + epoch) * 1000003 + b)
      local count = math.min(self.bs, self.n - (b - 1) * self.bs)
      local x, y = self.x:narrow(1, 1, count), self.y:narrow(1, 1, count)
      x:normal()
      y:random(1, self.nClasses)
      return x, y, { epoch = epoch, index = b, nbatches = self.nb, count = count, skipped = 0, wait = 0 }
   end
end

function Synthetic:errors() return {} end
function Synthetic:free() end

return function(o)
   if type(o) ~= 'table' then error('data.Synthetic: expected a table of options', 2) end
   local self = setmetatable({ n = int(o.n, 'n', 1), bs = int(o.batchSize, 'batchSize', 1),
      nClasses = int(o.nClasses, 'nClasses', 1), seed = int(o.seed or 1, 'seed', 0) }, Synthetic)
   if type(o.shape) ~= 'table' or #o.shape == 0 then error('data.Synthetic: shape must be a list of sizes', 2) end
   self.nb = o.dropLast and math.floor(self.n / self.bs) or math.ceil(self.n / self.bs)
   local size = torch.LongStorage({ self.bs, unpack(o.shape) })
   self.x, self.y = torch.FloatTensor(size), torch.LongTensor(self.bs)
   if o.device == 'cuda' then self.x, self.y = self.x:cuda(), self.y:cuda() end
   return self
end
