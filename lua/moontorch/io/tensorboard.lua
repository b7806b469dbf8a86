-- tensorboard.lua: scalar logs that TensorBoard reads (csrc/io/tfevents.c writes the files).
--   local tb = require 'moontorch.io.tensorboard'
--   local w = tb.Writer('runs/resnet18')   -- creates the folder (one level) if missing
--   w:scalar('train/loss', loss, step)      -- optional 4th argument: wall time in seconds
--   print(w.path)                           -- runs/resnet18/events.out.tfevents.<secs>.<host>
--   w:close()
-- Every record is flushed as it is written, so a crashed run keeps its curves.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local tb = {}

local Writer = {}
Writer.__index = Writer
tb.Writer = setmetatable({}, {
   __call = function(_, dir)
      if type(dir) ~= 'string' then error('tensorboard.Writer: expected a directory name, got ' .. type(dir), 2) end
      local hp = ffi.new('mt_events*[1]')
      T.check(C.mt_events_open(hp, dir))
      local h = ffi.gc(hp[0], C.mt_events_close)
      return setmetatable({ _h = h, path = ffi.string(C.mt_events_path(h)) }, Writer)
   end,
   __index = Writer,
})

local function integer(x) return type(x) == 'number' and x == math.floor(x) and math.abs(x) < 2 ^ 63 end

function Writer:scalar(tag, value, step, wallTime)
   if self._h == nil then error('tensorboard: ' .. self.path .. ': the writer is closed', 2) end
   if type(tag) ~= 'string' then error('tensorboard.scalar: tag must be a string, got ' .. type(tag), 2) end
   if torch.isTensor(value) and value:nElement() == 1 then value = value:view(1)[1] end
   if type(value) ~= 'number' then
      error(('tensorboard.scalar: value of %s must be a number, got %s'):format(tag, type(value)), 2)
   end
   if not integer(step) then
      error(('tensorboard.scalar: step of %s must be an integer, got %s'):format(tag, tostring(step)), 2)
   end
   if wallTime ~= nil and type(wallTime) ~= 'number' then
      error(('tensorboard.scalar: wall time of %s must be a number, got %s'):format(tag, type(wallTime)), 2)
   end
   if C.mt_events_scalar(self._h, tag, value, step, wallTime or 0) ~= 0 then
      T.raise()
   end
   return self
end

function Writer:close()
   if self._h ~= nil then
      C.mt_events_close(ffi.gc(self._h, nil))
      self._h = nil
   end
end

return tb
