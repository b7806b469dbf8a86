-- loader.lua: batches from a dataset, decoded and augmented by C threads ahead of the trainer.
--   local loader = data.Loader(dataset, data.Transform{train = true}, {batchSize = 256})
--   for input, target, info in loader:run(epoch) do ... end
-- input: count x 3 x H x W (or NHWC) of the transform's dtype, target: LongTensor of 1-based
-- classes, info: {epoch, index (1-based), nbatches, count, skipped, wait (seconds blocked)}.
-- Every rank draws the same permutation from (seed, epoch) and takes its slice of each global
-- batch, so `world` ranks with batchSize B see what one rank with batch world*B would see.
-- Batches are fresh tensors: keep them as long as you like.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

pcall(ffi.cdef, 'long sysconf(int name);')

local M = {}

-- online CPU cores (_SC_NPROCESSORS_ONLN is 84 on Linux)
function M.cores()
   local ok, n = pcall(function() return tonumber(ffi.C.sysconf(84)) end)
   return (ok and n and n > 0) and n or 1
end

local defaults = {
   batchSize = 32, threads = false, prefetch = 2, shuffle = true, dropLast = false, rank = 0, world = 1,
   partitioned = false, skipBad = true, pinned = false, seed = 1,
}


local Loader = {}
Loader.__index = Loader

function M.Loader(dataset, transform, opts)
   local op = 'data.Loader'
   if type(dataset) ~= 'table' or not dataset.h then error(op .. ': argument 1 must be a dataset', 2) end
   if type(transform) ~= 'table' or not transform.c then error(op .. ': argument 2 must be a data.Transform', 2) end
   opts = opts or {}
   for k in pairs(opts) do
      if defaults[k] == nil then error(op .. ': unknown option "' .. tostring(k) .. '"', 2) end
   end
   local o = {}
   for k, v in pairs(defaults) do
      if opts[k] == nil then o[k] = v else o[k] = opts[k] end
   end
   -- default: the cores the trainer's own threads leave free, at least one
   if not o.threads then o.threads = math.max(1, M.cores() - torch.getnumthreads()) end
   local c = ffi.new('mt_loader_opts')
   c.batch_size, c.threads, c.prefetch = o.batchSize, o.threads, o.prefetch
   c.shuffle, c.drop_last, c.partitioned = o.shuffle and 1 or 0, o.dropLast and 1 or 0, o.partitioned and 1 or 0
   c.skip_bad, c.pinned = o.skipBad and 1 or 0, o.pinned and 1 or 0
   c.rank, c.world, c.seed = o.rank, o.world, o.seed
   local p = ffi.new('mt_loader *[1]')
   if C.mt_loader_new(p, dataset.h, transform.c, c) ~= 0 then T.raise(op) end
   local self = setmetatable({ dataset = dataset, transform = transform, opts = o }, Loader)
   self.h = ffi.gc(p[0], C.mt_loader_free)
   self.info = ffi.new('mt_batch_info')
   self.inp, self.tgp = ffi.new('mt_tensor *[1]'), ffi.new('mt_tensor *[1]')
   return self
end

function Loader:nbatches() return tonumber(C.mt_loader_nbatches(self.h)) end

-- begin epoch (>= 1) at batch `first` (1-based; for resuming mid-epoch)
function Loader:start(epoch, first)
   first = first or 1
   if C.mt_loader_start(self.h, epoch, first - 1) ~= 0 then T.raise('Loader:start') end
end

-- the next batch of the epoch, or nil after the last
function Loader:next()
   local info = self.info
   if C.mt_loader_next(self.h, self.inp, self.tgp, info) ~= 0 then T.raise('Loader:next') end
   if self.inp[0] == nil then return nil end
   local input, target = T.wrap_handle(self.inp[0]), T.wrap_handle(self.tgp[0])
   return input, target, {
      epoch = tonumber(info.epoch), index = tonumber(info.index) + 1, nbatches = tonumber(info.nbatches),
      count = tonumber(info.count), skipped = tonumber(info.skipped), wait = info.wait_seconds,
   }
end

function Loader:run(epoch, first)
   self:start(epoch, first)
   return function() return self:next() end
end

-- messages for samples skipped since the last call (file name and reason), oldest first
function Loader:errors()
   local list = {}
   while true do
      local s = C.mt_loader_take_error(self.h)
      if s == nil then break end
      list[#list + 1] = ffi.string(s)
   end
   return list
end

-- Normalise a uint8 batch (N x 3 x H x W, or N x H x W x 3 with layout 'NHWC') into float:
-- (x / 255 - mean) / std per channel, on whatever device x is. Loading uint8 and normalising
-- on the GPU moves a quarter of the bytes over PCIe that float batches would.
local IMAGENET_MEAN, IMAGENET_STD = { 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 }
function M.normalize(x, mean, std, layout, out)
   mean, std, layout = mean or IMAGENET_MEAN, std or IMAGENET_STD, layout or 'NCHW'
   if not torch.isTensor(x) or x:dim() ~= 4 then error('data.normalize: expected a 4-d batch as argument 1', 2) end
   local cdim = layout == 'NHWC' and 4 or (layout == 'NCHW' and 2 or nil)
   if not cdim then error('data.normalize: layout must be NCHW or NHWC, got ' .. tostring(layout), 2) end
   if x:size(cdim) ~= 3 then
      error(('data.normalize: expected 3 channels in dimension %d of a %s batch, got %d'):format(cdim, layout,
         x:size(cdim)), 2)
   end
   out = out or x:float()
   if out ~= x then out:copy(x) end
   local shape = { 1, 1, 1, 1 }
   shape[cdim] = 3
   local scale, shift = torch.FloatTensor(3), torch.FloatTensor(3)
   for c = 1, 3 do
      scale[c] = 1 / (255 * std[c])
      shift[c] = -mean[c] / std[c]
   end
   if x:type():find('Cuda') then scale, shift = scale:cuda(), shift:cuda() end
   scale, shift = scale:view(unpack(shape)):expandAs(out), shift:view(unpack(shape)):expandAs(out)
   return out:cmul(scale):add(shift)
end

function Loader:free()
   if self.h then
      C.mt_loader_free(ffi.gc(self.h, nil))
      self.h = nil
   end
end

return M
