-- optim.rprop (Riedmiller & Braun 1993, the variant without weight backtracking): each element
-- has its own step size, multiplied by etaplus while the gradient keeps its sign and by etaminus
-- when it flips (then that element does not move this iteration and its gradient is taken as 0);
-- step sizes stay in [stepsizemin, stepsizemax]; x = x - sign(g)*step.
-- config: stepsize (0.1), etaplus (1.2), etaminus (0.5), stepsizemax (50), stepsizemin (1e-6),
-- niter (1: gradient evaluations per call). state: delta (last gradient used), stepsize, sign.
-- Returns x and the list of the niter f values.
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.rprop'
   config = config or {}
   state = state or config
   local step0 = config.stepsize or 0.1
   local etaplus, etaminus = config.etaplus or 1.2, config.etaminus or 0.5
   local smax, smin = config.stepsizemax or 50.0, config.stepsizemin or 1e-6
   local niter = config.niter or 1
   if not (etaplus > 1 and etaminus > 0 and etaminus < 1) then
      error(('%s: need etaplus > 1 and 0 < etaminus < 1, got %g and %g'):format(name, etaplus, etaminus), 2)
   end
   local hfx = {}
   for _ = 1, niter do
      local fx, dfdx = util.eval(opfunc, x, name)
      util.same_size(dfdx, x, name)
      local delta, fresh = util.zero_state(state, 'delta', x)
      local steps = util.zero_state(state, 'stepsize', x)
      if fresh then steps:fill(step0) end
      local sign = util.zero_state(state, 'sign', x)
      -- sign of g * previous g picks the factor: etaplus (>0), etaminus (<0), 1 (0)
      sign:copy(dfdx):cmul(delta):sign()
      local pos, neg = sign:gt(0), sign:lt(0)
      sign:fill(1)
      sign[pos] = etaplus
      sign[neg] = etaminus
      steps:cmul(sign):clamp(smin, smax)
      local g = dfdx:clone()
      g[neg] = 0
      x:addcmul(-1, g:clone():sign(), steps)
      delta:copy(g)
      hfx[#hfx + 1] = fx
   end
   return x, hfx
end
