-- optim.schedule: learning-rate schedules as plain functions of a step counter t (an epoch or
-- an iteration, counted from 0 as PyTorch does: pass epoch - 1 for Torch's 1-based epochs):
--   config.learningRate = sched(t)
-- Schedules compose: optim.schedule.warmup(5, optim.schedule.cosine(0.1, 85)).
-- Two kinds of warm-up: warmup() starts the wrapped schedule after it (its clock is shifted
-- by n); warmupOver() lays the ramp over the schedule's own clock, so step decays stay at the
-- epochs they name (fb.resnet.torch, Goyal et al.).
local S = {}

local function num(v, what, fn, min)
   if type(v) ~= 'number' or v ~= v or (min and v < min) then
      error(('optim.schedule.%s: %s must be a number%s, got %s'):format(fn, what, min and (' >= ' .. min) or '',
         tostring(v)), 3)
   end
   return v
end

local function counter(t, fn)
   if type(t) ~= 'number' or t ~= t or t < 0 then
      error(('optim.schedule.%s: step counter must be a number >= 0, got %s'):format(fn, tostring(t)), 3)
   end
   return t
end

-- a schedule given as a number is a constant one
local function as_schedule(s, fn)
   if type(s) == 'number' then return function() return s end end
   if type(s) ~= 'function' then
      error(('optim.schedule.%s: expected a schedule function or a number, got %s'):format(fn, type(s)), 3)
   end
   return s
end

function S.constant(lr)
   num(lr, 'learning rate', 'constant')
   return function(t) counter(t, 'constant') return lr end
end

-- lr * gamma^floor(t / stepSize)
function S.step(lr, stepSize, gamma)
   num(lr, 'learning rate', 'step'); num(stepSize, 'stepSize', 'step', 1)
   gamma = num(gamma or 0.1, 'gamma', 'step')
   return function(t) return lr * gamma ^ math.floor(counter(t, 'step') / stepSize) end
end

-- lr * gamma^(number of milestones <= t)
function S.multistep(lr, milestones, gamma)
   num(lr, 'learning rate', 'multistep')
   if type(milestones) ~= 'table' then error('optim.schedule.multistep: milestones must be a list of numbers', 2) end
   for i, m in ipairs(milestones) do num(m, 'milestone ' .. i, 'multistep', 0) end
   gamma = num(gamma or 0.1, 'gamma', 'multistep')
   return function(t)
      counter(t, 'multistep')
      local k = 0
      for _, m in ipairs(milestones) do if t >= m then k = k + 1 end end
      return lr * gamma ^ k
   end
end

-- cosine annealing from lr to minLr over tMax steps, then minLr
function S.cosine(lr, tMax, minLr)
   num(lr, 'learning rate', 'cosine'); num(tMax, 'tMax', 'cosine', 1)
   minLr = num(minLr or 0, 'minLr', 'cosine')
   return function(t)
      t = math.min(counter(t, 'cosine'), tMax)
      return minLr + (lr - minLr) * (1 + math.cos(math.pi * t / tMax)) / 2
   end
end

-- polynomial decay: minLr + (lr - minLr) * (1 - t/tMax)^power, then minLr
function S.polynomial(lr, tMax, power, minLr)
   num(lr, 'learning rate', 'polynomial'); num(tMax, 'tMax', 'polynomial', 1)
   power = num(power or 1, 'power', 'polynomial', 0)
   minLr = num(minLr or 0, 'minLr', 'polynomial')
   return function(t)
      t = math.min(counter(t, 'polynomial'), tMax)
      return minLr + (lr - minLr) * (1 - t / tMax) ^ power
   end
end

-- linear warm-up over n steps towards the wrapped schedule's first value:
-- t < n: sched(0) * (t+1)/(n+1); afterwards sched(t - n), so the wrapped schedule starts
-- where the warm-up ends.
function S.warmup(n, sched)
   num(n, 'warm-up length', 'warmup', 0)
   sched = as_schedule(sched, 'warmup')
   return function(t)
      counter(t, 'warmup')
      if t < n then return sched(0) * (t + 1) / (n + 1) end
      return sched(t - n)
   end
end

-- linear warm-up over the first n steps of sched's own clock: t < n: sched(n) * (t+1)/(n+1),
-- then sched(t)
function S.warmupOver(n, sched)
   num(n, 'warm-up length', 'warmupOver', 0)
   sched = as_schedule(sched, 'warmupOver')
   return function(t)
      counter(t, 'warmupOver')
      if t < n then return sched(n) * (t + 1) / (n + 1) end
      return sched(t)
   end
end

return S
