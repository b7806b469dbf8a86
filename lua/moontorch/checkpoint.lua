-- moontorch.checkpoint: tensors by name in safetensors files (readable by PyTorch's
-- `safetensors` and back), with metadata.
--   checkpoint.save(path, {name = tensor, ...}, {epoch = 3, optim = {learningRate = 0.1}})
--   local tensors, metadata = checkpoint.load(path)
-- Metadata values that are strings are stored as they are; numbers, booleans and tables are
-- stored as JSON text and decoded again on load (their keys are listed under the metadata key
-- "moontorch.json"). Saving is atomic: a failed save leaves the previous file intact.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local checkpoint = {}
local JSON_KEYS = 'moontorch.json'

---------------------------------------------------------------------------------------------
-- a small JSON encoder/decoder for metadata values
local json = {}
checkpoint.json = json

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r',
   ['\t'] = '\\t' }
local function enc_string(s)
   return '"' .. s:gsub('[%c"\\]', function(c) return escapes[c] or ('\\u%04x'):format(c:byte()) end) .. '"'
end

local function encode(v, out, depth, path)
   if depth > 64 then error('checkpoint: metadata nested too deeply at ' .. path, 0) end
   local tv = type(v)
   if tv == 'string' then out[#out + 1] = enc_string(v)
   elseif tv == 'boolean' then out[#out + 1] = tostring(v)
   elseif tv == 'number' then
      if v ~= v or v == math.huge or v == -math.huge then
         error(('checkpoint: metadata %s is %s, which JSON cannot hold'):format(path, tostring(v)), 0)
      end
      local txt
      if v == math.floor(v) and math.abs(v) < 2 ^ 53 then txt = ('%d'):format(v)
      else -- the shortest form that reads back exactly
         for digits = 15, 17 do
            txt = ('%.' .. digits .. 'g'):format(v)
            if tonumber(txt) == v then break end
         end
      end
      out[#out + 1] = txt
   elseif tv == 'table' then
      local n, count = #v, 0
      for _ in pairs(v) do count = count + 1 end
      if count > 0 and count == n then
         out[#out + 1] = '['
         for i = 1, n do
            if i > 1 then out[#out + 1] = ',' end
            encode(v[i], out, depth + 1, path .. '[' .. i .. ']')
         end
         out[#out + 1] = ']'
      else
         local keys = {}
         for k in pairs(v) do
            if type(k) ~= 'string' then
               error(('checkpoint: metadata %s has a %s key; tables must be arrays or have string keys'):format(path,
                  type(k)), 0)
            end
            keys[#keys + 1] = k
         end
         table.sort(keys)
         out[#out + 1] = '{'
         for i, k in ipairs(keys) do
            if i > 1 then out[#out + 1] = ',' end
            out[#out + 1] = enc_string(k) .. ':'
            encode(v[k], out, depth + 1, path .. '.' .. k)
         end
         out[#out + 1] = '}'
      end
   else
      error(('checkpoint: metadata %s is a %s, which cannot be saved'):format(path, tv), 0)
   end
end

function json.encode(v, what)
   local out = {}
   encode(v, out, 0, what or 'value')
   return table.concat(out)
end

local function decode_error(s, i, msg) error(('checkpoint: bad JSON at character %d: %s'):format(i, msg), 0) end

local function skip(s, i) return s:find('[^ \t\r\n]', i) or #s + 1 end

local decode_value
local function decode_string(s, i) -- s:sub(i, i) == '"'
   local parts, j = {}, i + 1
   while true do
      local a = s:find('["\\]', j)
      if not a then decode_error(s, i, 'unterminated string') end
      parts[#parts + 1] = s:sub(j, a - 1)
      if s:sub(a, a) == '"' then return table.concat(parts), a + 1 end
      local c = s:sub(a + 1, a + 1)
      local simple = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }
      if simple[c] then
         parts[#parts + 1] = simple[c]
         j = a + 2
      elseif c == 'u' then
         local hex = s:sub(a + 2, a + 5)
         if not hex:match('^%x%x%x%x$') then decode_error(s, a, 'bad \\u escape') end
         local cp = tonumber(hex, 16)
         j = a + 6
         if cp >= 0xD800 and cp <= 0xDBFF and s:sub(j, j + 1) == '\\u' then -- surrogate pair
            local lo = tonumber(s:sub(j + 2, j + 5), 16)
            if lo and lo >= 0xDC00 and lo <= 0xDFFF then
               cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
               j = j + 6
            end
         end
         -- UTF-8 encode
         if cp < 0x80 then parts[#parts + 1] = string.char(cp)
         elseif cp < 0x800 then parts[#parts + 1] = string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64)
         elseif cp < 0x10000 then
            parts[#parts + 1] = string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64,
               0x80 + cp % 64)
         else
            parts[#parts + 1] = string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
               0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
         end
      else
         decode_error(s, a, 'bad escape \\' .. c)
      end
   end
end

function decode_value(s, i, depth)
   if depth > 64 then decode_error(s, i, 'nested too deeply') end
   i = skip(s, i)
   local c = s:sub(i, i)
   if c == '"' then return decode_string(s, i)
   elseif c == '{' then
      local obj = {}
      i = skip(s, i + 1)
      if s:sub(i, i) == '}' then return obj, i + 1 end
      while true do
         if s:sub(i, i) ~= '"' then decode_error(s, i, 'expected a string key') end
         local k
         k, i = decode_string(s, i)
         i = skip(s, i)
         if s:sub(i, i) ~= ':' then decode_error(s, i, "expected ':'") end
         obj[k], i = decode_value(s, i + 1, depth + 1)
         i = skip(s, i)
         local d = s:sub(i, i)
         if d == '}' then return obj, i + 1 end
         if d ~= ',' then decode_error(s, i, "expected ',' or '}'") end
         i = skip(s, i + 1)
      end
   elseif c == '[' then
      local arr = {}
      i = skip(s, i + 1)
      if s:sub(i, i) == ']' then return arr, i + 1 end
      while true do
         arr[#arr + 1], i = decode_value(s, i, depth + 1)
         i = skip(s, i)
         local d = s:sub(i, i)
         if d == ']' then return arr, i + 1 end
         if d ~= ',' then decode_error(s, i, "expected ',' or ']'") end
         i = i + 1
      end
   elseif s:sub(i, i + 3) == 'true' then return true, i + 4
   elseif s:sub(i, i + 4) == 'false' then return false, i + 5
   elseif s:sub(i, i + 3) == 'null' then return nil, i + 4
   else
      local num = s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', i)
      if not num or num == '' or not tonumber(num) then
         decode_error(s, i, 'unexpected ' .. (c == '' and 'end' or ("'" .. c .. "'")))
      end
      return tonumber(num), i + #num
   end
end

function json.decode(s)
   local v, i = decode_value(s, 1, 0)
   i = skip(s, i)
   if i <= #s then decode_error(s, i, 'trailing characters') end
   return v
end

---------------------------------------------------------------------------------------------

function checkpoint.save(path, tensors, metadata)
   local op = 'checkpoint.save'
   if type(path) ~= 'string' then error(op .. ': expected a file name as argument 1, got ' .. type(path), 2) end
   if type(tensors) ~= 'table' then error(op .. ': expected a table of tensors by name as argument 2', 2) end
   if metadata ~= nil and type(metadata) ~= 'table' then error(op .. ': metadata must be a table', 2) end
   local names = {}
   for k, v in pairs(tensors) do
      if type(k) ~= 'string' then error(op .. ': tensor names must be strings, got a ' .. type(k), 2) end
      if not torch.isTensor(v) then error(('%s: %s is a %s, not a tensor'):format(op, k, type(v)), 2) end
      names[#names + 1] = k
   end
   table.sort(names)
   local n = #names
   local cnames = ffi.new('const char *[?]', math.max(n, 1))
   local ctensors = ffi.new('mt_tensor *[?]', math.max(n, 1))
   for i, k in ipairs(names) do
      cnames[i - 1] = k
      ctensors[i - 1] = T.handle(tensors[k], k)
   end
   -- metadata: strings as they are, the rest as JSON
   local keys, values, jkeys = {}, {}, {}
   for k, v in pairs(metadata or {}) do
      if type(k) ~= 'string' then error(op .. ': metadata keys must be strings, got a ' .. type(k), 2) end
      if k == JSON_KEYS then error(op .. ': metadata key "' .. JSON_KEYS .. '" is reserved', 2) end
      keys[#keys + 1] = k
   end
   table.sort(keys)
   for i, k in ipairs(keys) do
      local v = metadata[k]
      if type(v) == 'string' then values[i] = v
      else
         local ok, s = pcall(json.encode, v, k)
         if not ok then error(op .. ': ' .. s, 2) end
         values[i] = s
         jkeys[#jkeys + 1] = k
      end
   end
   if #jkeys > 0 then
      keys[#keys + 1] = JSON_KEYS
      values[#values + 1] = json.encode(jkeys)
   end
   local nm = #keys
   local ckeys = ffi.new('const char *[?]', math.max(nm, 1))
   local cvalues = ffi.new('const char *[?]', math.max(nm, 1))
   for i = 1, nm do ckeys[i - 1], cvalues[i - 1] = keys[i], values[i] end
   -- keys/values/names stay referenced (locals) until the call returns
   T.check(C.mt_safetensors_save(path, n, cnames, ctensors, nm, ckeys, cvalues), op)
end

-- metadata's strings, with the JSON ones decoded; op names the caller in errors
local function decode_meta(meta, op, path)
   local jk = meta[JSON_KEYS]
   if not jk then return meta end
   meta[JSON_KEYS] = nil
   local ok, list = pcall(json.decode, jk)
   if not ok or type(list) ~= 'table' then
      error(('%s: %s: bad "%s" metadata: %s'):format(op, path, JSON_KEYS, tostring(list)), 3)
   end
   for _, k in ipairs(list) do
      if meta[k] ~= nil then
         local ok2, v = pcall(json.decode, meta[k])
         if not ok2 then error(('%s: %s: metadata "%s": %s'):format(op, path, k, v), 3) end
         meta[k] = v
      end
   end
   return meta
end

local MAX_HEADER = 100 * 2 ^ 20 -- a larger header length means the file is not safetensors

-- A file's metadata without reading its tensors, checked first for what makes a load fail
-- later: missing, not safetensors, or shorter than its header says (a copy cut off). Returns
-- the metadata and the file's size; errors say what is wrong in words, without a source line.
function checkpoint.peek(path)
   local f, why = io.open(path, 'rb')
   if not f then error(why:gsub('^' .. path:gsub('%p', '%%%0') .. ': ', ''):lower(), 0) end
   local size = f:seek('end')
   f:seek('set', 0)
   local head = f:read(8) or ''
   local function fail(fmt, ...)
      if io.type(f) == 'file' then f:close() end
      error(fmt:format(...), 0)
   end
   if size < 8 then fail('not a checkpoint: %d bytes, too short for a safetensors header', size) end
   local hl = 0
   for i = 8, 1, -1 do hl = hl * 256 + head:byte(i) end
   if hl < 2 or hl > MAX_HEADER then fail('not a checkpoint: no safetensors header at its start') end
   if 8 + hl > size then fail('truncated: expected at least %d bytes, found %d', 8 + hl, size) end
   local ok, header = pcall(json.decode, f:read(hl))
   f:close()
   if not ok or type(header) ~= 'table' then fail('not a checkpoint: its header is not safetensors JSON') end
   local finish = 0
   for name, e in pairs(header) do
      if name ~= '__metadata__' then
         local offsets = type(e) == 'table' and e.data_offsets
         if type(offsets) ~= 'table' or type(offsets[2]) ~= 'number' then
            fail('not a checkpoint: tensor %s has no data_offsets', name)
         end
         finish = math.max(finish, offsets[2])
      end
   end
   if 8 + hl + finish > size then fail('truncated: expected %d bytes, found %d', 8 + hl + finish, size) end
   local meta = {}
   for k, v in pairs(type(header.__metadata__) == 'table' and header.__metadata__ or {}) do meta[k] = tostring(v) end
   return decode_meta(meta, 'checkpoint.peek', path), size
end

-- Returns tensors (name -> CPU tensor) and metadata (key -> value).
function checkpoint.load(path)
   local op = 'checkpoint.load'
   if type(path) ~= 'string' then error(op .. ': expected a file name as argument 1, got ' .. type(path), 2) end
   local fp = ffi.new('mt_safetensors *[1]')
   T.check(C.mt_safetensors_open(fp, path), op)
   local f = ffi.gc(fp[0], C.mt_safetensors_close)
   local tensors, meta = {}, {}
   local outp = T.out_handle
   for i = 0, C.mt_safetensors_count(f) - 1 do
      T.check(C.mt_safetensors_read(f, i, outp), op)
      tensors[ffi.string(C.mt_safetensors_name(f, i))] = T.wrap_handle(outp[0])
   end
   for i = 0, C.mt_safetensors_meta_count(f) - 1 do
      meta[ffi.string(C.mt_safetensors_meta_key(f, i))] = ffi.string(C.mt_safetensors_meta_value(f, i))
   end
   C.mt_safetensors_close(ffi.gc(f, nil))
   return tensors, decode_meta(meta, op, path)
end

return checkpoint
