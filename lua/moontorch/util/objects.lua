-- objects.lua: the object utilities of Torch7's utility.md that are not the class system
-- (torch.class, isTypeOf, getmetatable, factory live in class.lua; type/typename/isTensor in
-- tensor/constructors.lua):
--   torch.pointer(obj)                 an integer address: the C tensor of a tensor, the C storage of a storage
--                                      (the same for every t:storage() of one tensor), the object itself otherwise
--   torch.isequal(a, b)                the same table, or the same C tensor
--   torch.getenv(obj) / setenv(obj, t) an object's environment table (functions, userdata, threads, cdata)
--   torch.getconstructortable(name)    the constructor of a type: torch.FloatTensor, nn.Linear, ...
--   torch.typename2id(name), torch.id(obj)  a unique id (a table) of a type, for fast type checks
--   torch.setheaptracking(b), torch.updateerrorhandlers(), torch.updatethreadlocals()
local ffi = require 'ffi'
local class = require 'moontorch.class'

return function(torch, T)
   local PTR = ffi.sizeof('void *')

   -- Torch7 gives a cdata the pointer it holds (its first word): for a tensor, the C tensor.
   local function cdata_pointer(x)
      if tonumber(x) ~= nil then return nil end -- a boxed number, not an object
      local ok, p = pcall(ffi.cast, 'uintptr_t', x) -- pointers
      if ok then return tonumber(p) end
      if ffi.sizeof(x) == nil or ffi.sizeof(x) < PTR then return nil end
      return tonumber(ffi.cast('uintptr_t', ffi.cast('void **', x)[0])) -- a struct: its first word
   end

   function torch.pointer(obj)
      local ty = type(obj)
      if ty == 'cdata' then
         if T.is_storage and T.is_storage(obj) then -- each Storage object holds its own handle
            return tonumber(ffi.cast('intptr_t', T.clib.mt_tensor_storage_key(obj.h)))
         end
         local p = cdata_pointer(obj)
         if p then return p end
      elseif ty == 'table' or ty == 'function' or ty == 'thread' or ty == 'userdata' or ty == 'string' then
         return tonumber(string.format('%p', obj)) -- the object's address, ignoring any __tostring
      end
      error('torch.pointer: expected a tensor, cdata, table, function, thread, userdata or string, got '
         .. (ty == 'cdata' and tostring(ffi.typeof(obj)) or ty), 2)
   end

   function torch.isequal(a, b)
      if T.is_tensor(a) and T.is_tensor(b) then return torch.pointer(a) == torch.pointer(b) end
      if type(a) == 'table' and type(b) == 'table' then return rawequal(a, b) end
      return false
   end

   -- Environments. Functions, userdata and threads have Lua 5.1 ones; a cdata (a tensor) has
   -- none in LuaJIT, so it gets a table kept beside it for as long as the object lives.
   local cdata_env = setmetatable({}, { __mode = 'k' })
   local function env_target(obj, fname)
      local ty = type(obj)
      if ty == 'function' or ty == 'userdata' or ty == 'thread' or ty == 'cdata' then return ty end
      error(('torch.%s: expected a function, userdata, thread or cdata (a tensor), got %s'):format(fname, ty), 3)
   end

   function torch.getenv(obj)
      if env_target(obj, 'getenv') == 'cdata' then
         local e = cdata_env[obj]
         if not e then e = {}; cdata_env[obj] = e end
         return e
      end
      return debug.getfenv(obj) or {}
   end

   function torch.setenv(obj, env)
      local ty = env_target(obj, 'setenv')
      if type(env) ~= 'table' then error('torch.setenv: expected a table as argument 2, got ' .. type(env), 2) end
      if ty == 'cdata' then cdata_env[obj] = env; return end
      local ok, err = pcall(debug.setfenv, obj, env)
      if not ok then error('torch.setenv: ' .. tostring(err), 2) end
   end

   -- The constructor table of a type name, or nil: looked up where the type lives, and only
   -- returned when it really constructs that class.
   function torch.getconstructortable(name)
      if type(name) ~= 'string' then error('torch.getconstructortable: expected a type name, got ' .. type(name), 2) end
      if T.tensor_types[name] then return T.tensor_types[name] end
      local mt = class.metatable(name)
      local pkg, short = name:match('^(.*)%.([^%.]+)$')
      local places
      if not pkg then places = { _G }
      elseif pkg == 'torch' then places = { torch }
      else places = { package.loaded['moontorch.' .. pkg], package.loaded[pkg], rawget(_G, pkg) } end
      for i = 1, 3 do
         local where = places[i]
         local c = type(where) == 'table' and rawget(where, short or name) or nil
         if c ~= nil then
            if mt and class.class_of(c) == mt then return c end
            if not mt and pkg == 'torch' and name:match('^torch%.%w+Storage$') then return c end
         end
      end
      return nil
   end

   -- A unique id per type (the class table or the constructor), nil for an unknown name.
   function torch.typename2id(name)
      if type(name) ~= 'string' then error('torch.typename2id: expected a type name, got ' .. type(name), 2) end
      return class.metatable(name) or torch.getconstructortable(name)
   end
   function torch.id(obj)
      local name = torch.typename(obj)
      return name and torch.typename2id(name) or nil
   end

   -- Torch7 let the C library call the Lua GC when it ran short of memory. Here the tensors'
   -- C memory already drives collections (the pressure hook in Tensor.lua), so the switch is
   -- only recorded.
   function torch.setheaptracking(enabled)
      if type(enabled) ~= 'boolean' then
         error('torch.setheaptracking: expected a boolean, got ' .. type(enabled), 2)
      end
      torch._heaptracking = enabled
   end
   torch._heaptracking = true

   -- Torch7 routed its C library's errors to the calling Lua state; moontorch's C core returns
   -- status codes that each binding turns into a Lua error, so there is nothing to route.
   function torch.updateerrorhandlers() end
   function torch.updatethreadlocals()
      torch.updateerrorhandlers()
      torch.setheaptracking(torch._heaptracking ~= false)
   end
end
