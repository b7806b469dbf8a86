-- bench/loader.lua: images/s of the data loader on a generated ImageNet-like set (JPEGs of
-- about 500x375, encoded here with libjpeg-turbo), for 1..N decode threads, with and without
-- DCT-domain scaling, training augmentation (RandomResizedCrop 224 + flip, float NCHW,
-- normalised) and the evaluation path (resize 256 + centre crop 224). The peer is PyTorch's
-- DataLoader with torchvision's transforms (PIL decode) and the same worker count, run in the
-- same invocation (bench/loader_peer.py under /usr/bin/python3). Also: the in-memory cache's
-- load time and size.
--   luajit bench/loader.lua [-n 2000] [-dir /tmp/moontorch-loader-bench] [-threads 1,2]
--                           [-batchSize 64] [-nopeer]
local ffi = require 'ffi'
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/
local data = require 'moontorch.data'
local int = require('moontorch.train.flags').int
local progress = require 'moontorch.util.progress'

local cores = require('moontorch.data.loader').cores()
local default_threads = {}
for t = 1, cores do default_threads[#default_threads + 1] = t end

local cli = torch.CmdLine()
cli:text('bench/loader.lua: loader images/s, moontorch vs PyTorch DataLoader + torchvision')
cli:text('Options:')
cli:option('-n', 2000, 'images in the generated set', int '[1, inf)')
cli:option('-dir', '/tmp/moontorch-loader-bench', 'where the set is generated (kept for reruns)')
cli:option('-threads', table.concat(default_threads, ','), 'comma-separated decode thread counts')
cli:option('-batchSize', 64, 'batch size', int '[1, inf)')
cli:option('-nopeer', false, 'skip PyTorch')
local opt = cli:parse(arg)
torch.setnumthreads(1)

-- ---- the data set: 10 classes, sizes around 500x375 (some portrait), smooth content plus
-- texture so files are about the size of ImageNet's (~100 KB)
local function exists(p)
   local f = io.open(p, 'rb')
   if f then f:close() end
   return f ~= nil
end

local function make_image(h, w, seed)
   torch.manualSeed(seed)
   local ys = torch.range(0, h - 1):float():view(h, 1, 1):expand(h, w, 3)
   local xs = torch.range(0, w - 1):float():view(1, w, 1):expand(h, w, 3)
   local img = torch.FloatTensor(h, w, 3):fill(110)
   for _ = 1, 4 do
      local fy, fx, ph = torch.uniform(0.005, 0.08), torch.uniform(0.005, 0.08), torch.uniform(0, 6)
      local amp = torch.rand(1, 1, 3):mul(50):float():expand(h, w, 3)
      img:add(torch.cmul(amp, torch.cos(ys * fy + xs * fx + ph)))
   end
   -- texture: blocky noise at two scales, like foliage or fabric
   local coarse = torch.randn(math.ceil(h / 4), math.ceil(w / 4), 3):mul(14):float()
   local up = coarse:view(coarse:size(1), 1, coarse:size(2), 1, 3):expand(coarse:size(1), 4, coarse:size(2), 4, 3)
   img:add(up:contiguous():view(coarse:size(1) * 4, coarse:size(2) * 4, 3):narrow(1, 1, h):narrow(2, 1, w))
   img:add(torch.randn(h, w, 3):mul(6):float())
   return img:clamp(0, 255):byte()
end

local function generate(dir, n)
   local stamp = ('%s/.complete-%d'):format(dir, n)
   if exists(stamp) then return end
   io.write(('generating %d JPEGs in %s ...\n'):format(n, dir))
   local bar = progress.new(n, { title = 'generate' })
   for i = 1, n do
      local class = ('class%02d'):format((i - 1) % 10)
      if i <= 10 then os.execute(('mkdir -p %s/%s'):format(dir, class)) end
      local portrait = i % 5 == 0
      local h, w = 330 + (i * 37) % 90, 460 + (i * 53) % 80
      if portrait then h, w = w, h end
      local bytes = data.image.encode(make_image(h, w, i), 'jpeg', 90)
      local f = assert(io.open(('%s/%s/img%05d.jpg'):format(dir, class, i), 'wb'))
      f:write(ffi.string(bytes:data(), bytes:size(1)))
      f:close()
      bar:update(i)
   end
   bar:finish()
   io.open(stamp, 'w'):close()
end

generate(opt.dir, opt.n)
local ds = data.ImageFolder(opt.dir)
ds:cache { threads = math.max(1, cores) }
local cache = ds:cacheStats()

local threads = {}
for t in tostring(opt.threads):gmatch('%d+') do threads[#threads + 1] = tonumber(t) end

local function measure(tf, nth)
   local l = data.Loader(ds, tf, { batchSize = opt.batchSize, threads = nth, prefetch = 2 * nth + 1, seed = 1 })
   local t0, n = progress.now(), 0
   for input in l:run(1) do n = n + input:size(1) end
   local dt = progress.now() - t0
   assert(n == ds:size(), 'the loader delivered ' .. n .. ' of ' .. ds:size() .. ' images')
   l:free()
   return n / dt
end

local rows = {}
for _, nth in ipairs(threads) do
   for _, mode in ipairs { 'train', 'train-nodct', 'eval' } do
      local tf = data.Transform { train = mode ~= 'eval', size = 224, resize = 256, dctScaling = mode ~= 'train-nodct' }
      measure(tf, nth) -- warm-up: page cache, allocator
      rows[#rows + 1] = { mode = mode, threads = nth, ours = measure(tf, nth) }
   end
end

-- ---- the peer
local peer = {}
if not opt.nopeer then
   local cmd = ('/usr/bin/python3 bench/loader_peer.py --dir %s --threads %s --batch-size %d 2>&1')
      :format(opt.dir, table.concat(threads, ','), opt.batchSize)
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   for mode, nth, ips in out:gmatch('RESULT (%S+) (%d+) ([%d%.]+)') do peer[mode .. '/' .. nth] = tonumber(ips) end
   if next(peer) == nil then io.stderr:write('loader: the PyTorch peer gave no results:\n', out, '\n') end
end

print(('\ndata set: %d JPEGs, %.1f MB (%.0f KB each); cache: %.2f s to load (from the page cache), %.1f MB held')
   :format(ds:size(), cache.bytes / 1e6, cache.bytes / ds:size() / 1e3, cache.seconds, cache.bytes / 1e6))
print(('loader images/s, batch %d, 224x224 float NCHW, %d cores'):format(opt.batchSize, cores))
print(('%-12s %7s %12s %12s %12s %12s %8s'):format('path', 'threads', 'moontorch', 'per thread', 'PyTorch',
   'per worker', 'ratio'))
for _, r in ipairs(rows) do
   local pm = r.mode == 'train-nodct' and 'train' or r.mode
   local pv = peer[pm .. '/' .. r.threads]
   print(('%-12s %7d %12.1f %12.1f %12s %12s %8s'):format(r.mode, r.threads, r.ours, r.ours / r.threads,
      pv and ('%.1f'):format(pv) or '-', pv and ('%.1f'):format(pv / r.threads) or '-',
      pv and ('%.2f'):format(r.ours / pv) or '-'))
end
print('ratio = moontorch / PyTorch (above 1: we are faster). train = RandomResizedCrop + flip;'
   .. ' train-nodct decodes at full size; PyTorch has no DCT scaling, its train row is the peer of both.')
