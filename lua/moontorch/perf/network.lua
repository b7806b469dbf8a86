-- perf/network.lua: what an allreduce (and an allgather) costs on a network, for perf.predict.
--   local net = perf.network{ preset = '100gbit', ranksPerNode = 8, intra = 'nvlink-v100' }
--   local net = perf.network{ table = 'local' }          -- this machine's dist.init calibration
--   local net = perf.network{ table = '/path/dist-4x1.model' }
--   local net = perf.network{ alpha = 5e-6, beta = 1 / 12e9, gamma = 0 }
--   net:allreduce('ring', bytes, workers), net:allgather(totalBytes, workers), net:algorithms()
-- scale (1) multiplies every time: a correction found by timing a real stream of buckets
-- against what the table predicts for it (bench/perf_validate.lua -cross)
-- The alpha-beta-gamma model (Thakur et al.; Shi et al.): a message of S bytes between two ranks
-- costs alpha + S * beta, and reducing S bytes costs S * gamma. Per algorithm, n ranks, p per
-- node, m = n / p nodes:
--   ring          2(n-1) alpha + 2(n-1)/n S beta + (n-1)/n S gamma
--   mpi           the cheaper of ring and recursive doubling, log2(n) (alpha + S beta + S gamma)
--   multicolor    as ring: its colours share the same links
--   hierarchical  reduce-scatter in the node, ring over the m nodes on the node's NIC, allgather
--                 in the node (Jia et al. 2018; Goyal et al. 2017's scheme)
--   nccl          as ring, on the slowest link the ring crosses
-- A flat algorithm that spans nodes runs at the inter-node figures (its ring crosses the NIC).
-- A measured table (dist.init's, csrc/dist/model.c: every algorithm timed at 4 KB, 16 KB, ...
-- on this job's ranks) is used as it is for its own rank count, interpolated log-log between
-- sizes as `auto` does; for other rank counts its ring row is fitted to alpha and beta and the
-- formulas above take over (net.extrapolated says when that happened).
local net = {}

local GB = 1e9 / 8 -- bytes per second in a Gbit/s

-- Presets: line rate, the fraction of it an allreduce sees (protocol and NIC overheads) and the
-- one-way small-message latency. Figures are typical published ones, not measurements of any
-- particular cluster; give alpha/beta yourself where you know better.
net.PRESETS = {
   ['1gbit'] = { gbit = 1, efficiency = 0.94, alpha = 50e-6, desc = '1 Gbit/s Ethernet, TCP' },
   ['10gbit'] = { gbit = 10, efficiency = 0.9, alpha = 25e-6, desc = '10 Gbit/s Ethernet, TCP' },
   ['25gbit'] = { gbit = 25, efficiency = 0.9, alpha = 15e-6, desc = '25 Gbit/s Ethernet, TCP' },
   ['50gbit'] = { gbit = 50, efficiency = 0.85, alpha = 10e-6, desc = '50 Gbit/s Ethernet (Goyal et al. 2017)' },
   ['100gbit'] = { gbit = 100, efficiency = 0.9, alpha = 3e-6, desc = '100 Gbit/s InfiniBand EDR / RoCE' },
   ['200gbit'] = { gbit = 200, efficiency = 0.9, alpha = 2.5e-6, desc = '200 Gbit/s InfiniBand HDR' },
   ['400gbit'] = { gbit = 400, efficiency = 0.9, alpha = 2e-6, desc = '400 Gbit/s InfiniBand NDR' },
   -- intra-node links, as allreduce bus bandwidth (NCCL's busbw) in GB/s
   ['pcie3'] = { GBs = 10, efficiency = 1, alpha = 10e-6, desc = 'PCIe 3.0 x16 between GPUs' },
   ['nvlink-p100'] = { GBs = 35, efficiency = 1, alpha = 8e-6, desc = 'NVLink 1 (P100, hybrid cube mesh)' },
   ['nvlink-v100'] = { GBs = 130, efficiency = 1, alpha = 6e-6, desc = 'NVLink 2 (V100, DGX-1)' },
   ['nvlink-a100'] = { GBs = 230, efficiency = 1, alpha = 5e-6, desc = 'NVLink 3 / NVSwitch (A100)' },
   ['nvlink-h100'] = { GBs = 450, efficiency = 1, alpha = 4e-6, desc = 'NVLink 4 / NVSwitch (H100)' },
}

-- the preset names in a stable order (inter-node by rate, then intra-node)
function net.presets()
   local names = {}
   for k in pairs(net.PRESETS) do names[#names + 1] = k end
   table.sort(names, function(a, b)
      local pa, pb = net.PRESETS[a], net.PRESETS[b]
      if (pa.gbit ~= nil) ~= (pb.gbit ~= nil) then return pa.gbit ~= nil end
      return (pa.gbit or pa.GBs) < (pb.gbit or pb.GBs)
   end)
   return names
end

local function fail(fmt, ...) error('perf.network: ' .. fmt:format(...), 0) end

local function link(spec, what)
   if type(spec) == 'string' then
      local p = net.PRESETS[spec]
      if not p then fail("unknown %s '%s' (%s)", what, spec, table.concat(net.presets(), ', ')) end
      local bw = (p.gbit and p.gbit * GB or p.GBs * 1e9) * p.efficiency
      return { alpha = p.alpha, beta = 1 / bw, gamma = 0, name = spec, desc = p.desc }
   end
   if type(spec) ~= 'table' then fail('%s must be a preset name or {alpha, beta, gamma}, got %s', what, type(spec)) end
   for _, k in ipairs({ 'alpha', 'beta' }) do
      if type(spec[k]) ~= 'number' or not (spec[k] >= 0) then -- luacheck: ignore 581 (rejects NaN)
         fail('%s.%s must be a number >= 0, got %s', what, k, tostring(spec[k]))
      end
   end
   return { alpha = spec.alpha, beta = spec.beta, gamma = spec.gamma or 0, name = spec.name or 'custom' }
end

---------------------------------------------------------------------------------------------
-- measured tables (the file format of csrc/dist/model.c)

local SIZES0 = 4096
local function rowBytes(i) return SIZES0 * 4 ^ (i - 1) end

function net.readTable(path)
   local f, err = io.open(path, 'r')
   if not f then fail('cannot open the cost table %s (%s)', tostring(path), tostring(err)) end
   local text = f:read('*a')
   f:close()
   local ranks, nodes, rows = text:match('^moontorch%-dist%-model 1%s+ranks (%d+) nodes (%d+) rows (%d+)')
   if not ranks then fail('%s is not a moontorch-dist-model file (first line)', path) end
   local t = { ranks = tonumber(ranks), nodes = tonumber(nodes), rows = {}, path = path }
   local lineNo = 0
   for line in text:gmatch('[^\n]+') do
      lineNo = lineNo + 1
      if lineNo > 2 then
         local name, rest = line:match('^(%S+)%s+(.*)$')
         local vals = {}
         for v in (rest or ''):gmatch('%S+') do
            local x = tonumber(v)
            if not x or not (x > 0) then -- luacheck: ignore 581 (rejects NaN)
               fail('%s line %d: time %s is not a positive number', path, lineNo, v)
            end
            vals[#vals + 1] = x
         end
         if not name or #vals ~= tonumber(rows) then
            fail('%s line %d: expected an algorithm name and %s times', path, lineNo, rows)
         end
         t.rows[name] = vals
      end
   end
   if not t.rows.ring then fail('%s has no ring row', path) end
   return t
end

-- the seconds a table row predicts for bytes: log-log between measured sizes; beyond the largest,
-- its time plus the rest at the marginal cost per byte of the last two sizes (a long message
-- pays the link's rate, not its startup again), or proportionally when those disagree
local function tableTime(vals, bytes)
   local n = #vals
   if bytes <= rowBytes(1) or n == 1 then
      return vals[1] * ((n == 1 and bytes > rowBytes(1)) and bytes / rowBytes(1) or 1)
   end
   if bytes >= rowBytes(n) then
      local slope = (vals[n] - vals[n - 1]) / (rowBytes(n) - rowBytes(n - 1))
      local flat = vals[n] / rowBytes(n)
      if not (slope > 0) or slope > 2 * flat then slope = flat end -- luacheck: ignore 581 (a NaN slope falls back)
      return vals[n] + (bytes - rowBytes(n)) * slope
   end
   local x = math.log(bytes / SIZES0) / math.log(4)
   local i = math.floor(x)
   local f = x - i
   local a, b = math.log(vals[i + 1]), math.log(vals[i + 2])
   return math.exp(a + f * (b - a))
end
net.tableTime = tableTime

-- alpha and beta from a ring row of n ranks: least squares of t = a + b S weighted by 1/t^2
-- (relative error: the small sizes count as much as the large), then a = 2(n-1) alpha and
-- b = 2(n-1)/n beta (gamma folded into beta)
function net.fitRing(vals, n)
   local sw, sx, sy, sxx, sxy = 0, 0, 0, 0, 0
   for i, t in ipairs(vals) do
      local w, x = 1 / (t * t), rowBytes(i)
      sw, sx, sy, sxx, sxy = sw + w, sx + w * x, sy + w * t, sxx + w * x * x, sxy + w * x * t
   end
   local det = sw * sxx - sx * sx
   local b = det > 0 and (sw * sxy - sx * sy) / det or vals[#vals] / rowBytes(#vals)
   local a = (sy - b * sx) / sw
   if b <= 0 then b = vals[#vals] / rowBytes(#vals) end
   a = math.max(a, 0)
   local k = 2 * math.max(n - 1, 1)
   return { alpha = a / k, beta = b * n / k, gamma = 0, name = 'fitted' }
end

-- the table a running job's dist.init measured or loaded (dist: moontorch.dist, initialised),
-- or nil when it has none (one rank, or dist.init{model = false})
function net.fromDist(dist)
   local n = dist.size()
   if n < 2 then return nil end
   local t = { ranks = n, nodes = dist.nodes(), rows = {}, path = 'dist.init' }
   for _, alg in ipairs({ 'mpi', 'ring', 'multicolor', 'hierarchical' }) do
      local vals = {}
      for i = 1, 8 do
         local x = dist.modelTime(alg, rowBytes(i))
         if not (x > 0) then return nil end -- luacheck: ignore 581 (a missing row is negative)
         vals[i] = x
      end
      t.rows[alg] = vals
   end
   return t
end

local function defaultTablePath(n, nodes)
   local home = os.getenv('HOME') or '/tmp'
   return ('%s/.cache/moontorch/dist-%dx%d.model'):format(home, n, nodes or 1)
end
net.defaultTablePath = defaultTablePath

---------------------------------------------------------------------------------------------
-- the network object

local Net = {}
Net.__index = Net

local ALGS = { 'mpi', 'ring', 'multicolor', 'hierarchical', 'nccl' }

-- opts: preset | alpha, beta, gamma | table (path or 'local'); intra (preset or {alpha, beta,
-- gamma}: links inside a node; default: the same as between nodes), ranksPerNode (1), gamma
-- (reduction seconds per byte, added to a preset's), name
function net.network(opts)
   opts = opts or {}
   if type(opts) == 'string' then opts = { preset = opts } end
   if type(opts) ~= 'table' then fail('options must be a table or a preset name, got %s', type(opts)) end
   local known = { preset = 1, alpha = 1, beta = 1, gamma = 1, table = 1, intra = 1, ranksPerNode = 1, name = 1,
      scale = 1 }
   -- table may also be a parsed table (readTable's or fromDist's result)
   for k in pairs(opts) do
      if not known[k] then
         fail("unknown option '%s' (preset, alpha, beta, gamma, table, intra, ranksPerNode, name, scale)", tostring(k))
      end
   end
   local self = setmetatable({ ranksPerNode = opts.ranksPerNode or 1, tables = {}, scale = opts.scale or 1 }, Net)
   if type(self.scale) ~= 'number' or not (self.scale > 0) then -- luacheck: ignore 581 (rejects NaN)
      fail('scale must be a number > 0, got %s', tostring(opts.scale))
   end
   if type(self.ranksPerNode) ~= 'number' or self.ranksPerNode < 1 or self.ranksPerNode % 1 ~= 0 then
      fail('ranksPerNode must be an integer >= 1, got %s', tostring(opts.ranksPerNode))
   end
   if opts.table then
      self.tableSpec = opts.table
      if opts.table ~= 'local' then
         local t = type(opts.table) == 'table' and opts.table or net.readTable(opts.table)
         self.tables[t.ranks] = t
         self.inter = net.fitRing(t.rows.ring, t.ranks)
         self.name = opts.name or ('table ' .. t.path)
      else
         self.name = opts.name or 'local (dist.init calibration)'
      end
   elseif opts.preset then
      self.inter = link(opts.preset, 'preset')
      self.name = opts.name or opts.preset
   elseif opts.alpha or opts.beta then
      self.inter = link({ alpha = opts.alpha, beta = opts.beta, gamma = opts.gamma }, 'network')
      self.name = opts.name or 'custom'
   else
      fail('give a preset, a table, or alpha and beta')
   end
   if self.inter and opts.gamma then self.inter.gamma = opts.gamma end
   self.intra = opts.intra and link(opts.intra, 'intra preset') or nil
   if self.intra and opts.gamma then self.intra.gamma = opts.gamma end
   return self
end

-- the measured table for n ranks (nil: none): a loaded one, or with table = 'local' the one
-- dist.init keeps for n ranks on this machine
function Net:table(n)
   if self.tables[n] then return self.tables[n] end
   if self.tableSpec == 'local' and self.tables[n] == nil then
      local path = defaultTablePath(n, 1)
      local f = io.open(path, 'r')
      if f then
         f:close()
         self.tables[n] = net.readTable(path)
      else
         self.tables[n] = false
      end
   end
   return self.tables[n] or nil
end

-- the inter-node link: given, or fitted from the nearest measured table
function Net:_inter(n)
   if self.inter then return self.inter end
   local t = self:table(n)
   if not t then
      -- any local table will do for alpha and beta
      for k = 2, 64 do
         t = self:table(k)
         if t then break end
      end
   end
   if not t then
      fail('no calibration table for %d ranks at %s: run a job with -dist on %d ranks (dist.init measures and saves '
         .. 'it), or use a preset', n, defaultTablePath(n, 1), n)
   end
   self.inter = net.fitRing(t.rows.ring, t.ranks)
   return self.inter
end

function Net:algorithms()
   return { 'mpi', 'ring', 'multicolor', 'hierarchical', 'nccl' }
end

local function ringTime(l, n, S)
   if n <= 1 then return 0 end
   return 2 * (n - 1) * l.alpha + 2 * (n - 1) / n * S * l.beta + (n - 1) / n * S * l.gamma
end

local function doublingTime(l, n, S)
   if n <= 1 then return 0 end
   return math.ceil(math.log(n) / math.log(2) - 1e-9) * (l.alpha + S * l.beta + S * l.gamma)
end

-- seconds for one allreduce of S bytes over n ranks by algorithm alg ('auto': the cheapest)
function Net:allreduce(alg, S, n)
   return self.scale * self:_allreduce(alg, S, n)
end

function Net:_allreduce(alg, S, n)
   if n <= 1 then return 0 end
   local t = self:table(n)
   if t then
      self.measured = true
      if alg == 'auto' then
         local best
         for _, a in ipairs({ 'mpi', 'ring', 'multicolor', 'hierarchical' }) do
            local row = t.rows[a]
            if row then
               local x = tableTime(row, S)
               if not best or x < best then best = x end
            end
         end
         return best
      end
      local row = t.rows[alg] or t.rows.ring -- nccl and anything untimed: the ring's figures
      return tableTime(row, S)
   end
   if self.tableSpec then self.extrapolated = true end
   if alg == 'auto' then
      local best
      for _, a in ipairs(ALGS) do
         local x = self:_allreduce(a, S, n)
         if not best or x < best then best = x end
      end
      return best
   end
   local p = math.min(self.ranksPerNode, n)
   local m = math.ceil(n / p)
   local inter = self:_inter(n)
   local intra = self.intra or inter
   local flat = m > 1 and inter or intra
   if alg == 'ring' or alg == 'multicolor' or alg == 'nccl' then return ringTime(flat, n, S) end
   if alg == 'mpi' then return math.min(ringTime(flat, n, S), doublingTime(flat, n, S)) end
   if alg == 'hierarchical' then
      if m == 1 or p == 1 then return ringTime(flat, n, S) end
      -- reduce-scatter and allgather inside the node; between nodes the p ranks of a node each
      -- run a ring over m nodes on S/p bytes, all through the node's one NIC
      local inNode = (p - 1) * intra.alpha + (p - 1) / p * S * (intra.beta + intra.gamma)
      local across = 2 * (m - 1) * inter.alpha + 2 * (m - 1) / m * S * inter.beta + (m - 1) / m * S / p * inter.gamma
      local back = (p - 1) * intra.alpha + (p - 1) / p * S * intra.beta
      return inNode + across + back
   end
   fail("unknown algorithm '%s' (auto, %s)", tostring(alg), table.concat(ALGS, ', '))
end

-- seconds for an allgather in which every one of n ranks ends with total bytes (total / n from
-- each): a ring, (n-1) alpha + (n-1)/n total beta, on the links the ranks span
function Net:allgather(total, n)
   if n <= 1 then return 0 end
   local p = math.min(self.ranksPerNode, n)
   local inter = self:_inter(n)
   local l = math.ceil(n / p) > 1 and inter or (self.intra or inter)
   return self.scale * ((n - 1) * l.alpha + (n - 1) / n * total * l.beta)
end

function Net:__tostring()
   local l = self.inter
   local s = ('perf.network(%s'):format(self.name)
   if l then s = s .. (', alpha %.3g us, %.3g GB/s'):format(l.alpha * 1e6, 1e-9 / l.beta) end
   if self.intra then s = s .. (', intra %.3g GB/s'):format(1e-9 / self.intra.beta) end
   return s .. (', %d rank(s) per node)'):format(self.ranksPerNode)
end

return net
