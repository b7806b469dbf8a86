-- optim.adamw: Adam with decoupled weight decay (Loshchilov & Hutter), in PyTorch's form:
--   x = x*(1 - lr*wd); x -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
-- config as optim.adam; weightDecay defaults to 1e-2.
local optim = require 'moontorch.optim'
local torch = require 'moontorch'
local C = torch._C
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.adamw'
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-3
   local lrd = config.learningRateDecay or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   state.t = state.t or 0
   local m = util.zero_state(state, 'm', x)
   local v = util.zero_state(state, 'v', x)
   local clr = lr / (1 + state.t * lrd)
   state.t = state.t + 1
   util.check(C.mt_adam_step(x.h, dfdx.h, m.h, v.h, clr, config.beta1 or 0.9, config.beta2 or 0.999,
      config.epsilon or 1e-8, config.weightDecay or 1e-2, state.t, 1), name)
   return x, { fx }
end
