-- optim.rmsprop (Tieleman & Hinton 2012): m = alpha*m + (1-alpha)*g^2; x = x - lr*g/(sqrt(m) + eps).
-- config: learningRate (1e-2), alpha (0.99), epsilon (1e-8), weightDecay (0, L2 in the gradient),
-- initialMean (0, the value m starts at). state: m, tmp (sqrt(m) + eps).
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.rmsprop'
   config = config or {}
   state = state or config
   local lr, alpha = config.learningRate or 1e-2, config.alpha or 0.99
   local eps, wd = config.epsilon or 1e-8, config.weightDecay or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   if wd ~= 0 then dfdx = dfdx:clone():add(wd, x) end
   local m, fresh = util.zero_state(state, 'm', x)
   if fresh and (config.initialMean or 0) ~= 0 then m:fill(config.initialMean) end
   m:mul(alpha):addcmul(1 - alpha, dfdx, dfdx)
   local tmp = util.zero_state(state, 'tmp', x)
   tmp:copy(m):sqrt():add(eps)
   x:addcdiv(-lr, dfdx, tmp)
   return x, { fx }
end
