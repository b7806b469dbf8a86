-- image_spec.lua: the JPEG/PNG codecs (moontorch.data.image and the decoder the transforms
-- call, mt__image_decode_region). Pillow is the reference: spec/fixtures/gen_images.py makes
-- fresh smooth random images in every variant (seeded by the spec seed) with Pillow's decodes.
local torch = require 'moontorch'
local ffi = require 'ffi'
local util = require 'spec.util'
local image = require 'moontorch.data.image'
local C = require('moontorch.internal').clib

-- the internal decoder interface (csrc/data/image.h); the library exports it for the transforms
pcall(ffi.cdef, [[
typedef struct mt__decoded {
  uint8_t *pixels;
  size_t capacity;
  int width, height;
  double rx, ry, rw, rh;
  int scale_denom;
} mt__decoded;
int mt__image_decode_region(const void *buf, size_t len, const char *name, int rx, int ry, int rw, int rh,
                            int min_w, int min_h, int allow_scaling, mt__decoded *out);
void mt__decoded_free(mt__decoded *d);
]])

local PY = util.PY
local function sh_ok(cmd)
   local rc = os.execute(cmd)
   return rc == 0 or rc == true
end
local have_pil = sh_ok(PY .. ' -c "import PIL, numpy" >/dev/null 2>&1')

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local read_bytes = util.read_bytes
local write_bytes = util.write_bytes

-- a ByteTensor h x w x 3 holding a raw RGB file
local function raw_rgb(path, h, w)
   local s = read_bytes(path)
   assert(#s == h * w * 3, ('%s: %d bytes, expected %dx%dx3'):format(path, #s, h, w))
   local t = torch.ByteTensor(h, w, 3)
   ffi.copy(t:data(), s, #s)
   return t
end

local function sizes(t)
   local s = {}
   for d = 1, t:dim() do s[d] = t:size(d) end
   return s
end

-- largest |a - b| over two uint8 tensors of the same shape, and the mean
local function diff(a, b, what)
   assert.are.same(sizes(b), sizes(a), what .. ': sizes')
   a, b = a:contiguous(), b:contiguous()
   local pa, pb, n = a:data(), b:data(), a:nElement()
   local worst, sum = 0, 0
   for i = 0, n - 1 do
      local e = math.abs(pa[i] - pb[i])
      sum = sum + e
      if e > worst then worst = e end
   end
   return worst, sum / math.max(n, 1)
end

-- a smooth random image: a few random waves per channel plus a little noise (never constant)
local function smooth(h, w, c)
   local t = torch.ByteTensor(h, w, c)
   local p = t:data()
   for k = 0, c - 1 do
      local waves = {}
      for j = 1, 3 do
         waves[j] = { math.random() * 0.1 + 0.01, math.random() * 0.1 + 0.01, math.random() * 6.3,
            20 + 30 * math.random() }
      end
      local base = 80 + 90 * math.random()
      for y = 0, h - 1 do
         for x = 0, w - 1 do
            local v = base + (math.random() - 0.5) * 6
            for _, wv in ipairs(waves) do v = v + wv[4] * math.sin(wv[1] * x + wv[2] * y + wv[3]) end
            p[(y * w + x) * c + k] = math.max(0, math.min(255, math.floor(v + 0.5)))
         end
      end
   end
   return c == 1 and t:select(3, 1):clone() or t
end

local function noise(h, w, c)
   local t = c and torch.ByteTensor(h, w, c) or torch.ByteTensor(h, w)
   local p = t:data()
   for i = 0, t:nElement() - 1 do p[i] = math.random(0, 255) end
   return t
end

local function errmsg(f, ...)
   local ok, err = pcall(f, ...)
   assert.is_false(ok, 'expected an error')
   return tostring(err)
end

-- the Pillow-made images, generated once for the file
local files, by_name = {}, {}
if have_pil then
   assert(sh_ok(('%s spec/fixtures/gen_images.py make %q %d'):format(PY, tmpdir, util.seed % 2147483647)),
      'gen_images.py failed')
   files = dofile(tmp('manifest.lua'))
   for _, e in ipairs(files) do
      e.path = tmp(e.name)
      e.bytes = read_bytes(e.path)
      by_name[e.name] = e
   end
end
local function pil_or_pending()
   if not have_pil then pending('no /usr/bin/python3 with Pillow and numpy') end
   return have_pil
end
-- kind: 'jpeg' and 'png' have Pillow's decodes; 'partial' (a progressive JPEG without its last
-- scans) only takes part in the region test; 'bad' files must fail
local function each(kind, f)
   for _, e in ipairs(files) do if e.kind == kind then f(e) end end
end

describe('moontorch.data.image', function()
   teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

   describe('image decoding against Pillow', function()
      it('reads format, size and channel count from the header', function()
         if not pil_or_pending() then return end
         for _, e in ipairs(files) do
            if e.kind ~= 'bad' then
               local info = image.info(e.bytes)
               local format = e.kind == 'partial' and 'jpeg' or e.kind
               assert.are.same({ format = format, width = e.w, height = e.h, channels = e.channels }, info, e.name)
            end
         end
      end)

      it('decodes JPEGs (4:2:0, 4:4:4, 4:2:2, progressive, odd sizes, grey, CMYK) like convert("RGB")', function()
         if not pil_or_pending() then return end
         each('jpeg', function(e)
            local img = image.decode(e.bytes)
            local worst = diff(img, raw_rgb(e.path .. '.rgb', e.h, e.w), e.name)
            assert(worst <= 2, ('%s: differs from Pillow by %d levels'):format(e.name, worst))
         end)
         -- grey comes out with three equal channels
         local g = image.decode(by_name['gray.jpg'].bytes)
         assert.are.equal(0, (diff(g:select(3, 1), g:select(3, 2), 'grey r/g')))
         assert.are.equal(0, (diff(g:select(3, 1), g:select(3, 3), 'grey r/b')))
      end)

      it('decodes at 1/2, 1/4 and 1/8 in the DCT domain like Image.draft, sizes rounded up', function()
         if not pil_or_pending() then return end
         each('jpeg', function(e)
            if e.name == 'cmyk_noadobe.jpg' then return end
            for _, d in ipairs({ 2, 4, 8 }) do
               local img = image.decode(e.bytes, d)
               local h, w = math.ceil(e.h / d), math.ceil(e.w / d)
               assert.are.same({ h, w, 3 }, sizes(img), e.name .. ' at 1/' .. d)
               local worst = diff(img, raw_rgb(('%s.%d.rgb'):format(e.path, d), h, w), e.name)
               assert(worst <= 2, ('%s at 1/%d: differs from Pillow by %d levels'):format(e.name, d, worst))
            end
         end)
      end)

      it('decodes PNGs (RGB, grey, palette, transparency, alpha, 16-bit) exactly', function()
         if not pil_or_pending() then return end
         each('png', function(e)
            for _, d in ipairs({ 1, 4 }) do -- PNGs ignore the scale
               local worst = diff(image.decode(e.bytes, d), raw_rgb(e.path .. '.rgb', e.h, e.w), e.name)
               assert(worst <= (e.tolerance or 0),
                  ('%s: differs from the reference by %d levels'):format(e.name, worst))
            end
         end)
      end)

      it('writes JPEG and PNG files that Pillow reads as we do', function()
         if not pil_or_pending() then return end
         local rgb, grey = smooth(45, 70, 3), smooth(33, 21, 1)
         local cases = {
            { 'w_rgb.png', rgb, 'png' }, { 'w_grey.png', grey, 'png' },
            { 'w_rgb.jpg', rgb, 'jpeg' }, { 'w_grey.jpeg', grey, 'jpeg' },
         }
         local names = {}
         for _, c in ipairs(cases) do
            image.save(tmp(c[1]), c[2], 85)
            names[#names + 1] = ('%q'):format(tmp(c[1]))
         end
         local h = io.popen(('%s spec/fixtures/gen_images.py decode %s'):format(PY, table.concat(names, ' ')))
         local out = h:read('*a')
         h:close()
         for _, c in ipairs(cases) do
            local path = tmp(c[1])
            local w, hh = out:match(path:gsub('%p', '%%%0') .. ' (%d+) (%d+)')
            assert.is_truthy(w, 'Pillow did not read ' .. c[1] .. ': ' .. out)
            local pil = raw_rgb(path .. '.pil.rgb', tonumber(hh), tonumber(w))
            local worst = diff(image.load(path), pil, c[1])
            assert(worst <= 2, ('%s: Pillow and moontorch differ by %d levels'):format(c[1], worst))
            if c[3] == 'png' then -- lossless: Pillow sees our pixels
               local src = c[2]:dim() == 2
                  and c[2]:view(c[2]:size(1), c[2]:size(2), 1):expand(c[2]:size(1), c[2]:size(2), 3)
                  or c[2]
               assert.are.equal(0, (diff(pil, src:contiguous(), c[1] .. ' pixels')))
            end
         end
      end)
   end)

   describe('image round trips', function()
      it('PNG is exact, for RGB and grey, smooth and noisy', function()
         for _, img in ipairs({ smooth(31, 57, 3), noise(40, 33, 3), noise(17, 29) }) do
            local bytes = image.encode(img, 'png')
            assert.are.equal('torch.ByteTensor', bytes:type())
            assert.are.equal(1, bytes:dim())
            local back = image.decode(bytes)
            local want = img:dim() == 2 and img:view(img:size(1), img:size(2), 1):expand(img:size(1), img:size(2), 3)
               or img
            assert.are.equal(0, (diff(back, want:contiguous(), 'png round trip')))
            local info = image.info(bytes)
            assert.are.same({ format = 'png', width = img:size(2), height = img:size(1),
               channels = img:dim() == 2 and 1 or 3 }, info)
         end
      end)

      it('JPEG stays within a tolerance that tightens with quality', function()
         local img = smooth(96, 128, 3)
         local prev_mean = math.huge
         for _, q in ipairs({ 50, 90, 98 }) do
            local bytes = image.encode(img, 'jpeg', q)
            local worst, mean = diff(image.decode(bytes), img, 'jpeg q' .. q)
            assert(mean < ({ [50] = 5, [90] = 2.5, [98] = 2 })[q], ('quality %d: mean error %.2f'):format(q, mean))
            assert(worst < 40, ('quality %d: largest error %d'):format(q, worst))
            assert(mean <= prev_mean + 0.05, 'a higher quality should not be worse')
            prev_mean = mean
         end
         local grey = smooth(40, 50, 1)
         local back = image.decode(image.encode(grey, 'jpeg', 95))
         local _, mean = diff(back:select(3, 2):contiguous(), grey, 'grey jpeg')
         assert(mean < 1.5, ('grey JPEG mean error %.2f'):format(mean))
         assert.are.equal(1, image.info(image.encode(grey, 'jpeg')).channels)
      end)

      it('takes bytes as a string or a ByteTensor, and non-contiguous images', function()
         local img = smooth(20, 30, 3)
         local bytes = image.encode(img, 'png')
         local s = ffi.string(bytes:data(), bytes:nElement())
         assert.are.equal(0, (diff(image.decode(s), image.decode(bytes), 'string vs tensor')))
         local t = img:transpose(1, 2) -- 30 x 20 x 3, not contiguous
         assert.is_false(t:isContiguous())
         assert.are.equal(0, (diff(image.decode(image.encode(t, 'png')), t:contiguous(), 'transposed')))
      end)

      it('loads and saves by path; the format comes from the bytes, not the name', function()
         local img = smooth(24, 36, 3)
         image.save(tmp('a.png'), img)
         assert.are.equal(0, (diff(image.load(tmp('a.png')), img, 'load png')))
         write_bytes(tmp('disguised.jpg'), read_bytes(tmp('a.png'))) -- PNG bytes named .jpg
         assert.are.equal(0, (diff(image.load(tmp('disguised.jpg')), img, 'png named .jpg')))
         assert.are.equal('png', image.info(read_bytes(tmp('disguised.jpg'))).format)
         image.save(tmp('b.JPG'), img, 97)
         assert.are.equal('jpeg', image.info(read_bytes(tmp('b.JPG'))).format)
         local small = image.load(tmp('b.JPG'), 2)
         assert.are.same({ 12, 18, 3 }, sizes(small))
      end)
   end)

   describe('region decoding (mt__image_decode_region)', function()
      local function region(bytes, rx, ry, rw, rh, mw, mh, scaling, dec)
         local st = C.mt__image_decode_region(bytes, #bytes, 'test', rx, ry, rw, rh, mw, mh, scaling and 1 or 0, dec)
         return st, ffi.string(C.mt_last_error())
      end

      it('gives the full decode\'s pixels inside the region, at the largest allowed scale', function()
         if not pil_or_pending() then return end
         local dec = ffi.new('mt__decoded')
         local tried = 0
         for _, e in ipairs(files) do
            if e.kind ~= 'bad' then
               local full = {}
               for _, d in ipairs({ 1, 2, 4, 8 }) do full[d] = image.decode(e.bytes, d) end
               for _ = 1, 25 do
                  local rw, rh = math.random(1, e.w), math.random(1, e.h)
                  local rx, ry = math.random(0, e.w - rw), math.random(0, e.h - rh)
                  local mw, mh = math.random(1, 40), math.random(1, 40)
                  local scaling = math.random() < 0.8
                  local st, msg = region(e.bytes, rx, ry, rw, rh, mw, mh, scaling, dec)
                  assert.are.equal(0, st, msg)
                  local d = dec.scale_denom
                  local want = 1
                  if scaling and e.kind ~= 'png' then
                     for _, c in ipairs({ 8, 4, 2 }) do
                        if rw >= mw * c and rh >= mh * c then want = c; break end
                     end
                  end
                  assert.are.equal(want, d, e.name .. ': denominator')
                  assert.are.near(rw / d, dec.rw, 1e-9)
                  assert.are.near(rh / d, dec.rh, 1e-9)
                  assert(dec.rx >= 0 and dec.ry >= 0 and dec.rx + dec.rw <= dec.width + 1e-9 and
                     dec.ry + dec.rh <= dec.height + 1e-9, 'region outside the decoded buffer')
                  -- where the buffer sits in the full decode at 1/d
                  local xoff, yoff = rx / d - dec.rx, ry / d - dec.ry
                  assert.are.near(math.floor(xoff + 0.5), xoff, 1e-9)
                  assert.are.near(math.floor(yoff + 0.5), yoff, 1e-9)
                  xoff, yoff = math.floor(xoff + 0.5), math.floor(yoff + 0.5)
                  local F = full[d]
                  local W = F:size(2)
                  local fp = F:data()
                  for i = math.floor(dec.ry), math.ceil(dec.ry + dec.rh) - 1 do
                     for j = math.floor(dec.rx), math.ceil(dec.rx + dec.rw) - 1 do
                        for k = 0, 2 do
                           local a, b = dec.pixels[(i * dec.width + j) * 3 + k], fp[((yoff + i) * W + xoff + j) * 3 + k]
                           if a ~= b then
                              error(('%s: region %d,%d %dx%d at 1/%d: pixel (%d,%d) is %d, full decode has %d')
                                 :format(e.name, rx, ry, rw, rh, d, j, i, a, b))
                           end
                        end
                     end
                  end
                  tried = tried + 1
               end
            end
         end
         assert(tried > 100)
         C.mt__decoded_free(dec)
      end)

      it('decodes only part of a large JPEG for a small region', function()
         local bytes = image.encode(smooth(240, 320, 3), 'jpeg', 90)
         local s = ffi.string(bytes:data(), bytes:nElement())
         local dec = ffi.new('mt__decoded')
         assert.are.equal(0, (region(s, 200, 150, 40, 30, 40, 30, true, dec)))
         assert.are.equal(1, dec.scale_denom)
         assert(dec.width < 320 and dec.height < 240, ('decoded %dx%d'):format(dec.width, dec.height))
         assert(dec.width >= 40 and dec.height >= 30)
         -- the whole image with a small output goes to 1/8, and the buffer is reused
         local cap, ptr = tonumber(dec.capacity), dec.pixels
         assert.are.equal(0, (region(s, 0, 0, 320, 240, 32, 24, true, dec)))
         assert.are.equal(8, dec.scale_denom)
         assert.are.same({ 40, 30 }, { dec.width, dec.height })
         assert(ptr == dec.pixels and cap == tonumber(dec.capacity), 'a smaller decode must reuse the buffer')
         C.mt__decoded_free(dec)
         assert(dec.pixels == nil and dec.capacity == 0)
      end)

      it('rejects regions outside the image and bad input with a message naming the source', function()
         local s = image.encode(smooth(40, 50, 3), 'jpeg')
         s = ffi.string(s:data(), s:nElement())
         local dec = ffi.new('mt__decoded')
         for _, r in ipairs({ { -1, 0, 10, 10 }, { 0, 0, 51, 10 }, { 45, 0, 10, 10 }, { 0, 35, 10, 10 },
            { 0, 0, 0, 10 }, { 0, 0, 10, -5 }, { 2147483647, 0, 1, 1 } }) do
            local st, msg = region(s, r[1], r[2], r[3], r[4], 1, 1, true, dec)
            assert.are_not.equal(0, st)
            assert.is_truthy(msg:find('test', 1, true) and msg:find('region', 1, true), msg)
         end
         local st, msg = region(s:sub(1, 200), 0, 0, 10, 10, 1, 1, true, dec)
         assert.are_not.equal(0, st)
         assert.is_truthy(msg:find('test', 1, true), msg)
         C.mt__decoded_free(dec)
      end)
   end)

   describe('bad input', function()
      it('fails on truncated JPEGs (baseline and progressive) instead of filling in grey', function()
         local img = smooth(64, 80, 3)
         local base = image.encode(img, 'jpeg', 90)
         base = ffi.string(base:data(), base:nElement())
         local files_ = { base }
         if have_pil then files_[2] = by_name['prog.jpg'].bytes end
         for _, s in ipairs(files_) do
            for _ = 1, 20 do
               local cut = math.random(2, #s - 3)
               local msg = errmsg(image.decode, s:sub(1, cut))
               assert.is_truthy(msg:find('truncated') or msg:find('not a JPEG'), msg)
            end
            -- only the final EOI marker missing: every pixel is there (baseline)
            if s == base then assert.are.same({ 64, 80, 3 }, sizes(image.decode(s:sub(1, #s - 2)))) end
         end
      end)

      it('fails on truncated PNGs, a bad CRC, random bytes and empty buffers', function()
         local png = image.encode(noise(30, 40, 3), 'png')
         png = ffi.string(png:data(), png:nElement())
         for _ = 1, 10 do
            local msg = errmsg(image.decode, png:sub(1, math.random(1, #png - 13)))
            assert.is_truthy(msg:find('PNG') or msg:find('not a JPEG or PNG'), msg)
         end
         local rnd = {}
         for i = 1, 300 do rnd[i] = string.char(math.random(0, 255)) end
         rnd = table.concat(rnd)
         assert.is_truthy(errmsg(image.decode, rnd):find('not a JPEG or PNG file'))
         assert.is_truthy(errmsg(image.info, rnd):find('not a JPEG or PNG file'))
         assert.is_truthy(errmsg(image.decode, ''):find('empty buffer'))
         assert.is_truthy(errmsg(image.decode, torch.ByteTensor()):find('empty buffer'))
         assert.is_truthy(errmsg(image.info, '\255\216\255'):find('JPEG'))
         if have_pil then
            assert.is_truthy(errmsg(image.decode, by_name['badcrc.png'].bytes):find('PNG'))
         end
      end)

      it('refuses absurd declared sizes before allocating', function()
         if not pil_or_pending() then return end
         for _, n in ipairs({ 'huge.jpg', 'wide.jpg', 'huge.png' }) do
            local msg = errmsg(image.decode, by_name[n].bytes)
            -- ours, or libjpeg's own limit (65500 per side), which it checks while reading the header
            assert.is_truthy(msg:find('more than this decoder accepts', 1, true) or msg:find('65500', 1, true),
               n .. ': ' .. msg)
         end
         -- the header alone is still readable
         local info = image.info(by_name['huge.jpg'].bytes)
         assert.are.same({ 65500, 65500 }, { info.width, info.height })
      end)

      it('survives corrupted bytes (an error or an image, never a crash)', function()
         local s = image.encode(smooth(48, 64, 3), 'jpeg', 90)
         s = ffi.string(s:data(), s:nElement())
         local p = image.encode(smooth(20, 24, 3), 'png')
         p = ffi.string(p:data(), p:nElement())
         for _, src in ipairs({ s, p }) do
            for _ = 1, 60 do
               local b = { src:byte(1, -1) }
               for _ = 1, math.random(1, 8) do
                  local i = math.random(4, #b)
                  b[i] = math.random(0, 255)
               end
               local ok, res = pcall(image.decode, string.char(unpack(b)), ({ 1, 2, 4, 8 })[math.random(4)])
               if ok then assert.are.equal(3, res:size(3)) else assert.is_truthy(#tostring(res) > 20, tostring(res)) end
            end
         end
      end)

      it('names the argument or file in API errors', function()
         local img = smooth(8, 8, 3)
         assert.is_truthy(errmsg(image.decode, 'x', 3):find('scaleDenom must be 1, 2, 4 or 8'))
         assert.is_truthy(errmsg(image.decode, 42):find('bytes must be a string or a torch.ByteTensor'))
         assert.is_truthy(errmsg(image.decode, torch.FloatTensor(3)):find('torch.FloatTensor'))
         assert.is_truthy(errmsg(image.encode, img:float(), 'png'):find('ByteTensor'))
         assert.is_truthy(errmsg(image.encode, img, 'gif'):find("'jpeg' or 'png'"))
         assert.is_truthy(errmsg(image.encode, img, 'jpeg', 0):find('quality'))
         assert.is_truthy(errmsg(image.encode, img, 'jpeg', 101):find('quality'))
         assert.is_truthy(errmsg(image.encode, torch.ByteTensor(4, 4, 4), 'png'):find('H x W x 3'))
         assert.is_truthy(errmsg(image.encode, torch.ByteTensor(16), 'png'):find('H x W x 3'))
         assert.is_truthy(errmsg(image.encode, torch.ByteTensor(0, 5, 3), 'jpeg'):find('0'))
         assert.is_truthy(errmsg(image.encode, torch.ByteTensor(2, 70000, 3), 'jpeg'):find('JPEG cannot hold'))
         assert.is_truthy(errmsg(image.save, tmp('x.bmp'), img):find('x.bmp', 1, true))
         local missing = tmp('missing.jpg')
         assert.is_truthy(errmsg(image.load, missing):find(missing, 1, true))
         write_bytes(tmp('trunc.png'), ffi.string(image.encode(img, 'png'):data(), 30))
         assert.is_truthy(errmsg(image.load, tmp('trunc.png')):find(tmp('trunc.png'), 1, true))
      end)
   end)
end)
