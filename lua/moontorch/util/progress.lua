-- progress.lua: a one-line progress bar with loss, accuracy, images/s and ETA.
--   local bar = progress.new(nBatches, { title = 'epoch 1' })
--   bar:update(i, { loss = 0.41, acc = 0.87, images = 64 })   -- per batch
--   bar:finish()
-- The loss and accuracy shown are running means, each batch weighted by its weight (its rows:
-- stats.weight, default 1; stats.lossWeight for the loss when fewer rows count there). A bar
-- made with opts.first = k (a resumed epoch) starts at step k of total: its rate and ETA count
-- the steps and images from there.
-- Redraws at most every `interval` seconds (and on the last step) so printing never costs
-- training time; on a non-terminal (a log file) it prints a full line every `logInterval`
-- seconds (default 30) and the final one.
local ffi = require 'ffi'
pcall(ffi.cdef, [[
   struct mt_progress_timespec { long tv_sec; long tv_nsec; };
   int clock_gettime(int clk, struct mt_progress_timespec *ts);
   int isatty(int fd);
]])
local ts = ffi.new('struct mt_progress_timespec')

local progress = {}
progress.__index = progress

function progress.now()
   ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

function progress.format_time(s)
   if s ~= s or s == math.huge then return '--:--' end
   s = math.floor(s + 0.5)
   local h, m = math.floor(s / 3600), math.floor(s / 60) % 60
   if h > 0 then return ('%d:%02d:%02d'):format(h, m, s % 60) end
   return ('%d:%02d'):format(m, s % 60)
end

function progress.new(total, opts)
   opts = opts or {}
   local self = setmetatable({
      total = total, title = opts.title or '', width = opts.width or 24, out = opts.out or io.stdout,
      interval = opts.interval or 0.2, logInterval = opts.logInterval or 30, start = progress.now(),
      last = -math.huge, images = 0, first = opts.first or 0,
      loss_sum = 0, loss_w = 0, acc_sum = 0, acc_w = 0,
   }, progress)
   self.silent = opts.silent
   if opts.tty ~= nil then self.tty = opts.tty
   else self.tty = self.out == io.stdout and ffi.C.isatty(1) == 1 end
   return self
end

-- one line describing step i of total with running means of loss and accuracy
function progress:line(i)
   local elapsed = progress.now() - self.start
   local frac = self.total > 0 and i / self.total or 1
   local filled = math.floor(frac * self.width + 0.5)
   local bar = ('='):rep(math.max(filled - 1, 0)) .. (filled > 0 and (i < self.total and '>' or '=') or '')
   bar = bar .. ('.'):rep(self.width - #bar)
   local ips = elapsed > 0 and self.images / elapsed or 0
   local done = i - self.first
   local eta = done > 0 and elapsed / done * (self.total - i) or math.huge
   local parts = { ('%s [%s] %d/%d'):format(self.title, bar, i, self.total) }
   if self.loss_w > 0 then parts[#parts + 1] = ('loss %.4f'):format(self.loss_sum / self.loss_w) end
   if self.acc_w > 0 then parts[#parts + 1] = ('acc %5.2f%%'):format(100 * self.acc_sum / self.acc_w) end
   parts[#parts + 1] = ('%.0f img/s'):format(ips)
   if i < self.total then parts[#parts + 1] = 'ETA ' .. progress.format_time(eta)
   else parts[#parts + 1] = 'in ' .. progress.format_time(elapsed) end
   return table.concat(parts, '  ')
end

function progress:update(i, stats)
   stats = stats or {}
   local w = stats.weight or 1
   if stats.loss then
      local lw = stats.lossWeight or w
      self.loss_sum, self.loss_w = self.loss_sum + stats.loss * lw, self.loss_w + lw
   end
   if stats.acc then self.acc_sum, self.acc_w = self.acc_sum + stats.acc * w, self.acc_w + w end
   self.images = self.images + (stats.images or 0)
   self.i = i
   local t = progress.now()
   if self.tty and (t - self.last >= self.interval or i >= self.total) then
      self.last = t
      self.out:write('\r', self:line(i), '\027[K')
      self.out:flush()
   elseif not self.tty and not self.silent and i < self.total then
      if self.last == -math.huge then self.last = t end
      if t - self.last >= self.logInterval then
         self.last = t
         self.out:write(self:line(i), '\n')
         self.out:flush()
      end
   end
end

-- mean loss and accuracy over the steps so far, and images/s
function progress:stats()
   local elapsed = progress.now() - self.start
   return { loss = self.loss_w > 0 and self.loss_sum / self.loss_w or 0 / 0,
      acc = self.acc_w > 0 and self.acc_sum / self.acc_w or 0 / 0,
      images_per_sec = elapsed > 0 and self.images / elapsed or 0, seconds = elapsed }
end

function progress:finish()
   if self.tty then self.out:write('\r', self:line(self.i or self.total), '\027[K\n')
   else self.out:write(self:line(self.i or self.total), '\n') end
   self.out:flush()
   return self:stats()
end

return progress
