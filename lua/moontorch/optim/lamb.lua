-- optim.lamb (You et al. 2019, "Large Batch Optimization for Deep Learning"). Per layer l:
--   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
--   u = mhat/(sqrt(vhat) + eps) + wd*w;  trust = ||w||/||u|| (1 if either is 0, at most maxTrust)
--   w = w - lr*trust*u
-- config: learningRate, learningRateDecay, beta1 (0.9), beta2 (0.999), epsilon (1e-6),
-- weightDecay (0.01, decoupled), maxTrust (10; 0 = unclipped), layers / lars_exclude as LARS.
local optim = require 'moontorch.optim'
local T = require 'moontorch.internal'
local C = T.clib
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.lamb'
   local lr, lrd
   config, state, lr, lrd = util.options(config, state)
   local fx, dfdx = util.eval(opfunc, x, name)
   local p, copy = util.master(config, state, x)
   local seg = util.segments(config, state, x, name)
   state.t = state.t or 0
   local m = util.zero_state(state, 'm', p)
   local v = util.zero_state(state, 'v', p)
   local clr = lr / (1 + state.t * lrd)
   state.t = state.t + 1
   T.check(C.mt_lamb_step(p.h, dfdx.h, m.h, v.h, seg.count, seg.off, seg.len, seg.ex, clr, config.beta1 or 0.9,
      config.beta2 or 0.999, config.epsilon or 1e-6, config.weightDecay or 0.01, state.t, config.maxTrust or 10,
      seg.trust, util.gscale(config, name), copy and copy.h or nil), name)
   state.trustRatios = util.trust_table(seg)
   return x, { fx }
end
