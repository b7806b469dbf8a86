-- integer_ops.lua: remainders and bitwise ops with Torch7's forms.
--
--   remainder / cremainder   a % b with the divisor's sign (Lua's %): 5 % -3 = -1
--   cfmod (fmod: pointwise.lua) remainder with the dividend's sign (C's fmod): fmod(5, -3) = 2
--   bitand bitor bitxor       integer dtypes only (and bool), with a number;  cbitand ... with a tensor
--   lshift rshift             with a number;  clshift crshift with a tensor. Integers shift their
--                             bit pattern as unsigned (so rshift is logical, as Torch7's); a count
--                             outside 0..bits-1 gives 0. Floating tensors multiply (divide) by 2^n.
-- Forms: torch.f([res,] a, b) returns a new tensor or writes res; a:f(b) works in place;
-- res:f(a, b) writes res. b may be a number or a tensor (it broadcasts) in every form.
-- Integer division by zero (a 0 divisor in fmod/remainder on an integer tensor) is an error.
return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor

   local function is_float(t) return C.mt_dtype_is_floating(C.mt_tensor_dtype(t.h)) ~= 0 end

   -- a 0-d tensor holding v, with like's dtype and device (integers truncate v, as Torch7's cast)
   local function scalar_tensor(v, like)
      local s = T.new_tensor(C.mt_tensor_dtype(like.h), C.mt_tensor_device(like.h), {})
      check(C.mt_fill(s.h, v))
      return s
   end

   local function result(res, a, name)
      if res ~= nil then
         T.handle(res, name)
         return res
      end
      local h = T.handle(a, name)
      return T.empty_tensor(C.mt_tensor_dtype(h), C.mt_tensor_device(h))
   end

   -- res = a op b through the C binary op (b a tensor or a number)
   local function apply(name, op, res, a, b)
      T.expect_tensor(a, name, 'operand', 3)
      if not is_tensor(b) and type(b) ~= 'number' then
         T.argerror(name, ('expected a tensor or a number, got %s'):format(type(b)), 3)
      end
      res = result(res, a, name)
      local bt = is_tensor(b) and b or scalar_tensor(b, a) -- the tensor, not its handle, stays referenced
      check(C.mt_binary(op, res.h, a.h, is_tensor(b) and T.handle(b, name) or bt.h, 1), name, true, 3)
      return res
   end

   -- floating shifts: a * 2^b (left) or a / 2^b (right), b a number or a tensor
   local function float_shift(name, left, res, a, b)
      if type(b) == 'number' then
         return (left and torch.mul or torch.div)(result(res, a, name), a, 2 ^ b)
      end
      local p = torch.pow(2, b)
      return (left and torch.cmul or torch.cdiv)(result(res, a, name), a, p)
   end

   -- torch.f([res,] a, b), a:f(b), res:f(a, b) for a function f(res, a, b)
   local function bind(name, fn)
      torch[name] = function(...)
         if select('#', ...) >= 3 then return fn(...) end
         local a, b = ...
         return fn(nil, a, b)
      end
      methods[name] = function(self, a, b)
         if b ~= nil then return fn(self, a, b) end
         return fn(self, self, a)
      end
   end

   local ops = {
      remainder = C.MT_REMAINDER, cremainder = C.MT_REMAINDER, cfmod = C.MT_FMOD,
      bitand = C.MT_BITAND, cbitand = C.MT_BITAND, bitor = C.MT_BITOR, cbitor = C.MT_BITOR,
      bitxor = C.MT_BITXOR, cbitxor = C.MT_BITXOR,
   }
   for name, op in pairs(ops) do
      bind(name, function(res, a, b) return apply(name, op, res, a, b) end)
   end
   for name, spec in pairs { lshift = { C.MT_LSHIFT, true }, clshift = { C.MT_LSHIFT, true },
      rshift = { C.MT_RSHIFT, false }, crshift = { C.MT_RSHIFT, false } } do
      bind(name, function(res, a, b)
         if is_tensor(a) and is_float(a) then return float_shift(name, spec[2], res, a, b) end
         return apply(name, spec[1], res, a, b)
      end)
   end
end
