-- scan.lua: cumulative sums and products (Torch7's cumsum, cumprod).
--
--   torch.cumsum([res,] x [,dim])   dim defaults to 1 (Torch7's default for both functions)
--   x:cumsum([dim])                  returns a new tensor (x is the source, as in Torch7)
--   res:cumsum(x [,dim])             writes res
-- Every dtype; the result has x's type. Integers wrap on overflow; floats accumulate in double.
return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor

   for name, fn in pairs { cumsum = C.mt_cumsum, cumprod = C.mt_cumprod } do
      local function apply(res, x, dim)
         T.expect_tensor(x, name, 'to scan', 3)
         dim = dim == nil and 1 or dim
         if not T.is_int(dim) then T.argerror(name, 'expected an integer dimension, got ' .. tostring(dim), 3) end
         local h = T.handle(x, name)
         if res == nil then
            res = T.empty_tensor(C.mt_tensor_dtype(h), C.mt_tensor_device(h))
         else
            T.handle(res, name)
         end
         check(fn(res.h, h, dim - 1), name, true, 3)
         return res
      end
      torch[name] = function(a, b, c)
         if is_tensor(b) then return apply(a, b, c) end
         return apply(nil, a, b)
      end
      methods[name] = function(self, a, b)
         if is_tensor(a) then return apply(self, a, b) end
         return apply(nil, self, a)
      end
   end
end
