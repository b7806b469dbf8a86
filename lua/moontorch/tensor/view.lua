-- view.lua: views that share storage (view, reshape, narrow, select, sub, transpose,
-- permute, expand, squeeze, unsqueeze, unfold), copies (copy, clone, contiguous), resize/set
-- (over tensors or storage.lua's storages), type conversion, and Lua callbacks over elements
-- (apply, map, map2).
-- Dimensions are 1-based here (negative ones count from the end) and 0-based in C.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, outp = T.clib, T.check, T.tensor_methods, T.out_handle
   local is_int, size_list, sizes_buf = T.is_int, T.size_list, T.sizes_buf

   local sbuf, stbuf = T.size_scratch, T.stride_scratch
   local dimbuf = ffi.new('int[8]')

   -- "2x3x4", as C's messages print shapes
   local function shape_str(t)
      local s = T.sizes(t)
      if #s == 0 then return '[scalar]' end
      return table.concat(s, 'x')
   end
   T.shape_str = shape_str

   -- Torch7 dimension (1-based, negative from the end) to a 0-based C dimension. `extra`
   -- admits one past the last dimension (unsqueeze).
   local function dim0(op, t, d, level, extra)
      local n = C.mt_tensor_ndim(t.h)
      local top = n + (extra or 0)
      if not is_int(d) then error(('%s: dimension must be an integer, got %s'):format(op, tostring(d)), level + 1) end
      local dd = d < 0 and d + top + 1 or d
      if dd < 1 or dd > top then
         error(('%s: dimension %d out of range for a tensor of size %s (%d dimensions)'):format(op, d, shape_str(t), n),
            level + 1)
      end
      return dd - 1
   end

   local function h_of(t, op) return T.handle(t, op) end

   ------------------------------------------------------------------------------------------
   -- views
   -- t:op(sizes...) and t:opAs(other) for view, expand and resize: sizes in the scratch
   -- array, then fn(t, h, n, sizes) does the op. fn is tail-called, so the errors it raises
   -- point at the user's line as the method's own would.
   local function with_sizes(op, fn)
      methods[op] = function(t, ...)
         local h = h_of(t, op)
         local n, buf = sizes_buf(size_list(...), false, op)
         return fn(t, h, n, buf)
      end
      methods[op .. 'As'] = function(t, other)
         local h = h_of(t, op .. 'As')
         local n, buf = sizes_buf(T.sizes(T.is_tensor(other) and other or h_of(other, op .. 'As')), false, op .. 'As')
         return fn(t, h, n, buf)
      end
   end

   with_sizes('view', function(t, h, n, buf)
      -- an empty tensor viewed as no sizes (another empty tensor's size()) stays empty (Tensor.lua's ndim)
      if n == 0 and C.mt_tensor_numel(h) == 0 then n, buf[0] = 1, 0 end
      check(C.mt_tensor_view(outp, h, n, buf))
      return T.wrap_handle(outp[0])
   end)

   -- reshape: a view when the layout allows it, else a contiguous copy. Torch7's
   -- torch.reshape(res, x, sizes) copies into res.
   local function reshape_into(res, t, ...)
      local r = methods.reshape(t, ...)
      local rh = h_of(res, 'reshape')
      if C.mt_tensor_dtype(rh) ~= C.mt_tensor_dtype(r.h) or C.mt_tensor_device(rh) ~= C.mt_tensor_device(r.h) then
         error(('reshape: result is a %s, source a %s'):format(res:type(), t:type()), 3)
      end
      local n, buf = sizes_buf(T.sizes(r), false, 'reshape')
      check(C.mt_tensor_resize(rh, n, buf))
      check(C.mt_copy(rh, r.h))
      return res
   end

   function methods.reshape(t, ...)
      if T.is_tensor((...)) then return reshape_into(t, ...) end
      local h = h_of(t, 'reshape')
      local n, buf = sizes_buf(size_list(...), false, 'reshape')
      if n == 0 and C.mt_tensor_numel(h) == 0 then n, buf[0] = 1, 0 end -- empty stays empty
      if C.mt_tensor_view(outp, h, n, buf) == 0 then return T.wrap_handle(outp[0]) end
      -- a size mismatch is an error whatever the layout; only a stride problem falls back
      if C.mt_tensor_is_contiguous(h) == 1 then T.raise('reshape', 'view') end
      local c = methods.clone(t)
      n, buf = sizes_buf(size_list(...), false, 'reshape')
      if C.mt_tensor_view(outp, c.h, n, buf) ~= 0 then T.raise('reshape', 'view') end
      return T.wrap_handle(outp[0])
   end

   function methods.narrow(t, dim, start, len)
      local h = h_of(t, 'narrow')
      local d = dim0('narrow', t, dim, 2)
      if not is_int(start) or not is_int(len) then
         error(('narrow: start and length must be integers, got %s and %s'):format(tostring(start), tostring(len)), 2)
      end
      if start < 0 then start = start + tonumber(C.mt_tensor_size(h, d)) + 1 end
      check(C.mt_tensor_narrow(outp, h, d, start - 1, len))
      return T.wrap_handle(outp[0])
   end

   function methods.select(t, dim, i)
      local h = h_of(t, 'select')
      -- Torch7: on a 1-d tensor the dimension is not read, and the element comes back as a number
      local one = C.mt_tensor_ndim(h) == 1 and C.mt_tensor_size(h, 0) > 0
      if one and not is_int(dim) then
         error(('select: dimension must be an integer, got %s'):format(tostring(dim)), 2)
      end
      local d = one and 0 or dim0('select', t, dim, 2)
      local size = tonumber(C.mt_tensor_size(h, d))
      if not is_int(i) then error(('select: index must be an integer, got %s'):format(tostring(i)), 2) end
      local ii = i < 0 and i + size + 1 or i
      if ii < 1 or ii > size then
         error(('select: index %d out of range for dimension %d of size %d'):format(i, d + 1, size), 2)
      end
      if one then return t[ii] end
      check(C.mt_tensor_select(outp, h, d, ii - 1))
      return T.wrap_handle(outp[0])
   end

   -- sub(d1s, d1e, d2s, d2e, ...): narrow the leading dimensions to inclusive ranges;
   -- negative bounds count from the end (-1 is the last index).
   function methods.sub(t, ...)
      local h = h_of(t, 'sub')
      local nd = C.mt_tensor_ndim(h)
      local args = { ... }
      local na = select('#', ...)
      if na % 2 == 1 or na > 2 * nd then
         error(('sub: expected pairs of bounds for at most %d dimensions, got %d numbers'):format(nd, na), 2)
      end
      local offset = tonumber(C.mt_tensor_offset(h))
      for i = 0, nd - 1 do
         sbuf[i] = C.mt_tensor_size(h, i)
         stbuf[i] = C.mt_tensor_stride(h, i)
      end
      for k = 1, na / 2 do
         local s, e = args[2 * k - 1], args[2 * k]
         if not is_int(s) or not is_int(e) then
            error(('sub: bounds for dimension %d must be integers, got %s and %s'):format(k, tostring(s),
               tostring(e)), 2)
         end
         local size = tonumber(sbuf[k - 1])
         local ss, ee = s < 0 and s + size + 1 or s, e < 0 and e + size + 1 or e
         if ss < 1 or ee > size or ee < ss then
            error(('sub: range [%d, %d] invalid for dimension %d of size %d'):format(s, e, k, size), 2)
         end
         offset = offset + (ss - 1) * tonumber(stbuf[k - 1])
         sbuf[k - 1] = ee - ss + 1
      end
      check(C.mt_tensor_as_strided(outp, h, nd, sbuf, stbuf, offset))
      return T.wrap_handle(outp[0])
   end

   function methods.transpose(t, d1, d2)
      local h = h_of(t, 'transpose')
      local a, b = dim0('transpose', t, d1, 2), dim0('transpose', t, d2, 2)
      check(C.mt_tensor_transpose(outp, h, a, b))
      return T.wrap_handle(outp[0])
   end

   function methods.t(t)
      local h = h_of(t, 't')
      if C.mt_tensor_ndim(h) ~= 2 then
         error(('t: expected a 2-dimensional tensor, got one of size %s; use transpose(d1, d2)')
            :format(shape_str(t)), 2)
      end
      check(C.mt_tensor_transpose(outp, h, 0, 1))
      return T.wrap_handle(outp[0])
   end

   function methods.permute(t, ...)
      local h = h_of(t, 'permute')
      local dims = size_list(...)
      local n = #dims
      if n > 8 then error(('permute: at most 8 dimensions, got %d'):format(n), 2) end
      for i = 1, n do dimbuf[i - 1] = dim0('permute', t, dims[i], 2) end
      check(C.mt_tensor_permute(outp, h, n, dimbuf))
      return T.wrap_handle(outp[0])
   end

   with_sizes('expand', function(t, h, n, buf)
      check(C.mt_tensor_expand(outp, h, n, buf))
      return T.wrap_handle(outp[0])
   end)

   -- Torch7's result-first forms: res:view(src, sizes...), res:viewAs(src, template),
   -- res:expand(src, sizes...), res:expandAs(src, template) make res that view of src
   for _, op in ipairs { 'view', 'expand', 'viewAs', 'expandAs' } do
      local plain = methods[op]
      methods[op] = function(t, src, ...)
         if not T.is_tensor(src) or (op:sub(-2) == 'As' and select('#', ...) == 0) then return plain(t, src, ...) end
         local v = plain(src, ...)
         return methods.set(t, v)
      end
   end

   -- squeeze(): drop every size-1 dimension; squeeze(dim): drop that one if its size is 1.
   -- As Torch7, a one-element result comes back as a number: from squeeze() always, from
   -- squeeze(dim) when t had one dimension.
   function methods.squeeze(t, dim)
      local h = h_of(t, 'squeeze')
      local d = dim == nil and -1 or dim0('squeeze', t, dim, 2)
      if C.mt_tensor_numel(h) == 1 and (dim == nil or C.mt_tensor_ndim(h) <= 1) then
         return methods.view(t, 1)[1]
      end
      check(C.mt_tensor_squeeze(outp, h, d))
      return T.wrap_handle(outp[0])
   end

   function methods.unsqueeze(t, dim)
      local h = h_of(t, 'unsqueeze')
      local d = dim0('unsqueeze', t, dim, 2, 1)
      check(C.mt_tensor_unsqueeze(outp, h, d))
      return T.wrap_handle(outp[0])
   end

   function methods.unfold(t, dim, size, step)
      local h = h_of(t, 'unfold')
      local d = dim0('unfold', t, dim, 2)
      if not is_int(size) or not is_int(step) then
         error(('unfold: size and step must be integers, got %s and %s'):format(tostring(size), tostring(step)), 2)
      end
      check(C.mt_tensor_unfold(outp, h, d, size, step))
      return T.wrap_handle(outp[0])
   end

   ------------------------------------------------------------------------------------------
   -- copies
   function methods.copy(t, src)
      local h = h_of(t, 'copy')
      if not T.is_tensor(src) then error('copy: expected a source tensor, got ' .. type(src), 2) end
      check(C.mt_copy(h, h_of(src, 'copy')))
      return t
   end

   function methods.clone(t)
      local h = h_of(t, 'clone')
      local r = T.new_tensor(C.mt_tensor_dtype(h), C.mt_tensor_device(h), T.sizes(t))
      check(C.mt_copy(r.h, h))
      return r
   end

   function methods.contiguous(t)
      if C.mt_tensor_is_contiguous(h_of(t, 'contiguous')) == 1 then return t end
      return methods.clone(t)
   end

   ------------------------------------------------------------------------------------------
   -- in-place metadata
   with_sizes('resize', function(t, h, n, buf)
      check(C.mt_tensor_resize(h, n, buf))
      return t
   end)
   -- Torch7: resizing to no sizes (an empty tensor's size()) gives the empty tensor (Tensor.lua's ndim);
   -- resizeAs keeps a 0-d scalar's shape
   local resize_to = methods.resize
   function methods.resize(t, ...)
      local s = size_list(...)
      if #s == 0 then return resize_to(t, 0) end
      return resize_to(t, ...)
   end

   local function same_type(op, a, b)
      if C.mt_tensor_dtype(a.h) ~= C.mt_tensor_dtype(b.h) or C.mt_tensor_device(a.h) ~= C.mt_tensor_device(b.h) then
         error(('%s: a %s cannot share storage with a %s'):format(op, a:type(), b:type()), 3)
      end
   end

   -- set(): empty; set(tensor): share its storage and layout; set(storage [, offset, sizes
   -- [, strides]]) as Torch7 (offset 1-based, contiguous strides by default).
   function methods.set(t, src, offset, sizes, strides)
      local h = h_of(t, 'set')
      if src == nil then
         local e = T.empty_tensor(C.mt_tensor_dtype(h), C.mt_tensor_device(h))
         check(C.mt_tensor_set(h, e.h))
         return t
      end
      if T.is_storage(src) then
         local base = src._t
         same_type('set', t, base)
         offset = offset or 1
         if not is_int(offset) then error('set: storage offset must be an integer, got ' .. tostring(offset), 2) end
         if sizes == nil then sizes = { tonumber(C.mt_tensor_storage_numel(base.h)) - (offset - 1) } end
         local sz = size_list(sizes)
         local n = sizes_buf(sz, false, 'set')
         if strides == nil then
            local s = 1
            for i = n, 1, -1 do stbuf[i - 1] = s; s = s * math.max(sz[i], 1) end
         else
            local st = size_list(strides)
            if #st ~= n then error(('set: %d sizes but %d strides'):format(n, #st), 2) end
            sizes_buf(st, true, 'set')
         end
         check(C.mt_tensor_as_strided(outp, base.h, n, sbuf, stbuf, offset - 1))
         local v = T.wrap_handle(outp[0])
         check(C.mt_tensor_set(h, v.h))
         return t
      end
      if not T.is_tensor(src) then error('set: expected a tensor or a storage, got ' .. type(src), 2) end
      same_type('set', t, src)
      check(C.mt_tensor_set(h, h_of(src, 'set')))
      return t
   end

   local function same_sizes(a, b)
      if #a ~= #b then return false end
      for i = 1, #a do if a[i] ~= b[i] then return false end end
      return true
   end

   function methods.isSameSizeAs(t, other) return same_sizes(T.sizes(t), T.sizes(other)) end

   function methods.isSize(t, sizes)
      return same_sizes(T.sizes(t), size_list(sizes))
   end

   function methods.isSetTo(t, other)
      local a, b = h_of(t, 'isSetTo'), h_of(other, 'isSetTo')
      if C.mt_tensor_storage_key(a) ~= C.mt_tensor_storage_key(b) or C.mt_tensor_offset(a) ~= C.mt_tensor_offset(b)
         or C.mt_tensor_ndim(a) ~= C.mt_tensor_ndim(b) then
         return false
      end
      for i = 0, C.mt_tensor_ndim(a) - 1 do
         if C.mt_tensor_size(a, i) ~= C.mt_tensor_size(b, i)
            or C.mt_tensor_stride(a, i) ~= C.mt_tensor_stride(b, i) then
            return false
         end
      end
      return true
   end

   ------------------------------------------------------------------------------------------
   -- type conversion: self when already of that type, else a converted copy on the same device
   local conv = { float = T.FLOAT, double = T.DOUBLE, half = T.HALF, bfloat16 = T.BFLOAT16, int = T.INT,
      long = T.LONG, byte = T.BYTE, bool = T.BOOL, char = T.CHAR, short = T.SHORT }
   for name, dtype in pairs(conv) do
      methods[name] = function(t) return T.convert(t, dtype, C.mt_tensor_device(h_of(t, name))) end
   end

   function methods.typeAs(t, other)
      h_of(t, 'typeAs')
      local oh = h_of(other, 'typeAs')
      return T.convert(t, C.mt_tensor_dtype(oh), C.mt_tensor_device(oh))
   end

   ------------------------------------------------------------------------------------------
   -- Lua callbacks over elements (CPU only), in row-major order.

   -- A closure returning the element offsets (relative to the data pointer) of t one by one.
   local function cursor(t)
      local sizes, nd = T.sizes(t), C.mt_tensor_ndim(t.h)
      local strides, idx = {}, {}
      for i = 1, nd do
         strides[i] = tonumber(C.mt_tensor_stride(t.h, i - 1))
         idx[i] = 0
      end
      local off, first = 0, true
      return function()
         if first then first = false return off end
         for d = nd, 1, -1 do
            idx[d] = idx[d] + 1
            off = off + strides[d]
            if idx[d] < sizes[d] then return off end
            off = off - strides[d] * sizes[d]
            idx[d] = 0
         end
         return off
      end
   end

   local function cpu_only(op, t, level)
      if C.mt_tensor_device(h_of(t, op)) >= 0 then
         error(op .. ': Lua callbacks run on CPU tensors only; convert with :float() or :cpu() first', level + 1)
      end
   end

   -- Pointer and store function for Lua callbacks; half/bf16 are handled via a float copy.
   local function writer(t)
      local p = methods.data(t)
      local dt = C.mt_tensor_dtype(t.h)
      if dt == T.BOOL then
         return p, function(q, off, v) q[off] = (v ~= 0 and v ~= false) and 1 or 0 end
      end
      return p, function(q, off, v)
         if v == true then v = 1 elseif v == false then v = 0 end
         q[off] = v
      end
   end

   local function narrow_float(dt) return dt == T.HALF or dt == T.BFLOAT16 end

   -- apply(fn): fn(x) for every element; a number returned replaces the element.
   function methods.apply(t, fn)
      cpu_only('apply', t, 2)
      if type(fn) ~= 'function' then error('apply: expected a function, got ' .. type(fn), 2) end
      if narrow_float(C.mt_tensor_dtype(t.h)) then
         local f = methods.float(t)
         methods.apply(f, fn)
         check(C.mt_copy(t.h, f.h))
         return t
      end
      local p, store = writer(t)
      local nextoff = cursor(t)
      for _ = 1, methods.nElement(t) do
         local off = nextoff()
         local r = fn(tonumber(p[off]))
         if r ~= nil then store(p, off, r) end
      end
      return t
   end

   -- map(t2, fn): fn(x, y) over paired elements (same number of elements); map2(t2, t3, fn).
   local function mapn(op, t, others, fn)
      cpu_only(op, t, 3)
      if type(fn) ~= 'function' then error(op .. ': expected a function, got ' .. type(fn), 3) end
      local n = methods.nElement(t)
      for _, o in ipairs(others) do
         cpu_only(op, o, 3)
         if methods.nElement(o) ~= n then
            error(('%s: tensors of size %s and %s have different numbers of elements'):format(op, shape_str(t),
               shape_str(o)), 3)
         end
      end
      local src = {}
      for i, o in ipairs(others) do
         if narrow_float(C.mt_tensor_dtype(o.h)) then o = methods.float(o) end
         src[i] = { p = methods.data(o), next = cursor(o), o = o }
      end
      local target = t
      if narrow_float(C.mt_tensor_dtype(t.h)) then target = methods.float(t) end
      local p, store = writer(target)
      local nextoff = cursor(target)
      local a, b = src[1], src[2]
      for _ = 1, n do
         local off = nextoff()
         local x = tonumber(p[off])
         local y = tonumber(a.p[a.next()])
         local r
         if b then r = fn(x, y, tonumber(b.p[b.next()])) else r = fn(x, y) end
         if r ~= nil then store(p, off, r) end
      end
      if target ~= t then check(C.mt_copy(t.h, target.h)) end
      return t
   end
   function methods.map(t, t2, fn) return mapn('map', t, { t2 }, fn) end
   function methods.map2(t, t2, t3, fn) return mapn('map2', t, { t2, t3 }, fn) end

   ------------------------------------------------------------------------------------------
   -- torch.* forms: torch.narrow(x, ...) and Torch7's optional result first,
   -- torch.squeeze(res, x, ...), which points res at the result.
   local function with_res(name)
      local m = methods[name]
      torch[name] = function(a, b, ...)
         if T.is_tensor(a) and T.is_tensor(b) then
            local r = m(b, ...)
            same_type(name, a, r)
            check(C.mt_tensor_set(a.h, r.h))
            return a
         end
         return m(a, b, ...)
      end
   end
   for _, name in ipairs { 'view', 'narrow', 'select', 'sub', 'transpose', 't', 'permute', 'expand', 'squeeze',
      'unsqueeze', 'unfold' } do
      with_res(name)
   end
   torch.reshape = methods.reshape
   torch.viewAs, torch.expandAs = methods.viewAs, methods.expandAs
   torch.clone, torch.contiguous = methods.clone, methods.contiguous
   torch.isSameSizeAs, torch.isSetTo = methods.isSameSizeAs, methods.isSetTo

   -- Torch7's torch.equal: same sizes and every element equal (NaN is unequal to itself)
   function methods.equal(t, other)
      if not T.is_tensor(other) then error('equal: expected a tensor as argument 2, got ' .. type(other), 2) end
      if not methods.isSameSizeAs(t, other) then return false end
      if methods.nElement(t) == 0 then return true end
      return methods.ne(t, other):sum() == 0
   end
   torch.equal = methods.equal
end
