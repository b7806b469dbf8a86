-- indexing.lua: Torch7 indexing. t[i] (a number on a 1-d tensor, else the select view),
-- t[{2, {1, 3}, {}}] slice tables, t[mask] (ByteTensor/BoolTensor), t[longIndex], and the
-- matching assignments. Indices are 1-based; negative ones count from the end.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, outp = T.clib, T.check, T.tensor_methods, T.out_handle
   local floor = math.floor

   local idxbuf, sbuf, stbuf = T.index_scratch, T.size_scratch, T.stride_scratch
   local dbuf = ffi.new('double[1]')

   -- typed pointers for the dtypes Lua can read directly; half/bf16 go through C
   local ptr_of = {}
   for _, d in ipairs(T.dtypes) do
      if d.id ~= T.HALF and d.id ~= T.BFLOAT16 then ptr_of[d.id] = d.ptr end
   end
   local F32, F64 = T.FLOAT, T.DOUBLE

   local function bad_index(i, dim, size, level)
      error(('indexing: index %s out of range for dimension %d of size %d'):format(tostring(i), dim, size), level + 1)
   end

   -- 1-based (maybe negative) index into a 0-based one, checked against the size.
   local function norm_index(i, dim, size, level)
      if i ~= floor(i) then
         error(('indexing: index %s for dimension %d is not an integer'):format(tostring(i), dim), level + 1)
      end
      local ii = i < 0 and i + size + 1 or i
      if ii < 1 or ii > size then bad_index(i, dim, size, level + 1) end
      return ii - 1
   end

   -- Element of h at the 0-based indices in idxbuf (n of them). `rel` is the offset from
   -- the data pointer, used by the direct CPU path.
   -- Floats and doubles through T.read_f32/read_f64 (NaNs by their bits); C returns its NaNs
   -- canonical.
   local read_f32, read_f64 = T.read_f32, T.read_f64
   local function read_at(h, rel)
      local dt = C.mt_tensor_dtype(h)
      local p = ptr_of[dt]
      if p and C.mt_tensor_device(h) < 0 then
         local data = C.mt_tensor_data(h)
         if dt == F32 then return read_f32(data, rel) end
         if dt == F64 then return read_f64(data, rel) end
         return tonumber(ffi.cast(p, data)[rel])
      end
      check(C.mt_tensor_get_item(h, idxbuf, dbuf))
      return dbuf[0]
   end

   local function write_at(h, rel, v, level)
      if type(v) == 'boolean' then v = v and 1 or 0 end
      if type(v) ~= 'number' then
         error('indexing: cannot assign a ' .. type(v) .. ' to a tensor element', level + 1)
      end
      local dt = C.mt_tensor_dtype(h)
      if (dt == F32 or dt == F64) and C.mt_tensor_device(h) < 0 then
         ffi.cast(ptr_of[dt], C.mt_tensor_data(h))[rel] = v
         return
      end
      -- integer stores need C's saturating conversion; half/bf16 its rounding
      check(C.mt_tensor_set_item(h, idxbuf, v))
   end

   -- Write v (a number fills, a tensor is copied) into the view v_t.
   local function assign_view(view, v, level)
      if type(v) == 'number' or type(v) == 'boolean' then
         if type(v) == 'boolean' then v = v and 1 or 0 end
         check(C.mt_fill(view.h, v))
      elseif T.is_tensor(v) then
         check(C.mt_copy(view.h, T.handle(v, 'indexing')))
      else
         error('indexing: cannot assign a ' .. type(v) .. ' to a tensor slice', level + 1)
      end
   end

   local function ndim_error(n, level)
      error('indexing: cannot index a 0-dimensional tensor with a number (use t[{}] for a view)', level + 1)
   end

   ------------------------------------------------------------------------------------------
   -- slice tables: resolve to (kind, rel) where kind 'elem' means every dimension was selected
   -- (idxbuf holds the indices, rel the element offset), otherwise 'view' with sbuf/stbuf/
   -- offset describing the result's layout.
   local function resolve(h, spec, level)
      local nd = C.mt_tensor_ndim(h)
      local n = #spec
      if n > nd then
         error(('indexing: %d indices given for a tensor with %d dimensions'):format(n, nd), level + 1)
      end
      local rel, out, all_numbers = 0, 0, true
      for d = 0, nd - 1 do
         local size, stride = tonumber(C.mt_tensor_size(h, d)), tonumber(C.mt_tensor_stride(h, d))
         local e = spec[d + 1]
         if type(e) == 'number' then
            local i = norm_index(e, d + 1, size, level + 1)
            idxbuf[d] = i
            rel = rel + i * stride
         else
            all_numbers = false
            local a, b = 1, size
            -- (e == nil: trailing dimensions not named: whole)
            if type(e) == 'table' and not T.is_tensor(e) then
               local ne = #e
               if ne > 2 then
                  error(('indexing: range for dimension %d has %d entries; expected {}, {i} or {a, b}')
                     :format(d + 1, ne), level + 1)
               end
               if ne >= 1 then a = e[1]; b = ne == 2 and e[2] or a end
               for _, x in ipairs { a, b } do
                  if type(x) ~= 'number' or x ~= floor(x) then
                     error(('indexing: range bound %s for dimension %d is not an integer'):format(tostring(x), d + 1),
                        level + 1)
                  end
               end
               local ra, rb = a < 0 and a + size + 1 or a, b < 0 and b + size + 1 or b
               if ra < 1 or ra > size then bad_index(a, d + 1, size, level + 1) end
               if rb < 1 or rb > size then bad_index(b, d + 1, size, level + 1) end
               if rb < ra then
                  error(('indexing: range {%d, %d} is reversed for dimension %d of size %d'):format(a, b, d + 1, size),
                     level + 1)
               end
               a, b = ra, rb
            elseif e ~= nil then
               error(('indexing: entry %d of the index table is a %s; expected a number or a table'):format(d + 1,
                  type(e)), level + 1)
            end
            rel = rel + (a - 1) * stride
            sbuf[out] = b - a + 1
            stbuf[out] = stride
            out = out + 1
         end
      end
      if all_numbers and nd > 0 then return 'elem', rel end
      return 'view', rel, out
   end

   local function slice_view(h, rel, n)
      check(C.mt_tensor_as_strided(outp, h, n, sbuf, stbuf, C.mt_tensor_offset(h) + rel))
      return T.wrap_handle(outp[0])
   end

   local function dtype_of(t) return C.mt_tensor_dtype(t.h) end
   local function is_mask(k) local d = dtype_of(k) return d == T.BYTE or d == T.BOOL end

   ------------------------------------------------------------------------------------------
   -- t[k] for a number k: the number of dimensions, and k as a 0-based index into the first
   local function number_index(h, k)
      local nd = C.mt_tensor_ndim(h)
      if nd == 0 then ndim_error(nd, 3) end
      return nd, norm_index(k, 1, tonumber(C.mt_tensor_size(h, 0)), 3)
   end

   local function get(t, k)
      local h = t.h
      if h == nil then error('indexing: tensor was freed', 2) end
      if type(k) == 'number' then
         local nd, i = number_index(h, k)
         if nd == 1 then
            idxbuf[0] = i
            return read_at(h, i * tonumber(C.mt_tensor_stride(h, 0)))
         end
         check(C.mt_tensor_select(outp, h, 0, i))
         return T.wrap_handle(outp[0])
      end
      if T.is_tensor(k) then
         if is_mask(k) then
            if not methods.maskedSelect then
               error('indexing: t[mask] needs maskedSelect, which is not available', 2)
            end
            return methods.maskedSelect(t, k)
         end
         if dtype_of(k) == T.LONG then
            if not methods.index then error('indexing: t[indices] needs index(), which is not available', 2) end
            return methods.index(t, 1, k)
         end
         error(('indexing: cannot index with a %s; use a LongTensor of indices or a ByteTensor mask')
            :format(k:type()), 2)
      end
      if type(k) == 'table' then
         local kind, rel, n = resolve(h, k, 2)
         if kind == 'elem' then return read_at(h, rel) end
         return slice_view(h, rel, n)
      end
      error(('indexing: cannot index a tensor with a %s'):format(type(k)), 2)
   end

   local function set(t, k, v)
      local h = t.h
      if h == nil then error('indexing: tensor was freed', 2) end
      if type(k) == 'number' then
         local nd, i = number_index(h, k)
         if nd == 1 and not T.is_tensor(v) then
            idxbuf[0] = i
            return write_at(h, i * tonumber(C.mt_tensor_stride(h, 0)), v, 2)
         end
         check(C.mt_tensor_select(outp, h, 0, i))
         return assign_view(T.wrap_handle(outp[0]), v, 2)
      end
      if T.is_tensor(k) then
         local number = type(v) == 'number'
         if is_mask(k) then
            local m = number and methods.maskedFill or methods.maskedCopy
            if not m then
               error(('indexing: t[mask] = %s needs %s, which is not available'):format(type(v),
                  number and 'maskedFill' or 'maskedCopy'), 2)
            end
            m(t, k, v)
            return
         end
         if dtype_of(k) == T.LONG then
            local m = number and methods.indexFill or methods.indexCopy
            if not m then
               error(('indexing: t[indices] = %s needs %s, which is not available'):format(type(v),
                  number and 'indexFill' or 'indexCopy'), 2)
            end
            m(t, 1, k, v)
            return
         end
         error(('indexing: cannot index with a %s; use a LongTensor of indices or a ByteTensor mask')
            :format(k:type()), 2)
      end
      if type(k) == 'table' then
         local kind, rel, n = resolve(h, k, 2)
         if kind == 'elem' and not T.is_tensor(v) then return write_at(h, rel, v, 2) end
         if kind == 'elem' then -- a tensor assigned to one element: through a 0-d view
            return assign_view(slice_view(h, rel, 0), v, 2)
         end
         return assign_view(slice_view(h, rel, n), v, 2)
      end
      error(('indexing: cannot index a tensor with a %s'):format(type(k)), 2)
   end

   T.set_index_hooks(get, set)

   -- #t: the sizes, as Torch7
   T.tensor_metatable.__len = function(t) return methods.size(t) end
end
