-- optim.asgd: averaged SGD as in L. Bottou's sgd-2.0:
--   x = (1 - lambda*eta_t)*x - eta_t*g;  ax = ax + mu_t*(x - ax)
--   eta_t = eta0 / (1 + lambda*eta0*t)^alpha;  mu_t = 1/max(1, t - t0)
-- config: eta0 (1e-4), lambda (1e-4), alpha (0.75), t0 (1e6); like Torch7, the defaults are
-- written into config. state: eta_t, mu_t, t, ax, tmp. Returns x, {f(x)}, ax (the averaged x).
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.asgd'
   config = config or {}
   state = state or config
   config.eta0 = config.eta0 or 1e-4
   config.lambda = config.lambda or 1e-4
   config.alpha = config.alpha or 0.75
   config.t0 = config.t0 or 1e6
   state.eta_t = state.eta_t or config.eta0
   state.mu_t = state.mu_t or 1
   state.t = state.t or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   x:mul(1 - config.lambda * state.eta_t):add(-state.eta_t, dfdx)
   local ax = util.zero_state(state, 'ax', x)
   if state.mu_t ~= 1 then
      local tmp = util.zero_state(state, 'tmp', x)
      ax:add(tmp:copy(x):add(-1, ax):mul(state.mu_t))
   else
      ax:copy(x)
   end
   state.t = state.t + 1
   state.eta_t = config.eta0 / (1 + config.lambda * config.eta0 * state.t) ^ config.alpha
   state.mu_t = 1 / math.max(1, state.t - config.t0)
   return x, { fx }, ax
end
