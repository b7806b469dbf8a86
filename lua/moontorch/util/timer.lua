-- timer.lua: torch.Timer (Torch7's timer.md) and torch.tic/toc.
--   local timer = torch.Timer()      -- counts from now
--   ... ; timer:stop() ; ... ; timer:resume()
--   local t = timer:time()           -- { real =, user =, sys = } seconds, stopped spans excluded
-- real is a monotonic clock (wall-clock steps do not count); user and sys come from getrusage,
-- so they add up all the threads of the process, as timer.md says.
local ffi = require 'ffi'
local class = require 'moontorch.class'

-- Our own struct and function names (bound to the libc symbols with asm labels), so that other
-- modules may declare clock_gettime/getrusage with their own struct types.
pcall(ffi.cdef, [[
   struct mt_timer_timespec { long tv_sec; long tv_nsec; };
   struct mt_timer_rusage { long utime_sec, utime_usec, stime_sec, stime_usec; long rest[14]; };
   int mt_timer_clock_gettime(int clk, struct mt_timer_timespec *ts) __asm__("clock_gettime");
   int mt_timer_getrusage(int who, void *usage) __asm__("getrusage");
]])
assert(ffi.os ~= 'Windows', 'torch.Timer: needs clock_gettime and getrusage (POSIX)')
if ffi.os == 'OSX' then -- darwin's struct timeval has an int tv_usec, padded to 16 bytes too
   pcall(ffi.cdef, [[struct mt_timer_tv { long sec; int usec; };
      struct mt_timer_rusage_osx { struct mt_timer_tv u, s; long rest[14]; };]])
end

local clock_gettime, getrusage = ffi.C.mt_timer_clock_gettime, ffi.C.mt_timer_getrusage
local CLOCK_MONOTONIC = ffi.os == 'OSX' and 6 or 1
local ts = ffi.new('struct mt_timer_timespec')
local ru = ffi.new(ffi.os == 'OSX' and 'struct mt_timer_rusage_osx' or 'struct mt_timer_rusage')

local function real_now()
   clock_gettime(CLOCK_MONOTONIC, ts)
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- user and sys CPU seconds of the whole process (RUSAGE_SELF)
local function cpu_now()
   getrusage(0, ru)
   if ffi.os == 'OSX' then
      return tonumber(ru.u.sec) + tonumber(ru.u.usec) * 1e-6, tonumber(ru.s.sec) + tonumber(ru.s.usec) * 1e-6
   end
   return tonumber(ru.utime_sec) + tonumber(ru.utime_usec) * 1e-6,
      tonumber(ru.stime_sec) + tonumber(ru.stime_usec) * 1e-6
end

return function(torch)
   local Timer = class('torch.Timer', nil, torch)

   local function now() local u, s = cpu_now() return real_now(), u, s end

   function Timer:__init()
      self.totalReal, self.totalUser, self.totalSys = 0, 0, 0
      self.running = true
      self.startReal, self.startUser, self.startSys = now()
   end

   -- Zero the accumulated time; a running timer counts again from now, a stopped one stays stopped.
   function Timer:reset()
      self.totalReal, self.totalUser, self.totalSys = 0, 0, 0
      if self.running then self.startReal, self.startUser, self.startSys = now() end
      return self
   end

   -- Bank the time counted since the last start.
   function Timer:stop()
      if self.running then
         local r, u, s = now()
         self.totalReal = self.totalReal + (r - self.startReal)
         self.totalUser = self.totalUser + (u - self.startUser)
         self.totalSys = self.totalSys + (s - self.startSys)
         self.running = false
      end
      return self
   end

   function Timer:resume()
      if not self.running then
         self.startReal, self.startUser, self.startSys = now()
         self.running = true
      end
      return self
   end

   function Timer:time()
      local r, u, s = self.totalReal, self.totalUser, self.totalSys
      if self.running then
         local nr, nu, ns = now()
         r, u, s = r + (nr - self.startReal), u + (nu - self.startUser), s + (ns - self.startSys)
      end
      return { real = r, user = u, sys = s }
   end

   function Timer:__tostring__()
      local t = self:time()
      return ('torch.Timer (%s): real %.6fs user %.6fs sys %.6fs'):format(
         self.running and 'running' or 'stopped', t.real, t.user, t.sys)
   end

   -- Torch7's torch.tic()/torch.toc(t): a real-time stamp and the seconds since it.
   function torch.tic() return real_now() end
   function torch.toc(t)
      if type(t) ~= 'number' then error('torch.toc: expected the number torch.tic() returned, got ' .. type(t), 2) end
      return real_now() - t
   end
end
