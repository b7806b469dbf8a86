-- optim.cg: nonlinear conjugate gradients (Polak-Ribiere directions) with a line search by
-- cubic interpolation/extrapolation meeting the Wolfe-Powell conditions, after C. E. Rasmussen's
-- minimize.m. The length limit counts function evaluations (maxEval).
-- config: maxEval (1.25*maxIter), maxIter (20: evaluations per line search), rho (0.01) and sig
-- (0.5) (the Wolfe-Powell constants), int (0.1: don't re-evaluate within 0.1 of the current
-- bracket), ext (3.0: extrapolate at most 3 times the current step), ratio (100: largest slope
-- ratio for the next initial step), verbose. state: df0..df3, s, x0 (reused buffers).
-- Returns x, the f values after each successful line search (f[1] before any), and the number
-- of evaluations. Differs from Torch7 in one place: Torch7 stops at the first failed line search
-- (its flag is 0, which Lua counts as true); here, as in minimize.m, a failed search is retried
-- once along steepest descent and only two failures in a row stop.
local optim = require 'moontorch.optim'
local util = optim._util

local function bad(z) return z ~= z or z == math.huge or z == -math.huge end

return function(opfunc, x, config, state)
   local name = 'optim.cg'
   config = config or {}
   state = state or config
   local rho, sig = config.rho or 0.01, config.sig or 0.5
   local int, ext = config.int or 0.1, config.ext or 3.0
   local maxIter = config.maxIter or 20
   local ratio = config.ratio or 100
   local maxEval = config.maxEval or maxIter * 1.25
   local red = 1
   local function buf(k)
      local b = state[k]
      if not (util.is_tensor(b) and b:type() == x:type()) then b = x.new() end
      state[k] = b:resizeAs(x)
      return b
   end
   local df0, df1, df2 = buf('df0'), buf('df1'), buf('df2')
   buf('df3')
   local s, x0 = buf('s'), buf('x0')
   local function eval()
      local fv, g = util.eval(opfunc, x, name)
      util.same_size(g, x, name)
      return fv, g
   end

   local i, ls_failed, fx = 0, false, {}
   local f0, f1, f2, f3, d1, d2, d3, z1, z2, z3
   local g
   f1, g = eval()
   df1:copy(g)
   fx[#fx + 1] = f1
   i = i + 1
   s:copy(df1):mul(-1)
   d1 = -s:dot(s)
   z1 = red / (1 - d1)
   while i < math.abs(maxEval) do
      x0:copy(x)
      f0 = f1
      df0:copy(df1)
      x:add(z1, s)
      f2, g = eval()
      df2:copy(g)
      i = i + 1
      d2 = df2:dot(s)
      f3, d3, z3 = f1, d1, -z1
      local m = math.min(maxIter, maxEval - i)
      local success, limit = false, -1
      while true do
         -- interpolate back while the step is too long (Armijo or curvature fails)
         while (f2 > f1 + z1 * rho * d1 or d2 > -sig * d1) and m > 0 do
            limit = z1
            if f2 > f1 then
               z2 = z3 - (0.5 * d3 * z3 * z3) / (d3 * z3 + f2 - f3) -- quadratic fit
            else
               local A = 6 * (f2 - f3) / z3 + 3 * (d2 + d3) -- cubic fit
               local B = 3 * (f3 - f2) - z3 * (d3 + 2 * d2)
               z2 = (math.sqrt(B * B - A * d2 * z3 * z3) - B) / A
            end
            if bad(z2) then z2 = z3 / 2 end
            z2 = math.max(math.min(z2, int * z3), (1 - int) * z3)
            z1 = z1 + z2
            x:add(z2, s)
            f2, g = eval()
            df2:copy(g)
            i = i + 1
            m = m - 1
            d2 = df2:dot(s)
            z3 = z3 - z2
         end
         if f2 > f1 + z1 * rho * d1 or d2 > -sig * d1 then break
         elseif d2 > sig * d1 then success = true break
         elseif m == 0 then break end
         -- extrapolate by a cubic, within [int, ext] bounds of the current bracket
         local A = 6 * (f2 - f3) / z3 + 3 * (d2 + d3)
         local B = 3 * (f3 - f2) - z3 * (d3 + 2 * d2)
         z2 = -d2 * z3 * z3 / (B + math.sqrt(B * B - A * d2 * z3 * z3))
         if bad(z2) or z2 < 0 then
            if limit < -0.5 then z2 = z1 * (ext - 1) else z2 = (limit - z1) / 2 end
         elseif limit > -0.5 and z2 + z1 > limit then
            z2 = (limit - z1) / 2
         elseif limit < -0.5 and z2 + z1 > z1 * ext then
            z2 = z1 * (ext - 1)
         elseif z2 < -z3 * int then
            z2 = -z3 * int
         elseif limit > -0.5 and z2 < (limit - z1) * (1 - int) then
            z2 = (limit - z1) * (1 - int)
         end
         f3, d3, z3 = f2, d2, -z2
         z1 = z1 + z2
         x:add(z2, s)
         f2, g = eval()
         df2:copy(g)
         i = i + 1
         m = m - 1
         d2 = df2:dot(s)
      end
      if success then
         f1 = f2
         fx[#fx + 1] = f1
         -- Polak-Ribiere direction
         local ss = (df2:dot(df2) - df2:dot(df1)) / df1:dot(df1)
         s:mul(ss):add(-1, df2)
         df0:copy(df1) -- df0 is free here: use it to swap df1 and df2
         df1:copy(df2)
         df2:copy(df0)
         d2 = df1:dot(s)
         if d2 > 0 then -- not downhill: back to steepest descent
            s:copy(df1):mul(-1)
            d2 = -s:dot(s)
         end
         z1 = z1 * math.min(ratio, d1 / (d2 - 1e-320))
         d1 = d2
         ls_failed = false
      else
         x:copy(x0)
         f1 = f0
         df1:copy(df0)
         if ls_failed or i > maxEval then break end
         -- minimize.m swaps df1 and df2 here: retry along the gradient of the failed point
         df1:copy(df2)
         df2:copy(df0)
         s:copy(df1):mul(-1)
         d1 = -s:dot(s)
         z1 = 1 / (1 - d1)
         ls_failed = true
      end
   end
   return x, fx, i
end
