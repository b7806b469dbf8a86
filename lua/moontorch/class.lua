-- class.lua: Torch7's class system. torch.class(name [, parentName] [, namespace]) creates a
-- class and returns (class, parentClass) like Torch7:
--   local Linear, parent = torch.class('nn.Linear', 'nn.Module')
--   function Linear:__init(a, b) parent.__init(self) ... end
--   local m = nn.Linear(3, 4)      -- torch.type(m) == 'nn.Linear'
-- The class table is the instances' metatable (methods live in it); the constructor table
-- (nn.Linear) forwards field reads and writes to it and creates an instance when called.
-- 'pkg.Name' registers the constructor as pkg.Name in the namespace registered for 'pkg'
-- (class.namespace), else in a global table pkg; a name without a dot becomes a global.
local class = {}

local registry = {}     -- name -> class (metatable)
local parents = {}      -- class -> parent class
local ctors = {}        -- class -> constructor table
local namespaces = {}   -- 'nn' -> the nn table

local function new_instance(mt, ...)
   local self = setmetatable({}, mt)
   local init = mt.__init
   if init then init(self, ...) end
   return self
end

local function make(name, parentName, ns)
   if type(name) ~= 'string' or name == '' then
      error('torch.class: expected a class name, got ' .. tostring(name), 3)
   end
   if registry[name] then error("torch.class: class '" .. name .. "' already exists", 3) end
   local parent
   if parentName ~= nil then
      parent = registry[parentName]
      if not parent then
         error("torch.class: unknown parent class '" .. tostring(parentName) .. "' for '" .. name .. "'", 3)
      end
   end
   local mt = { __typename = name }
   mt.__index = mt
   -- metamethods are not inherited through __index: copy the Torch7-style hooks onto each class
   mt.__tostring = function(self)
      local f = self.__tostring__
      if f then return f(self) end
      return name
   end
   mt.__call = function(self, ...)
      local f = self.__call__
      if not f then error(name .. ': object is not callable', 2) end
      return f(self, ...)
   end
   if parent then setmetatable(mt, { __index = parent }) end
   registry[name] = mt
   parents[mt] = parent

   local ct = setmetatable({}, {
      __index = mt,
      __newindex = mt,
      __call = function(_, ...) return new_instance(mt, ...) end,
      __tostring = function() return name end,
   })
   ctors[mt] = ct

   local pkg, short = name:match('^(.*)%.([^%.]+)$')
   if type(ns) == 'table' then
      ns[short or name] = ct
   elseif pkg then
      local target = namespaces[pkg]
      if not target then
         target = rawget(_G, pkg)
         if target == nil then target = {}; rawset(_G, pkg, target) end
      end
      target[short] = ct
   else
      rawset(_G, name, ct)
   end
   return mt, parent
end

-- Torch7's argument forms: (name), (name, parentName), (name, namespaceTable),
-- (name, parentName, namespaceTable)
setmetatable(class, { __call = function(_, name, parentName, ns)
   if type(parentName) == 'table' and ns == nil then parentName, ns = nil, parentName end
   if parentName ~= nil and type(parentName) ~= 'string' then
      error('torch.class: expected <class name> [<parent class name>] [<module table>], got a ' .. type(parentName)
         .. ' as second argument', 2)
   end
   if ns ~= nil and type(ns) ~= 'table' then
      error('torch.class: the module argument must be a table, got a ' .. type(ns), 2)
   end
   return make(name, parentName, ns)
end })

-- Torch7's lower-level forms: newmetatable(name [, parentName] [, constructor]) makes the class
-- and, when a constructor function is given, installs that function under name instead of the
-- constructor table; setmetatable(tbl, name) makes tbl an instance of a registered class.
function class.newmetatable(name, parentName, constructor)
   if constructor ~= nil and type(constructor) ~= 'function' then
      error('torch.newmetatable: the constructor must be a function, got a ' .. type(constructor), 2)
   end
   local mt = make(name, parentName)
   if constructor then
      local pkg, short = name:match('^(.*)%.([^%.]+)$')
      local target = pkg and (namespaces[pkg] or rawget(_G, pkg)) or _G
      rawset(target, short or name, constructor)
   end
   return mt
end

function class.setmetatable(tbl, name)
   if type(tbl) ~= 'table' then error('torch.setmetatable: expected a table, got a ' .. type(tbl), 2) end
   local mt = registry[name]
   if not mt then error("torch.setmetatable: unknown class '" .. tostring(name) .. "'", 2) end
   return setmetatable(tbl, mt)
end

-- Register the table that receives classes named 'pkg.X'.
function class.namespace(pkg, tbl) namespaces[pkg] = tbl end

-- The class (metatable) of a name, or nil.
function class.metatable(name) return registry[name] end

-- The class of an object, constructor table or class; nil otherwise.
local function class_of(x)
   if type(x) == 'string' then return registry[x] end
   if type(x) ~= 'table' then return nil end
   local mt = getmetatable(x)
   if mt and ctors[mt] then return mt end             -- instance
   if ctors[x] then return x end                      -- class itself
   if mt and mt.__index and ctors[mt.__index] and ctors[mt.__index] == x then return mt.__index end -- constructor
   return nil
end
class.class_of = class_of

-- The class name of an instance, or nil.
function class.typename(obj)
   if type(obj) ~= 'table' then return nil end
   local mt = getmetatable(obj)
   if mt and ctors[mt] then return mt.__typename end
   return nil
end

-- Torch7's name test: a pattern (string.match) that matches, but a plain name must match the
-- whole type name ('nn.Linear' is not a 'nn.Lin').
local function name_matches(typename, spec)
   local ok, m = pcall(string.match, typename, spec)
   return ok and m ~= nil and (m ~= spec or m == typename)
end

-- True when obj's class (or a parent class) is typeSpec: a class, its constructor, a tensor
-- type (torch.FloatTensor) or a name, which may be a string.find pattern ('nn%..*Linear').
-- Tensors are their type; typenames(obj) gives the names to test, nearest class first.
function class.isTypeOf(obj, spec, typenames)
   if type(spec) ~= 'string' then
      local target = class_of(spec)
      if target then spec = target.__typename
      elseif type(spec) == 'table' and type(rawget(spec, '__typename')) == 'string' then spec = spec.__typename
      else error('torch.isTypeOf: type must be given as a name, a pattern or a class, got a ' .. type(spec), 2) end
   end
   if typenames then
      for _, name in ipairs(typenames) do if name_matches(name, spec) then return true end end
      return false
   end
   local mt = class.typename(obj) and getmetatable(obj)
   while mt do
      if name_matches(mt.__typename, spec) then return true end
      mt = parents[mt]
   end
   return false
end

-- An instance that skipped __init (for deserialisation), like torch.factory(name)().
function class.factory(name)
   local mt = registry[name]
   if not mt then return nil end
   return function() return setmetatable({}, mt) end
end

return class
