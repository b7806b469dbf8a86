-- optim.lars: layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017). Per layer l:
--   local_lr = eta * ||w|| / (||g|| + wd*||w|| + epsilon)        (1 if either norm is 0)
--   v = momentum*v + lr*local_lr*(g + wd*w);  w = w - v
-- config: learningRate, learningRateDecay, momentum (0.9), weightDecay, eta (trust
-- coefficient, 0.001), epsilon (0), layers / lars_exclude (see optim/init.lua; excluded parts
-- take plain SGD steps: no trust ratio, no weight decay). state.trustRatios: the last ratios.
local optim = require 'moontorch.optim'
local T = require 'moontorch.internal'
local C = T.clib
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.lars'
   local lr, lrd
   config, state, lr, lrd = util.options(config, state)
   local mom = config.momentum or 0.9
   local fx, dfdx = util.eval(opfunc, x, name)
   local p, copy = util.master(config, state, x)
   local seg = util.segments(config, state, x, name)
   state.evalCounter = state.evalCounter or 0
   local buf, first = nil, false
   if mom ~= 0 then buf, first = util.zero_state(state, 'dfdx', p) end
   local clr = lr / (1 + state.evalCounter * lrd)
   T.check(C.mt_lars_step(p.h, dfdx.h, buf and buf.h or nil, seg.count, seg.off, seg.len, seg.ex, clr, mom,
      config.weightDecay or 0, config.eta or 0.001, config.epsilon or 0, first and 1 or 0, seg.trust,
      util.gscale(config, name), copy and copy.h or nil), name)
   state.trustRatios = util.trust_table(seg)
   state.evalCounter = state.evalCounter + 1
   return x, { fx }
end
