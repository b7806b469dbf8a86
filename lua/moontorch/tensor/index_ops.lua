-- index_ops.lua: Torch7's index-driven ops and concatenation: index/indexSelect,
-- indexCopy, indexAdd, indexFill, gather, scatter and cat. Dimensions and index values are
-- 1-based; index tensors are LongTensors (IntTensors and Lua tables of numbers also accepted).
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor

   -- 1-based (or negative, from the end) Lua dim -> 0-based C dim; C checks the range
   local function cdim(op, t, dim)
      if type(dim) ~= 'number' or dim ~= math.floor(dim) then
         error(op .. ': dimension must be an integer, got ' .. tostring(dim), 3)
      end
      if dim < 0 then dim = dim + C.mt_tensor_ndim(t.h) + 1 end
      return dim - 1
   end

   local function index_arg(op, idx)
      if is_tensor(idx) then return idx end
      if type(idx) == 'table' then return torch.LongTensor(idx) end
      error(op .. ': expected a LongTensor of indices, got ' .. type(idx), 3)
   end

   local function empty_like(t) return T.empty_tensor(C.mt_tensor_dtype(t.h), C.mt_tensor_device(t.h)) end

   local function size_str(t) return table.concat(T.sizes(t), 'x') end

   ------------------------------------------------------------------------------------------
   -- index (index_select): a new tensor of the slices index[i] along dim

   -- torch.index and torch.gather take the same arguments ([res,] src, dim, index) and differ
   -- only in the C op; the function made here is the public one, so errors keep their level.
   local function indexed_read(op, c_op)
      return function(res, src, dim, index)
         if index == nil then res, src, dim, index = nil, res, src, dim end
         T.handle(src, op)
         index = index_arg(op, index)
         res = res or empty_like(src)
         check(c_op(T.handle(res, op), src.h, cdim(op, src, dim), T.handle(index, op), 1))
         return res
      end
   end

   -- torch.index([res,] src, dim, index)
   torch.index = indexed_read('index', C.mt_index_select)
   torch.indexSelect = torch.index
   -- t:index(dim, index), or Torch7's result-first res:index(src, dim, index)
   function methods.index(self, dim, index, ...)
      if T.is_tensor(dim) then return torch.index(self, dim, index, ...) end
      return torch.index(nil, self, dim, index)
   end
   methods.indexSelect = methods.index

   -- t:indexAdd(dim, index, src [, alpha]): t[index[i]] += alpha * src[i] along dim; repeats add up
   function methods.indexAdd(self, dim, index, src, alpha)
      T.handle(self, 'indexAdd')
      index = index_arg('indexAdd', index)
      check(C.mt_index_add(self.h, cdim('indexAdd', self, dim), T.handle(index, 'indexAdd'), T.handle(src, 'indexAdd'),
         alpha or 1, 1))
      return self
   end

   -- t:indexFill(dim, index, v): every slice index[i] along dim set to v
   function methods.indexFill(self, dim, index, v)
      T.handle(self, 'indexFill')
      index = index_arg('indexFill', index)
      if type(v) ~= 'number' then error('indexFill: value must be a number, got ' .. type(v), 2) end
      check(C.mt_index_fill(self.h, cdim('indexFill', self, dim), T.handle(index, 'indexFill'), v, 1))
      return self
   end

   -- t:indexCopy(dim, index, src): slice index[i] of t along dim = slice i of src (a repeated
   -- index keeps the last). Runs as a scatter whose index is `index` repeated over src's shape.
   function methods.indexCopy(self, dim, index, src)
      T.handle(self, 'indexCopy')
      T.handle(src, 'indexCopy')
      index = index_arg('indexCopy', index)
      local d = cdim('indexCopy', self, dim)
      local n, ts, ss = C.mt_tensor_ndim(self.h), T.sizes(self), T.sizes(src)
      if C.mt_tensor_ndim(index.h) ~= 1 then error('indexCopy: index must be 1-d, got size ' .. size_str(index), 2) end
      if d < 0 or d >= n then
         error(('indexCopy: dimension %d out of range for a tensor of size %s'):format(d + 1, size_str(self)), 2)
      end
      local ok = #ss == n
      for i = 1, n do
         ok = ok and ss[i] == (i == d + 1 and index:nElement() or ts[i])
      end
      if not ok then
         error(('indexCopy: source of size %s does not match the tensor of size %s with %d indices along dimension %d')
            :format(size_str(src), size_str(self), index:nElement(), d + 1), 2)
      end
      local strides = {}
      for i = 1, n do strides[i] = 0 end
      strides[d + 1] = tonumber(C.mt_tensor_stride(index.h, 0))
      local _, sz = T.sizes_buf(ss)
      local _, st = T.sizes_buf(strides, true)
      check(C.mt_tensor_as_strided(T.out_handle, index.h, n, sz, st, C.mt_tensor_offset(index.h)))
      local spread = T.wrap_handle(T.out_handle[0])
      check(C.mt_scatter(self.h, d, spread.h, src.h, 1), 'indexCopy', 'scatter')
      return self
   end

   ------------------------------------------------------------------------------------------
   -- gather / scatter: index has the source's number of dimensions

   -- torch.gather([res,] src, dim, index): res[i][j][k] = src[i][index[i][j][k]][k] (dim 2)
   torch.gather = indexed_read('gather', C.mt_gather)
   function methods.gather(self, dim, index, ...) -- also res:gather(src, dim, index)
      if T.is_tensor(dim) then return torch.gather(self, dim, index, ...) end
      return torch.gather(nil, self, dim, index)
   end

   -- t:scatter(dim, index, src or value): t[i][index[i][j][k]][k] = src[i][j][k] (dim 2), in place
   function methods.scatter(self, dim, index, src)
      T.handle(self, 'scatter')
      index = index_arg('scatter', index)
      local d = cdim('scatter', self, dim)
      if type(src) == 'number' then
         check(C.mt_scatter_fill(self.h, d, T.handle(index, 'scatter'), src, 1), 'scatter', 'scatter_fill')
      else
         check(C.mt_scatter(self.h, d, T.handle(index, 'scatter'), T.handle(src, 'scatter'), 1))
      end
      return self
   end
   function torch.scatter(t, dim, index, src) return methods.scatter(t, dim, index, src) end

   ------------------------------------------------------------------------------------------
   -- cat: torch.cat([res,] a, b [, dim]) or torch.cat([res,] {a, b, ...} [, dim]); the default
   -- dim is the last dimension of the first input that takes part (Torch7)

   local function is_list(x) return type(x) == 'table' and not is_tensor(x) end

   local function cat(res, list, dim)
      local n = #list
      if n == 0 then error('cat: expected a non-empty list of tensors', 3) end
      local hs = ffi.new('mt_tensor*[?]', n)
      local first_dims
      for i = 1, n do
         local t = list[i]
         if not is_tensor(t) then error(('cat: input %d is a %s, expected a tensor'):format(i, type(t)), 3) end
         hs[i - 1] = T.handle(t, 'cat')
         local nd = C.mt_tensor_ndim(t.h)
         if first_dims == nil and not (nd == 1 and C.mt_tensor_size(t.h, 0) == 0) then first_dims = nd end
      end
      first_dims = first_dims or 1
      if dim == nil then dim = first_dims end
      if type(dim) ~= 'number' or dim ~= math.floor(dim) then
         error('cat: dimension must be an integer, got ' .. tostring(dim), 3)
      end
      if dim < 0 then dim = dim + first_dims + 1 end
      res = res or empty_like(list[1])
      check(C.mt_cat(T.handle(res, 'cat'), hs, n, dim - 1))
      return res
   end

   function torch.cat(a, b, c, d)
      if is_tensor(a) and is_list(b) then return cat(a, b, c) end            -- res, {..}, dim
      if is_list(a) then return cat(nil, a, b) end                             -- {..}, dim
      if is_tensor(a) and is_tensor(b) and is_tensor(c) then return cat(a, { b, c }, d) end -- res, x, y, dim
      if is_tensor(a) and is_tensor(b) then return cat(nil, { a, b }, c) end   -- x, y, dim
      error('cat: expected arguments ([res,] x, y [, dim]) or ([res,] {tensors} [, dim])', 2)
   end

   -- res:cat(x, y [, dim]) / res:cat({..} [, dim]) fill res (Torch7); a:cat(b [, dim]) returns a new one
   function methods.cat(self, a, b, c)
      if is_list(a) or (is_tensor(a) and is_tensor(b)) then return torch.cat(self, a, b, c) end
      return torch.cat(self, a, b)
   end

   ------------------------------------------------------------------------------------------
   -- t:maskedCopy(mask, src): the elements of t where mask is 1 get src's first elements, in
   -- row-major order. As in Torch7 the shapes need not match: mask has t's number of elements,
   -- src at least as many as mask has ones. Runs as a scatter into t's flat view (a contiguous
   -- copy when t is not) at the positions maskedSelect picks from 0, 1, 2, ...

   function methods.maskedCopy(self, mask, src)
      T.handle(self, 'maskedCopy')
      T.handle(mask, 'maskedCopy')
      T.handle(src, 'maskedCopy')
      local dt, mdt = C.mt_tensor_dtype(self.h), C.mt_tensor_dtype(mask.h)
      if mdt ~= T.BYTE and mdt ~= T.BOOL then
         error('maskedCopy: the mask must be a ByteTensor, got ' .. mask:type(), 2)
      end
      if C.mt_tensor_dtype(src.h) ~= dt then
         error(('maskedCopy: source is a %s, expected a %s like the tensor'):format(src:type(), self:type()), 2)
      end
      local n = self:nElement()
      if mask:nElement() ~= n then
         error(('maskedCopy: the mask has %d elements (size %s), the tensor %d (size %s)'):format(mask:nElement(),
            size_str(mask), n, size_str(self)), 2)
      end
      if n == 0 then return self end
      local dev = C.mt_tensor_device(self.h)
      local flatmask = mask:contiguous():view(n)
      local lin = T.new_tensor(T.LONG, dev, { n })
      check(C.mt_arange(lin.h, 0, 1))
      local pos = T.empty_tensor(T.LONG, dev)
      check(C.mt_masked_select(pos.h, lin.h, flatmask.h), 'maskedCopy', true)
      local count = pos:nElement()
      if count > src:nElement() then
         error(('maskedCopy: the mask selects %d elements but the source has only %d'):format(count, src:nElement()), 2)
      end
      if count == 0 then return self end
      local values = src:contiguous():view(src:nElement()):narrow(1, 1, count)
      local target = C.mt_tensor_is_contiguous(self.h) == 1 and self or self:contiguous()
      local flat = target:view(n)
      check(C.mt_scatter(flat.h, 0, pos.h, values.h, 0), 'maskedCopy', 'scatter')
      if target ~= self then check(C.mt_copy(self.h, target.h)) end
      return self
   end
end
