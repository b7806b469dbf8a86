-- bench/pool_bn_onednn.lua: should max pooling and batch normalization go through oneDNN too?
-- Times moontorch's SpatialMaxPooling(3x3, stride 2, pad 1) and SpatialBatchNormalization
-- (training: batch statistics; backward gives gradInput, gradWeight, gradBias) on the ResNet
-- shapes beside oneDNN's primitives on the same NCHW float32 shapes (bench/pool_bn_onednn.c,
-- compiled here with cc, needs libdnnl-dev), and on oneDNN's blocked nChw8c layout, which its
-- JIT kernels want (there the reorders from and to NCHW are not counted: a lower bound).
--   luajit bench/pool_bn_onednn.lua [-threads 2] [-reps 10]
-- Prints median ms per call.
local torch = require 'moontorch' -- run from the repository root
local nn = require 'moontorch.nn'
local int = require('moontorch.train.flags').int

local cli = torch.CmdLine()
cli:text('bench/pool_bn_onednn.lua: ms per call, moontorch vs oneDNN (CPU)')
cli:text('Options:')
cli:option('-threads', 2, 'CPU threads (oneDNN gets the same through OMP_NUM_THREADS)', int '[1, inf)')
cli:option('-reps', 10, 'timed calls per case (the median is shown)', int '[1, inf)')
local opt = cli:parse(arg)
torch.setnumthreads(opt.threads)

-- ResNet-18 CIFAR at batch 32 (no max pooling) and ResNet-50 ImageNet at batch 8
local cases = {
   { 'bn', 32, 64, 32, 32 }, { 'bn', 32, 128, 16, 16 }, { 'bn', 32, 256, 8, 8 }, { 'bn', 32, 512, 4, 4 },
   { 'maxpool', 8, 64, 112, 112 }, { 'bn', 8, 64, 112, 112 }, { 'bn', 8, 256, 56, 56 }, { 'bn', 8, 512, 28, 28 },
   { 'bn', 8, 1024, 14, 14 }, { 'bn', 8, 2048, 7, 7 },
}

local timing = require 'bench.timing'
local function time_ms(fn)
   return timing.time_ms(fn, opt.reps, 1)
end

local bin = os.tmpname()
local ok = os.execute(('cc -O2 bench/pool_bn_onednn.c -ldnnl -o %s'):format(bin))
if ok ~= 0 and ok ~= true then
   error('pool_bn_onednn: cannot compile bench/pool_bn_onednn.c (libdnnl-dev installed?)')
end
local args = {}
for _, c in ipairs(cases) do
   local shape = table.concat({ c[2], c[3], c[4], c[5] }, 'x')
   args[#args + 1] = c[1] .. ':' .. shape
   args[#args + 1] = c[1] .. '8:' .. shape
end
local p = io.popen(('OMP_NUM_THREADS=%d %s %d %s 2>&1'):format(opt.threads, bin, opt.reps, table.concat(args, ' ')))
local dnnl = {}
for key, f, b in p:read('*a'):gmatch('(%S+) ([%d.]+) ([%d.]+)\n') do dnnl[key] = { tonumber(f), tonumber(b) } end
p:close()
os.remove(bin)

print(('%d threads, median of %d (ms per call): moontorch | oneDNN on NCHW | oneDNN on nChw8c'):format(opt.threads,
   opt.reps))
print(('%-26s %26s %26s'):format('layer, N x C x H x W', 'forward', 'backward'))
for _, c in ipairs(cases) do
   local kind, n, ch, h, w = table.unpack(c)
   local m = kind == 'bn' and nn.SpatialBatchNormalization(ch):float() or nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1):float()
   m:training()
   local x = torch.randn(n, ch, h, w):float()
   local y = m:forward(x)
   local dy = torch.randn(y:size()):float()
   local t = { time_ms(function() m:forward(x) end), time_ms(function() m:backward(x, dy) end) }
   local shape = table.concat({ n, ch, h, w }, 'x')
   local a, b = dnnl[kind .. ':' .. shape], dnnl[kind .. '8:' .. shape]
   local cell = function(i)
      return ('%7.2f | %7.2f | %7.2f'):format(t[i], a and a[i] or 0 / 0, b and b[i] or 0 / 0)
   end
   print(('%-26s %26s %26s'):format(kind .. ' ' .. shape, cell(1), cell(2)))
end
