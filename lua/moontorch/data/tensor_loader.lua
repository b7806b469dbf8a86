-- data.TensorLoader: the batches of a dataset held in memory as two tensors, with the
-- loader's interface (nbatches, run, errors, free), for train.Trainer and any loop.
--   local src = data.TensorLoader(images, labels, { batchSize = 64, shuffle = true, flip = true,
--                                                   seed = 1, dropLast = true })
--   for input, target, info in src:run(epoch, firstBatch) do ... end     -- info.count: rows
-- x holds the samples along its first dimension (N x ..., any tensor type), y their N labels.
-- Without shuffle the batches are views of x and y in order. With shuffle, run(epoch) draws
-- the epoch's order from the global generator seeded by (seed, epoch), and each batch is
-- gathered into buffers reused by the next one; flip then mirrors each sample along its last
-- dimension (image width) with probability 1/2, drawn from the global generator batch by batch,
-- so a checkpoint that keeps the generator's state resumes with the same flips. With world > 1
-- (rank 0..world-1) every rank draws the same order and flips and keeps rows
-- [floor(len*rank/world), floor(len*(rank+1)/world)) of each batch of len rows.
local torch = require 'moontorch'

local TensorLoader = {}
TensorLoader.__index = TensorLoader

local NAME = 'data.TensorLoader'
local DEFAULTS = { batchSize = 32, shuffle = false, flip = false, seed = 1, dropLast = false, rank = 0, world = 1 }

function TensorLoader:nbatches() return self.nb end
function TensorLoader:errors() return {} end
function TensorLoader:free() end

-- batches first..nbatches() of epoch (>= 1); the order is drawn here, at the call
function TensorLoader:run(epoch, first)
   local o, x, y, n, bs = self.o, self.x, self.y, self.n, self.o.batchSize
   local perm
   if o.shuffle then
      torch.manualSeed(o.seed * 1000003 + epoch)
      perm = torch.randperm(n):long()
   end
   local b = (first or 1) - 1
   return function()
      b = b + 1
      if b > self.nb then return nil end
      local start = (b - 1) * bs + 1
      local len = math.min(bs, n - start + 1)
      -- this rank's part of the batch: [lo, hi) of its len rows
      local lo, hi = math.floor(len * o.rank / o.world), math.floor(len * (o.rank + 1) / o.world)
      start, len = start + lo, hi - lo
      local info = { epoch = epoch, index = b, nbatches = self.nb, count = len }
      if not perm then return x:narrow(1, start, len), y:narrow(1, start, len), info end
      local ids = perm:narrow(1, start, len)
      local xb, yb = self.xb:narrow(1, 1, len), self.yb:narrow(1, 1, len)
      torch.index(xb, x, 1, ids)
      torch.index(yb, y, 1, ids)
      if o.flip then
         local flips = torch.rand(bs):narrow(1, lo + 1, len) -- every rank draws the whole batch's
         local flipped = xb:index(xb:dim(), self.rev)
         for i = 1, len do if flips[i] < 0.5 then xb[i]:copy(flipped[i]) end end
      end
      return xb, yb, info
   end
end

local function int(v, what, min)
   if type(v) ~= 'number' or v ~= math.floor(v) or v < min then
      error(('%s: %s must be an integer >= %d, got %s'):format(NAME, what, min, tostring(v)), 3)
   end
   return v
end

-- a new tensor of t's type
local function like(t, size) return torch[torch.type(t):match('^torch%.(%w+)$')](torch.LongStorage(size)) end

return function(x, y, opts)
   if not torch.isTensor(x) or not torch.isTensor(y) then error(NAME .. ': expected the samples and labels', 2) end
   if x:dim() < 1 or y:dim() ~= 1 or x:size(1) ~= y:size(1) then
      error(('%s: %d samples but %d labels'):format(NAME, x:dim() > 0 and x:size(1) or 0, y:nElement()), 2)
   end
   opts = opts or {}
   local o = {}
   for k in pairs(opts) do
      if DEFAULTS[k] == nil then error(('%s: unknown option "%s"'):format(NAME, tostring(k)), 2) end
   end
   for k, v in pairs(DEFAULTS) do if opts[k] == nil then o[k] = v else o[k] = opts[k] end end
   int(o.batchSize, 'batchSize', 1)
   int(o.world, 'world', 1)
   if int(o.rank, 'rank', 0) >= o.world then error(('%s: rank %d of %d ranks'):format(NAME, o.rank, o.world), 2) end
   local self = setmetatable({ x = x, y = y, n = x:size(1), o = o }, TensorLoader)
   self.nb = o.dropLast and math.floor(self.n / o.batchSize) or math.ceil(self.n / o.batchSize)
   if o.shuffle then
      local size = x:size():totable()
      size[1] = o.batchSize
      self.xb, self.yb = like(x, size), like(y, { o.batchSize })
      local w = size[#size]
      self.rev = torch.LongTensor(w)
      for i = 1, w do self.rev[i] = w + 1 - i end
   end
   return self
end
