-- tools/predict.lua: predicted step time and scaling efficiency of data-parallel training
-- (moontorch.perf), before any cluster time is paid for.
--   luajit tools/predict.lua -model resnet50 -batchSize 64 -workers 8,64,256,1024 -net 100gbit \
--        -ranksPerNode 8 -compress none,rgc -density 0.001 [-profile FILE] [-json] [-svg FILE]
--   luajit tools/predict.lua -model resnet50 -stepComputeMs 165 -workers 4 -net local -algorithm ring
-- The one-worker step comes from -profile (perf.profile's JSON), or -stepComputeMs (forward +
-- backward ms, spread over the layers by FLOPs, backward twice the forward, as bench/dp_step.lua
-- models it), or -measure (the real network timed on this machine at -batchSize), or by default
-- dp_step's V100-like figure (ResNet-50 165 ms, VGG-16 293 ms at batch 64) scaled to -batchSize.
-- -net: a preset (perf.presets()), `local` (this machine's dist.init calibration tables,
-- ~/.cache/moontorch/dist-<ranks>x1.model) or a table file. -measured FILE draws measured points
-- (lines `workers,step_ms[,label]`) on the plot. -json prints one object per row.
package.path = './lua/?.lua;./lua/?/init.lua;./?.lua;./?/init.lua;' .. package.path
local torch = require 'moontorch'
local perf = require 'moontorch.perf'
local plot = require 'moontorch.util.plot'
local json = require('moontorch.checkpoint').json

local cli = torch.CmdLine()
cli:text('tools/predict.lua: predicted data-parallel step time and scaling efficiency')
cli:text('Options:')
cli:option('-model', 'resnet50', 'resnet50 | vgg16 (gradient lists), or with -measure any moontorch.models name')
cli:option('-batchSize', 64, 'per-worker batch (scales the default compute; -measure runs it)', { range = '[1, inf)' })
cli:option('-workers', '8,64,256,1024', 'comma-separated worker counts')
cli:option('-net', '100gbit', 'network: ' .. table.concat(perf.presets(), ', ') .. ', local, or a table file')
cli:option('-intra', '', 'links inside a node: a preset (e.g. nvlink-v100); default: as -net')
cli:option('-ranksPerNode', 1, 'ranks (GPUs) per node', { range = '[1, inf)' })
cli:option('-algorithm', 'auto', 'allreduce: auto | mpi | ring | multicolor | hierarchical | nccl (comma list)')
cli:option('-bucketMB', '25', 'bucket size in MB, or best (perf.best picks it per row)')
cli:option('-overlap', true, 'overlap the exchange with backward')
cli:option('-compress', 'none', 'comma-separated: none, rgc, auto')
cli:option('-density', 0.001, 'rgc: fraction of each large gradient sent', { range = '(0, 1]' })
cli:option('-jitter', 0, 'spread of one worker\'s step (sd / mean): the slowest of n workers sets the pace',
   { range = '[0, inf)' })
cli:option('-selectionNs', 2, 'rgc: top-k selection cost, ns per element', { range = '[0, inf)' })
cli:option('-profile', '', 'a profile (perf.profile JSON) instead of a modelled one')
cli:option('-stepComputeMs', 0, 'the one-worker forward + backward ms, spread by FLOPs (0: default)',
   { range = '[0, inf)' })
cli:option('-measure', false, 'profile the real network on this machine at -batchSize')
cli:option('-saveProfile', '', 'write the profile used here to this file (JSON)')
cli:option('-measured', '', 'measured points to draw: lines workers,step_ms[,label]')
cli:option('-svg', 'predict.svg', 'scaling plot (empty: none)')
cli:option('-json', false, 'print one JSON object per row instead of the table')
local opt = cli:parse(arg)

local function split(s)
   local t = {}
   for w in tostring(s):gmatch('[^,%s]+') do t[#t + 1] = w end
   return t
end
local function die(msg)
   io.stderr:write('predict: ', msg, '\n')
   os.exit(2)
end

-- the profile
local prof, computeNote
if opt.profile ~= '' then
   prof = perf.load(opt.profile)
   computeNote = 'profile ' .. opt.profile
elseif opt.measure then
   local models = require 'moontorch.models'
   local net = models.create(opt.model)
   local shape = opt.model:find('cifar') and { opt.batchSize, 3, 32, 32 } or { opt.batchSize, 3, 224, 224 }
   prof = perf.profile(net, shape, { name = opt.model, reps = 2 })
   computeNote = ('measured on this machine at batch %d'):format(opt.batchSize)
else
   local spec = perf.models.MODELS[opt.model]
   if not spec then die(("no gradient list for '%s' (resnet50, vgg16); use -measure or -profile"):format(opt.model)) end
   local ms = opt.stepComputeMs
   if ms > 0 then
      computeNote = ('%.0f ms per one-worker step, spread by FLOPs'):format(ms)
   else
      ms = spec.computeMs * 1.5 * opt.batchSize / 64
      computeNote = ('modelled %.0f ms per one-worker step (a V100 in fp32, batch %d)'):format(ms, opt.batchSize)
   end
   prof = perf.fromLayers(perf.models.layers(opt.model), ms, nil, opt.model)
end
if opt.saveProfile ~= '' then perf.save(prof, opt.saveProfile) end

-- the network
local netOpts = { ranksPerNode = opt.ranksPerNode }
if perf.PRESETS[opt.net] then netOpts.preset = opt.net else netOpts.table = opt.net end
if opt.intra ~= '' then netOpts.intra = opt.intra end
local ok, network = pcall(perf.network, netOpts)
if not ok then die(network) end

local workers = {}
for _, w in ipairs(split(opt.workers)) do
   local n = tonumber(w)
   if not n or n < 1 or n % 1 ~= 0 then die(("-workers: '%s' is not a count"):format(w)) end
   workers[#workers + 1] = n
end
local configs = {}
for _, c in ipairs(split(opt.compress)) do
   if c ~= 'none' and c ~= 'rgc' and c ~= 'auto' then die(("-compress: unknown '%s' (none, rgc, auto)"):format(c)) end
   for _, a in ipairs(split(opt.algorithm)) do configs[#configs + 1] = { compress = c, algorithm = a } end
end

local rows = {}
for _, cfg in ipairs(configs) do
   cfg.label = cfg.compress .. '/' .. cfg.algorithm
   for _, n in ipairs(workers) do
      local q = { profile = prof, network = network, workers = n, algorithm = cfg.algorithm, overlap = opt.overlap,
         compress = cfg.compress, density = opt.density, selectionCost = opt.selectionNs * 1e-9, jitter = opt.jitter }
      local r, bucketMB
      local okp, err = pcall(function()
         if opt.bucketMB == 'best' then
            q.bucketMB = nil
            local b = perf.best(q)
            r, bucketMB = b.result, b.bucketMB
         else
            bucketMB = tonumber(opt.bucketMB) or die("-bucketMB: a number or 'best'")
            q.bucketMB = bucketMB
            r = perf.predict(q)
         end
      end)
      if not okp then die(tostring(err)) end
      local sparse = 0
      for _ in pairs(r.sparse or {}) do sparse = sparse + 1 end
      rows[#rows + 1] = { workers = n, compress = cfg.compress, algorithm = cfg.algorithm, bucket_mb = bucketMB,
         step_ms = r.step * 1000, compute_ms = r.compute * 1000, exposed_ms = r.exposed * 1000,
         efficiency = r.efficiency, bytes_per_step = r.bytes, buckets = #r.buckets, sparse_tensors = sparse,
         network = network.name, model = prof.name, config = cfg.label }
   end
end

if opt.json then
   for _, r in ipairs(rows) do print(json.encode(r, 'row')) end
else
   print(('model %s, %s; network %s%s; %d rank(s) per node'):format(prof.name or opt.model, computeNote,
      tostring(network), opt.intra ~= '' and (', intra ' .. opt.intra) or '', opt.ranksPerNode))
   print(('%8s  %-22s %8s %10s %10s %10s %7s %10s'):format('workers', 'compress/algorithm', 'bucket', 'step ms',
      'compute', 'exposed', 'eff', 'MiB/step'))
   for _, r in ipairs(rows) do
      print(('%8d  %-22s %8s %10.1f %10.1f %10.1f %7.3f %10.2f'):format(r.workers, r.config, tostring(r.bucket_mb),
         r.step_ms, r.compute_ms, r.exposed_ms, r.efficiency, r.bytes_per_step / 2 ^ 20))
   end
   print('(eff = one-worker step / step; MiB/step = what one rank sends: dense 2(n-1)/n of each bucket, rgc its pairs)')
   if network.extrapolated then
      print('note: the calibration table is for other rank counts; alpha and beta were fitted from its ring row')
   end
end

-- the plot: efficiency against log2(workers), one line per configuration, measured points as marks
if opt.svg ~= '' then
   local series = {}
   for i, cfg in ipairs(configs) do
      local xs, ys = {}, {}
      for _, r in ipairs(rows) do
         if r.config == cfg.label then
            xs[#xs + 1], ys[#ys + 1] = math.log(r.workers) / math.log(2), 100 * r.efficiency
         end
      end
      series[#series + 1] = { label = cfg.label .. ' predicted', xs = xs, ys = ys, style = '+-',
         color = plot.COLORS[i] }
   end
   if opt.measured ~= '' then
      local f = io.open(opt.measured, 'r') or die('cannot open ' .. opt.measured)
      local groups, names = {}, {}
      local lineNo = 0
      for line in f:lines() do
         lineNo = lineNo + 1
         if not line:match('^%s*#') and line:match('%S') then
            local w, ms, label = line:match('^%s*([%d.]+)%s*,%s*([%d.]+)%s*,?%s*(.-)%s*$')
            if not w then die(('%s line %d: expected workers,step_ms[,label]'):format(opt.measured, lineNo)) end
            label = label ~= '' and label or 'measured'
            if not groups[label] then groups[label] = { xs = {}, ys = {} }; names[#names + 1] = label end
            local g = groups[label]
            g.xs[#g.xs + 1] = math.log(tonumber(w)) / math.log(2)
            -- efficiency of a measured step against the profile's one-worker step
            g.ys[#g.ys + 1] = 100 * perf.compute(prof) / (tonumber(ms) / 1000)
         end
      end
      f:close()
      for i, name in ipairs(names) do
         series[#series + 1] = { label = name .. ' measured', xs = groups[name].xs, ys = groups[name].ys, style = '+',
            color = plot.COLORS[(#configs + i - 1) % #plot.COLORS + 1],
         }
      end
   end
   local svg = plot.document(760, 440, ('%s on %s: predicted scaling'):format(prof.name or opt.model, network.name),
      plot.chart({ 80, 60, 620, 320 }, { title = 'scaling efficiency', xlabel = 'log2(workers)',
         ylabel = 'efficiency (%)', series = series, legend = true }))
   local saved, _, err = plot.save(opt.svg, svg)
   if not saved then die('cannot write ' .. opt.svg .. ': ' .. tostring(err)) end
   if not opt.json then print('plot: ' .. opt.svg) end
end
