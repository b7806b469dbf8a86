-- optim.adadelta (Zeiler 2012, arXiv:1212.5701): no learning rate; the step is
--   v = rho*v + (1-rho)*g^2;  delta = sqrt(acc + eps)/sqrt(v + eps) * g;  x = x - delta
--   acc = rho*acc + (1-rho)*delta^2
-- config: rho (0.9), eps (1e-6), weightDecay (0, L2 in the gradient).
-- state: evalCounter, paramVariance (v), paramStd, delta, accDelta (acc).
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.adadelta'
   config = config or {}
   state = state or config
   local rho, eps = config.rho or 0.9, config.eps or 1e-6
   local wd = config.weightDecay or 0
   state.evalCounter = state.evalCounter or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   if wd ~= 0 then dfdx = dfdx:clone():add(wd, x) end
   local var = util.zero_state(state, 'paramVariance', x)
   local std = util.zero_state(state, 'paramStd', x)
   local delta = util.zero_state(state, 'delta', x)
   local acc = util.zero_state(state, 'accDelta', x)
   var:mul(rho):addcmul(1 - rho, dfdx, dfdx)
   std:copy(var):add(eps):sqrt()
   delta:copy(acc):add(eps):sqrt():cdiv(std):cmul(dfdx)
   x:add(-1, delta)
   acc:mul(rho):addcmul(1 - rho, delta, delta)
   state.evalCounter = state.evalCounter + 1
   return x, { fx }
end
