-- optim.lbfgs: limited-memory BFGS after minFunc (M. Schmidt). One call runs up to maxIter
-- iterations. Without config.lineSearch each iteration takes a fixed step learningRate along the
-- L-BFGS direction (the first one scaled by min(1, 1/|g|_1)); with one (e.g. optim.lswolfe) the
-- step starts there and the line search picks it.
-- config: maxIter (20), maxEval (1.25*maxIter), tolFun (1e-5: stop when |g|_1 <= tolFun),
-- tolX (1e-9: stop when |t*d|_1, |f - f_old| or the directional derivative say no progress),
-- nCorrection (100: history length), lineSearch, lineSearchOptions, learningRate (1), verbose.
-- state (kept across calls): funcEval, nIter, d, t, old_dirs, old_stps, Hdiag, g_old, f_old.
-- Returns x, the f values (f[1] before any step, f[#f] at x), and the evaluations of this call.
local optim = require 'moontorch.optim'
local util = optim._util

return function(opfunc, x, config, state)
   local name = 'optim.lbfgs'
   config = config or {}
   state = state or config
   local maxIter = tonumber(config.maxIter) or 20
   local maxEval = tonumber(config.maxEval) or maxIter * 1.25
   local tolFun, tolX = config.tolFun or 1e-5, config.tolX or 1e-9
   local nCorrection = config.nCorrection or 100
   local lineSearch, lsOpts = config.lineSearch, config.lineSearchOptions
   local lr = config.learningRate or 1
   local function verbose(...) if config.verbose then print('<optim.lbfgs> ', ...) end end
   if lineSearch ~= nil and type(lineSearch) ~= 'function' then
      error(('%s: config.lineSearch must be a function (e.g. optim.lswolfe), got %s'):format(name, type(lineSearch)), 2)
   end
   state.funcEval = state.funcEval or 0
   state.nIter = state.nIter or 0

   local f, g = util.eval(opfunc, x, name)
   util.same_size(g, x, name)
   local f_hist = { f }
   local currentFuncEval = 1
   state.funcEval = state.funcEval + 1
   if g:clone():abs():sum() <= tolFun then
      verbose('optimality condition below tolFun')
      return x, f_hist, currentFuncEval
   end

   local d, t = state.d, state.t
   local old_dirs, old_stps, Hdiag = state.old_dirs, state.old_stps, state.Hdiag
   local g_old, f_old = state.g_old, state.f_old
   local nIter = 0
   while nIter < maxIter do
      nIter = nIter + 1
      state.nIter = state.nIter + 1
      if state.nIter == 1 then
         d = g:clone():mul(-1)
         old_dirs, old_stps, Hdiag = {}, {}, 1
      else
         -- update the memory with s = t*d (the last step) and y = g - g_old
         local y = g:clone():add(-1, g_old)
         local s = d:clone():mul(t)
         local ys = y:dot(s)
         if ys > 1e-10 then
            if #old_dirs == nCorrection then
               table.remove(old_dirs, 1)
               table.remove(old_stps, 1)
            end
            old_dirs[#old_dirs + 1] = s
            old_stps[#old_stps + 1] = y
            Hdiag = ys / y:dot(y)
         end
         -- two-loop recursion: d = -H*g with H the L-BFGS inverse Hessian estimate
         local k, ro, al = #old_dirs, {}, {}
         for i = 1, k do ro[i] = 1 / old_stps[i]:dot(old_dirs[i]) end
         local q = g:clone():mul(-1)
         for i = k, 1, -1 do
            al[i] = old_dirs[i]:dot(q) * ro[i]
            q:add(-al[i], old_stps[i])
         end
         d = q:mul(Hdiag)
         for i = 1, k do
            local be = old_stps[i]:dot(d) * ro[i]
            d:add(al[i] - be, old_dirs[i])
         end
      end
      g_old = g_old or g:clone()
      g_old:copy(g)
      f_old = f

      local gtd = g:dot(d)
      if gtd > -tolX then break end -- not a descent direction any more
      if state.nIter == 1 then
         t = math.min(1, 1 / g:clone():abs():sum()) * lr
      else
         t = lr
      end
      local lsFuncEval = 0
      if lineSearch then
         f, g, x, t, lsFuncEval = lineSearch(opfunc, x, t, d, f, g, gtd, lsOpts)
         f_hist[#f_hist + 1] = f
      else
         x:add(t, d)
         -- in the last iteration f is not evaluated again (no use for it in a stochastic setting)
         if nIter ~= maxIter then
            f, g = util.eval(opfunc, x, name)
            lsFuncEval = 1
            f_hist[#f_hist + 1] = f
         end
      end
      currentFuncEval = currentFuncEval + lsFuncEval
      state.funcEval = state.funcEval + lsFuncEval

      if nIter == maxIter then verbose('reached max number of iterations') break end
      if currentFuncEval >= maxEval then verbose('max nb of function evals') break end
      if g:clone():abs():sum() <= tolFun then verbose('optimality condition below tolFun') break end
      if d:clone():mul(t):abs():sum() <= tolX then verbose('step size below tolX') break end
      if math.abs(f - f_old) < tolX then verbose('function value changing less than tolX') break end
   end
   state.old_dirs, state.old_stps, state.Hdiag = old_dirs, old_stps, Hdiag
   state.g_old, state.f_old, state.t, state.d = g_old, f_old, t, d
   return x, f_hist, currentFuncEval
end
