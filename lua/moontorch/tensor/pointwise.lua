-- pointwise.lua: pointwise math with Torch7's conventions, comparisons and the operators.
--
--   torch.f([res,] ...)  returns a new tensor, or writes res when one is given first;
--   t:f(...)             works in place on t (t:exp() sets t = exp(t), t:add(b) sets t = t + b),
--                        or, given the operands, writes t (t:exp(src), t:add(a, b));
--   comparisons (eq ne lt le gt ge) return a ByteTensor (t:eq(u) is elementwise; `t == u` is
--   identity: true only for the same tensor object, so tables and asserts keep working).
-- Operands must share dtype and device. Two tensors of as many elements pair up in element order
-- and the result is shaped like the first (Torch7's rule, also where the shapes would broadcast);
-- tensors of different element counts broadcast with numpy's rules (Torch7 raises there).
-- Note: t:sub(...) is Torch7's sub-tensor (narrowing, view.lua); subtraction is csub.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor
   local huge = math.huge
   -- C errors are raised as check(st, name, true): under the name the user called
   -- (t:reciprocal() reports 'reciprocal:', not the C op's 'cinv:')

   local function dtype(t) return C.mt_tensor_dtype(t.h) end
   local function device(t) return C.mt_tensor_device(t.h) end

   -- a result for op: res when given, else an empty tensor like a (the C op resizes it)
   local function result(res, a, op, dt)
      if res ~= nil then
         T.handle(res, op)
         return res
      end
      local h = T.handle(a, op)
      return T.empty_tensor(dt or C.mt_tensor_dtype(h), C.mt_tensor_device(h))
   end

   -- a 0-d tensor holding v, with like's dtype and device (number op tensor, tensor fmod number)
   local function scalar_tensor(v, like)
      local s = T.new_tensor(dtype(like), device(like), {})
      check(C.mt_fill(s.h, v))
      return s
   end

   local function want_number(op, v, what)
      if type(v) ~= 'number' then
         error(('%s: expected a number%s, got %s'):format(op, what and (' for ' .. what) or '', type(v)), 3)
      end
   end
   local function want_operand(op, v)
      if not is_tensor(v) and type(v) ~= 'number' then
         error(('%s: expected a tensor or a number, got %s'):format(op, type(v)), 3)
      end
   end

   ------------------------------------------------------------------------------------------
   -- fill, zero
   function methods.fill(t, v)
      want_number('fill', v)
      check(C.mt_fill(T.handle(t, 'fill'), v), 'fill', true)
      return t
   end
   function methods.zero(t)
      check(C.mt_fill(T.handle(t, 'zero'), 0), 'zero', true)
      return t
   end
   function torch.fill(t, v) return methods.fill(t, v) end
   function torch.zero(t) return methods.zero(t) end

   ------------------------------------------------------------------------------------------
   -- unary ops: torch.f([res,] t), t:f() in place, t:f(src) sets t = f(src)
   -- Every op of the C list (MT_UNARY_OPS) becomes a method under its Torch7 name, except
   -- those that take scalars, which are bound with their arguments further down.
   local with_scalars = { pow = true, clamp = true, add = true, mul = true, div = true,
      eq = true, ne = true, lt = true, le = true, gt = true, ge = true }
   local unary = { reciprocal = C.MT_RECIPROCAL } -- PyTorch's name beside Torch7's cinv
   for op = 0, C.MT_NUM_UNARY_OPS - 1 do
      local name = ffi.string(C.mt_unary_op_name(op))
      if not with_scalars[name] then unary[name] = op end
   end
   -- torch.abs(-3), torch.round(2.4): a plain number goes through a 0-d double tensor, so
   -- numbers follow exactly the rules tensors do, and a number comes back
   local num = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, {})
   local nump = ffi.cast('double*', C.mt_tensor_data(num.h))
   local function on_number(op, name, x, p1, p2)
      nump[0] = x
      check(C.mt_unary(op, num.h, num.h, p1 or 0, p2 or 0), name, true)
      return nump[0]
   end
   for name, op in pairs(unary) do
      torch[name] = function(a, b)
         if type(a) == 'number' and b == nil then return on_number(op, name, a) end
         local res, src = nil, a
         if b ~= nil then res, src = a, b end
         res = result(res, src, name)
         check(C.mt_unary(op, res.h, T.handle(src, name), 0, 0), name, true)
         return res
      end
      methods[name] = function(self, src)
         check(C.mt_unary(op, T.handle(self, name), T.handle(src or self, name), 0, 0), name, true)
         return self
      end
   end

   ------------------------------------------------------------------------------------------
   -- ops with one scalar or tensor operand: mul, div, cmul, cdiv, cpow, cmax, cmin, fmod, atan2
   --   torch.f([res,] a, b)   b a tensor or a number
   --   t:f(b) in place;  t:f(a, b) sets t = f(a, b)

   -- scalar forms: how to apply `t op v` for a number v (nil: through a 0-d tensor)
   local function scalar_unary(op)
      return function(res, a, v, name) check(C.mt_unary(op, res.h, a.h, v, 0), name, true) end
   end
   local function via_tensor(binop)
      return function(res, a, v, name) check(C.mt_binary(binop, res.h, a.h, scalar_tensor(v, a).h, 1), name, true) end
   end
   local binaries = {
      mul = { C.MT_MUL, scalar_unary(C.MT_MUL_SCALAR) },
      cmul = { C.MT_MUL, scalar_unary(C.MT_MUL_SCALAR) },
      div = { C.MT_DIV, scalar_unary(C.MT_DIV_SCALAR) },
      cdiv = { C.MT_DIV, scalar_unary(C.MT_DIV_SCALAR) },
      cpow = { C.MT_POW, scalar_unary(C.MT_POW_SCALAR) },
      pow = { C.MT_POW, scalar_unary(C.MT_POW_SCALAR) }, -- torch.pow/t:pow are redefined below
      cmax = { C.MT_MAXIMUM, function(res, a, v) check(C.mt_unary(C.MT_CLAMP, res.h, a.h, v, huge), 'cmax', true) end },
      cmin = { C.MT_MINIMUM,
         function(res, a, v) check(C.mt_unary(C.MT_CLAMP, res.h, a.h, -huge, v), 'cmin', true) end },
      fmod = { C.MT_FMOD, via_tensor(C.MT_FMOD) },
      atan2 = { C.MT_ATAN2, via_tensor(C.MT_ATAN2) },
   }

   local function apply_binary(name, res, a, b)
      local spec = binaries[name]
      want_operand(name, b)
      T.handle(a, name)
      if is_tensor(b) then
         res = result(res, a, name)
         check(C.mt_binary(spec[1], res.h, a.h, T.handle(b, name), 1), name, true)
      else
         res = result(res, a, name)
         spec[2](res, a, b, name)
      end
      return res
   end

   for name in pairs(binaries) do
      torch[name] = function(...)
         local n = select('#', ...)
         if n >= 3 then return apply_binary(name, ...) end
         local a, b = ...
         return apply_binary(name, nil, a, b)
      end
      methods[name] = function(self, a, b)
         if b ~= nil then return apply_binary(name, self, a, b) end
         return apply_binary(name, self, self, a)
      end
   end

   -- pow: torch.pow([res,] t, v), torch.pow([res,] v, t) (scalar base), torch.pow([res,] t, u)
   local function apply_pow(res, a, b)
      if res == nil and type(a) == 'number' and type(b) == 'number' then
         return on_number(C.MT_POW_SCALAR, 'pow', a, b)
      end
      if type(a) == 'number' then
         if not is_tensor(b) then error('pow: expected a tensor operand, got ' .. type(a) .. ' and ' .. type(b), 3) end
         res = result(res, b, 'pow')
         check(C.mt_unary(C.MT_RPOW_SCALAR, res.h, T.handle(b, 'pow'), a, 0), 'pow', true)
         return res
      end
      return apply_binary('pow', res, a, b)
   end
   function torch.pow(...)
      if select('#', ...) >= 3 then return apply_pow(...) end
      local a, b = ...
      return apply_pow(nil, a, b)
   end
   function methods.pow(self, a, b)
      if b ~= nil then return apply_pow(self, a, b) end
      return apply_pow(self, self, a)
   end

   ------------------------------------------------------------------------------------------
   -- add / csub: torch.add([res,] a, [v,] b) = a + v*b (b a tensor) or a + b (b a number)
   --   t:add(x) in place (x tensor or number), t:add(v, b) in place, t:add(a, b), t:add(a, v, b)
   local function apply_add(name, sign, res, a, v, b)
      T.handle(a, name)
      want_operand(name, b)
      if is_tensor(b) then
         if v ~= nil then want_number(name, v, 'the scale') end
         res = result(res, a, name)
         check(C.mt_binary(sign > 0 and C.MT_ADD or C.MT_SUB, res.h, a.h, T.handle(b, name), v or 1), name, true)
      else
         if v ~= nil then error(name .. ': a scale needs a tensor operand, got two numbers', 3) end
         res = result(res, a, name)
         check(C.mt_unary(C.MT_ADD_SCALAR, res.h, a.h, sign * b, 0), name, true)
      end
      return res
   end

   local function add_family(name, sign)
      torch[name] = function(...)
         local n = select('#', ...)
         local x1, x2, x3, x4 = ...
         if n >= 4 then return apply_add(name, sign, x1, x2, x3, x4) end
         if n == 3 then
            if type(x2) == 'number' then return apply_add(name, sign, nil, x1, x2, x3) end
            return apply_add(name, sign, x1, x2, nil, x3)
         end
         return apply_add(name, sign, nil, x1, nil, x2)
      end
      methods[name] = function(self, ...)
         local n = select('#', ...)
         local x1, x2, x3 = ...
         if n >= 3 then return apply_add(name, sign, self, x1, x2, x3) end
         if n == 2 then
            if type(x1) == 'number' then return apply_add(name, sign, self, self, x1, x2) end
            return apply_add(name, sign, self, x1, nil, x2)
         end
         return apply_add(name, sign, self, self, nil, x1)
      end
   end
   add_family('add', 1)
   add_family('csub', -1)
   -- t:sub is both Torch7's sub-tensor (pairs of bounds) and subtraction: a tensor operand or a
   -- lone number can only mean subtraction, so route those to csub.
   local narrow_sub = methods.sub
   methods.sub = function(self, x1, ...)
      local n = select('#', ...)
      if is_tensor(x1) or n == 0 or (n == 1 and is_tensor((...))) then return methods.csub(self, x1, ...) end
      return narrow_sub(self, x1, ...)
   end
   torch.sub = torch.csub

   ------------------------------------------------------------------------------------------
   -- clamp: torch.clamp([res,] t, min, max); t:clamp(min, max) in place; t:clamp(src, min, max)
   local function apply_clamp(res, a, lo, hi)
      lo, hi = lo or -huge, hi or huge
      want_number('clamp', lo, 'the lower bound')
      want_number('clamp', hi, 'the upper bound')
      res = result(res, a, 'clamp')
      check(C.mt_unary(C.MT_CLAMP, res.h, T.handle(a, 'clamp'), lo, hi), 'clamp', true)
      return res
   end
   function torch.clamp(a, b, c, d)
      if type(a) == 'number' then
         want_number('clamp', b, 'the lower bound')
         want_number('clamp', c, 'the upper bound')
         return on_number(C.MT_CLAMP, 'clamp', a, b, c)
      end
      if is_tensor(b) then return apply_clamp(a, b, c, d) end
      return apply_clamp(nil, a, b, c)
   end
   function methods.clamp(self, a, b, c)
      if is_tensor(a) then return apply_clamp(self, a, b, c) end
      return apply_clamp(self, self, a, b)
   end

   ------------------------------------------------------------------------------------------
   -- addcmul / addcdiv: torch.addcmul([res,] x, [v,] t1, t2) = x + v*t1*t2 (or t1/t2)
   --   t:addcmul([v,] t1, t2) in place; t:addcmul(x, [v,] t1, t2) sets t
   local function addc_family(name, fn)
      local function apply(res, x, v, t1, t2)
         if v ~= nil then want_number(name, v, 'the scale') end
         res = result(res, x, name)
         check(fn(res.h, T.handle(x, name), v or 1, T.handle(t1, name), T.handle(t2, name)), name, true)
         return res
      end
      torch[name] = function(...)
         local n = select('#', ...)
         local x1, x2, x3, x4, x5 = ...
         if n >= 5 then return apply(x1, x2, x3, x4, x5) end
         if n == 4 then
            if type(x2) == 'number' then return apply(nil, x1, x2, x3, x4) end
            return apply(x1, x2, nil, x3, x4)
         end
         return apply(nil, x1, nil, x2, x3)
      end
      methods[name] = function(self, ...)
         local n = select('#', ...)
         local x1, x2, x3, x4 = ...
         if n >= 4 then return apply(self, x1, x2, x3, x4) end
         if n == 3 then
            if type(x1) == 'number' then return apply(self, self, x1, x2, x3) end
            return apply(self, x1, nil, x2, x3)
         end
         return apply(self, self, nil, x1, x2)
      end
   end
   addc_family('addcmul', C.mt_addcmul)
   addc_family('addcdiv', C.mt_addcdiv)

   ------------------------------------------------------------------------------------------
   -- lerp: torch.lerp([res,] a, b, w) = a + w*(b - a) (numbers a, b give a number); t:lerp(b, w) in place
   local function apply_lerp(res, a, b, w)
      want_number('lerp', w, 'the weight')
      local d = result(nil, a, 'lerp')
      check(C.mt_binary(C.MT_SUB, d.h, T.handle(b, 'lerp'), T.handle(a, 'lerp'), 1), 'lerp', true)
      res = result(res, a, 'lerp')
      check(C.mt_binary(C.MT_ADD, res.h, a.h, d.h, w), 'lerp', true)
      return res
   end
   function torch.lerp(...)
      if select('#', ...) >= 4 then return apply_lerp(...) end
      local a, b, w = ...
      if type(a) == 'number' and type(b) == 'number' then -- Torch7's number form
         want_number('lerp', w, 'the weight')
         return a + w * (b - a)
      end
      return apply_lerp(nil, a, b, w)
   end
   function methods.lerp(self, a, b, w)
      if w ~= nil then return apply_lerp(self, a, b, w) end
      return apply_lerp(self, self, a, b)
   end

   ------------------------------------------------------------------------------------------
   -- comparisons: ByteTensor results. torch.eq([res,] a, b|v); a:eq(b|v) returns a new
   -- ByteTensor; res:eq(a, b|v) writes res, a ByteTensor or (Torch7) one of a's type.
   local comparisons = {
      eq = { C.MT_EQ, C.MT_EQ_SCALAR }, ne = { C.MT_NE, C.MT_NE_SCALAR }, lt = { C.MT_LT, C.MT_LT_SCALAR },
      le = { C.MT_LE, C.MT_LE_SCALAR }, gt = { C.MT_GT, C.MT_GT_SCALAR }, ge = { C.MT_GE, C.MT_GE_SCALAR },
   }
   for name, ops in pairs(comparisons) do
      local function apply(res, a, b)
         want_operand(name, b)
         if res ~= nil and T.handle(res, name) and dtype(res) ~= T.BYTE then -- through a ByteTensor
            T.handle(a, name)
            local rd, ad = dtype(res), dtype(a)
            if rd ~= ad and rd ~= T.BOOL then
               error(('%s: result must be a ByteTensor or a %s like the input, got a %s'):format(name, a:type(),
                  res:type()), 3)
            end
            local m = apply(nil, a, b)
            check(C.mt_tensor_resize(res.h, T.sizes_buf(T.sizes(m))), name, true)
            check(C.mt_copy(res.h, m.h), name, true)
            return res
         end
         res = result(res, a, name, T.BYTE)
         if is_tensor(b) then
            check(C.mt_binary(ops[1], res.h, a.h, T.handle(b, name), 1), name, true)
         else
            check(C.mt_unary(ops[2], res.h, a.h, b, 0), name, true)
         end
         return res
      end
      torch[name] = function(...)
         if select('#', ...) >= 3 then return apply(...) end
         local a, b = ...
         return apply(nil, a, b)
      end
      methods[name] = function(self, a, b)
         if b ~= nil then return apply(self, a, b) end
         return apply(nil, self, a)
      end
   end

   ------------------------------------------------------------------------------------------
   -- masks: t:maskedFill(mask, v) in place; torch.maskedSelect([res,] src, mask) (1-d result)
   function methods.maskedFill(t, mask, v)
      want_number('maskedFill', v)
      check(C.mt_masked_fill(T.handle(t, 'maskedFill'), T.handle(mask, 'maskedFill'), v), 'maskedFill', true)
      return t
   end
   local function masked_select(res, src, mask)
      res = result(res, src, 'maskedSelect')
      check(C.mt_masked_select(res.h, T.handle(src, 'maskedSelect'), T.handle(mask, 'maskedSelect')),
         'maskedSelect', true)
      return res
   end
   function torch.maskedSelect(a, b, c)
      if c ~= nil then return masked_select(a, b, c) end
      return masked_select(nil, a, b)
   end
   function methods.maskedSelect(self, a, b)
      if b ~= nil then return masked_select(self, a, b) end
      return masked_select(nil, self, a)
   end

   ------------------------------------------------------------------------------------------
   -- operators: always new tensors
   local mt = T.tensor_metatable
   local function operand_error(op, a, b)
      error(('%s: cannot apply to a %s and a %s'):format(op, torch.type(a), torch.type(b)), 3)
   end

   mt.__add = function(a, b)
      if is_tensor(a) then
         if is_tensor(b) or type(b) == 'number' then return apply_add('add', 1, nil, a, nil, b) end
      elseif type(a) == 'number' and is_tensor(b) then
         return apply_add('add', 1, nil, b, nil, a)
      end
      operand_error('add', a, b)
   end
   mt.__sub = function(a, b)
      if is_tensor(a) then
         if is_tensor(b) or type(b) == 'number' then return apply_add('sub', -1, nil, a, nil, b) end
      elseif type(a) == 'number' and is_tensor(b) then
         local r = result(nil, b, 'csub')
         check(C.mt_binary(C.MT_SUB, r.h, scalar_tensor(a, b).h, b.h, 1), 'sub', true)
         return r
      end
      operand_error('sub', a, b)
   end
   mt.__div = function(a, b)
      if is_tensor(a) then
         if is_tensor(b) or type(b) == 'number' then return apply_binary('div', nil, a, b) end
      elseif type(a) == 'number' and is_tensor(b) then
         local r = result(nil, b, 'div')
         check(C.mt_binary(C.MT_DIV, r.h, scalar_tensor(a, b).h, b.h, 1), 'div', true)
         return r
      end
      operand_error('div', a, b)
   end
   mt.__unm = function(a)
      local r = result(nil, a, 'neg')
      check(C.mt_unary(C.MT_NEG, r.h, a.h, 0, 0), 'neg', true)
      return r
   end
   -- tensor * tensor follows Torch7: vector.vector is a number (dot), matrix*vector is mv,
   -- matrix*matrix is mm (from linalg.lua, looked up at call time)
   mt.__mul = function(a, b)
      if type(a) == 'number' and is_tensor(b) then return apply_binary('mul', nil, b, a) end
      if is_tensor(a) and type(b) == 'number' then return apply_binary('mul', nil, a, b) end
      if is_tensor(a) and is_tensor(b) then
         local da, db = C.mt_tensor_ndim(T.handle(a, 'mul')), C.mt_tensor_ndim(T.handle(b, 'mul'))
         if da == 1 and db == 1 then return methods.dot(a, b) end
         if da == 2 and db == 1 then return torch.mv(a, b) end
         if da == 2 and db == 2 then return torch.mm(a, b) end
         error(('mul: tensor*tensor needs 1-d*1-d (dot), 2-d*1-d (mv) or 2-d*2-d (mm), got %d-d*%d-d; '
            .. 'use cmul for elementwise products'):format(da, db), 2)
      end
      operand_error('mul', a, b)
   end
   -- identity, not elementwise (that is t:eq(u)): true only for the same tensor
   mt.__eq = function(a, b)
      if not is_tensor(a) or not is_tensor(b) then return false end
      return a.h == b.h and a.h ~= nil
   end
end
