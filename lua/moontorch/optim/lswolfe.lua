-- optim.lswolfe(opfunc, x, t, d, f, g, gtd, options): a line search along d from x that meets the
-- strong Wolfe conditions (minFunc's WolfeLineSearch with cubic interpolation): bracket a step,
-- then zoom in on it. x is moved in place to x + t*d. The line search for optim.lbfgs
-- (config.lineSearch = optim.lswolfe, config.lineSearchOptions = options).
-- options: c1 (1e-4, sufficient decrease), c2 (0.9, curvature), tolX (1e-9, smallest bracket
-- progress), maxIter (20), verbose. Returns f_new, g_new, x, t, lsFuncEval.
require 'moontorch.optim'
local polyinterp = require 'moontorch.optim.polyinterp'

return function(opfunc, x, t, d, f, g, gtd, options)
   options = options or {}
   local c1, c2 = options.c1 or 1e-4, options.c2 or 0.9
   local tolX, maxIter = options.tolX or 1e-9, options.maxIter or 20
   local function verbose(...) if options.verbose then print('<optim.lswolfe> ', ...) end end
   local abs = math.abs
   local x_init = x:clone()
   -- opfunc may hand back the same gradient buffer each time: keep copies
   local function eval_at(step)
      x:copy(x_init):add(step, d)
      local fn, gn = opfunc(x)
      gn = gn:clone()
      return fn, gn, gn:dot(d)
   end
   local f_new, g_new, gtd_new = eval_at(t)
   local lsFuncEval = 1
   -- bracket phase: br = list of {t, f, g}
   local LSiter, t_prev, done = 0, 0, false
   local f_prev, g_prev, gtd_prev = f, g:clone(), gtd
   local br
   while LSiter < maxIter do
      if f_new > f + c1 * t * gtd or (LSiter > 1 and f_new >= f_prev) then
         br = { { t_prev, f_prev, g_prev }, { t, f_new, g_new } }
         break
      elseif abs(gtd_new) <= -c2 * gtd then
         br = { { t, f_new, g_new } }
         done = true
         break
      elseif gtd_new >= 0 then
         br = { { t_prev, f_prev, g_prev }, { t, f_new, g_new } }
         break
      end
      -- extrapolate by cubic interpolation inside [t + 0.01*(t - t_prev), 10*t]
      local tmp = t_prev
      t_prev = t
      t = polyinterp({ { tmp, f_prev, gtd_prev }, { t, f_new, gtd_new } }, t + 0.01 * (t - tmp), t * 10)
      f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
      f_new, g_new, gtd_new = eval_at(t)
      lsFuncEval = lsFuncEval + 1
      LSiter = LSiter + 1
   end
   if LSiter == maxIter then
      br = { { 0, f, g:clone() }, { t, f_new, g_new } }
   end
   -- zoom phase: shrink the bracket until a point meets the conditions
   local insufProgress = false
   while not done and LSiter < maxIter do
      local LOpos = br[2][2] < br[1][2] and 2 or 1
      local HIpos = 3 - LOpos
      local f_LO = br[LOpos][2]
      t = polyinterp({ { br[1][1], br[1][2], br[1][3]:dot(d) }, { br[2][1], br[2][2], br[2][3]:dot(d) } })
      local bmax, bmin = math.max(br[1][1], br[2][1]), math.min(br[1][1], br[2][1])
      -- too close to an end of the bracket (twice in a row, or outside it): move 10% inside
      if math.min(bmax - t, t - bmin) / (bmax - bmin) < 0.1 then
         if insufProgress or t >= bmax or t <= bmin then
            if abs(t - bmax) < abs(t - bmin) then t = bmax - 0.1 * (bmax - bmin)
            else t = bmin + 0.1 * (bmax - bmin) end
            insufProgress = false
         else
            insufProgress = true
         end
      else
         insufProgress = false
      end
      f_new, g_new, gtd_new = eval_at(t)
      lsFuncEval = lsFuncEval + 1
      LSiter = LSiter + 1
      if f_new > f + c1 * t * gtd or f_new >= f_LO then
         br[HIpos] = { t, f_new, g_new }
      else
         if abs(gtd_new) <= -c2 * gtd then
            done = true
         elseif gtd_new * (br[HIpos][1] - br[LOpos][1]) >= 0 then
            br[HIpos] = br[LOpos]
         end
         br[LOpos] = { t, f_new, g_new }
      end
      if not done and abs((br[1][1] - br[2][1]) * gtd_new) < tolX then break end
   end
   if LSiter == maxIter then verbose('reached max number of iterations') end
   local LO = (br[2] and br[2][2] < br[1][2]) and br[2] or br[1]
   t, f_new, g_new = LO[1], LO[2], LO[3]
   x:copy(x_init):add(t, d)
   return f_new, g_new, x, t, lsFuncEval
end
