-- constructors.lua: constructors (torch.FloatTensor(2,3), torch.Tensor{{1,2},{3,4}}, ...),
-- factories (zeros, ones, range, linspace, eye, *Like) and conversion to Lua tables.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods = T.clib, T.check, T.tensor_methods

   -- Shape and flat values of a nested Lua table of numbers.
   local function table_shape(data)
      local shape, node = {}, data
      while type(node) == 'table' do
         shape[#shape + 1] = #node
         node = node[1]
         if node == nil then break end
      end
      return shape
   end

   -- Row-major values of data (of the given shape) appended to out. A loop with an explicit
   -- stack, not recursion: the error level is the same at every depth, and Debian's LuaJIT
   -- can crash restoring a side trace of a recursive Lua function (docs/design.md).
   local function flatten(data, shape, out)
      local nd, n = #shape, #out
      local nodes, pos, depth = { data }, { 0 }, 1
      if nd == 0 or type(data) ~= 'table' then error('tensor: expected a nested table of numbers', 3) end
      if #data ~= shape[1] then
         error(('tensor: ragged table: dimension 1 should have %d entries'):format(shape[1]), 3)
      end
      while depth > 0 do
         local i = pos[depth] + 1
         if i > shape[depth] then
            depth = depth - 1
         else
            pos[depth] = i
            local v = nodes[depth][i]
            if depth == nd then
               if type(v) == 'boolean' then v = v and 1 or 0 end
               if type(v) ~= 'number' then
                  error('tensor: table holds a ' .. type(v) .. ' where a number was expected', 3)
               end
               n = n + 1
               out[n] = v
            else
               if type(v) ~= 'table' or #v ~= shape[depth + 1] then
                  error(('tensor: ragged table: dimension %d should have %d entries'):format(depth + 1,
                     shape[depth + 1]), 3)
               end
               depth = depth + 1
               nodes[depth], pos[depth] = v, 0
            end
         end
      end
   end

   -- A CPU tensor of dtype filled from a flat Lua array, moved to device afterwards.
   function T.from_flat(values, shape, dtype, device)
      local t = T.new_tensor(dtype, T.CPU_DEVICE, shape)
      local h = t.h
      local n = #values
      if dtype == T.HALF or dtype == T.BFLOAT16 then
         local f = T.new_tensor(T.FLOAT, T.CPU_DEVICE, shape)
         local p = ffi.cast('float*', C.mt_tensor_data(f.h))
         for i = 1, n do p[i - 1] = values[i] end
         check(C.mt_copy(h, f.h))
      else
         local p = ffi.cast(T.dtypes[dtype + 1].ptr, C.mt_tensor_data(h))
         if dtype == T.BOOL then
            for i = 1, n do p[i - 1] = values[i] ~= 0 and 1 or 0 end
         else
            for i = 1, n do p[i - 1] = values[i] end
         end
      end
      if device ~= T.CPU_DEVICE then t = T.convert(t, dtype, device) end
      return t
   end

   local function from_table(data, dtype, device)
      local shape = table_shape(data)
      local flat = {}
      flatten(data, shape, flat)
      return T.from_flat(flat, shape, dtype, device)
   end

   -- A new tensor over t's storage with its sizes, strides and offset (torch.FloatTensor(t)).
   function T.alias(t)
      local n, sizes = T.sizes_buf(T.sizes(t))
      local _, strides = T.sizes_buf(methods.stride(t), true)
      check(C.mt_tensor_as_strided(T.out_handle, t.h, n, sizes, strides, C.mt_tensor_offset(t.h)))
      return T.wrap_handle(T.out_handle[0])
   end

   -- Build a constructor for one dtype/device: the rules of Torch7's torch.XTensor(...)
   local function constructor(dtype, device)
      return function(a, ...)
         if a == nil then return T.empty_tensor(dtype, device) end
         if type(a) == 'number' then return T.new_tensor(dtype, device, { a, ... }) end
         -- Torch7: torch.Tensor(storage [, offset, sizes [, strides]]) views a storage of the
         -- tensor's own type (storage.lua); a LongStorage always gives sizes, also to a
         -- LongTensor (Torch7 would view it there: README, Conventions)
         if T.is_storage and T.is_storage(a) and not T.is_size(a) then
            return T.tensor_methods.set(T.empty_tensor(dtype, device), a, ...)
         end
         if T.is_size(a) then return T.new_tensor(dtype, device, #a == 0 and { 0 } or a) end -- {}: empty
         if T.is_tensor(a) then
            -- Torch7: a new tensor sharing the storage of a (same type only)
            if a:dtype() ~= dtype or a:device() ~= device then
               error('tensor: cannot share storage between ' .. a:type() .. ' and ' .. T.typename(dtype, device), 2)
            end
            return T.alias(a)
         end
         if type(a) == 'table' then return from_table(a, dtype, device) end
         error('tensor: cannot construct a tensor from a ' .. type(a), 2)
      end
   end

   -- torch.FloatTensor, torch.CudaTensor, ... : callable type objects
   T.tensor_types = {}
   for _, d in ipairs(T.dtypes) do
      for _, device in ipairs { T.CPU_DEVICE, 0 } do
         local name = T.typename(d.id, device)
         local ty = setmetatable({ dtype = d.id, device = device, __typename = name },
            { __call = function(_, ...) return constructor(d.id, device)(...) end,
              __tostring = function() return name end })
         T.tensor_types[name] = ty
         torch[name:match('^torch%.(.*)$')] = ty
         -- t.new(...) / t:new(...): Torch7's constructor of t's type, so t:new() is
         -- torch.XTensor(t), a tensor on t's storage, and t.new() an empty one. Given more
         -- arguments, a leading tensor of this very type is the method call's self: t:new(2, 3)
         -- is 2x3 (Torch7 ignores what follows a tensor and aliases it: README, Conventions)
         local face = T.type_methods(d.id, device)
         rawset(face, '__typename', name)
         rawset(face, 'new', function(a, ...)
            if select('#', ...) > 0 and T.is_tensor(a) and a.h ~= nil and C.mt_tensor_dtype(a.h) == d.id
               and (C.mt_tensor_device(a.h) >= 0) == (device >= 0) then
               return ty(...)
            end
            return ty(a, ...)
         end)
      end
   end

   local default = 'torch.FloatTensor'
   function torch.setdefaulttensortype(name)
      if not T.tensor_types[name] or T.tensor_types[name].device ~= T.CPU_DEVICE then
         error('setdefaulttensortype: unknown CPU type ' .. tostring(name), 2)
      end
      default = name
   end
   function torch.getdefaulttensortype() return default end
   function T.default_dtype() return T.tensor_types[default].dtype end
   torch.Tensor = setmetatable({}, {
      __call = function(_, ...) return T.tensor_types[default](...) end,
      __tostring = function() return default end,
   })

   function torch.isTensor(x) return T.is_tensor(x) end
   rawset(torch.Tensor, 'isTensor', torch.isTensor) -- Torch7 has the alias torch.Tensor.isTensor
   local class = require 'moontorch.class'
   function torch.typename(x)
      if T.is_tensor(x) then return x:type() end
      if T.is_size(x) then return 'torch.LongStorage' end
      return class.typename(x)   -- objects of torch.class classes: 'nn.Linear'
   end
   torch.type = function(x) return torch.typename(x) or type(x) end

   -- factories: torch.zeros(2,3) or torch.zeros(res, 2, 3) (Torch7's optional result first)
   local function sizes_args(a, ...)
      if T.is_size(a) then return a end
      if type(a) == 'table' and not T.is_tensor(a) then return a end
      return { a, ... }
   end
   local function factory(fill)
      return function(a, ...)
         local res, sizes
         if T.is_tensor(a) then
            res, sizes = a, sizes_args(...)
            check(C.mt_tensor_resize(res.h, T.sizes_buf(sizes)))
         else
            sizes = sizes_args(a, ...)
            res = T.new_tensor(T.default_dtype(), T.CPU_DEVICE, sizes)
         end
         fill(res)
         return res
      end
   end
   torch.zeros = factory(function(t) check(C.mt_fill(t.h, 0)) end)
   torch.ones = factory(function(t) check(C.mt_fill(t.h, 1)) end)

   local function like(fill)
      return function(t)
         local r = T.new_tensor(t:dtype(), t:device(), T.sizes(t))
         check(C.mt_fill(r.h, fill))
         return r
      end
   end
   torch.zerosLike = like(0)
   torch.onesLike = like(1)
   function torch.emptyLike(t) return T.new_tensor(t:dtype(), t:device(), T.sizes(t)) end

   -- The result of range, linspace and logspace: res keeps its shape (and strides: the values
   -- go along them in row-major order) when it holds n elements already, as in Torch7, and
   -- becomes a vector of n otherwise.
   local function sequence_result(res, n)
      if res == nil then return T.new_tensor(T.default_dtype(), T.CPU_DEVICE, { n }) end
      if C.mt_tensor_numel(res.h) ~= n then check(C.mt_tensor_resize(res.h, T.sizes_buf { n })) end
      return res
   end

   -- torch.range(a, b, step): inclusive on both ends, like Torch7
   function torch.range(res, a, b, step)
      if not T.is_tensor(res) then res, a, b, step = nil, res, a, b end
      step = step or 1
      if type(a) ~= 'number' or type(b) ~= 'number' or type(step) ~= 'number' then
         error(('range: expected numbers (from, to [, step]), got %s, %s, %s'):format(type(a), type(b), type(step)), 2)
      end
      if step == 0 then error('range: step must be nonzero', 2) end
      if (b - a) / step < 0 then error(('range: cannot go from %g to %g with step %g'):format(a, b, step), 2) end
      local n = math.floor((b - a) / step + 1e-9) + 1
      res = sequence_result(res, n)
      check(C.mt_arange(res.h, a, step))
      return res
   end
   function torch.arange(a, b, step) -- PyTorch's: end exclusive
      if b == nil then a, b = 0, a end
      step = step or 1
      local n = math.max(0, math.ceil((b - a) / step))
      local res = T.new_tensor(T.default_dtype(), T.CPU_DEVICE, { n })
      check(C.mt_arange(res.h, a, step))
      return res
   end
   -- linspace's points into res (or a new vector), op naming the caller in errors. Torch7's
   -- rule: n > 1 points, or n == 1 when a == b (one point cannot span a to b)
   local function linspace(op, res, a, b, n)
      if not T.is_tensor(res) then res, a, b, n = nil, res, a, b end
      n = n or 100
      if type(a) ~= 'number' or type(b) ~= 'number' or type(n) ~= 'number' then
         error(('%s: expected numbers (from, to [, n]), got %s, %s, %s'):format(op, type(a), type(b), type(n)), 3)
      end
      if n < 1 or (n == 1 and a ~= b) then
         error(('%s: invalid number of points %g (from %g to %g needs 2 or more; 1 only when they are equal)')
            :format(op, n, a, b), 3)
      end
      n = math.floor(n)
      res = sequence_result(res, n)
      check(C.mt_arange(res.h, a, n > 1 and (b - a) / (n - 1) or 0))
      if n > 1 then -- the last point is b exactly: the row-major last element
         local h = res.h
         for d = 0, C.mt_tensor_ndim(h) - 1 do T.index_scratch[d] = C.mt_tensor_size(h, d) - 1 end
         check(C.mt_tensor_set_item(h, T.index_scratch, b))
      end
      return res
   end
   function torch.linspace(res, a, b, n) return linspace('linspace', res, a, b, n) end
   function torch.logspace(res, a, b, n)
      local r = linspace('logspace', res, a, b, n)
      check(C.mt_unary(C.MT_RPOW_SCALAR, r.h, r.h, 10, 0))
      return r
   end

   -- method forms writing self (Torch7's x:range(1, 10), x:linspace(0, 1, 5), x:logspace(...))
   function methods.range(t, a, b, step) return torch.range(T.handle(t, 'range') and t, a, b, step) end
   function methods.linspace(t, a, b, n) return torch.linspace(T.handle(t, 'linspace') and t, a, b, n) end
   function methods.logspace(t, a, b, n) return torch.logspace(T.handle(t, 'logspace') and t, a, b, n) end
   -- bytes per element
   function methods.elementSize(t) return tonumber(C.mt_dtype_size(C.mt_tensor_dtype(T.handle(t, 'elementSize')))) end

   function torch.eye(res, n, m)
      if not T.is_tensor(res) then res, n, m = nil, res, n end
      m = m or n
      if res then check(C.mt_tensor_resize(res.h, T.sizes_buf { n, m }))
      else res = T.new_tensor(T.default_dtype(), T.CPU_DEVICE, { n, m }) end
      check(C.mt_fill(res.h, 0))
      local k = math.min(n, m)
      if k > 0 then
         local _, size = T.sizes_buf { k }
         local _, stride = T.sizes_buf({ m + 1 }, true)
         check(C.mt_tensor_as_strided(T.out_handle, res.h, 1, size, stride, C.mt_tensor_offset(res.h)))
         local diag = T.wrap_handle(T.out_handle[0])
         check(C.mt_fill(diag.h, 1))
      end
      return res
   end

   -- t:totable(): nested Lua tables of numbers (any device, any dtype)
   function methods.totable(t)
      local h = T.handle(t, 'totable')
      local src = t
      if C.mt_tensor_device(h) ~= T.CPU_DEVICE or C.mt_tensor_dtype(h) ~= T.DOUBLE
         or C.mt_tensor_is_contiguous(h) == 0 then
         src = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, T.sizes(t))
         check(C.mt_copy(src.h, h))
      end
      -- values through T.read_f64: NaNs by their bits, handed to Lua as its own
      local p, read = C.mt_tensor_data(src.h), T.read_f64
      local sizes = T.sizes(t)
      if #sizes == 0 then return read(p, 0) end
      -- nested tables built with a loop, rows filled whole (not a recursive closure per call:
      -- docs/design.md, "Lua code and Debian's LuaJIT")
      local nd, last = #sizes, sizes[#sizes]
      local r = {}
      local tabs, idx, d, pos = { r }, { 0 }, 1, 0
      while d > 0 do
         if d == nd then
            local row = tabs[d]
            for j = 1, last do row[j] = read(p, pos + j - 1) end
            pos = pos + last
            d = d - 1
         else
            local i = idx[d] + 1
            if i > sizes[d] then
               d = d - 1
            else
               idx[d] = i
               local c = {}
               tabs[d][i] = c
               d = d + 1
               tabs[d], idx[d] = c, 0
            end
         end
      end
      -- p points into src's storage: keep src alive until the walk is done
      if src.h == nil then error('totable: tensor was freed', 2) end
      return r
   end
end
