-- fs.lua: the few file-system calls the data tools, recipes and the training harness need and
-- plain Lua lacks (list a folder, make a folder, tell files from folders, flush a file to disk,
-- replace a file atomically, available memory), through the FFI (Linux, glibc).
-- Symbols are bound under private names (__asm__) so that other modules' declarations of
-- opendir, open, ... cannot clash with these.
local ffi = require 'ffi'
local C = ffi.C

-- pcall: busted reloads modules per spec file, and a second cdef of the same type fails
pcall(ffi.cdef, [[
   typedef struct mt_fs_dirent {
      uint64_t d_ino; int64_t d_off; unsigned short d_reclen; unsigned char d_type; char d_name[256];
   } mt_fs_dirent;
   void *mt_fs_opendir(const char *path) __asm__("opendir");
   mt_fs_dirent *mt_fs_readdir(void *dir) __asm__("readdir64");
   int mt_fs_closedir(void *dir) __asm__("closedir");
   int mt_fs_mkdir(const char *path, unsigned int mode) __asm__("mkdir");
   int mt_fs_open(const char *path, int flags, ...) __asm__("open");
   int mt_fs_fsync(int fd) __asm__("fsync");
   int mt_fs_close(int fd) __asm__("close");
   int mt_fs_getpid(void) __asm__("getpid");
   char *mt_fs_strerror(int errnum) __asm__("strerror");
]])

local fs = {}
local EEXIST = 17
fs.DT_DIR, fs.DT_REG, fs.DT_LNK, fs.DT_UNKNOWN = 4, 8, 10, 0

local function errstr() return ffi.string(C.mt_fs_strerror(ffi.errno())) end

-- Sorted visible (no leading '.') entry names of a folder and a name -> d_type table;
-- nil and a message when it cannot be opened.
function fs.list(path)
   local dir = C.mt_fs_opendir(path)
   if dir == nil then return nil, ('cannot open folder %s: %s'):format(path, errstr()) end
   local names, types = {}, {}
   while true do
      local e = C.mt_fs_readdir(dir)
      if e == nil then break end
      local name = ffi.string(e.d_name)
      if name:sub(1, 1) ~= '.' then
         names[#names + 1] = name
         types[name] = e.d_type
      end
   end
   C.mt_fs_closedir(dir)
   table.sort(names) -- byte order, like the C side's strcmp
   return names, types
end

function fs.isdir(path)
   local dir = C.mt_fs_opendir(path)
   if dir == nil then return false end
   C.mt_fs_closedir(dir)
   return true
end

-- mkdir -p; raises an error naming the folder that could not be made
function fs.mkdir_p(path)
   local so_far = path:sub(1, 1) == '/' and '/' or ''
   for part in path:gmatch('[^/]+') do
      so_far = so_far .. part
      if C.mt_fs_mkdir(so_far, tonumber('755', 8)) ~= 0 and ffi.errno() ~= EEXIST then
         error(('cannot create folder %s: %s'):format(so_far, errstr()), 2)
      end
      if not fs.isdir(so_far) then error(('cannot create folder %s: a file is in the way'):format(so_far), 2) end
      so_far = so_far .. '/'
   end
end

-- flush a file (or a folder, after a rename in it) to disk; false and a message on failure
function fs.fsync(path)
   local fd = C.mt_fs_open(path, 0) -- O_RDONLY
   if fd < 0 then return false, ('cannot open %s: %s'):format(path, errstr()) end
   local ok = C.mt_fs_fsync(fd) == 0 or ffi.errno() == 22 -- EINVAL: cannot sync this kind of file
   local msg = ok or ('fsync of %s failed: %s'):format(path, errstr())
   C.mt_fs_close(fd)
   return ok, msg
end

-- a path that opens as a file, not a folder
function fs.isfile(path)
   local f = io.open(path, 'rb')
   if not f then return false end
   f:close()
   return not fs.isdir(path)
end

-- MemAvailable of /proc/meminfo in bytes (nil when unknown)
function fs.availableMemory()
   local f = io.open('/proc/meminfo', 'r')
   if not f then return nil end
   local s = f:read('*a')
   f:close()
   local kb = tonumber(s:match('MemAvailable:%s*(%d+)'))
   return kb and kb * 1024
end

function fs.getpid() return C.mt_fs_getpid() end

function fs.dirname(path) return path:match('^(.*)/[^/]*$') or '.' end

-- Replace path with content atomically: write path.tmp.<pid>, flush it, rename it over path and
-- flush the folder, so that readers see the old file or the whole new one.
function fs.write_atomic(path, content)
   local tmp = ('%s.tmp.%d'):format(path, fs.getpid())
   local f, err = io.open(tmp, 'wb')
   if not f then error(('cannot write %s: %s'):format(tmp, err), 2) end
   local ok, werr = f:write(content)
   local cok, cerr = f:close()
   local sok, serr = true, nil
   if ok and cok then sok, serr = fs.fsync(tmp) end
   if not (ok and cok and sok) then
      os.remove(tmp)
      error(('cannot write %s: %s'):format(tmp, tostring(werr or cerr or serr)), 2)
   end
   local rok, rerr = os.rename(tmp, path)
   if not rok then
      os.remove(tmp)
      error(('cannot rename %s to %s: %s'):format(tmp, path, tostring(rerr)), 2)
   end
   fs.fsync(fs.dirname(path))
end

return fs
