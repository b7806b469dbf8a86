-- transform.lua: per-sample image transforms (csrc/data/transform.c).
--   local data = require 'moontorch.data'
--   local tf = data.Transform{train = true, size = 224}             -- ImageNet defaults
--   local x = tf:apply(jpegBytes, seed, counter)                    -- 3 x 224 x 224 FloatTensor
--   local x, y, w, h, flip = tf:crop(width, height, seed, counter)  -- the crop it would take
--   local small = data.Transform.resize(img, 64, 48)                -- H x W x C ByteTensor
-- Training: RandomResizedCrop (torchvision), flip, optional colour jitter and PCA lighting
-- (fb.resnet.torch); evaluation: shorter side to `resize`, centre crop. A sample's result
-- depends only on (seed, counter). Crop offsets are 0-based pixels, as in the C API.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local Transform = {}
Transform.__index = Transform

local dtypes = { float = T.FLOAT, half = T.HALF, byte = T.BYTE }
local layouts = { NCHW = 0, NHWC = 1 }
local known = {
   train = 'boolean', size = 'number', width = 'number', height = 'number', resize = 'number', scale = 'table',
   ratio = 'table', flip = 'boolean', brightness = 'number', contrast = 'number', saturation = 'number',
   lighting = 'number', dctScaling = 'boolean', mean = 'table', std = 'table', dtype = 'string', layout = 'string',
}

local function int_opt(v, key)
   if v ~= math.floor(v) then error(('Transform: %s must be an integer, got %s'):format(key, tostring(v)), 4) end
   return v
end

local function pair(v, key, n)
   if #v ~= n then error(('Transform: %s must hold %d numbers, got %d'):format(key, n, #v), 4) end
   for i = 1, n do
      if type(v[i]) ~= 'number' then error(('Transform: %s[%d] must be a number'):format(key, i), 4) end
   end
   return v
end

local function new(opts)
   opts = opts or {}
   if type(opts) ~= 'table' then error('Transform: expected a table of options', 3) end
   for k, v in pairs(opts) do
      local want = known[k]
      if not want then error(('Transform: unknown option %s'):format(tostring(k)), 3) end
      if type(v) ~= want then error(('Transform: %s must be a %s, got %s'):format(k, want, type(v)), 3) end
   end
   local train = opts.train ~= false
   local c = ffi.new('mt_transform')
   C.mt_transform_defaults(c, train and 1 or 0)
   local w = opts.width or opts.size
   local h = opts.height or opts.size
   if w then c.out_w = int_opt(w, 'width') end
   if h then c.out_h = int_opt(h, 'height') end
   if opts.resize then c.resize = int_opt(opts.resize, 'resize') end
   if opts.scale then
      local s = pair(opts.scale, 'scale', 2)
      c.scale_min, c.scale_max = s[1], s[2]
   end
   if opts.ratio then
      local r = pair(opts.ratio, 'ratio', 2)
      c.ratio_min, c.ratio_max = r[1], r[2]
   end
   if opts.flip ~= nil then c.hflip = opts.flip and 1 or 0 end
   c.brightness = opts.brightness or 0
   c.contrast = opts.contrast or 0
   c.saturation = opts.saturation or 0
   c.lighting = opts.lighting or 0
   if opts.dctScaling ~= nil then c.dct_scaling = opts.dctScaling and 1 or 0 end
   if opts.mean then
      local m = pair(opts.mean, 'mean', 3)
      for i = 1, 3 do c.mean[i - 1] = m[i] end
   end
   if opts.std then
      local s = pair(opts.std, 'std', 3)
      for i = 1, 3 do c.std[i - 1] = s[i] end
   end
   if opts.dtype then
      local d = dtypes[opts.dtype]
      if not d then error(("Transform: dtype must be 'float', 'half' or 'byte', got '%s'"):format(opts.dtype), 3) end
      c.dtype = d
   end
   if opts.layout then
      local l = layouts[opts.layout]
      if not l then error(("Transform: layout must be 'NCHW' or 'NHWC', got '%s'"):format(opts.layout), 3) end
      c.nhwc = l
   end
   -- the C side validates the rest (ranges, std ~= 0): ask it now rather than at the first image
   local o = ffi.new('int[5]')
   check(C.mt_transform_crop(c, 1, 1, 0, 0, o, o + 1, o + 2, o + 3, o + 4), nil, nil, 3)

   -- per-object scratch for mt_transform_apply (a Lua state runs one thread at a time)
   local scratch = ffi.gc(ffi.new('void*[1]'), function(p) C.mt_transform_scratch_free(p[0]) end)
   return setmetatable({ c = c, train = train, _scratch = scratch, _out = o }, Transform)
end

-- the output tensor's sizes (Lua array) for this transform
function Transform:sizes()
   local c = self.c
   if c.nhwc ~= 0 then return { c.out_h, c.out_w, 3 } end
   return { 3, c.out_h, c.out_w }
end

-- Decode and transform one encoded image (a Lua string or a ByteTensor of the file's bytes)
-- into a new tensor. `name` (optional) names the sample in error messages.
function Transform:apply(bytes, seed, counter, name)
   local ptr, len
   if type(bytes) == 'string' then
      ptr, len = bytes, #bytes
   elseif torch.isTensor(bytes) then
      if bytes:type() ~= 'torch.ByteTensor' then
         error('Transform:apply: expected a string or a torch.ByteTensor, got ' .. bytes:type(), 2)
      end
      bytes = bytes:contiguous()
      local h = T.handle(bytes)
      ptr, len = C.mt_tensor_data(h), tonumber(C.mt_tensor_numel(h))
   else
      error('Transform:apply: expected a string or a torch.ByteTensor, got ' .. type(bytes), 2)
   end
   local out = T.new_tensor(self.c.dtype, T.CPU_DEVICE, self:sizes())
   check(C.mt_transform_apply(self.c, ptr, len, name or 'image', seed or 0, counter or 0, C.mt_tensor_data(out.h),
      self._scratch))
   return out
end

-- The crop a width x height image gets: x, y (0-based), w, h in source pixels and the flip
-- (a boolean).
function Transform:crop(width, height, seed, counter)
   local o = self._out
   check(C.mt_transform_crop(self.c, width, height, seed or 0, counter or 0, o, o + 1, o + 2, o + 3, o + 4))
   return o[0], o[1], o[2], o[3], o[4] ~= 0
end

-- Antialiased bilinear resize of an H x W x C (or H x W) ByteTensor to h x w (the transforms'
-- resampler, PIL's BILINEAR).
function Transform.resize(img, w, h)
   if not torch.isTensor(img) or img:type() ~= 'torch.ByteTensor' then
      error('Transform.resize: expected a torch.ByteTensor image', 2)
   end
   img = img:contiguous()
   check(C.mt_image_resize(T.out_handle, T.handle(img), w, h))
   return T.wrap_handle(T.out_handle[0])
end

setmetatable(Transform, { __call = function(_, opts) return new(opts) end })

return { Transform = Transform }
