-- optim.adamax (Kingma & Ba, section 7.1): Adam with the infinity norm.
--   m = b1*m + (1-b1)*g;  u = max(b2*u, |g| + eps);  x = x - lr/(1-b1^t) * m/u
-- config: learningRate (0.002), beta1 (0.9), beta2 (0.999), epsilon (1e-38), weightDecay (0, L2 in
-- the gradient). state: t, m, u. Pure tensor ops, so it runs wherever x lives.
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.adamax'
   config = config or {}
   state = state or config
   local lr = config.learningRate or 0.002
   local beta1, beta2 = config.beta1 or 0.9, config.beta2 or 0.999
   local eps = config.epsilon or 1e-38
   local wd = config.weightDecay or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   -- the gradient is not changed in place: weight decay goes into a copy
   if wd ~= 0 then dfdx = dfdx:clone():add(wd, x) end
   state.t = (state.t or 0) + 1
   local m = util.zero_state(state, 'm', x)
   local u = util.zero_state(state, 'u', x)
   m:mul(beta1):add(1 - beta1, dfdx)
   u:mul(beta2):cmax(dfdx:clone():abs():add(eps))
   x:addcdiv(-lr / (1 - beta1 ^ state.t), m, u)
   return x, { fx }
end
