-- forms.lua: the other spellings Torch7 documents for functions that exist elsewhere,
-- so that Torch7 code written either way runs:
--   x:zeros(sizes...), x:ones, x:rand, x:randn, x:eye(n [,m]), x:randperm(n)
--        the factories' method forms: resize x and fill it (x is returned)
--   torch.numel(x), torch.nDimension(x), torch.resize(x, ...), torch.storage(x),
--   torch.storageOffset(x), torch.byte(x) & co., torch.data(x), torch.cdata(x)
--        tensor methods called as torch.f(x, ...)
--   x:cdata() / torch.cdata(x)   the C tensor (an mt_tensor* cdata; Torch7 gave its THTensor*)
--   x:real()                     x as the default tensor type (torch.getdefaulttensortype())
--   mod / cmod                   Torch7's older names of fmod / cfmod
return function(torch, T)
   local methods, is_tensor = T.tensor_methods, T.is_tensor

   for _, name in ipairs { 'zeros', 'ones', 'rand', 'randn', 'eye', 'randperm' } do
      local factory = torch[name]
      methods[name] = function(x, ...)
         T.handle(x, name)
         return factory(x, ...)
      end
   end

   function methods.cdata(x) return T.handle(x, 'cdata') end
   function methods.real(x)
      T.handle(x, 'real')
      return x:type(torch.getdefaulttensortype())
   end

   -- torch.f(x, ...) = x:f(...), for methods Torch7 also documents as torch.f
   local AS_FUNCTION = { 'numel', 'nDimension', 'resize', 'storage', 'storageOffset', 'data', 'cdata',
      'byte', 'char', 'short', 'int', 'long', 'float', 'double', 'half' }
   for _, name in ipairs(AS_FUNCTION) do
      if torch[name] == nil then
         torch[name] = function(x, ...) -- looked up per call: storage.lua adds x:storage later
            if not is_tensor(x) then
               error(('torch.%s: expected a tensor, got %s'):format(name, type(x)), 2)
            end
            return methods[name](x, ...)
         end
      end
   end

   -- torch.totable(x): a tensor or a storage as (nested) Lua tables
   function torch.totable(x)
      if is_tensor(x) or (T.is_storage and T.is_storage(x)) then return x:totable() end
      error('torch.totable: expected a tensor or a storage, got ' .. type(x), 2)
   end

   torch.mod, methods.mod = torch.fmod, methods.fmod
   torch.cmod, methods.cmod = torch.cfmod, methods.cfmod
end
