-- moontorch.data.image: JPEG and PNG decoding and encoding (libjpeg-turbo, libpng).
--   local image = require 'moontorch.data.image'
--   local img = image.load('cat.jpg')          -- ByteTensor H x W x 3 (RGB)
--   local small = image.load('cat.jpg', 4)     -- JPEG decoded at 1/4 in the DCT domain
--   image.save('cat.png', img)                 -- format from the extension
--   local info = image.info(bytes)             -- {format='jpeg', width=, height=, channels=}
-- info's channels are the file's own: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA or CMYK.
-- `bytes` is a Lua string or a ByteTensor holding a file's contents. The format is found from
-- the magic bytes, never from a name. Grey is expanded to RGB, CMYK converted, alpha dropped.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local image = {}
local format_names = { [1] = 'jpeg', [2] = 'png' }
local format_codes = { jpeg = 1, jpg = 1, png = 2 }


-- The object whose memory a C call reads sits here during the call, so that the garbage
-- collector cannot take it (a local that is no longer used is no anchor for compiled code).
local anchor = {} -- luacheck: ignore 241 (written only: holding the object is its purpose)

-- pointer and length of a string or a CPU ByteTensor, anchored until release()
local function bytes_of(b, op)
   anchor[1] = b
   if type(b) == 'string' then return ffi.cast('const uint8_t*', b), #b end
   if torch.isTensor(b) then
      if b:type() ~= 'torch.ByteTensor' then
         error(('%s: bytes must be a string or a torch.ByteTensor, got a %s'):format(op, b:type()), 3)
      end
      if not b:isContiguous() then b = b:contiguous(); anchor[1] = b end
      local n = b:nElement()
      if n == 0 then return nil, 0 end
      return ffi.cast('const uint8_t*', C.mt_tensor_data(T.handle(b))), n
   end
   anchor[1] = nil
   error(('%s: bytes must be a string or a torch.ByteTensor, got %s'):format(op, type(b)), 3)
end
local function release() anchor[1] = nil end

local function check_denom(d, op)
   d = d or 1
   if d ~= 1 and d ~= 2 and d ~= 4 and d ~= 8 then
      error(('%s: scaleDenom must be 1, 2, 4 or 8, got %s'):format(op, tostring(d)), 3)
   end
   return d
end

local ibuf = ffi.new('int[4]')

function image.info(bytes)
   local p, n = bytes_of(bytes, 'image.info')
   local st = C.mt_image_info(p, n, ibuf, ibuf + 1, ibuf + 2, ibuf + 3)
   release()
   if st ~= 0 then T.raise('image.info') end
   return { format = format_names[ibuf[0]], width = ibuf[1], height = ibuf[2], channels = ibuf[3] }
end

local function decode(bytes, d, op, what)
   local p, n = bytes_of(bytes, op)
   local st = C.mt_image_decode(T.out_handle, p, n, d)
   release()
   if st ~= 0 then
      T.raise(what and (op .. ': ' .. what) or op, nil, 3)
   end
   return T.wrap_handle(T.out_handle[0])
end

-- ByteTensor H x W x 3; JPEGs at 1/scaleDenom (1, 2, 4 or 8) of their size, rounded up
function image.decode(bytes, scaleDenom)
   return decode(bytes, check_denom(scaleDenom, 'image.decode'), 'image.decode')
end

-- ByteTensor of the encoded file; img is H x W x 3 or H x W (grey) uint8
function image.encode(img, format, quality)
   if not torch.isTensor(img) then error('image.encode: img must be a ByteTensor, got ' .. type(img), 2) end
   local code = format_codes[type(format) == 'string' and format:lower() or '']
   if not code then error(("image.encode: format must be 'jpeg' or 'png', got %s"):format(tostring(format)), 2) end
   quality = quality or 90
   if type(quality) ~= 'number' or quality ~= math.floor(quality) or quality < 1 or quality > 100 then
      error('image.encode: quality must be an integer in 1..100, got ' .. tostring(quality), 2)
   end
   if img:type() ~= 'torch.ByteTensor' then
      error('image.encode: img must be a torch.ByteTensor (0..255), got a ' .. img:type(), 2)
   end
   if not img:isContiguous() then img = img:contiguous() end
   if C.mt_image_encode(T.out_handle, T.handle(img), code, quality) ~= 0 then T.raise('image.encode') end
   return T.wrap_handle(T.out_handle[0])
end

local function read_file(path, op)
   if type(path) ~= 'string' then error(op .. ': expected a file name, got ' .. type(path), 3) end
   local f, err = io.open(path, 'rb')
   if not f then error(('%s: cannot open %s: %s'):format(op, path, err), 3) end
   local s = f:read('*a')
   f:close()
   if not s then error(('%s: cannot read %s'):format(op, path), 3) end
   return s
end

function image.load(path, scaleDenom)
   local d = check_denom(scaleDenom, 'image.load')
   return decode(read_file(path, 'image.load'), d, 'image.load', path)
end

-- format from the extension: .jpg/.jpeg or .png (any case)
function image.save(path, img, quality)
   if type(path) ~= 'string' then error('image.save: expected a file name, got ' .. type(path), 2) end
   local ext = (path:match('%.([^./]+)$') or ''):lower()
   if ext == 'jpg' or ext == 'jpeg' then ext = 'jpeg'
   elseif ext ~= 'png' then
      error(('image.save: %s: cannot tell the format from the extension (use .jpg, .jpeg or .png)'):format(path), 2)
   end
   local ok, bytes = pcall(image.encode, img, ext, quality)
   if not ok then error(('image.save: %s: %s'):format(path, tostring(bytes):gsub('^image%.encode: ', '')), 2) end
   local f, err = io.open(path, 'wb')
   if not f then error(('image.save: cannot create %s: %s'):format(path, err), 2) end
   local okw = f:write(ffi.string(C.mt_tensor_data(T.handle(bytes)), bytes:nElement()))
   local okc = f:close()
   if not okw or not okc then error('image.save: failed writing ' .. path, 2) end
end

return image
