-- transform_spec.lua: the per-sample transforms (moontorch.data.transform): the
-- resampler against a float64 transcription of PIL's BILINEAR filter and against PIL itself,
-- the crop choice against a transcription of torchvision's RandomResizedCrop on the same
-- Philox draws, evaluation against torchvision Resize + CenterCrop, DCT scaling, flip, dtypes,
-- layouts, colour jitter and lighting against a float64 transcription of fb.resnet.torch, and
-- the errors. Images are fresh random ones; PIL/torchvision run through /usr/bin/python3.
local ffi = require 'ffi'
local bit = require 'bit'
local torch = require 'moontorch'
local util = require 'spec.util'
local data = require 'moontorch.data'
local T = require 'moontorch.internal'
local C = T.clib
local Transform = data.Transform

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local function read_file(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end
local function write_file(path, s)
   local f = assert(io.open(path, 'wb'))
   f:write(s)
   f:close()
end

-- run a Python script (PIL, numpy, torchvision) and fail with its output if it fails
local function python(script)
   local path = tmp('script.py')
   write_file(path, script)
   local p = io.popen(('%s %q 2>&1'):format(util.PY, path))
   local out = p:read('*a')
   local ok = p:close()
   assert(ok == true or ok == 0, 'python failed:\n' .. out)
   return out
end

-- ByteTensor <-> raw files (row-major bytes)
local function save_raw(path, t)
   t = t:contiguous()
   write_file(path, ffi.string(t:data(), t:nElement()))
end
local function load_raw(path, sizes)
   local s = read_file(path)
   local t = torch.ByteTensor(torch.LongStorage(sizes))
   assert(#s == t:nElement(), ('%s: %d bytes, expected %d'):format(path, #s, t:nElement()))
   ffi.copy(t:data(), s, #s)
   return t
end

-- flat Lua array of a tensor's values (any dtype), row-major
local function values(t)
   local f = t:double():contiguous()
   local p, n, out = f:data(), f:nElement(), {}
   for i = 0, n - 1 do out[i + 1] = p[i] end
   return out
end
local function diff_stats(a, b)
   assert(#a == #b, ('%d values vs %d'):format(#a, #b))
   local sum, max = 0, 0
   for i = 1, #a do
      local d = math.abs(a[i] - b[i])
      sum = sum + d
      if d > max then max = d end
   end
   return sum / #a, max
end

---------------------------------------------------------------------------------------------
-- Philox 4x32-10 in Lua (csrc/core/philox.h, transcribed) for the reference draws
local U64 = ffi.typeof('uint64_t')
local TWO32 = 4294967296
local function mulhilo(a, b)
   local p = U64(a) * b
   return tonumber(p / 4294967296ULL), tonumber(p % 4294967296ULL)
end
local function xor32(a, b) return bit.bxor(a, b) % TWO32 end
local function philox(seed, counter)
   seed, counter = U64(seed), U64(counter)
   local c0, c1, c2, c3 = tonumber(counter % 4294967296ULL), tonumber(counter / 4294967296ULL), 0, 0
   local k0, k1 = tonumber(seed % 4294967296ULL), tonumber(seed / 4294967296ULL)
   for _ = 1, 10 do
      local hi0, lo0 = mulhilo(0xD2511F53, c0)
      local hi1, lo1 = mulhilo(0xCD9E8D57, c2)
      c0, c2 = xor32(xor32(hi1, c1), k0), xor32(xor32(hi0, c3), k1)
      c1, c3 = lo1, lo0
      k0, k1 = (k0 + 0x9E3779B9) % TWO32, (k1 + 0xBB67AE85) % TWO32
   end
   return { c0, c1, c2, c3 }
end
local function u53(hi, lo) return (hi * 2 ^ 21 + math.floor(lo / 2 ^ 11)) / 2 ^ 53 end
local function normal(o) -- Box-Muller on words 2 and 3
   return math.sqrt(-2 * math.log((o[3] + 1) / 4294967297)) * math.cos(2 * math.pi * (o[4] / TWO32))
end

local function round_even(v) -- Python's round()
   local f = math.floor(v)
   local d = v - f
   if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
   return f
end

-- torchvision 0.14 RandomResizedCrop.get_params on the draws documented in transform.c
local function ref_crop(W, H, seed, counter, scale, ratio)
   scale, ratio = scale or { 0.08, 1 }, ratio or { 3 / 4, 4 / 3 }
   local base = counter * 16
   local area, lr0, lr1 = W * H, math.log(ratio[1]), math.log(ratio[2])
   for k = 0, 9 do
      local o = philox(seed, base + k)
      local target = area * (scale[1] + (scale[2] - scale[1]) * u53(o[1], o[2]))
      local aspect = math.exp(lr0 + (lr1 - lr0) * u53(o[3], o[4]))
      local w, h = round_even(math.sqrt(target * aspect)), round_even(math.sqrt(target / aspect))
      if w > 0 and w <= W and h > 0 and h <= H then
         local off = philox(seed, base + 10)
         return math.floor(u53(off[3], off[4]) * (W - w + 1)), math.floor(u53(off[1], off[2]) * (H - h + 1)), w, h
      end
   end
   local w, h = W, H
   if W / H < ratio[1] then h = round_even(W / ratio[1])
   elseif W / H > ratio[2] then w = round_even(H * ratio[2]) end
   return math.floor((W - w) / 2), math.floor((H - h) / 2), w, h
end
local function ref_flip(seed, counter)
   local o = philox(seed, counter * 16 + 11)
   return u53(o[1], o[2]) < 0.5
end

---------------------------------------------------------------------------------------------
-- PIL's antialiased BILINEAR resize, transcribed in float64 (separable, no rounding between)
local function ref_coeffs(in_size, out_size)
   local scale = in_size / out_size
   local fs = math.max(scale, 1)
   local out = {}
   for i = 0, out_size - 1 do
      local centre = (i + 0.5) * scale
      local xmin = math.max(math.floor(centre - fs + 0.5), 0)
      local xmax = math.min(math.floor(centre + fs + 0.5), in_size)
      local ws, sum = {}, 0
      for x = xmin, xmax - 1 do
         local t = math.abs((x + 0.5 - centre) / fs)
         ws[#ws + 1] = t < 1 and 1 - t or 0
         sum = sum + ws[#ws]
      end
      for k = 1, #ws do ws[k] = ws[k] / sum end
      out[i + 1] = { xmin = xmin, w = ws }
   end
   return out
end
local function ref_resize(img, ow, oh) -- img H x W x C ByteTensor -> flat rounded values
   local H, W, Ch = img:size(1), img:size(2), img:size(3)
   local src = values(img)
   local cx, cy = ref_coeffs(W, ow), ref_coeffs(H, oh)
   local hpass = {}
   for y = 0, H - 1 do
      for x = 0, ow - 1 do
         local c = cx[x + 1]
         for ch = 0, Ch - 1 do
            local acc = 0
            for k = 1, #c.w do acc = acc + c.w[k] * src[((y * W) + c.xmin + k - 1) * Ch + ch + 1] end
            hpass[(y * ow + x) * Ch + ch + 1] = acc
         end
      end
   end
   local out = {}
   for y = 0, oh - 1 do
      local c = cy[y + 1]
      for x = 0, ow - 1 do
         for ch = 0, Ch - 1 do
            local acc = 0
            for k = 1, #c.w do acc = acc + c.w[k] * hpass[((c.xmin + k - 1) * ow + x) * Ch + ch + 1] end
            out[(y * ow + x) * Ch + ch + 1] = math.floor(math.min(math.max(acc, 0), 255) + 0.5)
         end
      end
   end
   return out
end

---------------------------------------------------------------------------------------------
-- test images, made by PIL: smooth (a few random low-frequency waves plus mild noise, so DCT
-- scaling and resampling differences stay small) at two sizes, JPEG and PNG
local images
local function get_images()
   if images then return images end
   python(([[
import numpy as np
from PIL import Image
rng = np.random.RandomState(%d)
def smooth(w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    for c in range(3):
        img[:, :, c] = 128 + sum(rng.uniform(15, 40) * np.sin(2 * np.pi * (x * rng.uniform(-3, 3) / w + y * rng.uniform(-3, 3) / h) + rng.uniform(0, 6.3)) for _ in range(4))
    img += rng.normal(0, 3, img.shape)
    return Image.fromarray(np.clip(np.round(img), 0, 255).astype(np.uint8))
for name, (w, h) in {'mid': (500, 375), 'big': (1280, 960), 'tall': (301, 517)}.items():
    im = smooth(w, h)
    im.save('%s/' + name + '.jpg', quality=95)
    im.save('%s/' + name + '.png')
]]):format(util.seed % 2 ^ 31, tmpdir, tmpdir))
   images = {}
   for _, name in ipairs({ 'mid', 'big', 'tall' }) do
      images[name] = { jpg = read_file(tmp(name .. '.jpg')), png = read_file(tmp(name .. '.png')) }
   end
   images.mid.w, images.mid.h = 500, 375
   images.big.w, images.big.h = 1280, 960
   images.tall.w, images.tall.h = 301, 517
   return images
end

local function random_seed() return math.random(0, 2 ^ 31) end

describe('moontorch.data.transform', function()
   teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

   ---------------------------------------------------------------------------------------------
   describe('Transform.resize (mt_image_resize)', function()
      local cases = {
         { 97, 131, 3, 45, 61 },  -- downscale
         { 23, 17, 3, 50, 41 },   -- upscale
         { 40, 90, 3, 200, 13 },  -- up in x, down in y
         { 64, 48, 1, 33, 25 },   -- grayscale, non-integer factor
         { 31, 29, 4, 7, 9 },     -- four channels, strong downscale
      }
      for _, c in ipairs(cases) do
         local H, W, Ch, ow, oh = unpack(c)
         it(('matches a float64 transcription of PIL bilinear, %dx%dx%d -> %dx%d'):format(H, W, Ch, oh, ow), function()
            local img = torch.ByteTensor(H, W, Ch):random(0, 255)
            local out = Transform.resize(img, ow, oh)
            assert.are.same({ oh, ow, Ch }, out:size():totable())
            local _, max = diff_stats(values(out), ref_resize(img, ow, oh))
            assert(max <= 1, ('max difference %g levels'):format(max))
         end)
      end

      it('matches PIL Image.resize(BILINEAR) on RGB and L images', function()
         local rgb = torch.ByteTensor(83, 121, 3):random(0, 255)
         local grey = torch.ByteTensor(70, 55, 1):random(0, 255)
         save_raw(tmp('rgb.raw'), rgb)
         save_raw(tmp('grey.raw'), grey)
         local sizes = { { 50, 37 }, { 240, 170 }, { 121, 20 } }
         python(([[
import numpy as np
from PIL import Image
rgb = Image.fromarray(np.fromfile('%s/rgb.raw', np.uint8).reshape(83, 121, 3), 'RGB')
grey = Image.fromarray(np.fromfile('%s/grey.raw', np.uint8).reshape(70, 55), 'L')
for i, (w, h) in enumerate([(50, 37), (240, 170), (121, 20)]):
    np.asarray(rgb.resize((w, h), Image.BILINEAR)).tofile('%s/rgb_%%d.raw' %% i)
    np.asarray(grey.resize((w, h), Image.BILINEAR)).tofile('%s/grey_%%d.raw' %% i)
]]):format(tmpdir, tmpdir, tmpdir, tmpdir))
         for i, s in ipairs(sizes) do
            local w, h = s[1], s[2]
            for _, im in ipairs({ { 'rgb', rgb, 3 }, { 'grey', grey, 1 } }) do
               local ours = Transform.resize(im[2], w, h)
               local pil = load_raw(tmp(('%s_%d.raw'):format(im[1], i - 1)), { h, w, im[3] })
               local mean, max = diff_stats(values(ours), values(pil))
               assert(mean < 0.5 and max <= 2, ('%s %dx%d: mean %g max %g levels'):format(im[1], w, h, mean, max))
            end
         end
      end)

      it('keeps a 2-D image 2-D, reads non-contiguous input, and scale 1 is the identity', function()
         local img = torch.ByteTensor(12, 9):random(0, 255)
         local out = Transform.resize(img, 9, 12)
         assert.are.same({ 12, 9 }, out:size():totable())
         assert.are.same(values(img), values(out))
         local t = torch.ByteTensor(3, 20, 16):random(0, 255)
         local hwc = t:permute(2, 3, 1) -- 20 x 16 x 3, not contiguous
         assert.are.same(values(Transform.resize(hwc:contiguous(), 8, 10)), values(Transform.resize(hwc, 8, 10)))
      end)

      it('rejects bad images and sizes with clear messages', function()
         util.assert_error(function() Transform.resize(torch.FloatTensor(4, 4, 3), 2, 2) end, 'ByteTensor')
         local ok, err = pcall(C.mt_image_resize, T.out_handle, T.handle(torch.ByteTensor(5)), 2, 2)
         assert(ok and err ~= 0)
         assert.truthy(ffi.string(C.mt_last_error()):find('H x W', 1, true))
         util.assert_error(function() Transform.resize(torch.ByteTensor(4, 4, 3), 0, 2) end, 'output size 0 x 2')
         util.assert_error(function() Transform.resize(torch.ByteTensor(0, 4, 3), 2, 2) end, 'cannot resize')
         util.assert_error(function() Transform.resize(torch.ByteTensor(4, 4, 3), 2, 1e6) end, 'outside')
      end)
   end)

   ---------------------------------------------------------------------------------------------
   describe('Transform:crop', function()
      it('is torchvision RandomResizedCrop on the documented Philox draws', function()
         local tf = Transform{ train = true }
         local seed = random_seed()
         for _, wh in ipairs({ { 500, 375 }, { 64, 900 }, { 33, 21 }, { 1, 1 }, { 4000, 3000 } }) do
            for counter = 0, 60 do
               local x, y, w, h, flip = tf:crop(wh[1], wh[2], seed, counter)
               local rx, ry, rw, rh = ref_crop(wh[1], wh[2], seed, counter)
               assert.are.same({ rx, ry, rw, rh, ref_flip(seed, counter) }, { x, y, w, h, flip })
            end
         end
         -- the flip is a fair coin: over 2000 counters (independent draws; the flip does not
         -- depend on the image size, so the loop above repeats 61 draws) within 5 standard
         -- deviations (22.4) of 1000
         local flips = 0
         for counter = 0, 1999 do
            if select(5, tf:crop(64, 48, seed, counter)) then flips = flips + 1 end
         end
         assert(flips > 888 and flips < 1112, 'flip frequency ' .. flips .. ' of 2000')
         -- other ranges
         local tf2 = Transform{ scale = { 0.5, 0.9 }, ratio = { 0.5, 3 } }
         for counter = 0, 40 do
            local got = { tf2:crop(300, 200, seed, counter) }
            local want = { ref_crop(300, 200, seed, counter, { 0.5, 0.9 }, { 0.5, 3 }) }
            table.remove(got)
            assert.are.same(want, got)
         end
      end)

      it('is deterministic in (seed, counter) and varies across counters and seeds', function()
         local tf = Transform{}
         local seed = random_seed()
         local seen, n = {}, 0
         for counter = 0, 199 do
            local a = { tf:crop(640, 480, seed, counter) }
            assert.are.same(a, { tf:crop(640, 480, seed, counter) })
            local key = table.concat({ a[1], a[2], a[3], a[4] }, ',')
            if not seen[key] then seen[key], n = true, n + 1 end
         end
         assert(n > 190, 'only ' .. n .. ' distinct crops in 200')
         local same = 0
         for counter = 0, 49 do
            local a, b = { tf:crop(640, 480, seed, counter) }, { tf:crop(640, 480, seed + 1, counter) }
            if a[1] == b[1] and a[2] == b[2] and a[3] == b[3] and a[4] == b[4] then same = same + 1 end
         end
         assert(same < 3, same .. ' equal crops for different seeds')
      end)

      it('keeps scale and ratio in bounds over many draws', function()
         local W, H = 500, 375
         local tf = Transform{ scale = { 0.08, 1 }, ratio = { 3 / 4, 4 / 3 } }
         local seed = random_seed()
         local minr, maxr, mins, maxs = math.huge, 0, math.huge, 0
         for counter = 0, 1999 do
            local x, y, w, h = tf:crop(W, H, seed, counter)
            assert(x >= 0 and y >= 0 and w >= 1 and h >= 1 and x + w <= W and y + h <= H,
               ('crop %d,%d %dx%d outside %dx%d'):format(x, y, w, h, W, H))
            -- rounding w and h to integers moves area and ratio a little
            local s, r = w * h / (W * H), w / h
            local tol_r = (w + 0.5) / (h - 0.5) - w / h
            assert(s >= 0.08 * (1 - 2 / math.min(w, h)) - 1e-9 and s <= 1 + 1e-9, 'scale ' .. s)
            assert(r >= 3 / 4 - tol_r and r <= 4 / 3 + tol_r, 'ratio ' .. r)
            minr, maxr, mins, maxs = math.min(minr, r), math.max(maxr, r), math.min(mins, s), math.max(maxs, s)
         end
         -- and the draws cover the ranges
         assert(mins < 0.1 and maxs > 0.9 and minr < 0.8 and maxr > 1.25,
            ('scale %g..%g ratio %g..%g'):format(mins, maxs, minr, maxr))
      end)

      it('falls back to the centre crop clamped to the ratio range', function()
         local tf = Transform{}
         for counter = 0, 20 do
            local x, y, w, h = tf:crop(1000, 10, 7, counter)
            assert.are.same({ 493, 0, 13, 10 }, { x, y, w, h })
            x, y, w, h = tf:crop(10, 1000, 7, counter)
            assert.are.same({ 0, 493, 10, 13 }, { x, y, w, h })
         end
         -- an impossible scale (> 1) always falls back; the image's ratio inside the range: whole
         local big = Transform{ scale = { 1.5, 2 } }
         local x, y, w, h = big:crop(400, 300, 1, 1)
         assert.are.same({ 0, 0, 400, 300 }, { x, y, w, h })
      end)

      it('evaluation: torchvision Resize + CenterCrop as a source-pixel box', function()
         local tf = Transform{ train = false, size = 224, resize = 256 }
         local x, y, w, h, flip = tf:crop(500, 375, 1, 2)
         -- 500x375 -> 341x256, crop at (58, 16): x = 58 * 500 / 341, w = 224 * 500 / 341
         assert.are.same({ 85, 23, 328, 328, false }, { x, y, w, h, flip })
         x, y, w, h = tf:crop(256, 256, 0, 0)
         assert.are.same({ 16, 16, 224, 224 }, { x, y, w, h })
      end)
   end)

   ---------------------------------------------------------------------------------------------
   describe('Transform:apply', function()
      it('evaluation matches torchvision Resize(256) + CenterCrop(224)', function()
         local im = get_images()
         python(([[
import numpy as np
from PIL import Image
import torchvision.transforms as T
tf = T.Compose([T.Resize(256), T.CenterCrop(224)])
for name in ['mid', 'tall', 'big']:
    for ext in ['jpg', 'png']:
        np.asarray(tf(Image.open('%s/%%s.%%s' %% (name, ext)).convert('RGB'))).tofile('%s/tv_%%s_%%s.raw' %% (name, ext))
]]):format(tmpdir, tmpdir))
         local mean_std = { mean = { 0.4, 0.5, 0.6 }, std = { 0.2, 0.25, 0.3 } }
         for _, name in ipairs({ 'mid', 'tall', 'big' }) do
            for _, ext in ipairs({ 'jpg', 'png' }) do
               local tv = load_raw(tmp(('tv_%s_%s.raw'):format(name, ext)), { 224, 224, 3 })
               -- without DCT scaling: the same pixels up to PIL's rounding between its two passes
               local tf = Transform{ train = false, dtype = 'byte', layout = 'NHWC', dctScaling = false }
               local mean, max = diff_stats(values(tf:apply(im[name][ext], 0, 0)), values(tv))
               assert(mean < 0.4 and max <= 2, ('%s.%s: mean %g max %g'):format(name, ext, mean, max))
               -- with it (the big image decodes at 1/2): still close on a smooth image
               tf = Transform{ train = false, dtype = 'byte', layout = 'NHWC' }
               mean = diff_stats(values(tf:apply(im[name][ext], 0, 0)), values(tv))
               assert(mean < 1, ('%s.%s with DCT scaling: mean %g'):format(name, ext, mean))
               -- float output is torchvision's ToTensor + Normalize of it
               local tff = Transform{ train = false, dctScaling = false, mean = mean_std.mean, std = mean_std.std }
               local f = tff:apply(im[name][ext], 0, 0)
               local want = tv:permute(3, 1, 2):double():div(255)
               for c = 1, 3 do want[c]:add(-mean_std.mean[c]):div(mean_std.std[c]) end
               mean = diff_stats(values(f), values(want))
               assert(mean < 0.4 / 255 / 0.2, ('%s.%s float: mean %g'):format(name, ext, mean))
            end
         end
      end)

      it('training output with DCT scaling is close to the full decode', function()
         local im = get_images()
         local seed = random_seed()
         local a = Transform{ scale = { 0.4, 1 }, dtype = 'byte' }
         local b = Transform{ scale = { 0.4, 1 }, dtype = 'byte', dctScaling = false }
         local largest = 0
         for counter = 1, 6 do
            local mean = diff_stats(values(a:apply(im.big.jpg, seed, counter)),
               values(b:apply(im.big.jpg, seed, counter)))
            assert(mean < 1, ('counter %d: mean difference %g levels'):format(counter, mean))
            largest = math.max(largest, mean)
         end
         assert(largest > 0.02, 'DCT scaling changed nothing: was it used?')
      end)

      it('training output is the resampled crop (against the float64 transcription)', function()
         -- a crop of the PNG (exact pixels), resized by the reference, equals the transform's output
         local im = get_images()
         python(([[
import numpy as np
from PIL import Image
np.asarray(Image.open('%s/mid.png').convert('RGB')).tofile('%s/mid.raw')
]]):format(tmpdir, tmpdir))
         local full = load_raw(tmp('mid.raw'), { 375, 500, 3 })
         local tf = Transform{ size = 40, dtype = 'byte', layout = 'NHWC', flip = false }
         local seed = random_seed()
         for counter = 0, 2 do
            local x, y, w, h = tf:crop(500, 375, seed, counter)
            local crop = full:narrow(1, y + 1, h):narrow(2, x + 1, w):contiguous()
            local _, max = diff_stats(values(tf:apply(im.mid.png, seed, counter)), ref_resize(crop, 40, 40))
            assert(max <= 1, 'max difference ' .. max)
         end
      end)

      it('flip mirrors the unflipped output of the same crop', function()
         local im = get_images()
         local seed = random_seed()
         local on = Transform{ size = 64, flip = true }
         local off = Transform{ size = 64, flip = false }
         local tested = 0
         for counter = 0, 15 do
            local _, _, _, _, flip = on:crop(500, 375, seed, counter)
            local a, b = on:apply(im.mid.jpg, seed, counter), off:apply(im.mid.jpg, seed, counter)
            if flip then
               local rev = torch.LongTensor(64)
               for i = 1, 64 do rev[i] = 65 - i end
               assert.are.same(values(b:index(3, rev)), values(a))
               tested = tested + 1
            else
               assert.are.same(values(b), values(a))
            end
         end
         assert(tested > 0 and tested < 16)
      end)

      it('dtypes and layouts agree', function()
         local im = get_images()
         local seed, counter = random_seed(), math.random(0, 1000)
         local opts = { size = 48, brightness = 0.3, saturation = 0.3, lighting = 0.05 } -- colour too
         local mean, std = { 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 }
         local function make(dtype, layout)
            local o = { dtype = dtype, layout = layout }
            for k, v in pairs(opts) do o[k] = v end
            return Transform(o):apply(im.mid.jpg, seed, counter)
         end
         local f = make('float', 'NCHW')
         assert.are.equal('torch.FloatTensor', f:type())
         assert.are.same({ 3, 48, 48 }, f:size():totable())
         local b, h = make('byte', 'NCHW'), make('half', 'NCHW')
         assert.are.equal('torch.ByteTensor', b:type())
         assert.are.equal('torch.HalfTensor', h:type())
         -- float == normalised byte within the byte's rounding (unless the byte was clamped)
         local fv, bv, hv = values(f), values(b), values(h)
         local plane = 48 * 48
         for i = 1, #fv do
            local c = math.floor((i - 1) / plane) + 1
            local x = fv[i] * std[c] + mean[c] -- back to [0, 1]
            if x > 0 and x < 1 then
               assert(math.abs(x * 255 - bv[i]) <= 0.5 + 1e-3, ('element %d: %g vs byte %d'):format(i, x * 255, bv[i]))
            else
               assert.are.equal(x <= 0 and 0 or 255, bv[i])
            end
            assert(math.abs(hv[i] - fv[i]) <= 1e-3 * math.abs(fv[i]) + 1e-4,
               ('half %g vs float %g'):format(hv[i], fv[i]))
         end
         for _, dtype in ipairs({ 'float', 'half', 'byte' }) do
            local nchw, nhwc = make(dtype, 'NCHW'), make(dtype, 'NHWC')
            assert.are.same({ 48, 48, 3 }, nhwc:size():totable())
            assert.are.same(values(nchw:permute(2, 3, 1)), values(nhwc))
         end
      end)

      it('mt_transform_image writes into a given tensor, contiguous or not', function()
         local im = get_images()
         local tf = Transform{ size = 32 }
         local bytes = torch.ByteTensor(#im.mid.jpg)
         ffi.copy(bytes:data(), im.mid.jpg, #im.mid.jpg)
         local want = values(tf:apply(im.mid.jpg, 5, 9))
         local out = torch.FloatTensor()
         assert.are.equal(0, C.mt_transform_image(out.h, tf.c, bytes.h, 5, 9))
         assert.are.same({ 3, 32, 32 }, out:size():totable())
         assert.are.same(want, values(out))
         local holder = torch.FloatTensor(32, 32, 3):zero()
         local view = holder:permute(3, 1, 2) -- 3 x 32 x 32, not contiguous
         assert.are.equal(0, C.mt_transform_image(view.h, tf.c, bytes.h, 5, 9))
         assert.are.same(want, values(view))
         assert.are_not.equal(0, C.mt_transform_image(torch.DoubleTensor().h, tf.c, bytes.h, 5, 9))
         assert.truthy(ffi.string(C.mt_last_error()):find('dtype', 1, true))
      end)
   end)

   ---------------------------------------------------------------------------------------------
   -- fb.resnet.torch's ColorJitter + Lighting in float64 on a 3 x H x W table of [0, 1] values.
   -- The effects go in a random order (math.random here, as fb.resnet.torch's RandomOrder): the
   -- transform applies them in a fixed one, which must not matter.
   local function ref_colour(x, seed, counter, s)
      local n = #x[1]
      local img = { {}, {}, {} }
      for c = 1, 3 do for i = 1, n do img[c][i] = x[c][i] end end
      local function grey_of(i) return 0.299 * img[1][i] + 0.587 * img[2][i] + 0.114 * img[3][i] end
      local base = counter * 16
      local o12, o13 = philox(seed, base + 12), philox(seed, base + 13)
      local alpha = { 1 + s.brightness * (2 * u53(o12[1], o12[2]) - 1), 1 + s.contrast * (2 * u53(o12[3], o12[4]) - 1),
         1 + s.saturation * (2 * u53(o13[1], o13[2]) - 1) }
      local strength = { s.brightness, s.contrast, s.saturation }
      local orders = { { 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 3 }, { 2, 3, 1 }, { 3, 1, 2 }, { 3, 2, 1 } }
      local order = orders[math.random(1, 6)]
      for _, e in ipairs(order) do
         if strength[e] > 0 then
            local a = alpha[e]
            if e == 1 then -- brightness: blend with zeros
               for c = 1, 3 do for i = 1, n do img[c][i] = img[c][i] * a end end
            elseif e == 2 then -- contrast: blend with the mean of the grey image
               local m = 0
               for i = 1, n do m = m + grey_of(i) end
               m = m / n
               for c = 1, 3 do for i = 1, n do img[c][i] = img[c][i] * a + m * (1 - a) end end
            else -- saturation: blend with the grey image
               local g = {}
               for i = 1, n do g[i] = grey_of(i) end
               for c = 1, 3 do for i = 1, n do img[c][i] = img[c][i] * a + g[i] * (1 - a) end end
            end
         end
      end
      if s.lighting > 0 then
         local eigval = { 0.2175, 0.0188, 0.0045 }
         local eigvec = { { -0.5675, 0.7192, 0.4009 }, { -0.5808, -0.0045, -0.8140 }, { -0.5836, -0.6948, 0.4203 } }
         local la = { s.lighting * normal(o13), s.lighting * normal(philox(seed, base + 14)),
            s.lighting * normal(philox(seed, base + 15)) }
         for c = 1, 3 do
            local rgb = 0
            for j = 1, 3 do rgb = rgb + eigvec[c][j] * la[j] * eigval[j] end
            for i = 1, n do img[c][i] = img[c][i] + rgb end
         end
      end
      return img
   end

   describe('colour jitter and lighting', function()
      local S = 24
      local function planes(t) -- 3 x S x S float -> { {...}, {...}, {...} }
         local v, out = values(t), { {}, {}, {} }
         for i = 1, #v do
            local c = math.floor((i - 1) / (S * S)) + 1
            out[c][#out[c] + 1] = v[i]
         end
         return out
      end
      local unit = { mean = { 0, 0, 0 }, std = { 1, 1, 1 } } -- float output = pixel / 255

      local settings = {
         { brightness = 0.4, contrast = 0, saturation = 0, lighting = 0 },
         { brightness = 0, contrast = 0.4, saturation = 0, lighting = 0 },
         { brightness = 0, contrast = 0, saturation = 0.4, lighting = 0 },
         { brightness = 0, contrast = 0, saturation = 0, lighting = 0.1 },
         { brightness = 0.4, contrast = 0.4, saturation = 0.4, lighting = 0.1 },
         { brightness = 0.9, contrast = 0.7, saturation = 0.8, lighting = 0.5 },
      }
      for _, s in ipairs(settings) do
         it(('matches fb.resnet.torch in float64: b %g c %g s %g l %g'):format(s.brightness, s.contrast, s.saturation,
            s.lighting), function()
            local im = get_images()
            local plain = Transform{ size = S, mean = unit.mean, std = unit.std }
            local o = { size = S, mean = unit.mean, std = unit.std }
            for k, v in pairs(s) do o[k] = v end
            local jit = Transform(o)
            local seed = random_seed()
            local moved = 0
            for counter = 0, 5 do
               local x = planes(plain:apply(im.mid.jpg, seed, counter))
               local want = ref_colour(x, seed, counter, s)
               local got = planes(jit:apply(im.mid.jpg, seed, counter))
               for c = 1, 3 do
                  for i = 1, S * S do
                     assert(math.abs(got[c][i] - want[c][i]) < 1e-4,
                        ('counter %d channel %d pixel %d: %.6f, expected %.6f'):format(counter, c, i, got[c][i],
                           want[c][i]))
                     moved = math.max(moved, math.abs(got[c][i] - x[c][i]))
                  end
               end
            end
            assert(moved > 1e-3, 'the jitter changed nothing')
         end)
      end

      it('brightness stays within its range: out / in in [1 - s, 1 + s]', function()
         local im = get_images()
         local seed = random_seed()
         local plain = Transform{ size = S, mean = unit.mean, std = unit.std }
         local jit = Transform{ size = S, mean = unit.mean, std = unit.std, brightness = 0.25 }
         local lo, hi = math.huge, 0
         for counter = 0, 59 do
            local a, b = values(plain:apply(im.mid.jpg, seed, counter)), values(jit:apply(im.mid.jpg, seed, counter))
            local sa, sb = 0, 0
            for i = 1, #a do sa, sb = sa + a[i], sb + b[i] end
            local r = sb / sa
            lo, hi = math.min(lo, r), math.max(hi, r)
         end
         assert(lo >= 0.75 - 1e-5 and hi <= 1.25 + 1e-5 and lo < 0.85 and hi > 1.15, ('ratios %g..%g'):format(lo, hi))
      end)

      it('lighting alphas have the configured spread', function()
         -- the per-channel shift is eigvec * (alpha .* eigval); recover alpha from it
         local im = get_images()
         local seed = random_seed()
         local plain = Transform{ size = 8, mean = unit.mean, std = unit.std }
         local lit = Transform{ size = 8, mean = unit.mean, std = unit.std, lighting = 0.1 }
         local sum2, n = 0, 0
         for counter = 0, 199 do
            local a, b = values(plain:apply(im.mid.jpg, seed, counter)), values(lit:apply(im.mid.jpg, seed, counter))
            -- shift of channel 1 = sum_j eigvec[1][j] alpha_j eigval_j: dominated by alpha_1
            local d = b[1] - a[1]
            for i = 2, 64 do assert(math.abs((b[i] - a[i]) - d) < 1e-5, 'the shift is not constant over the plane') end
            sum2, n = sum2 + d * d, n + 1
         end
         -- var(shift 1) = sum_j (eigvec[1][j] eigval_j 0.1)^2
         local var = (0.5675 * 0.2175 * 0.1) ^ 2 + (0.7192 * 0.0188 * 0.1) ^ 2 + (0.4009 * 0.0045 * 0.1) ^ 2
         local ratio = sum2 / n / var
         assert(ratio > 0.7 and ratio < 1.4, 'variance ratio ' .. ratio)
      end)

      it('strength 0 is the identity and evaluation never jitters', function()
         local im = get_images()
         local seed = random_seed()
         local a = Transform{ size = 32 }
         local b = Transform{ size = 32, brightness = 0, contrast = 0, saturation = 0, lighting = 0 }
         assert.are.same(values(a:apply(im.mid.jpg, seed, 3)), values(b:apply(im.mid.jpg, seed, 3)))
         local e1 = Transform{ train = false, size = 32, resize = 40 }
         local e2 = Transform{ train = false, size = 32, resize = 40, brightness = 0.5, lighting = 0.3 }
         assert.are.same(values(e1:apply(im.mid.jpg, seed, 3)), values(e2:apply(im.mid.jpg, seed, 4)))
      end)
   end)

   ---------------------------------------------------------------------------------------------
   describe('errors', function()
      it('corrupt or empty input names the sample', function()
         local tf = Transform{}
         util.assert_error(function() tf:apply('definitely not an image', 1, 1, 'cat_0042.jpg') end, 'cat_0042.jpg')
         util.assert_error(function() tf:apply('', 1, 1, 'empty.jpg') end, 'empty.jpg')
         local im = get_images()
         local bad = im.mid.jpg:sub(1, 200) .. string.rep('\0', 50)
         local ok, err = pcall(tf.apply, tf, bad, 1, 1, 'truncated.jpg')
         if not ok then assert.truthy(tostring(err):find('truncated.jpg', 1, true)) end
         util.assert_error(function() tf:apply(42, 1, 1) end, 'string or a torch.ByteTensor')
         -- the transform still works afterwards (its scratch space survived the errors)
         assert.are.same({ 3, 224, 224 }, tf:apply(im.mid.jpg, 1, 1):size():totable())
      end)

      it('bad options are named', function()
         util.assert_error(function() Transform{ sise = 224 } end, 'unknown option sise')
         util.assert_error(function() Transform{ size = '224' } end, 'size must be a number')
         util.assert_error(function() Transform{ size = 0 } end, 'output size 0 x 0')
         util.assert_error(function() Transform{ scale = { 0.9, 0.1 } } end, 'scale range')
         util.assert_error(function() Transform{ ratio = { 0, 1 } } end, 'ratio range')
         util.assert_error(function() Transform{ brightness = -1 } end, 'brightness')
         util.assert_error(function() Transform{ std = { 1, 0, 1 } } end, 'std[1] = 0')
         util.assert_error(function() Transform{ dtype = 'double' } end, "dtype must be 'float', 'half' or 'byte'")
         util.assert_error(function() Transform{ layout = 'CHW' } end, "layout must be 'NCHW' or 'NHWC'")
         util.assert_error(function() Transform{ train = false, resize = 0 } end, 'resize 0')
         util.assert_error(function() Transform{}:crop(0, 10, 1, 1) end, 'image size 0 x 10')
      end)

      it('C entry points reject NULL arguments', function()
         local tf = Transform{}
         local scratch = ffi.new('void*[1]')
         local out = ffi.new('float[?]', 3 * 224 * 224)
         assert.are_not.equal(0, C.mt_transform_apply(nil, 'x', 1, 'n', 0, 0, out, scratch))
         assert.are_not.equal(0, C.mt_transform_apply(tf.c, nil, 1, 'n', 0, 0, out, scratch))
         assert.are_not.equal(0, C.mt_transform_apply(tf.c, 'x', 1, 'n', 0, 0, nil, scratch))
         assert.are_not.equal(0, C.mt_transform_apply(tf.c, 'x', 1, 'n', 0, 0, out, nil))
         assert.are_not.equal(0, C.mt_transform_crop(tf.c, 10, 10, 0, 0, nil, nil, nil, nil, nil))
         C.mt_transform_scratch_free(scratch[0])
         C.mt_transform_scratch_free(nil)
      end)
   end)
end)
