-- optim.GradScaler: dynamic loss scaling for float16 training, with PyTorch's GradScaler
-- semantics (Micikevicius et al. 2018). The loss gradient is multiplied by the scale before
-- backward, so small gradients survive float16; step() then checks every gradient for inf/NaN
-- in one fused pass (mt_grad_check) and either
--   - skips the step (parameters, master weights and optimizer state untouched), counts it and
--     multiplies the scale by backoffFactor (0.5), or
--   - runs the optimizer with config.gradScale = 1/scale (times a clipping factor), so the
--     unscaling happens inside the optimizer's fused pass, before LARS/LAMB trust ratios, and
--     multiplies the scale by growthFactor (2) after growthInterval (2000) clean steps in a row.
-- bfloat16 needs no scaling: dynamic = false keeps the scale at initScale (1 by default then)
-- and still skips steps whose gradients are not finite, so both dtypes take the same path.
--   local scaler = optim.GradScaler{ initScale = 2^16 }
--   local function feval()
--      gradParams:zero()
--      local out = model:forward(x)
--      local loss = criterion:forward(out, y)
--      model:backward(x, scaler:scale(criterion:backward(out, y)))
--      return loss, gradParams
--   end
--   scaler:step(optim.sgd, feval, params, config, optimState)  --> params, {loss}, stepped
-- The scale and the counters live in the optimizer state (lossScale, lossScaleGrowth,
-- skippedSteps, gradNorm), so checkpoints carry them and resume exactly. clip: maximum global
-- gradient norm (of the unscaled gradient); larger gradients are scaled down in the same pass.
local torch = require 'moontorch'
local ffi = require 'ffi'
local T = require 'moontorch.internal'
local C = T.clib

local GradScaler = {}
GradScaler.__index = GradScaler

local NAME = 'optim.GradScaler'

local function positive(o, key, default, min)
   local v = o[key]
   if v == nil then return default end
   if type(v) ~= 'number' or v ~= v or v == math.huge or v <= (min or 0) then
      error(('%s: %s must be a finite number > %g, got %s'):format(NAME, key, min or 0, tostring(v)), 3)
   end
   return v
end

local function new(_, o)
   o = o or {}
   if type(o) ~= 'table' then error(NAME .. ': expected a table of options', 2) end
   local self = setmetatable({}, GradScaler)
   self.dynamic = o.dynamic ~= false
   self.enabled = o.enabled ~= false
   self.initScale = positive(o, 'initScale', self.dynamic and 2 ^ 16 or 1)
   self.growthFactor = positive(o, 'growthFactor', 2, 1)
   self.backoffFactor = positive(o, 'backoffFactor', 0.5)
   if self.backoffFactor >= 1 then error(NAME .. ': backoffFactor must be < 1, got ' .. self.backoffFactor, 2) end
   self.growthInterval = math.floor(positive(o, 'growthInterval', 2000))
   self.clip = o.clip and positive(o, 'clip', nil) or nil
   self._bad = ffi.new('int64_t[1]')
   self._ss = ffi.new('double[1]')
   return self
end

-- One fused pass over a floating tensor: the number of inf/NaN elements and the sum of squares
-- of the finite ones (float64).
function GradScaler.check(t)
   if not torch.isTensor(t) then error(NAME .. '.check: expected a tensor, got ' .. type(t), 2) end
   local bad, ss = ffi.new('int64_t[1]'), ffi.new('double[1]')
   T.check(C.mt_grad_check(t.h, bad, ss), NAME .. '.check')
   return tonumber(bad[0]), ss[0]
end

-- the scale the next backward uses (1 when disabled)
function GradScaler:getScale(state)
   if not self.enabled then return 1 end
   state = state or self._state
   return state and state.lossScale or self.initScale
end

-- gradOutput * scale, in place (the criterion's gradient buffer); returns it
function GradScaler:scale(t)
   local s = self:getScale()
   if s ~= 1 then t:mul(s) end
   return t
end

-- Evaluate feval, check its gradient and take (or skip) the step of optimizer `method`.
-- Returns x, {fx}, and whether the step was taken.
function GradScaler:step(method, feval, x, config, state)
   if type(method) ~= 'function' then error(NAME .. ':step: expected an optim method as argument 1', 2) end
   if type(feval) ~= 'function' then error(NAME .. ':step: expected feval as argument 2', 2) end
   config = config or {}
   state = state or config
   self._state = state
   if self.enabled then
      state.lossScale = state.lossScale or self.initScale
      state.lossScaleGrowth = state.lossScaleGrowth or 0
      state.skippedSteps = state.skippedSteps or 0
   end
   local fx, dfdx = feval(x)
   if not torch.isTensor(dfdx) then
      error(NAME .. ':step: feval must return f and the gradient tensor, got ' .. type(dfdx) .. ' as gradient', 2)
   end
   if not self.enabled then return method(function() return fx, dfdx end, x, config, state), { fx }, true end
   T.check(C.mt_grad_check(dfdx.h, self._bad, self._ss), NAME .. ':step')
   local scale = state.lossScale
   if self._bad[0] > 0 then
      state.skippedSteps = state.skippedSteps + 1
      state.lastSkipped = true
      if self.dynamic then
         state.lossScale = scale * self.backoffFactor
         state.lossScaleGrowth = 0
      end
      return x, { fx }, false
   end
   local gs = 1 / scale
   state.gradNorm = math.sqrt(self._ss[0]) * gs
   if self.clip and state.gradNorm > self.clip then gs = gs * self.clip / state.gradNorm end
   local saved = config.gradScale
   config.gradScale = gs
   local ok, err = pcall(method, function() return fx, dfdx end, x, config, state)
   config.gradScale = saved
   if not ok then error(err, 0) end
   state.lastSkipped = false
   if self.dynamic then
      state.lossScaleGrowth = state.lossScaleGrowth + 1
      if state.lossScaleGrowth >= self.growthInterval then
         state.lossScale = scale * self.growthFactor
         state.lossScaleGrowth = 0
      end
   end
   return x, { fx }, true
end

return setmetatable(GradScaler, { __call = new })
