-- matrix.lua: Torch7's structural matrix functions, composed from tensor ops (views,
-- copies, pointwise ops with broadcasting, masks, norms), so they run wherever those ops do,
-- CUDA included:
--   torch.cross([res,] a, b [,dim])      cross product along dim (default: first dim of size 3)
--   torch.diag([res,] x [,k])            1-d -> matrix with x on diagonal k; 2-d -> diagonal k
--   torch.tril([res,] x [,k]) / triu     lower / upper triangle (on and below / above diagonal k)
--   torch.renorm([res,] x, p, dim, maxnorm)  slices x:select(dim, i) scaled to p-norm <= maxnorm
--   torch.trace(x), torch.dist(x, y [,p])  the diagonal's sum; the p-norm of x - y (numbers)
-- Methods follow Torch7's wrappers: x:f(...) is torch.f(x, ...) (so res:f(x, ...) fills res),
-- except x:renorm(p, dim, maxnorm), which works in place.
-- Every function computes into a fresh tensor and copies it into res when one is given, so
-- res may alias an input.
return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor
   local floor = math.floor

   local function shape_str(t) return T.shape_str(t) end
   local function ndim(t) return C.mt_tensor_ndim(t.h) end
   local function dtype(t) return C.mt_tensor_dtype(t.h) end
   local function device(t) return C.mt_tensor_device(t.h) end

   local function want_tensor(op, x, what)
      if not is_tensor(x) then error(('%s: expected a tensor%s, got %s'):format(op, what or '', type(x)), 4) end
      if x.h == nil then error(op .. ': tensor was freed', 4) end
      return x
   end
   local function want_int(op, v, what)
      if type(v) ~= 'number' or v ~= floor(v) then
         error(('%s: %s must be an integer, got %s'):format(op, what, tostring(v)), 4)
      end
      return v
   end

   local deliver = T.deliver_result

   local function as_strided(t, sizes, strides, offset)
      local n, sz = T.sizes_buf(sizes)
      local _, st = T.sizes_buf(strides, true)
      check(C.mt_tensor_as_strided(T.out_handle, t.h, n, sz, st, offset))
      return T.wrap_handle(T.out_handle[0])
   end

   -- a contiguous int64 tensor on dev holding start, start+1, ... in the given sizes
   local function counting(dev, sizes, start)
      local t = T.new_tensor(T.LONG, dev, sizes)
      check(C.mt_arange(t.h, start, 1))
      return t
   end

   -- torch.f([res,] x, ...): res is the first argument when the second is a tensor too
   local function split_res(a, b)
      if is_tensor(a) and is_tensor(b) then return true end
      return false
   end

   ------------------------------------------------------------------------------------------
   -- cross

   local function go_cross(res, a, b, dim)
      want_tensor('cross', a)
      want_tensor('cross', b, ' as second operand')
      if res ~= nil then want_tensor('cross', res, ' as result') end
      local n = ndim(a)
      local same = n == ndim(b)
      for i = 1, n do same = same and a:size(i) == b:size(i) end
      if not same then
         error(('cross: operands must have the same size, got %s and %s'):format(shape_str(a), shape_str(b)), 3)
      end
      if dim == nil then
         for i = 1, n do
            if a:size(i) == 3 then dim = i; break end
         end
         if dim == nil then error(('cross: no dimension of size 3 in a tensor of size %s'):format(shape_str(a)), 3) end
      end
      want_int('cross', dim, 'dimension')
      if dim < 0 then dim = dim + n + 1 end
      if dim < 1 or dim > n then
         error(('cross: dimension %d out of range for a tensor of size %s'):format(dim, shape_str(a)), 3)
      end
      if a:size(dim) ~= 3 then
         error(('cross: dimension %d has size %d, expected 3 (tensor of size %s)'):format(dim, a:size(dim),
            shape_str(a)), 3)
      end
      if dtype(a) ~= dtype(b) or device(a) ~= device(b) then
         error(('cross: operands must share dtype and device, got %s and %s'):format(a:type(), b:type()), 3)
      end
      local out = T.new_tensor(dtype(a), device(a), T.sizes(a))
      local function c(t, i) return t:narrow(dim, i, 1) end
      local tmp = T.empty_tensor(dtype(a), device(a))
      for i = 1, 3 do
         local j, k = i % 3 + 1, (i + 1) % 3 + 1 -- out_i = a_j b_k - a_k b_j
         -- every view bound to a local: a handle taken from an unnamed view dangles once the
         -- collector, run by the next allocation, has finalized the view
         local o, aj, bk, ak, bj = c(out, i), c(a, j), c(b, k), c(a, k), c(b, j)
         check(C.mt_binary(C.MT_MUL, o.h, aj.h, bk.h, 1), 'cross', true)
         check(C.mt_binary(C.MT_MUL, tmp.h, ak.h, bj.h, 1), 'cross', true)
         check(C.mt_binary(C.MT_SUB, o.h, o.h, tmp.h, 1), 'cross', true)
      end
      return deliver(res, out)
   end

   function torch.cross(a, b, c, d)
      local r
      if is_tensor(c) then r = go_cross(a, b, c, d) else r = go_cross(nil, a, b, c) end
      return r
   end
   methods.cross = torch.cross

   ------------------------------------------------------------------------------------------
   -- diag

   local function go_diag(res, x, k)
      want_tensor('diag', x)
      if res ~= nil then want_tensor('diag', res, ' as result') end
      k = want_int('diag', k or 0, 'k')
      local n = ndim(x)
      local out
      if n == 1 then
         local len = x:size(1)
         local m = len + math.abs(k)
         out = T.new_tensor(dtype(x), device(x), { m, m })
         check(C.mt_fill(out.h, 0))
         local d = as_strided(out, { len }, { m + 1 }, k >= 0 and k or -k * m)
         check(C.mt_copy(d.h, x.h))
      elseif n == 2 then
         local r, c = x:size(1), x:size(2)
         if k > c or k < -r then
            error(('diag: k = %d is out of range for a matrix of size %s'):format(k, shape_str(x)), 3)
         end
         local len = k >= 0 and math.min(r, c - k) or math.min(r + k, c)
         local s0, s1 = x:stride(1), x:stride(2)
         local off = tonumber(C.mt_tensor_offset(x.h)) + (k >= 0 and k * s1 or -k * s0)
         local d = as_strided(x, { len }, { s0 + s1 }, off)
         out = T.new_tensor(dtype(x), device(x), { len })
         check(C.mt_copy(out.h, d.h))
      else
         error(('diag: expected a vector or a matrix, got a tensor of size %s'):format(shape_str(x)), 3)
      end
      return deliver(res, out)
   end

   function torch.diag(a, b, c)
      local r
      if split_res(a, b) then r = go_diag(a, b, c) else r = go_diag(nil, a, b) end
      return r
   end
   methods.diag = torch.diag

   ------------------------------------------------------------------------------------------
   -- tril / triu: zero the elements with (column - row) > k (tril) or < k (triu), through one
   -- broadcast comparison, so the cost does not grow with a per-row Lua loop.

   local function go_tri(name, res, x, k)
      want_tensor(name, x)
      if res ~= nil then want_tensor(name, res, ' as result') end
      k = want_int(name, k or 0, 'k')
      if ndim(x) ~= 2 then error(('%s: expected a matrix, got a tensor of size %s'):format(name, shape_str(x)), 3) end
      local r, c = x:size(1), x:size(2)
      local out = T.new_tensor(dtype(x), device(x), { r, c })
      check(C.mt_copy(out.h, x.h))
      if r > 0 and c > 0 then
         -- expanded to r x c: with r == c the two hold as many elements, and pointwise ops then
         -- pair them in element order (Torch7's rule) instead of broadcasting
         local rows = counting(device(x), { r, 1 }, 0):expand(r, c)
         local cols = counting(device(x), { 1, c }, 0):expand(r, c)
         local diff = T.empty_tensor(T.LONG, device(x))
         check(C.mt_binary(C.MT_SUB, diff.h, cols.h, rows.h, 1), name, true)
         local mask = T.empty_tensor(T.BYTE, device(x))
         check(C.mt_unary(name == 'tril' and C.MT_GT_SCALAR or C.MT_LT_SCALAR, mask.h, diff.h, k, 0), name, true)
         check(C.mt_masked_fill(out.h, mask.h, 0), name, true)
      end
      return deliver(res, out)
   end

   for _, name in ipairs { 'tril', 'triu' } do
      torch[name] = function(a, b, c)
         local r
         if split_res(a, b) then r = go_tri(name, a, b, c) else r = go_tri(name, nil, a, b) end
         return r
      end
      methods[name] = torch[name]
   end

   ------------------------------------------------------------------------------------------
   -- renorm: each slice x:select(dim, i) whose p-norm exceeds maxnorm is scaled by
   -- maxnorm / (norm + 1e-7) (Torch7's formula); the others are copied unchanged.

   local function go_renorm(res, x, p, dim, maxnorm)
      want_tensor('renorm', x)
      if res ~= nil then want_tensor('renorm', res, ' as result') end
      if not T.dtypes[dtype(x) + 1].is_float then
         error(('renorm: expected a floating point tensor, got %s'):format(x:type()), 3)
      end
      if type(p) ~= 'number' or p <= 0 then error('renorm: p must be a positive number, got ' .. tostring(p), 3) end
      if type(maxnorm) ~= 'number' then error('renorm: maxnorm must be a number, got ' .. tostring(maxnorm), 3) end
      local n = ndim(x)
      if n < 2 then
         error(('renorm: expected at least 2 dimensions, got a tensor of size %s'):format(shape_str(x)), 3)
      end
      want_int('renorm', dim, 'dimension')
      if dim < 0 then dim = dim + n + 1 end
      if dim < 1 or dim > n then
         error(('renorm: dimension %d out of range for a tensor of size %s'):format(dim, shape_str(x)), 3)
      end
      local rows = x:size(dim)
      if x:nElement() == 0 then return deliver(res, x:clone()) end
      local flat = x:transpose(dim, 1):contiguous():view(rows, x:nElement() / rows)
      local norms = flat:norm(p, 2) -- rows x 1
      local over = T.empty_tensor(T.BYTE, device(x))
      check(C.mt_unary(C.MT_GT_SCALAR, over.h, norms.h, maxnorm, 0), 'renorm', true)
      local keep = T.empty_tensor(T.BYTE, device(x))
      check(C.mt_unary(C.MT_EQ_SCALAR, keep.h, over.h, 0, 0), 'renorm', true)
      local scale = T.empty_tensor(dtype(x), device(x))
      check(C.mt_unary(C.MT_ADD_SCALAR, scale.h, norms.h, 1e-7, 0), 'renorm', true)
      check(C.mt_unary(C.MT_RECIPROCAL, scale.h, scale.h, 0, 0), 'renorm', true)
      check(C.mt_unary(C.MT_MUL_SCALAR, scale.h, scale.h, maxnorm, 0), 'renorm', true)
      check(C.mt_masked_fill(scale.h, keep.h, 1), 'renorm', true)
      local shape = {}
      for i = 1, n do shape[i] = i == dim and rows or 1 end
      local out = T.new_tensor(dtype(x), device(x), T.sizes(x))
      check(C.mt_binary(C.MT_MUL, out.h, x.h, scale:view(shape).h, 1), 'renorm', true)
      return deliver(res, out)
   end

   function torch.renorm(a, b, c, d, e)
      local r
      if is_tensor(b) then r = go_renorm(a, b, c, d, e) else r = go_renorm(nil, a, b, c, d) end
      return r
   end
   function methods.renorm(self, a, b, c, d)
      local r
      if is_tensor(a) then r = go_renorm(self, a, b, c, d) else r = go_renorm(self, self, a, b, c) end
      return r
   end

   -- torch.trace(x): the sum of a matrix's diagonal, a number
   function torch.trace(x)
      want_tensor('trace', x)
      if ndim(x) ~= 2 then error('trace: expected a matrix, got a tensor of size ' .. shape_str(x), 2) end
      if x:nElement() == 0 then return 0 end
      return torch.diag(x):sum()
   end
   methods.trace = torch.trace

   -- torch.dist(x, y [,p]): the p-norm (default 2) of x - y, a number
   function torch.dist(x, y, p)
      want_tensor('dist', x, ' as x')
      want_tensor('dist', y, ' as y')
      if p ~= nil and type(p) ~= 'number' then error('dist: p must be a number, got ' .. type(p), 2) end
      if x:nElement() ~= y:nElement() then
         error(('dist: x (%s) and y (%s) differ in number of elements'):format(shape_str(x), shape_str(y)), 2)
      end
      return (x:contiguous():view(x:nElement()) - y:contiguous():view(y:nElement())):norm(p or 2)
   end
   methods.dist = torch.dist
end
