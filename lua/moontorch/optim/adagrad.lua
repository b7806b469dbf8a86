-- optim.adagrad (Duchi et al. 2011): per-element step lr / (sqrt(sum of squared gradients) + 1e-10).
-- config: learningRate (1e-3), learningRateDecay (0, lr/(1 + t*decay)), weightDecay (0, L2 in the
-- gradient). state: evalCounter, paramVariance (the running sum of g^2), paramStd.
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.adagrad'
   config = config or {}
   state = state or config
   local lr, lrd = config.learningRate or 1e-3, config.learningRateDecay or 0
   local wd = config.weightDecay or 0
   state.evalCounter = state.evalCounter or 0
   local fx, dfdx = util.eval(opfunc, x, name)
   util.same_size(dfdx, x, name)
   if wd ~= 0 then dfdx = dfdx:clone():add(wd, x) end
   local clr = lr / (1 + state.evalCounter * lrd)
   local var = util.zero_state(state, 'paramVariance', x)
   var:addcmul(1, dfdx, dfdx)
   local std = util.zero_state(state, 'paramStd', x)
   std:copy(var):sqrt():add(1e-10)
   x:addcdiv(-clr, dfdx, std)
   state.evalCounter = state.evalCounter + 1
   return x, { fx }
end
