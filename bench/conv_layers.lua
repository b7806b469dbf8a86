-- bench/conv_layers.lua: SpatialConvolution alone, per layer shape of the train_step models,
-- forward / gradInput / gradWeight timed separately, next to PyTorch's CPU build
-- (bench/conv_layers_peer.py) on the same shapes and thread count.
--   luajit bench/conv_layers.lua [-threads 2] [-reps 20] [-models resnet18,small_cnn] [-nopeer] [-algo native]
--     [-layers all|names] [-rounds 1]
-- Prints median ms per call; "ratio" is moontorch / PyTorch for the three together.
-- With -layers all (or a comma-separated list of module names) a second table follows: the nn
-- issue's other layers (bench/layers_cases.lua), forward and backward (updateGradInput +
-- accGradParameters) against bench/layers_peer.py, which also recomputes every output and
-- gradient from the same inputs and parameters (passed through files) and reports the largest
-- absolute difference. -models none skips the convolution table.
local torch = require 'moontorch' -- run from the repository root: its loader finds lua/ and recipes/
local nn = require 'moontorch.nn'
local int = require('moontorch.train.flags').int

local cli = torch.CmdLine()
cli:text('bench/conv_layers.lua: ms per convolution call, moontorch vs PyTorch (CPU)')
cli:text('Options:')
cli:option('-threads', 2, 'CPU threads', int '[1, inf)')
cli:option('-reps', 20, 'timed calls per case (the median is shown)', int '[1, inf)')
cli:option('-warmup', 3, 'untimed calls first', int '[0, inf)')
cli:option('-models', 'resnet18,small_cnn', 'comma-separated: resnet18, small_cnn')
cli:option('-nopeer', false, 'skip PyTorch')
cli:option('-layers', 'none', 'second table: none, all, or comma-separated module names')
cli:option('-rounds', 1, 'second table: time both sides this many times, alternating; report medians', int '[1, inf)')
cli:option('-algo', 'native', 'float32 convolutions by native, onednn, onednn_nchw or auto (torch.convBackend)',
   { choices = { 'native', 'onednn', 'onednn_nchw', 'auto' } })
local opt = cli:parse(arg)
torch.setnumthreads(opt.threads)
torch.convBackend(opt.algo)

-- { batch, nIn, nOut, k, stride, pad, H (=W) }: each distinct conv of the model once
local shapes = {
   resnet18 = {
      { 32, 3, 64, 3, 1, 1, 32 }, { 32, 64, 64, 3, 1, 1, 32 },
      { 32, 64, 128, 3, 2, 1, 32 }, { 32, 128, 128, 3, 1, 1, 16 }, { 32, 64, 128, 1, 2, 0, 32 },
      { 32, 128, 256, 3, 2, 1, 16 }, { 32, 256, 256, 3, 1, 1, 8 }, { 32, 128, 256, 1, 2, 0, 16 },
      { 32, 256, 512, 3, 2, 1, 8 }, { 32, 512, 512, 3, 1, 1, 4 }, { 32, 256, 512, 1, 2, 0, 8 },
   },
   small_cnn = { { 64, 1, 32, 3, 1, 1, 28 }, { 64, 32, 64, 3, 1, 1, 14 } },
}

local timing = require 'bench.timing'
local function time_ms(fn)
   return timing.time_ms(fn, opt.reps, opt.warmup)
end

local cases = {}
for name in opt.models:gmatch('[^,]+') do
   if name == 'none' then break end
   for _, s in ipairs(shapes[name] or error('conv_layers: unknown model ' .. name)) do cases[#cases + 1] = s end
end

local function layers_table()
   if opt.layers ~= 'none' then dofile('bench/layers_table.lua')(opt, time_ms) end
end
if #cases == 0 then
   layers_table()
   return
end

local peer = {}
if not opt.nopeer then
   local spec = {}
   for _, s in ipairs(cases) do spec[#spec + 1] = table.concat(s, 'x') end
   -- OPENBLAS_NUM_THREADS: PyTorch's torch.set_num_threads does not reach Debian's pthread
   -- OpenBLAS, whose pool would otherwise run PyTorch's GEMMs (mm, bmm, slow_conv*) on every core
   local cmd = ('OPENBLAS_NUM_THREADS=%d /usr/bin/python3 bench/conv_layers_peer.py --threads %d --reps %d'
      .. ' --warmup %d --shapes %s 2>&1')
      :format(opt.threads, opt.threads, opt.reps, opt.warmup, table.concat(spec, ','))
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   for key, f, gi, gw in out:gmatch('(%S+) ([%d.]+) ([%d.]+) ([%d.]+)\n') do
      peer[key] = { tonumber(f), tonumber(gi), tonumber(gw) }
   end
   if not next(peer) then io.stderr:write('conv_layers: PyTorch peer gave no timings:\n', out, '\n') end
end

print(('SpatialConvolution (%s), %d threads, median of %d (ms per call; PyTorch in brackets)'):format(opt.algo,
   opt.threads, opt.reps))
print(('%-30s %16s %16s %16s %7s'):format('N x Cin -> Cout, k/s, HxW', 'forward', 'gradInput', 'gradWeight', 'ratio'))
local tot, tot_peer = { 0, 0, 0 }, { 0, 0, 0 }
for _, s in ipairs(cases) do
   local n, cin, cout, k, st, pad, h = (table.unpack or unpack)(s)
   local conv = nn.SpatialConvolution(cin, cout, k, k, st, st, pad, pad):noBias():float()
   local x = torch.randn(n, cin, h, h):float()
   local y = conv:forward(x)
   local dy = torch.randn(y:size()):float()
   local t = {
      time_ms(function() conv:updateOutput(x) end),
      time_ms(function() conv:updateGradInput(x, dy) end),
      time_ms(function() conv:accGradParameters(x, dy) end),
   }
   local p = peer[table.concat(s, 'x')]
   local cell = function(i) return p and ('%7.2f (%6.2f)'):format(t[i], p[i]) or ('%7.2f'):format(t[i]) end
   for i = 1, 3 do
      tot[i] = tot[i] + t[i]
      if p then tot_peer[i] = tot_peer[i] + p[i] end
   end
   print(('%-30s %16s %16s %16s %7s'):format(('%d x %d -> %d, %d/%d, %dx%d'):format(n, cin, cout, k, st, h, h), cell(1),
      cell(2), cell(3), p and ('%.2f'):format((t[1] + t[2] + t[3]) / (p[1] + p[2] + p[3])) or '-'))
end
local any = next(peer) ~= nil
local cell = function(i) return any and ('%7.2f (%6.2f)'):format(tot[i], tot_peer[i]) or ('%7.2f'):format(tot[i]) end
print(('%-30s %16s %16s %16s %7s'):format('sum', cell(1), cell(2), cell(3),
   any and ('%.2f'):format((tot[1] + tot[2] + tot[3]) / (tot_peer[1] + tot_peer[2] + tot_peer[3])) or '-'))
layers_table()
