-- optim.nag: SGD with Nesterov's accelerated gradient in the form of Sutskever et al. (ICML 2013):
-- the parameters first move by the previous step times momentum, the gradient is taken there,
--   v = mom*v - clr*g;  x = x - clr*g   (so after both moves x = x_old + mom*v_old - clr*g)
-- config: learningRate (1e-3), learningRateDecay (0), weightDecay (0, L2 in the gradient),
-- momentum (0.9, must be > 0), learningRates (per-element factors). state: evalCounter, dfdx (v),
-- deltaParameters.
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.nag'
   config = config or {}
   state = state or config
   local lr, lrd = config.learningRate or 1e-3, config.learningRateDecay or 0
   local wd, mom = config.weightDecay or 0, config.momentum or 0.9
   local lrs = config.learningRates
   if not (mom > 0) then -- luacheck: ignore 581 (rejects NaN)
      error(('%s: momentum must be positive for Nesterov accelerated gradient, got %s'):format(name, tostring(mom)), 2)
   end
   if lrs ~= nil then util.same_size(lrs, x, name, 'learningRates') end
   state.evalCounter = state.evalCounter or 0
   local v = state.dfdx
   if v then x:add(mom, v) end
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   if wd ~= 0 then dfdx = dfdx:clone():add(wd, x) end
   local clr = lr / (1 + state.evalCounter * lrd)
   if not v then v = util.zero_state(state, 'dfdx', x) else v:mul(mom) end
   local step = dfdx
   if lrs then
      step = util.zero_state(state, 'deltaParameters', x)
      step:copy(lrs):cmul(dfdx)
   end
   x:add(-clr, step)
   v:add(-clr, step)
   state.evalCounter = state.evalCounter + 1
   return x, { fx }
end
