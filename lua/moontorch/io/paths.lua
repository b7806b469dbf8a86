-- paths.lua: the common part of Torch7's `paths` package (which `require 'torch'` made global),
-- for code written against it:
--   local paths = require 'moontorch.io.paths'
--   paths.filep(p) / paths.dirp(p)        p names a file / a folder
--   paths.dirname(p), paths.basename(p [, ext]), paths.extname(p), paths.concat(a, b, ...)
--   paths.cwd(), paths.home, paths.tmpname()
--   paths.mkdir(p) / paths.rmdir(p)       true on success, false otherwise (as Torch7's)
--   paths.dir(p)                          the folder's entry names ('.', '..', no hidden ones), or nil
--   paths.files(p [, pattern])            an iterator over those names (matching pattern)
-- Over io/fs.lua (Linux).
local ffi = require 'ffi'
local fs = require 'moontorch.io.fs'
local C = ffi.C

pcall(ffi.cdef, [[
   char *mt_paths_getcwd(char *buf, size_t size) __asm__("getcwd");
   int mt_paths_rmdir(const char *path) __asm__("rmdir");
   int mt_paths_mkdir(const char *path, unsigned int mode) __asm__("mkdir");
]])

local paths = {}

local function expect(op, p, level)
   if type(p) ~= 'string' then error(('paths.%s: expected a path string, got %s'):format(op, type(p)), level + 1) end
end

function paths.filep(p) expect('filep', p, 2); return fs.isfile(p) end
function paths.dirp(p) expect('dirp', p, 2); return fs.isdir(p) end

-- the folder part ('/x/y.t7' -> '/x'); '.' when there is none, '/' for the root's children
function paths.dirname(p)
   expect('dirname', p, 2)
   p = p:gsub('(.)/+$', '%1')
   local d = p:match('^(.*)/[^/]*$')
   if d == nil then return '.' end
   if d == '' then return '/' end
   return d
end

-- the last part, less the extension ext ('t7' or '.t7') when given and present
function paths.basename(p, ext)
   expect('basename', p, 2)
   local b = p:gsub('(.)/+$', '%1'):match('([^/]*)$')
   if ext ~= nil then
      if type(ext) ~= 'string' then error('paths.basename: ext must be a string, got ' .. type(ext), 2) end
      local suffix = ext:sub(1, 1) == '.' and ext or '.' .. ext
      if #b > #suffix and b:sub(-#suffix) == suffix then b = b:sub(1, -#suffix - 1) end
   end
   return b
end

-- the extension without its dot, or nil
function paths.extname(p)
   expect('extname', p, 2)
   return paths.basename(p):match('^.+%.([^%.]+)$')
end

-- the parts joined with '/'; an absolute part restarts the path; relative to cwd when none is
function paths.concat(...)
   local out = paths.cwd()
   for i = 1, select('#', ...) do
      local part = select(i, ...)
      expect('concat', part, 2)
      if part:sub(1, 1) == '/' then out = part
      elseif part ~= '' then out = out:gsub('/+$', '') .. '/' .. part end
   end
   return out
end

function paths.cwd()
   local buf = ffi.new('char[?]', 4096)
   if C.mt_paths_getcwd(buf, 4096) == nil then error('paths.cwd: the current folder cannot be named', 2) end
   return ffi.string(buf)
end

paths.home = os.getenv('HOME') or '.'

function paths.tmpname() return os.tmpname() end

function paths.mkdir(p) expect('mkdir', p, 2); return C.mt_paths_mkdir(p, tonumber('777', 8)) == 0 end
function paths.rmdir(p) expect('rmdir', p, 2); return C.mt_paths_rmdir(p) == 0 end

function paths.dir(p)
   expect('dir', p, 2)
   local names = fs.list(p)
   if not names then return nil end
   local all = { '.', '..' }
   for _, n in ipairs(names) do all[#all + 1] = n end
   return all
end

function paths.files(p, pattern)
   expect('files', p, 2)
   if pattern ~= nil and type(pattern) ~= 'string' then
      error('paths.files: pattern must be a string, got ' .. type(pattern), 2)
   end
   local names, i = paths.dir(p) or {}, 0
   return function()
      repeat
         i = i + 1
      until names[i] == nil or pattern == nil or names[i]:find(pattern)
      return names[i]
   end
end

return paths
