-- optim.polyinterp(points, xminBound, xmaxBound): the minimiser of the cubic that interpolates
-- two points (x, f, f') given as the rows of a 2x3 tensor (or a Lua table {{x,f,g},{x,f,g}}),
-- as minFunc's polyinterp. Without bounds: the closed form, clamped to [min x, max x] (the mean
-- of the two x when the cubic has no real minimiser). With bounds: the lowest of the cubic's
-- values at the bounds, the two x and its real critical points inside the bounds (the bounds'
-- midpoint when none is). Returns minPos (and the cubic's value there in the bounded form).
-- Torch7 also accepts more than two points (a least-squares polynomial through all of them);
-- nothing in optim uses that, and it is refused here.
local torch = require 'moontorch'

local function rows(points)
   local p = torch.isTensor(points) and points:totable() or points
   if type(p) ~= 'table' or #p ~= 2 or #p[1] ~= 3 or #p[2] ~= 3 then
      error('optim.polyinterp: expected 2 points {x, f, df/dx} as a 2x3 tensor or table'
         .. ' (more points are not supported)', 3)
   end
   return p[1], p[2]
end

return function(points, xminBound, xmaxBound)
   local a, b = rows(points)
   if b[1] < a[1] then a, b = b, a end -- a: the point with the smaller x (the first on a tie)
   if not xminBound and not xmaxBound then
      local d1 = a[3] + b[3] - 3 * (a[2] - b[2]) / (a[1] - b[1])
      local d2 = math.sqrt(d1 * d1 - a[3] * b[3])
      if d2 == d2 then
         local t = b[1] - (b[1] - a[1]) * ((b[3] + d2 - d1) / (b[3] - a[3] + 2 * d2))
         return math.min(math.max(t, a[1]), b[1])
      end
      return (a[1] + b[1]) / 2
   end
   xminBound = xminBound or a[1]
   xmaxBound = xmaxBound or b[1]
   -- the cubic in s = x - a.x: f(s) = fa + ga*s + B*s^2 + A*s^3 (Hermite conditions at both points)
   local h = b[1] - a[1]
   local r1, r2 = b[2] - a[2] - a[3] * h, b[3] - a[3]
   local A, B = (r2 * h - 2 * r1) / (h * h * h), (3 * r1 - r2 * h) / (h * h)
   local function val(x)
      local s = x - a[1]
      return a[2] + s * (a[3] + s * (B + s * A))
   end
   local cands = { xminBound, xmaxBound, a[1], b[1] }
   if A == A and B == B and math.abs(A) ~= math.huge and math.abs(B) ~= math.huge then
      -- f'(s) = 3A s^2 + 2B s + ga; coefficients below 1e-12 count as zero, as in Torch7
      local qa, qb, qc = math.abs(3 * A) < 1e-12 and 0 or 3 * A, math.abs(2 * B) < 1e-12 and 0 or 2 * B, a[3]
      if qa ~= 0 then
         local disc = qb * qb - 4 * qa * qc
         if disc >= 0 then
            local sq = math.sqrt(disc)
            cands[#cands + 1] = a[1] + (-qb + sq) / (2 * qa)
            cands[#cands + 1] = a[1] + (-qb - sq) / (2 * qa)
         end
      elseif qb ~= 0 then
         cands[#cands + 1] = a[1] - qc / qb
      end
   end
   local minPos, fmin = (xminBound + xmaxBound) / 2, math.huge
   for _, x in ipairs(cands) do
      if x >= xminBound and x <= xmaxBound then
         local f = val(x)
         if f < fmin then minPos, fmin = x, f end
      end
   end
   return minPos, fmin
end
