-- sampling.lua: log-normal draws and multinomial sampling with Torch7's API.
--
--   t:logNormal([mean=1, stdv=2])   in place: exp of normal draws; mean and stdv are those of the
--                                   underlying normal (Torch7's defaults and meaning), stdv > 0
--   torch.logNormal([mean, stdv])   one number
--   torch.multinomial([res,] p, n [,replacement=false])
--        p: a 1-d or 2-d floating tensor of non-negative weights (rows need not sum to 1); returns
--        a LongTensor of 1-based category indices, n per row, in the order they were drawn.
--        Without replacement an index never repeats within a row (n <= the row's nonzero count).
--   torch.multinomialAliasSetup(probs [,state]) -> state = {J (LongTensor), q (DoubleTensor)}
--   torch.multinomialAlias(output, state) -> output (a 1-d LongTensor, filled with draws)
--        Walker's alias method: setup O(K) once, then O(1) per draw (always with replacement).
--        J[i] is the 1-based alias of column i, q[i] the chance of keeping column i; a column with
--        no alias (q[i] = 1) has itself as alias, so every J[i] is in 1..K (Torch7's test.lua and
--        test_aliasMultinomial.lua check both bounds). Draws also take Torch7's 0 for "none".
-- Every draw takes its uniforms from the global generator (torch.manualSeed reproduces it). The
-- sampling loops run on the CPU: CUDA probabilities are copied to the host and the indices are
-- copied back to the probabilities' device.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor
   local floor = math.floor

   local function argerror(op, msg) T.argerror(op, msg, 4) end
   local function dtype(t) return C.mt_tensor_dtype(t.h) end
   local function device(t) return C.mt_tensor_device(t.h) end
   local function is_float(t) return C.mt_dtype_is_floating(dtype(t)) ~= 0 end
   local function tname(t) return ffi.string(C.mt_dtype_name(dtype(t))) end

   -- Raw pointers below come with the tensor that owns their memory: `hold` keeps it reachable
   -- until the loop using the pointer is done.
   local function hold(...) return select('#', ...) end

   -- n uniforms in [0, 1) from the global generator, as a double pointer (and its owner)
   local function uniforms(n)
      local u = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { n })
      methods.uniform(u, 0, 1)
      return ffi.cast('double*', C.mt_tensor_data(u.h)), u
   end
   -- a contiguous float64 CPU copy of t and its data pointer
   local function host_doubles(t)
      local d = T.convert(t, T.DOUBLE, T.CPU_DEVICE)
      if not methods.isContiguous(d) then d = methods.contiguous(d) end
      return ffi.cast('double*', C.mt_tensor_data(d.h)), d
   end

   ------------------------------------------------------------------------------------------
   -- log-normal
   function methods.logNormal(t, mean, stdv)
      mean, stdv = mean or 1, stdv or 2
      if type(mean) ~= 'number' or type(stdv) ~= 'number' then
         T.argerror('logNormal', 'mean and stdv must be numbers', 2)
      end
      if not (stdv > 0) then -- luacheck: ignore 581 (rejects NaN)
         T.argerror('logNormal', ('stdv must be positive, got %g'):format(stdv), 2)
      end
      check(C.mt_random_normal(T.handle(t, 'logNormal'), torch._generator, mean, stdv), 'logNormal', true)
      check(C.mt_unary(C.MT_EXP, t.h, t.h, 0, 0), 'logNormal', true)
      return t
   end
   function torch.logNormal(mean, stdv)
      local one = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { 1 })
      methods.logNormal(one, mean, stdv)
      return ffi.cast('double*', C.mt_tensor_data(one.h))[0]
   end

   ------------------------------------------------------------------------------------------
   -- multinomial
   local function multinomial(res, p, n, replacement)
      local op = 'multinomial'
      T.expect_tensor(p, op, 'of probabilities', 4)
      local nd = methods.dim(p)
      if nd ~= 1 and nd ~= 2 then
         argerror(op, ('expected a 1-d or 2-d tensor of probabilities, got %d-d'):format(nd))
      end
      if not is_float(p) then argerror(op, 'probabilities must be a floating tensor, got ' .. tname(p)) end
      if not T.is_int(n) or n < 1 then
         argerror(op, 'the number of samples must be a positive integer, got ' .. tostring(n))
      end
      if replacement ~= nil and type(replacement) ~= 'boolean' then
         argerror(op, 'replacement must be a boolean, got ' .. type(replacement))
      end
      if res ~= nil and (not is_tensor(res) or dtype(res) ~= T.LONG) then
         argerror(op, 'the result must be a LongTensor (int64), got ' .. (is_tensor(res) and tname(res) or type(res)))
      end
      local sizes = T.sizes(p)
      local rows, K = nd == 2 and sizes[1] or 1, sizes[nd]
      if K < 1 then argerror(op, 'the probability tensor has no categories') end
      if not replacement and n > K then
         argerror(op, ('cannot draw %d samples without replacement from %d categories'):format(n, K))
      end
      local w, wt = host_doubles(p)
      local out = T.new_tensor(T.LONG, T.CPU_DEVICE, nd == 2 and { rows, n } or { n })
      local o = ffi.cast('int64_t*', C.mt_tensor_data(out.h))
      local u, ut = uniforms(rows * n)
      local cum = ffi.new('double[?]', K)
      local left = ffi.new('double[?]', K)
      for r = 0, rows - 1 do
         local row, total, nonzero = w + r * K, 0, 0
         for j = 0, K - 1 do
            local v = row[j]
            if not (v >= 0 and v < math.huge) then
               argerror(op, ('row %d holds an invalid probability %s (must be finite and >= 0)'):format(r + 1,
                  tostring(v)))
            end
            total = total + v
            cum[j] = total
            left[j] = v
            if v > 0 then nonzero = nonzero + 1 end
         end
         if not (total > 0) then -- luacheck: ignore 581 (rejects NaN)
            argerror(op, ('row %d of the probabilities sums to 0'):format(r + 1))
         end
         if not replacement and n > nonzero then
            argerror(op, ('cannot draw %d samples without replacement: row %d has only %d nonzero probabilities')
               :format(n, r + 1, nonzero))
         end
         for s = 0, n - 1 do
            local pick
            if replacement then -- the first column whose cumulative weight exceeds u * total
               local x, lo, hi = u[r * n + s] * total, 0, K - 1
               while lo < hi do
                  local mid = floor((lo + hi) / 2)
                  if cum[mid] > x then hi = mid else lo = mid + 1 end
               end
               while left[lo] == 0 and lo > 0 do lo = lo - 1 end -- rounding at the top: last nonzero
               pick = lo
            else -- walk the remaining weights; a drawn one drops to 0
               local x, acc, last = u[r * n + s] * total, 0, -1
               for j = 0, K - 1 do
                  if left[j] > 0 then
                     acc, last = acc + left[j], j
                     if acc > x then pick = j break end
                  end
               end
               pick = pick or last
               total = total - left[pick]
               left[pick] = 0
               if total <= 0 then -- rounding: recompute what is left
                  total = 0
                  for j = 0, K - 1 do total = total + left[j] end
               end
            end
            o[r * n + s] = pick + 1
         end
      end
      hold(wt, ut)
      local dev = device(p)
      if res == nil then return dev >= 0 and T.convert(out, T.LONG, dev) or out end
      check(C.mt_tensor_resize(T.handle(res, op), T.sizes_buf(T.sizes(out), false, op)), op, nil, 3)
      check(C.mt_copy(res.h, out.h), op, nil, 3)
      return res
   end

   function torch.multinomial(a, b, c, d)
      if is_tensor(b) then return multinomial(a, b, c, d) end
      return multinomial(nil, a, b, c)
   end
   -- p:multinomial(n [,replacement]), or Torch7's p.multinomial(res, p, n [,replacement])
   function methods.multinomial(a, b, c, d)
      if is_tensor(b) then return multinomial(a, b, c, d) end
      return multinomial(nil, a, b, c)
   end

   ------------------------------------------------------------------------------------------
   -- the alias method
   function torch.multinomialAliasSetup(probs, state)
      local op = 'multinomialAliasSetup'
      T.expect_tensor(probs, op, 'of probabilities', 2)
      if methods.dim(probs) ~= 1 then T.argerror(op, 'expected a 1-d tensor of probabilities', 2) end
      if not is_float(probs) then T.argerror(op, 'probabilities must be a floating tensor, got ' .. tname(probs), 2) end
      if state ~= nil and type(state) ~= 'table' then
         T.argerror(op, 'state must be a table, got ' .. type(state), 2)
      end
      local K = T.sizes(probs)[1]
      local p, pt = host_doubles(probs)
      local total = 0
      for i = 0, K - 1 do
         if not (p[i] >= 0 and p[i] < math.huge) then
            T.argerror(op, ('invalid probability %s at %d (must be finite and >= 0)'):format(tostring(p[i]), i + 1), 2)
         end
         total = total + p[i]
      end
      if not (total > 0) then T.argerror(op, 'the probabilities sum to 0', 2) end -- luacheck: ignore 581 (rejects NaN)
      local J = T.new_tensor(T.LONG, T.CPU_DEVICE, { K })
      local q = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { K })
      local jp = ffi.cast('int64_t*', C.mt_tensor_data(J.h))
      local qp = ffi.cast('double*', C.mt_tensor_data(q.h))
      local small, large, ns, nl = ffi.new('int64_t[?]', K), ffi.new('int64_t[?]', K), 0, 0
      for i = 0, K - 1 do
         qp[i], jp[i] = K * p[i] / total, i + 1 -- no alias yet: itself
         if qp[i] < 1 then small[ns], ns = i, ns + 1 else large[nl], nl = i, nl + 1 end
      end
      -- pair each short column with a tall one that tops it up to 1
      while ns > 0 and nl > 0 do
         ns, nl = ns - 1, nl - 1
         local s, l = small[ns], large[nl]
         jp[s] = l + 1
         qp[l] = qp[l] - (1 - qp[s])
         if qp[l] < 1 then small[ns], ns = l, ns + 1 else large[nl], nl = l, nl + 1 end
      end
      -- what is left is 1 up to rounding: always kept
      for i = 0, ns - 1 do qp[small[i]] = 1 end
      for i = 0, nl - 1 do qp[large[i]] = 1 end
      hold(pt)
      state = state or {}
      state[1], state[2] = J, q
      return state
   end

   function torch.multinomialAlias(output, state)
      local op = 'multinomialAlias'
      T.expect_tensor(output, op, 'for the output', 2)
      if dtype(output) ~= T.LONG or methods.dim(output) ~= 1 then
         T.argerror(op, 'the output must be a 1-d LongTensor (use a 1-d view), got a ' .. methods.dim(output)
            .. '-d ' .. tname(output) .. ' tensor', 2)
      end
      local J, q = type(state) == 'table' and state[1], type(state) == 'table' and state[2]
      if not is_tensor(J) or not is_tensor(q) or dtype(J) ~= T.LONG or methods.dim(J) ~= 1
         or methods.nElement(J) ~= methods.nElement(q) or methods.nElement(J) < 1 then
         T.argerror(op, 'state must be the table {J, q} from multinomialAliasSetup', 2)
      end
      local K, N = methods.nElement(J), methods.nElement(output)
      if N == 0 then return output end
      local jt = methods.contiguous(T.convert(J, T.LONG, T.CPU_DEVICE))
      local jp = ffi.cast('int64_t*', C.mt_tensor_data(jt.h))
      local qp, qt = host_doubles(q)
      local out = T.new_tensor(T.LONG, T.CPU_DEVICE, { N })
      local o = ffi.cast('int64_t*', C.mt_tensor_data(out.h))
      local u, ut = uniforms(2 * N)
      for i = 0, N - 1 do
         local k = floor(u[2 * i] * K)
         if k >= K then k = K - 1 end
         if u[2 * i + 1] < qp[k] or jp[k] < 1 or jp[k] > K then o[i] = k + 1 else o[i] = jp[k] end
      end
      hold(jt, qt, ut)
      check(C.mt_copy(output.h, out.h), op, nil, 2)
      return output
   end
end
