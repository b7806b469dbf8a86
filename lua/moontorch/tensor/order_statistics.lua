-- order_statistics.lua: Torch7's order statistics and search functions:
--   torch.kthvalue([resval, resind,] x, k [,dim])  k-th smallest along dim (default: last)
--   torch.median([resval, resind,] x [,dim])       the lower median, kthvalue with k = floor((n+1)/2)
--   torch.mode([resval, resind,] x [,dim])         the most frequent value (smallest among ties)
--   torch.nonzero([res,] x)                        N x ndim LongTensor of 1-based subscripts
--   torch.histc([res,] x [,nbins, min, max])       histogram of all elements
--   torch.bhistc([res,] x [,nbins, min, max])      one histogram per row of a matrix
-- The (values, indices) functions keep the reduced dimension with size 1 (Torch7) and return
-- 1-based LongTensor indices: for kthvalue/median the position of the k-th element of a stable
-- sort (equal values in order of position), for mode the last occurrence of the value.
-- kthvalue, median, nonzero and the histograms are composed from sort/topk, masks, arange and
-- indexAdd, so they run wherever those do; mode has its own C op (a scan of sorted lines).
-- Methods are the torch functions with self first (Torch7's wrappers): x:median(2), and
-- res:nonzero(x) fills res.
return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor
   local floor = math.floor

   local function ndim(t) return C.mt_tensor_ndim(t.h) end
   local function dtype(t) return C.mt_tensor_dtype(t.h) end
   local function device(t) return C.mt_tensor_device(t.h) end

   local function want_tensor(op, x, what)
      if not is_tensor(x) then error(('%s: expected a tensor%s, got %s'):format(op, what or '', type(x)), 4) end
      if x.h == nil then error(op .. ': tensor was freed', 4) end
      return x
   end

   -- Torch7 dim (1-based, negative from the end, default last) -> 1-based, checked
   local function the_dim(op, x, dim)
      local n = ndim(x)
      if dim == nil then dim = n end
      if type(dim) ~= 'number' or dim ~= floor(dim) then
         error(('%s: dimension must be an integer, got %s'):format(op, tostring(dim)), 4)
      end
      local d = dim < 0 and dim + n + 1 or dim
      if d < 1 or d > n then
         error(('%s: dimension %d out of range for a tensor of size %s'):format(op, dim, T.shape_str(x)), 4)
      end
      return d
   end

   local deliver = T.deliver_result

   -- torch.f's leading result tensors: the first tensor followed by a non-tensor is the input
   local function split_results(nres, ...)
      local args = { ... }
      local n = select('#', ...)
      local k = 0
      while k < nres and k + 1 < n and is_tensor(args[k + 1]) and is_tensor(args[k + 2]) do k = k + 1 end
      return k, args
   end

   ------------------------------------------------------------------------------------------
   -- kthvalue, median: the k smallest come sorted from topk; the last of them is the answer

   local function kth(op, resval, resind, x, k, dim)
      want_tensor(op, x)
      local d = the_dim(op, x, dim)
      local n = x:size(d)
      if type(k) ~= 'number' or k ~= floor(k) or k < 1 or k > n then
         error(('%s: k = %s out of range for dimension %d of size %d'):format(op, tostring(k), d, n), 4)
      end
      if resval ~= nil then want_tensor(op, resval, ' as values result') end
      if resind ~= nil then want_tensor(op, resind, ' as indices result') end
      local v, i = T.empty_tensor(dtype(x), device(x)), T.empty_tensor(T.LONG, device(x))
      check(C.mt_topk(v.h, i.h, x.h, k, d - 1, 0, 1, 1), op, 'topk', 3)
      return deliver(resval, v:narrow(d, k, 1):clone()), deliver(resind, i:narrow(d, k, 1):clone())
   end

   function torch.kthvalue(...)
      local nr, a = split_results(2, ...)
      if nr == 1 then error('kthvalue: expected (x, k [,dim]) or (resval, resind, x, k [,dim])', 2) end
      local v, i
      if nr == 2 then v, i = kth('kthvalue', a[1], a[2], a[3], a[4], a[5])
      else v, i = kth('kthvalue', nil, nil, a[1], a[2], a[3]) end
      return v, i
   end
   methods.kthvalue = torch.kthvalue

   local function go_median(resval, resind, x, dim)
      want_tensor('median', x)
      local d = the_dim('median', x, dim)
      if x:size(d) == 0 then
         error(('median: dimension %d of the tensor of size %s is empty'):format(d, T.shape_str(x)), 3)
      end
      local v, i = kth('median', resval, resind, x, floor((x:size(d) + 1) / 2), d)
      return v, i
   end
   function torch.median(...)
      local nr, a = split_results(2, ...)
      if nr == 1 then error('median: expected (x [,dim]) or (resval, resind, x [,dim])', 2) end
      local v, i
      if nr == 2 then v, i = go_median(a[1], a[2], a[3], a[4]) else v, i = go_median(nil, nil, a[1], a[2]) end
      return v, i
   end
   methods.median = torch.median

   ------------------------------------------------------------------------------------------
   -- mode

   local function go_mode(resval, resind, x, dim)
      want_tensor('mode', x)
      local d = the_dim('mode', x, dim)
      if resval ~= nil then want_tensor('mode', resval, ' as values result') end
      if resind ~= nil then want_tensor('mode', resind, ' as indices result') end
      local v, i = T.empty_tensor(dtype(x), device(x)), T.empty_tensor(T.LONG, device(x))
      check(C.mt_mode(v.h, i.h, x.h, d - 1, 1), 'mode', nil, 3)
      return deliver(resval, v), deliver(resind, i)
   end
   function torch.mode(...)
      local nr, a = split_results(2, ...)
      if nr == 1 then error('mode: expected (x [,dim]) or (resval, resind, x [,dim])', 2) end
      local v, i
      if nr == 2 then v, i = go_mode(a[1], a[2], a[3], a[4]) else v, i = go_mode(nil, nil, a[1], a[2]) end
      return v, i
   end
   methods.mode = torch.mode

   ------------------------------------------------------------------------------------------
   -- nonzero: column d of the result is 1..size(d) laid along dim d, broadcast over x's shape
   -- and read where x ~= 0 (maskedSelect goes in row-major order)

   local function go_nonzero(res, x)
      want_tensor('nonzero', x)
      if res ~= nil then
         want_tensor('nonzero', res, ' as result')
         if dtype(res) ~= T.LONG then error('nonzero: the result must be a LongTensor, got ' .. res:type(), 3) end
      end
      local n, dev = ndim(x), device(x)
      if n == 0 then error('nonzero: expected a tensor with at least one dimension', 3) end
      local mask = T.empty_tensor(T.BYTE, dev)
      check(C.mt_unary(C.MT_NE_SCALAR, mask.h, x.h, 0, 0), 'nonzero', true, 3)
      local cols = {}
      for d = 1, n do
         local shape = {}
         for i = 1, n do shape[i] = i == d and x:size(d) or 1 end
         local coord = T.new_tensor(T.LONG, dev, shape)
         check(C.mt_arange(coord.h, 1, 1))
         cols[d] = T.empty_tensor(T.LONG, dev)
         check(C.mt_masked_select(cols[d].h, coord.h, mask.h), 'nonzero', true, 3)
      end
      local count = cols[1]:nElement()
      local out = T.new_tensor(T.LONG, dev, { count, n })
      for d = 1, n do
         if count > 0 then check(C.mt_copy(out:select(2, d).h, cols[d].h)) end
      end
      return deliver(res, out)
   end
   function torch.nonzero(a, b)
      local r
      if b ~= nil then r = go_nonzero(a, b) else r = go_nonzero(nil, a) end
      return r
   end
   methods.nonzero = torch.nonzero

   ------------------------------------------------------------------------------------------
   -- histc / bhistc: bin = floor((v - min) / (max - min) * nbins) computed in x's dtype as
   -- Torch7 does, the top edge in the last bin, values outside [min, max] (and NaN) left out.
   -- min == max (the default 0, 0) means the data's own range, widened by 1 each way when flat.

   local function hist_args(op, x, nbins, lo, hi)
      want_tensor(op, x)
      if not T.dtypes[dtype(x) + 1].is_float then
         error(('%s: expected a floating point tensor, got %s'):format(op, x:type()), 4)
      end
      nbins = nbins or 100
      if type(nbins) ~= 'number' or nbins ~= floor(nbins) or nbins < 1 then
         error(('%s: nbins must be a positive integer, got %s'):format(op, tostring(nbins)), 4)
      end
      lo, hi = lo or 0, hi or 0
      if type(lo) ~= 'number' or type(hi) ~= 'number' then error(op .. ': min and max must be numbers', 4) end
      if lo == hi and x:nElement() > 0 then lo, hi = x:min(), x:max() end
      if lo == hi then lo, hi = lo - 1, hi + 1 end
      if not (lo < hi) then -- luacheck: ignore 581 (rejects NaN)
         error(('%s: min %g must be below max %g'):format(op, lo, hi), 4)
      end
      return nbins, lo, hi
   end

   -- 0-based bins (int64) of x's elements and the mask of those inside [lo, hi]
   local function bins_of(op, x, nbins, lo, hi)
      local dev, dt = device(x), dtype(x)
      local inside, above = T.empty_tensor(T.BYTE, dev), T.empty_tensor(T.BYTE, dev)
      check(C.mt_unary(C.MT_GE_SCALAR, inside.h, x.h, lo, 0), op, true, 4)
      check(C.mt_unary(C.MT_LE_SCALAR, above.h, x.h, hi, 0), op, true, 4)
      check(C.mt_binary(C.MT_MUL, inside.h, inside.h, above.h, 1), op, true, 4)
      local b = T.empty_tensor(dt, dev)
      check(C.mt_unary(C.MT_ADD_SCALAR, b.h, x.h, -lo, 0), op, true, 4)
      check(C.mt_unary(C.MT_DIV_SCALAR, b.h, b.h, hi - lo, 0), op, true, 4)
      check(C.mt_unary(C.MT_MUL_SCALAR, b.h, b.h, nbins, 0), op, true, 4)
      check(C.mt_unary(C.MT_FLOOR, b.h, b.h, 0, 0), op, true, 4)
      check(C.mt_unary(C.MT_CLAMP, b.h, b.h, 0, nbins - 1), op, true, 4)
      local bi = T.new_tensor(T.LONG, dev, T.sizes(x))
      check(C.mt_copy(bi.h, b.h))
      return bi, inside
   end

   -- add 1 at each selected 0-based flat position of hist (a contiguous tensor)
   local function count_into(op, hist, flatpos, mask)
      local dev = device(hist)
      local pos = T.empty_tensor(T.LONG, dev)
      check(C.mt_masked_select(pos.h, flatpos.h, mask.h), op, true, 4)
      local n = pos:nElement()
      if n == 0 then return end
      local ones = T.new_tensor(dtype(hist), dev, { n })
      check(C.mt_fill(ones.h, 1))
      local flat = hist:view(hist:nElement())
      check(C.mt_index_add(flat.h, 0, pos.h, ones.h, 1, 0), op, true, 4)
   end

   local function go_histc(res, x, nbins, lo, hi)
      if res ~= nil then want_tensor('histc', res, ' as result') end
      nbins, lo, hi = hist_args('histc', x, nbins, lo, hi)
      local hist = T.new_tensor(dtype(x), device(x), { nbins })
      check(C.mt_fill(hist.h, 0))
      if x:nElement() > 0 then
         local bi, inside = bins_of('histc', x, nbins, lo, hi)
         count_into('histc', hist, bi, inside)
      end
      return deliver(res, hist)
   end
   function torch.histc(a, ...)
      local r
      if is_tensor(a) and is_tensor((...)) then r = go_histc(a, ...) else r = go_histc(nil, a, ...) end
      return r
   end
   methods.histc = torch.histc

   local function go_bhistc(res, x, nbins, lo, hi)
      if res ~= nil then want_tensor('bhistc', res, ' as result') end
      want_tensor('bhistc', x)
      if ndim(x) ~= 2 then
         error(('bhistc: expected a matrix (one histogram per row), got a tensor of size %s'):format(T.shape_str(x)), 3)
      end
      nbins, lo, hi = hist_args('bhistc', x, nbins, lo, hi)
      local rows = x:size(1)
      local hist = T.new_tensor(dtype(x), device(x), { rows, nbins })
      check(C.mt_fill(hist.h, 0))
      if x:nElement() > 0 then
         local bi, inside = bins_of('bhistc', x, nbins, lo, hi)
         local rowstart = T.new_tensor(T.LONG, device(x), { rows, 1 }) -- 0, nbins, 2 nbins, ...
         check(C.mt_arange(rowstart.h, 0, nbins))
         check(C.mt_binary(C.MT_ADD, bi.h, bi.h, rowstart.h, 1), 'bhistc', true, 3)
         count_into('bhistc', hist, bi, inside)
      end
      return deliver(res, hist)
   end
   function torch.bhistc(a, ...)
      local r
      if is_tensor(a) and is_tensor((...)) then r = go_bhistc(a, ...) else r = go_bhistc(nil, a, ...) end
      return r
   end
   methods.bhistc = torch.bhistc
end
