-- lib.lua: finds and loads libmoontorch and its cdefs (generated from csrc/moontorch.h at
-- build time). Library code reaches C through moontorch.internal, which also raises its errors.
local ffi = require 'ffi'

local M = {}

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() return true end
   return false
end

-- Directory of this file, so a checkout finds its own build/ without any environment.
local here = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') or '.'

local function candidates()
   local list = {}
   local env = os.getenv('MOONTORCH_BUILD')
   if env and env ~= '' then list[#list + 1] = env end
   list[#list + 1] = here .. '/../../build' -- lua/moontorch -> repository root
   list[#list + 1] = here                  -- installed rock: cdefs.lua beside this file
   return list
end

local function locate()
   local tried = {}
   for _, dir in ipairs(candidates()) do
      local lib, cdefs = dir .. '/libmoontorch.so', dir .. '/cdefs.lua'
      if exists(lib) and exists(cdefs) then return lib, cdefs end
      tried[#tried + 1] = dir
   end
   -- installed with luarocks: library on package.cpath, cdefs beside the Lua modules
   local lib = package.searchpath('libmoontorch', package.cpath)
   local cdefs = package.searchpath('moontorch.cdefs', package.path)
   if lib and cdefs then return lib, cdefs end
   error('moontorch: cannot find libmoontorch.so and cdefs.lua; build with `make` in the repository '
      .. '(looked in ' .. table.concat(tried, ', ') .. ' and package.cpath), or set MOONTORCH_BUILD', 0)
end

local libpath, cdefpath = locate()
ffi.cdef(dofile(cdefpath))
-- The Lua-side handle: one owning reference to a C tensor, released by __gc or :free().
ffi.cdef [[ typedef struct mt_tensor_ref { mt_tensor *h; } mt_tensor_ref; ]]

M.C = ffi.load(libpath)
M.path = libpath

return M
