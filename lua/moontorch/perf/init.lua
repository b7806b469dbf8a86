-- moontorch.perf: a performance model of synchronous data-parallel training. It predicts the
-- step time of a run before it is paid for, from a profile of one worker's step and a network.
--   local perf = require 'moontorch.perf'
--   local prof = perf.profile(model, {64, 3, 224, 224}, { device = 'cuda' })   -- measured
--   local prof = perf.fromLayers(perf.models.layers('resnet50'), 165)         -- by FLOPs
--   local net = perf.network{ preset = '100gbit', ranksPerNode = 8, intra = 'nvlink-v100' }
--   local r = perf.predict{ profile = prof, network = net, workers = 256, algorithm = 'auto',
--                           bucketMB = 25, overlap = true, compress = 'none' }
--   print(r.step, r.efficiency, r.exposed, r.bytes)        -- seconds, compute/step, seconds, bytes
--   local b = perf.best{ profile = prof, network = net, workers = 256 }  -- b.bucketMB, b.algorithm, ...
-- The step is simulated as Shi et al.'s DAG (perf/simulate.lua): backward layer by layer, each
-- bucket's allreduce on one communication stream once its gradients are ready, compressed
-- buckets after backward, the update last. Its network terms are perf/network.lua's.
local profile = require 'moontorch.perf.profile'
local network = require 'moontorch.perf.network'
local simulate = require 'moontorch.perf.simulate'

local perf = {
   models = require 'moontorch.perf.models',
   simulate = simulate,
   presets = network.presets,
   PRESETS = network.PRESETS,
   fromLayers = profile.fromLayers,
   compute = profile.compute,
   save = profile.save,
   load = profile.load,
}

function perf.profile(model, inputShape, opts) return profile.measure(model, inputShape, opts) end

-- perf.calibrate(dist, {maxBytes, streak, reps}): a cost table of back-to-back allreduces
-- (collective; perf/calibrate.lua); perf.saveTable(t, path) writes it for perf.network{table}
function perf.calibrate(dist, opts) return require('moontorch.perf.calibrate').run(dist, opts) end
function perf.saveTable(t, path) return require('moontorch.perf.calibrate').save(t, path) end

-- perf.network(opts | preset name): see perf/network.lua
function perf.network(opts) return network.network(opts) end

local function netOf(n, ranksPerNode)
   if type(n) == 'string' then return network.network { preset = n, ranksPerNode = ranksPerNode } end
   if type(n) == 'table' and getmetatable(n) == nil then
      local o = {}
      for k, v in pairs(n) do o[k] = v end
      o.ranksPerNode = o.ranksPerNode or ranksPerNode
      return network.network(o)
   end
   if ranksPerNode and n then n.ranksPerNode = ranksPerNode end
   return n
end

local PREDICT = { profile = 1, network = 1, workers = 1, ranksPerNode = 1, algorithm = 1, bucketMB = 1, overlap = 1,
   compress = 1, density = 1, selectionCost = 1, selectionFixed = 1, wire = 1, minSize = 1, jitter = 1,
   selectionOverlap = 1 }

-- perf.predict{profile, network, workers, ranksPerNode, algorithm, bucketMB, overlap, compress,
-- density, selectionCost, selectionFixed, wire (bytes per value), minSize, jitter,
-- selectionOverlap}: simulate.step's
-- figures, in seconds and bytes
function perf.predict(o)
   if type(o) ~= 'table' then error('perf.predict: expected a table of options', 2) end
   for k in pairs(o) do
      if not PREDICT[k] then error(("perf.predict: unknown option '%s'"):format(tostring(k)), 2) end
   end
   if not o.profile then error('perf.predict: profile is required', 2) end
   if not o.network then error('perf.predict: network is required (perf.network{...} or a preset name)', 2) end
   local prof = type(o.profile) == 'string' and profile.load(o.profile) or profile.check(o.profile, 'predict')
   local opts = {}
   for k, v in pairs(o) do if k ~= 'profile' and k ~= 'network' and k ~= 'ranksPerNode' then opts[k] = v end end
   return simulate.step(prof, netOf(o.network, o.ranksPerNode), opts)
end

perf.BUCKETS_MB = { 1, 2, 5, 10, 25, 50, 100, 1e6 }

-- perf.best{...predict's options; algorithms = {...}, buckets = {MB...}, compress = {'none',
-- 'rgc', 'auto'}}: the configuration with the shortest predicted step, as { bucketMB,
-- algorithm, compress, result } (1e6 MB: one bucket for everything)
function perf.best(o)
   local algs = o.algorithms or (o.algorithm and { o.algorithm }) or { 'mpi', 'ring', 'multicolor', 'hierarchical' }
   local sizes = o.buckets or (o.bucketMB and { o.bucketMB }) or perf.BUCKETS_MB
   local comps = type(o.compress) == 'table' and o.compress or { o.compress or 'none' }
   local best
   for _, c in ipairs(comps) do
      for _, a in ipairs(algs) do
         for _, mb in ipairs(sizes) do
            local q = {}
            for k, v in pairs(o) do q[k] = v end
            q.algorithms, q.buckets = nil, nil
            q.algorithm, q.bucketMB, q.compress = a, mb, c
            local r = perf.predict(q)
            if not best or r.step < best.result.step * (1 - 1e-9) then
               best = { bucketMB = mb, algorithm = a, compress = c, result = r }
            end
         end
      end
   end
   return best
end

return perf
