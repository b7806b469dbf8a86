-- split.lua: Torch7's functions that cut a tensor into pieces or tile it, composed from
-- views and one copy, so they run wherever views and copies do (CUDA included):
--   torch.split([result,] x, size [,dim])   a table of narrows of `size` along dim (default 1),
--                                          the last one shorter when size does not divide it
--   torch.chunk([result,] x, n [,dim])      n pieces of about equal size: split by ceil(len / n)
--   torch.repeatTensor([res,] x, sizes...)  x tiled sizes[i] times along dim i (x is taken as
--                                          having leading dims of size 1 when sizes has more)
-- The pieces of split/chunk are views sharing x's memory; a `result` table is emptied and reused.
return function(torch, T)
   local methods, is_tensor, is_int = T.tensor_methods, T.is_tensor, T.is_int
   local ceil = math.ceil

   local function want_tensor(op, x)
      if not is_tensor(x) then error(('%s: expected a tensor, got %s'):format(op, type(x)), 4) end
      if x.h == nil then error(op .. ': tensor was freed', 4) end
   end

   -- dim (1-based, default 1) checked against x
   local function the_dim(op, x, dim)
      dim = dim or 1
      local n = x:dim()
      if not is_int(dim) or dim < 1 or dim > n then
         error(('%s: dim %s out of range for a %d-d tensor'):format(op, tostring(dim), n), 4)
      end
      return dim
   end

   local function split(op, result, x, size, dim)
      want_tensor(op, x)
      dim = the_dim(op, x, dim)
      if not is_int(size) or size < 1 then
         error(('%s: piece size must be a positive integer, got %s'):format(op, tostring(size)), 3)
      end
      if result ~= nil and type(result) ~= 'table' then
         error(op .. ': result must be a table, got ' .. type(result), 3)
      end
      result = result or {}
      for i = #result, 1, -1 do result[i] = nil end
      local len = x:size(dim)
      for start = 1, len, size do
         result[#result + 1] = x:narrow(dim, start, math.min(size, len - start + 1))
      end
      return result
   end

   -- torch.split(x, size [,dim]) or torch.split(result, x, size [,dim])
   function torch.split(a, ...)
      if type(a) == 'table' and not is_tensor(a) then return split('split', a, ...) end
      return split('split', nil, a, ...)
   end
   function methods.split(x, ...)
      if type(x) == 'table' then return split('split', x, ...) end
      return split('split', nil, x, ...)
   end

   local function chunk(result, x, n, dim)
      want_tensor('chunk', x)
      dim = the_dim('chunk', x, dim)
      if not is_int(n) or n < 1 then
         error(('chunk: number of chunks must be a positive integer, got %s'):format(tostring(n)), 3)
      end
      return split('chunk', result, x, math.max(1, ceil(x:size(dim) / n)), dim)
   end
   function torch.chunk(a, ...)
      if type(a) == 'table' and not is_tensor(a) then return chunk(a, ...) end
      return chunk(nil, a, ...)
   end
   methods.chunk = torch.chunk

   -- x viewed as (1, s1, 1, s2, ...) expanded to (r1, s1, r2, s2, ...) and copied: every tile in
   -- one copy, on any device
   local function repeat_tensor(op, res, x, ...)
      want_tensor(op, x)
      local reps = T.size_list(...)
      local n = #reps
      if n < x:dim() then
         error(('%s: %d repeat counts given for a %d-d tensor (need at least as many as its dims)')
            :format(op, n, x:dim()), 3)
      end
      local xs, pad = {}, n - x:dim()
      for i = 1, n do xs[i] = i <= pad and 1 or x:size(i - pad) end
      local inter, expanded, out = {}, {}, {}
      for i = 1, n do
         local r = reps[i]
         if not is_int(r) or r < 0 then
            error(('%s: repeat count %d must be a non-negative integer, got %s'):format(op, i, tostring(r)), 3)
         end
         inter[2 * i - 1], inter[2 * i] = 1, xs[i]
         expanded[2 * i - 1], expanded[2 * i] = r, xs[i]
         out[i] = r * xs[i]
      end
      if res ~= nil then res:resize(table.unpack(out)) end
      local fresh = res == nil or not res:isContiguous()
      local dst = fresh and T.new_tensor(T.clib.mt_tensor_dtype(x.h), T.clib.mt_tensor_device(x.h), out) or res
      if dst:nElement() > 0 then
         local src = x:contiguous():view(table.unpack(xs))
         if 2 * n <= T.MAX_DIMS then
            dst:view(table.unpack(expanded)):copy(src:view(table.unpack(inter)):expand(table.unpack(expanded)))
         else
            -- too many dims to interleave: x into the first tile, then that copied along each dim in turn
            local cur = {}
            for i = 1, n do cur[i] = xs[i] end
            local corner = dst
            for i = 1, n do corner = corner:narrow(i, 1, xs[i]) end
            corner:copy(src)
            for i = 1, n do
               local tile = dst
               for j = 1, n do if j ~= i then tile = tile:narrow(j, 1, cur[j]) end end
               for k = 2, reps[i] do tile:narrow(i, (k - 1) * xs[i] + 1, xs[i]):copy(tile:narrow(i, 1, xs[i])) end
               cur[i] = out[i]
            end
         end
      end
      if res ~= nil and fresh then res:copy(dst); return res end
      return dst
   end

   -- torch.repeatTensor(x, sizes...) or torch.repeatTensor(res, x, sizes...)
   function torch.repeatTensor(a, b, ...)
      if is_tensor(b) then return repeat_tensor('repeatTensor', a, b, ...) end
      return repeat_tensor('repeatTensor', nil, a, b, ...)
   end
   methods.repeatTensor = torch.repeatTensor
end
