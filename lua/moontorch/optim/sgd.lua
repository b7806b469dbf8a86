-- optim.sgd with Torch7's semantics: learningRate, learningRateDecay, weightDecay, momentum,
-- dampening (defaults to momentum), nesterov (needs momentum > 0 and dampening 0),
-- learningRates / weightDecays (per-element tensors). The momentum buffer starts at the first
-- gradient. state.evalCounter counts steps. Half parameters get an fp32 master (init.lua);
-- learningRates / weightDecays then have the master's dtype.
local optim = require 'moontorch.optim'
local T = require 'moontorch.internal'
local C = T.clib
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.sgd'
   local lr, lrd
   config, state, lr, lrd = util.options(config, state)
   local wd = config.weightDecay or 0
   local mom = config.momentum or 0
   local damp = config.dampening or mom
   local nesterov = config.nesterov or false
   if nesterov and not (mom > 0 and damp == 0) then
      error(('%s: Nesterov momentum requires a momentum > 0 and zero dampening (momentum %g, dampening %g)'):format(
         name, mom, damp), 2)
   end
   local fx, dfdx = util.eval(opfunc, x, name)
   local p, copy = util.master(config, state, x)
   state.evalCounter = state.evalCounter or 0
   local buf, first = nil, false
   if mom ~= 0 then buf, first = util.zero_state(state, 'dfdx', p) end
   local lrs = config.learningRates and util.handle(config.learningRates, name, 'learningRates') or nil
   local wds = config.weightDecays and util.handle(config.weightDecays, name, 'weightDecays') or nil
   local clr = lr / (1 + state.evalCounter * lrd)
   T.check(C.mt_sgd_step(p.h, dfdx.h, buf and buf.h or nil, lrs, wds, clr, mom, damp, wd, nesterov and 1 or 0,
      first and 1 or 0, util.gscale(config, name), copy and copy.h or nil), name)
   state.evalCounter = state.evalCounter + 1
   return x, { fx }
end
