-- internal.lua: the one way library code reaches the C core. Every file that needs the C
-- library, its errors, size arrays or tensor handles does
--   local T = require 'moontorch.internal'
-- and nothing reaches into torch.* for them. Each field is defined once: `grep -rn "T.name ="
-- lua` or `grep -rn "function T.name" lua` finds it. Which file defines which fields:
--   internal.lua (what needs no tensor type)
--     T.clib                                 the loaded C library (FFI namespace)
--     T.check(st, [op, cname, level])        raise the C error when st (an mt_status) fails
--     T.raise([op, cname, level])            raise the C error; T.error_message: its text
--     T.argerror(op, msg, [level])           'op: msg'
--     T.expect_tensor(x, op, what, [level])  x, or 'op: expected a tensor what, got <type>'
--     T.is_int, T.size_list, T.sizes_buf, T.MAX_DIMS; T.size_scratch, T.stride_scratch,
--     T.index_scratch (int64_t[8] arrays for C); T.read_f32, T.read_f64, T.canonicalize_nans
--   tensor/Tensor.lua (the tensor object)
--     T.dtypes, T.dtype_by_name, T.FLOAT .. T.SHORT (dtype ids), T.CPU_DEVICE, T.typename,
--     T.parse_typename; T.handle(t, [what]) (t's C handle, checked), T.wrap_handle(h),
--     T.out_handle (the slot C ops write a new handle into); T.tensor_methods,
--     T.type_methods(dtype, device), T.tensor_metatable, T.set_index_hooks; T.is_tensor,
--     T.new_tensor, T.empty_tensor, T.sizes, T.strides, T.deliver_result, T.convert;
--     T.LongStorage, T.is_size
--   tensor/constructors.lua   T.tensor_types, T.default_dtype, T.from_flat, T.alias
--   tensor/view.lua           T.shape_str
--   tensor/channels_last.lua  T.channels_last_strides, T.follow_layout
--   tensor/print.lua          T.format_values
--   tensor/cuda.lua           T.convert_to_typename
--   tensor/storage.lua        T.is_storage, T.storage_of, T.storage_as_tensor, T.storage_dtype,
--                             T.storage_types
local ffi = require 'ffi'
local lib = require 'moontorch.lib'

local T = {}
-- Registered before tensor/Tensor.lua loads, since it fills in this same table.
package.loaded['moontorch.internal'] = T

local C = lib.C
T.clib = C

---------------------------------------------------------------------------------------------
-- C errors. The C message names the C function ('cinv: ...'); `op`, when given, is the name
-- the user called, and `cname` says how the message gets it:
--   nil      'op: ' goes in front (unless the message already starts with 'op:')
--   a string the message's leading 'cname:' becomes 'op:' (left alone if it names another op)
--   true     whatever leading name the message has becomes 'op'
function T.error_message(op, cname)
   local msg = ffi.string(C.mt_last_error())
   if op == nil then return msg end
   if cname == nil then
      if msg:sub(1, #op + 1) == op .. ':' then return msg end
      return op .. ': ' .. msg
   elseif cname == true then
      return (msg:gsub('^[%w_]+:', op .. ':', 1))
   elseif msg:sub(1, #cname + 1) == cname .. ':' then
      return op .. msg:sub(#cname + 1)
   end
   return msg
end

-- Raise the C library's last error. `level` counts as error()'s does from raise's caller
-- (default 2: the caller's caller, i.e. the user's line when a method calls raise).
function T.raise(op, cname, level)
   error(T.error_message(op, cname), (level or 2) + 1)
end

-- Raise the last C error if `st` (an mt_status) is a failure; same arguments as raise.
function T.check(st, op, cname, level)
   if st ~= 0 then error(T.error_message(op, cname), (level or 2) + 1) end
end

-- An argument error in the library's usual shape, 'op: msg', `level` as for raise.
function T.argerror(op, msg, level)
   error(op .. ': ' .. msg, (level or 2) + 1)
end

-- x itself when it is a tensor, else the error 'op: expected a tensor what, got <type>'
-- (`level` as for raise). <type> is Torch7's: a class name for objects, else Lua's type.
function T.expect_tensor(x, op, what, level)
   if T.is_tensor(x) then return x end
   error(('%s: expected a tensor %s, got %s'):format(op, what, package.loaded.moontorch.type(x)), (level or 2) + 1)
end

function T.is_int(x) return type(x) == 'number' and x == math.floor(x) end

---------------------------------------------------------------------------------------------
-- Sizes for C: int64_t arrays of at most 8 dimensions (the core's limit). The scratch arrays
-- are reused by every call (LuaJIT runs one Lua thread); a call that passes two or three of
-- them at once (sizes and strides, indices) uses different ones.
T.MAX_DIMS = 8
T.size_scratch = ffi.new('int64_t[8]')
T.stride_scratch = ffi.new('int64_t[8]')
T.index_scratch = ffi.new('int64_t[8]')

-- Sizes given as numbers, a LongStorage or a plain table: a Lua array (the table itself when
-- one was given).
function T.size_list(a, ...)
   if a == nil then return {} end
   if type(a) == 'table' then return a end
   if T.is_storage and T.is_storage(a) then return a:totable() end -- a LongStorage (storage.lua)
   return { a, ... }
end

-- Fill a scratch array from a Lua array of sizes (or a LongStorage); returns ndim and the
-- array (stridebuf when `second`). A fractional size is truncated toward zero, as Torch7's
-- C reads it (torch.rand(2, 3.5) is 2x3); anything but a finite number is an error. Errors
-- name `op` (default 'moontorch') and point at the caller's caller.
function T.sizes_buf(sizes, second, op)
   local buf = second and T.stride_scratch or T.size_scratch
   local n = #sizes
   if n > T.MAX_DIMS then error(('%s: at most 8 dimensions are supported, got %d'):format(op or 'moontorch', n), 3) end
   for i = 1, n do
      local s = sizes[i]
      if not T.is_int(s) then
         if type(s) ~= 'number' or s ~= s or s == math.huge or s == -math.huge then
            error(('%s: size %d must be an integer, got %s'):format(op or 'moontorch', i, tostring(s)), 3)
         end
         s = s < 0 and math.ceil(s) or math.floor(s)
      end
      buf[i - 1] = s
   end
   return n, buf
end

---------------------------------------------------------------------------------------------
-- NaN-safe element reads. LuaJIT does not canonicalize the numbers it converts from C, and
-- Debian's build takes a double NaN with the sign set and some payloads for a GC object, which
-- crashes the next garbage collection (docs/design.md, "Lua code and Debian's LuaJIT"). Files
-- and bit casts can put such NaNs in a tensor, so the library's own reads of float and double
-- elements look at the bits first and hand Lua its own NaN instead.
local band = require('bit').band
local NAN = 0 / 0
local u32p, f32p, f64p = ffi.typeof('uint32_t*'), ffi.typeof('float*'), ffi.typeof('double*')
local HI = ffi.abi('le') and 1 or 0 -- the 32-bit word of a double that holds sign and exponent

-- true when the double at element i of data (a void*/cdata pointer) is a NaN, by its bits
local function f64_is_nan(w, i)
   local hi = band(w[2 * i + HI], 0x7fffffff)
   return hi > 0x7ff00000 or (hi == 0x7ff00000 and w[2 * i + 1 - HI] ~= 0)
end

-- element i (0-based) of a float32 or float64 buffer as a Lua number
function T.read_f32(data, i)
   if band(ffi.cast(u32p, data)[i], 0x7fffffff) > 0x7f800000 then return NAN end
   return tonumber(ffi.cast(f32p, data)[i])
end
function T.read_f64(data, i)
   if f64_is_nan(ffi.cast(u32p, data), i) then return NAN end
   return ffi.cast(f64p, data)[i]
end

-- every NaN of a contiguous CPU double tensor (a fresh copy the caller owns) made Lua's own,
-- so a loop that then reads it through a double* is safe
function T.canonicalize_nans(t)
   local n = tonumber(C.mt_tensor_numel(t.h))
   local data = C.mt_tensor_data(t.h)
   local w, d = ffi.cast(u32p, data), ffi.cast(f64p, data)
   for i = 0, n - 1 do
      if f64_is_nan(w, i) then d[i] = NAN end
   end
   return t
end

-- Tensor.lua (loaded by moontorch) completes this table, so requiring this module alone
-- loads moontorch; while moontorch itself is loading this returns at once.
require 'moontorch'
return T
