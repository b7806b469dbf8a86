-- reduce.lua: reductions (sum, prod, mean, var, std, norm, max, min, argmax, argmin,
-- any, all) and ordering (sort, topk), with Torch7's signatures:
--  * without a dimension a reduction returns a Lua number (any/all: a boolean);
--  * with one it returns a tensor that KEEPS the reduced dimension with size 1 (Torch7), e.g.
--    t:sum(2) of a 3x4 tensor is 3x1;
--  * torch.f([res,] t, ...) writes into an optional result tensor given first;
--  * indices are 1-based LongTensors; dimensions are 1-based, negative ones count from the end.
local ffi = require 'ffi'

return function(torch, T)
   local C, methods = T.clib, T.tensor_methods
   local floor = math.floor
   local valbuf = ffi.new('double[1]')

   -- Layers: public function (torch.f / t:f) -> go_* -> helpers. Errors are raised at the
   -- user's line: level 3 from go_*, level 4 from the helpers it calls (need, cdim, ...).
   -- Public functions call go_* without a tail call so that the layers stay in place.

   local shape_str = T.shape_str -- "2x3x4" as C prints shapes (tensor/view.lua, loaded first)

   local function need(x, name, what)
      if not T.is_tensor(x) then
         error(('%s: expected a tensor%s, got %s'):format(name, what and (' as ' .. what) or '', type(x)), 4)
      end
      if x.h == nil then error(name .. ': tensor was freed', 4) end
   end

   -- Torch7 dimension (1-based, negative from the end) -> 0-based C dimension.
   local function cdim(name, t, d)
      local n = C.mt_tensor_ndim(t.h)
      if type(d) ~= 'number' or d ~= floor(d) then
         error(('%s: dimension must be an integer, got %s'):format(name, tostring(d)), 4)
      end
      local dd = d < 0 and d + n + 1 or d
      if dd < 1 or dd > math.max(n, 1) then
         error(('%s: dimension %d out of range for a tensor of size %s (%d dimensions)'):format(name, d,
            shape_str(t), n), 4)
      end
      return dd - 1
   end

   local function last_dim(t) return math.max(C.mt_tensor_ndim(t.h), 1) end

   local function full_value(op, t, p)
      if C.mt_reduce_all_value(op, t.h, p or 0, valbuf) ~= 0 then T.raise(nil, nil, 4) end
      return valbuf[0]
   end

   -- result dtype of a reduction
   local function out_dtype(op, t)
      if op == C.MT_ARGMAX or op == C.MT_ARGMIN then return T.LONG end
      if op == C.MT_ANY or op == C.MT_ALL then return T.BYTE end
      return C.mt_tensor_dtype(t.h)
   end

   -- Reduce t along dim (Torch7 numbering) into res (created when nil), keeping the dim.
   local function reduce_dim(name, op, res, ind, t, d, p)
      if res ~= nil then need(res, name, 'result') end
      if ind ~= nil then need(ind, name, 'indices result') end
      res = res or T.empty_tensor(out_dtype(op, t), C.mt_tensor_device(t.h))
      if C.mt_reduce(op, res.h, ind and ind.h or nil, t.h, d, 1, p or 0, 1) ~= 0 then T.raise(nil, nil, 4) end
      return res
   end

   -- Split torch.f's optional leading result tensors from its arguments: the first tensor
   -- argument followed by a non-tensor (or nothing) is the input.
   local function split_results(nres, ...)
      local args = { ... }
      local n = select('#', ...)
      local k = 0
      while k < nres and k + 1 < n and T.is_tensor(args[k + 1]) and T.is_tensor(args[k + 2]) do k = k + 1 end
      return k, args, n
   end

   ---------------------------------------------------------------------------------------------
   -- sum, prod, mean, any, all, argmax, argmin: f() -> number, f(dim) -> tensor

   local function go_plain(name, op, res, t, dim)
      need(t, name)
      if dim == nil then
         if res ~= nil then error(name .. ': a result tensor needs a dimension to reduce', 3) end
         local v = full_value(op, t, 0)
         if op == C.MT_ANY or op == C.MT_ALL then return v ~= 0 end
         if op == C.MT_ARGMAX or op == C.MT_ARGMIN then return v + 1 end
         return v
      end
      local r = reduce_dim(name, op, res, nil, t, cdim(name, t, dim), 0)
      return r
   end

   local plain = { sum = C.MT_SUM, prod = C.MT_PROD, mean = C.MT_MEAN, any = C.MT_ANY, all = C.MT_ALL,
      argmax = C.MT_ARGMAX, argmin = C.MT_ARGMIN }
   for name, op in pairs(plain) do
      methods[name] = function(t, dim)
         local r = go_plain(name, op, nil, t, dim)
         return r
      end
      torch[name] = function(a, b, c)
         local r
         if T.is_tensor(b) then r = go_plain(name, op, a, b, c) else r = go_plain(name, op, nil, a, b) end
         return r
      end
   end

   ---------------------------------------------------------------------------------------------
   -- var, std: Torch7's flag = true normalises by n (biased); default n - 1

   local function go_var(name, op, res, t, dim, flag)
      need(t, name)
      if type(dim) == 'boolean' then dim, flag = nil, dim end
      local correction = flag and 0 or 1
      if dim == nil then
         if res ~= nil then error(name .. ': a result tensor needs a dimension to reduce', 3) end
         local r = full_value(op, t, correction)
         return r
      end
      local r = reduce_dim(name, op, res, nil, t, cdim(name, t, dim), correction)
      return r
   end

   for name, op in pairs { var = C.MT_VAR, std = C.MT_STD } do
      methods[name] = function(t, dim, flag)
         local r = go_var(name, op, nil, t, dim, flag)
         return r
      end
      torch[name] = function(a, b, c, d)
         local r
         if T.is_tensor(b) then r = go_var(name, op, a, b, c, d) else r = go_var(name, op, nil, a, b, c) end
         return r
      end
   end

   ---------------------------------------------------------------------------------------------
   -- norm([p = 2], [dim]): p = 0 counts nonzeros, math.huge is the largest |x|

   local function go_norm(res, t, p, dim)
      need(t, 'norm')
      p = p or 2
      if type(p) ~= 'number' then error('norm: p must be a number, got ' .. type(p), 3) end
      if dim == nil then
         if res ~= nil then error('norm: a result tensor needs a dimension to reduce', 3) end
         local r = full_value(C.MT_NORM, t, p)
         return r
      end
      local r = reduce_dim('norm', C.MT_NORM, res, nil, t, cdim('norm', t, dim), p)
      return r
   end

   function methods.norm(t, p, dim)
      local r = go_norm(nil, t, p, dim)
      return r
   end
   function torch.norm(a, b, c, d)
      local r
      if T.is_tensor(b) then r = go_norm(a, b, c, d) else r = go_norm(nil, a, b, c) end
      return r
   end

   ---------------------------------------------------------------------------------------------
   -- max, min: f() -> number; f(dim) -> values, indices (LongTensor, 1-based, dim kept);
   -- torch.max([resval, resind,] t, [dim]). NaN counts as the largest (and smallest) value.

   local function go_maxmin(name, op, resval, resind, t, dim)
      need(t, name)
      if dim == nil then
         if resval ~= nil then error(name .. ': result tensors need a dimension to reduce', 3) end
         local r = full_value(op, t, 0)
         return r
      end
      local d = cdim(name, t, dim)
      if resind ~= nil then need(resind, name, 'indices result') end
      resind = resind or T.empty_tensor(T.LONG, C.mt_tensor_device(t.h))
      local v = reduce_dim(name, op, resval, resind, t, d, 0)
      return v, resind
   end

   for name, op in pairs { max = C.MT_MAX, min = C.MT_MIN } do
      methods[name] = function(t, dim)
         local v, i = go_maxmin(name, op, nil, nil, t, dim)
         return v, i
      end
      torch[name] = function(...)
         local k, args = split_results(2, ...)
         local v, i
         if k == 1 then
            -- torch.max(a, b) of two tensors: the elementwise cmax/cmin where that exists
            local pointwise = torch['c' .. name]
            if pointwise and args[3] == nil then return pointwise(args[1], args[2]) end
            error(('%s: expected (t, [dim]) or (resval, resind, t, [dim])'):format(name), 2)
         elseif k == 2 then
            v, i = go_maxmin(name, op, args[1], args[2], args[3], args[4])
         else
            v, i = go_maxmin(name, op, nil, nil, args[1], args[2])
         end
         return v, i
      end
   end

   ---------------------------------------------------------------------------------------------
   -- sort([dim = last], [descending = false]) -> values, indices. Stable: equal values keep
   -- their order; NaN sorts as the largest value.

   local function go_sort(resval, resind, t, dim, desc)
      need(t, 'sort')
      if type(dim) == 'boolean' then dim, desc = nil, dim end
      local d = cdim('sort', t, dim or last_dim(t))
      if resval ~= nil then need(resval, 'sort', 'values result') end
      if resind ~= nil then need(resind, 'sort', 'indices result') end
      local dev = C.mt_tensor_device(t.h)
      resval = resval or T.empty_tensor(C.mt_tensor_dtype(t.h), dev)
      resind = resind or T.empty_tensor(T.LONG, dev)
      if C.mt_sort(resval.h, resind.h, t.h, d, desc and 1 or 0, 1) ~= 0 then T.raise(nil, nil, 3) end
      return resval, resind
   end

   function methods.sort(t, dim, desc)
      local v, i = go_sort(nil, nil, t, dim, desc)
      return v, i
   end
   function torch.sort(...)
      local k, args = split_results(2, ...)
      local v, i
      if k == 2 then
         v, i = go_sort(args[1], args[2], args[3], args[4], args[5])
      elseif k == 1 then
         error('sort: expected (x, [dim], [desc]) or (resval, resind, x, [dim], [desc])', 2)
      else
         v, i = go_sort(nil, nil, args[1], args[2], args[3])
      end
      return v, i
   end

   ---------------------------------------------------------------------------------------------
   -- topk(k, [dim = last], [dir = false], [sort]) -> values, indices.
   -- As in Torch7, dir = false (the default) gives the k SMALLEST values and dir = true the k
   -- largest. Results always come sorted (smallest first, or largest first with dir = true;
   -- equal values in order of position), which also satisfies sort = false.

   local function go_topk(resval, resind, t, k, dim, dir, sorted)
      need(t, 'topk')
      if type(k) ~= 'number' or k ~= floor(k) then error('topk: k must be an integer, got ' .. tostring(k), 3) end
      if type(dim) == 'boolean' then dim, dir, sorted = nil, dim, dir end
      local d = cdim('topk', t, dim or last_dim(t))
      if resval ~= nil then need(resval, 'topk', 'values result') end
      if resind ~= nil then need(resind, 'topk', 'indices result') end
      local dev = C.mt_tensor_device(t.h)
      resval = resval or T.empty_tensor(C.mt_tensor_dtype(t.h), dev)
      resind = resind or T.empty_tensor(T.LONG, dev)
      if C.mt_topk(resval.h, resind.h, t.h, k, d, dir and 1 or 0, sorted == false and 0 or 1, 1) ~= 0 then
         T.raise(nil, nil, 3)
      end
      return resval, resind
   end

   function methods.topk(t, k, dim, dir, sorted)
      local v, i = go_topk(nil, nil, t, k, dim, dir, sorted)
      return v, i
   end
   function torch.topk(...)
      local k, args = split_results(2, ...)
      local v, i
      if k == 2 then
         v, i = go_topk(args[1], args[2], args[3], args[4], args[5], args[6], args[7])
      elseif k == 1 then
         error('topk: expected (x, k, ...) or (resval, resind, x, k, ...)', 2)
      else
         v, i = go_topk(nil, nil, args[1], args[2], args[3], args[4], args[5])
      end
      return v, i
   end
end
