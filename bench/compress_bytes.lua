-- bench/compress_bytes.lua: bytes per rank per step of each gradient compressor against the rank
-- count, on the real gradient list of ResNet-50 or VGG-16 (perf/models.lua), with fresh random
-- gradients every step and no compute. One run is one rank count; bench/compress_bytes.sh runs
-- 2, 4 and 8 ranks on this machine and fits the growth.
--   mpirun -np N luajit bench/compress_bytes.lua [-model resnet50] [-compress none,rgc,rgc-h,powersgd,onebit,fp16]
--        [-steps 3] [-density 0.001] [-compressRank 2] [-groupSize 2] [-shared 0] [-rows FILE]
-- rgc-h is rgc with exchange = 'hierarchical' (dist.sparseAllreduce) in nodes of -groupSize
-- ranks. -shared s: each rank's gradient is sqrt(s) of a part common to every rank plus
-- sqrt(1 - s) of its own (0: independent, so top-k selections overlap only by chance; gradients
-- of one model on different batches share their mean, and their selections overlap more).
-- Per compressor, rank 0 prints the step's dp.stats (the last of -steps, every rank's largest):
-- sent (bytes = what a rank put into the collectives) and received (recvBytes: what the
-- collectives bring it by the bandwidth-optimal schedule: an allgather (N - 1) blocks, an
-- allreduce 2 (N - 1) / N of its size; dist/compressors.lua). With -rows FILE it appends
-- `BYTES|model|N|compress|sent|received|dense|mean received` lines (received: the largest of
-- any rank). No peer: these are counts, not times.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local dist = require 'moontorch.dist'
local perfModels = require 'moontorch.perf.models'
local int = require('moontorch.train.flags').int

local cli = torch.CmdLine()
cli:option('-model', 'resnet50', 'resnet50 | vgg16', { choices = { 'resnet50', 'vgg16' } })
cli:option('-compress', 'none,rgc,powersgd,onebit,fp16', 'comma-separated compressors')
cli:option('-steps', 3, 'steps per compressor (the last is reported)', int('[1, inf)'))
cli:option('-density', 0.001, 'rgc: fraction sent', { range = '(0, 1]' })
cli:option('-compressRank', 2, 'powersgd: rank', int('[1, inf)'))
cli:option('-groupSize', 2, 'ranks per node (dist.init groupSize) for rgc-h', int('[1, inf)'))
cli:option('-shared', 0, 'fraction of the gradient variance common to every rank', { range = '[0, 1]' })
cli:option('-rows', '', 'rank 0 appends BYTES|... lines to this file')
local opt = cli:parse(arg)

dist.init{ timeout = 600, model = false, groupSize = opt.groupSize }
local R, N = dist.rank(), dist.size()
torch.setnumthreads(1)

-- a layer that owns the real layer's parameter shapes and writes random gradients
local Layer, parent = torch.class('nn.BytesBenchLayer', 'nn.Module')
function Layer:__init(spec)
   parent.__init(self)
   for _, name in ipairs { 'weight', 'bias' } do
      local shape = spec[name]
      if shape then
         self[name] = torch.FloatTensor(torch.LongStorage(shape)):zero()
         self['grad' .. name:sub(1, 1):upper() .. name:sub(2)] = torch.FloatTensor(torch.LongStorage(shape)):zero()
      end
   end
end
function Layer:updateOutput(input) self.output = input; return input end
function Layer:updateGradInput(_, gradOutput) self.gradInput = gradOutput; return gradOutput end
local stepSeed = 0
function Layer:accGradParameters()
   for _, g in ipairs { self.gradWeight, self.gradBias } do
      if opt.shared > 0 then
         torch.manualSeed(stepSeed) -- the same on every rank
         local common = g:clone():normal():mul(math.sqrt(opt.shared))
         torch.manualSeed(stepSeed + 7 + R)
         g:normal():mul(math.sqrt(1 - opt.shared)):add(common)
      else
         g:normal()
      end
      stepSeed = stepSeed + 1
   end
end

local layers = perfModels.layers(opt.model)
local params = perfModels.summary(layers)
local x = torch.FloatTensor(1):fill(1)

local function run(compress)
   local model = nn.Sequential()
   for _, l in ipairs(layers) do model:add(nn.BytesBenchLayer(l)) end
   local opts = { bucketMB = 25 }
   if compress ~= 'none' then opts.compress = compress end
   if compress == 'rgc-h' then opts.compress, opts.exchange = 'rgc', 'hierarchical' end
   if opts.compress == 'rgc' then opts.density = opt.density end
   if compress == 'powersgd' or compress == 'onebit' or compress == 'fp16' then opts.start = 0 end
   if compress == 'powersgd' then opts.rank = opt.compressRank end
   local dp = dist.DataParallel(model, opts)
   torch.manualSeed(1000 + R)
   stepSeed = 1000
   for _ = 1, opt.steps do
      dp:forward(x)
      dp:backward(x, x)
   end
   local st = dp.stats
   local dense = 4 * params
   local sent = st and st.bytes or dense
   local recv = st and st.recvBytes or require('moontorch.dist.compressors').allreduceReceived(dense, N)
   local buf = torch.DoubleTensor { sent, recv }
   dist.allreduce(buf, 'max')
   local mean = dist.allreduce(torch.DoubleTensor { recv }, 'avg')[1]
   return buf[1], buf[2], dense, mean
end

if R == 0 then
   print(('compress_bytes: %s, %d ranks (nodes of %d), %.1f MB of float32 gradients, shared %g; bytes per rank '
      .. 'per step (last of %d; recv: the largest over the ranks, and their mean)')
      :format(opt.model, N, opt.groupSize, 4 * params / 2 ^ 20, opt.shared, opt.steps))
   print(('%-9s %5s %-9s %12s %12s %12s %10s'):format('model', 'ranks', 'compress', 'sent MiB', 'recv MiB',
      'mean MiB', 'recv/dense'))
end
for c in opt.compress:gmatch('[^,]+') do
   local sent, recv, dense, mean = run(c)
   if R == 0 then
      print(('%-9s %5d %-9s %12.3f %12.3f %12.3f %10.4f'):format(opt.model, N, c, sent / 2 ^ 20, recv / 2 ^ 20,
         mean / 2 ^ 20, recv / dense))
      if opt.rows ~= '' then
         local f = assert(io.open(opt.rows, 'a'))
         f:write(('BYTES|%s|%d|%s|%.0f|%.0f|%.0f|%.0f\n'):format(opt.model, N, c, sent, recv, dense, mean))
         f:close()
      end
   end
end
dist.finalize()
