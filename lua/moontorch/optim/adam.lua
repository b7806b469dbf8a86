-- optim.adam with Torch7's semantics (Kingma & Ba): learningRate (1e-3), learningRateDecay,
-- beta1 (0.9), beta2 (0.999), epsilon (1e-8), weightDecay as L2 in the gradient.
-- state: t (step count), m, v.
-- optim.adamw (Loshchilov & Hutter, PyTorch's form: x = x*(1 - lr*wd) before the Adam update) is
-- the same step with decoupled weight decay, default 1e-2; init.lua builds both from variant().
local optim = require 'moontorch.optim'
local T = require 'moontorch.internal'
local C = T.clib
local util = optim._util

-- An Adam step; decoupled = 1 applies weight decay to x directly (AdamW) instead of the gradient.
local function variant(name, default_wd, decoupled)
   return function(opfunc, x, config, state)
      local lr, lrd
      config, state, lr, lrd = util.options(config, state)
      local fx, dfdx = util.eval(opfunc, x, name)
      local p, copy = util.master(config, state, x)
      state.t = state.t or 0
      local m = util.zero_state(state, 'm', p)
      local v = util.zero_state(state, 'v', p)
      local clr = lr / (1 + state.t * lrd)
      state.t = state.t + 1
      T.check(C.mt_adam_step(p.h, dfdx.h, m.h, v.h, clr, config.beta1 or 0.9, config.beta2 or 0.999,
         config.epsilon or 1e-8, config.weightDecay or default_wd, state.t, decoupled,
         util.gscale(config, name), copy and copy.h or nil), name)
      return x, { fx }
   end
end

return variant
