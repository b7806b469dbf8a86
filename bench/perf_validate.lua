-- bench/perf_validate.lua: moontorch.perf's predictions against measured steps. Reads the ROW
-- lines bench/dp_step.lua wrote (-rows, e.g. under bench/netem.sh) with the cost tables it saved
-- for the same network, predicts every row from each table, the row's one-worker compute (spread
-- over the layers by FLOPs, as dp_step models it) and, for rgc, the row's own measured selection
-- time, and prints predicted against measured:
--   luajit bench/perf_validate.lua [-md] ROWS,RANKS,TABLE[,TABLE2] ...
-- TABLE is the table the model uses (e.g. dp_step -calibrate's: back-to-back allreduces),
-- TABLE2 a second one shown beside it (e.g. -saveModel's: dist.init's one-at-a-time table).
-- Each may hold %r (the row's rate label, as dp_step wrote it) and %n (RANKS).
package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
local perf = require 'moontorch.perf'

local sets, md = {}, false
for _, a in ipairs(arg) do
   if a == '-md' then
      md = true
   else
      local rows, ranks, tbl = a:match('^([^,]+),(%d+),(.+)$')
      if not rows then error('perf_validate: expected ROWS,RANKS,TABLE[,TABLE2], got ' .. a, 0) end
      local t1, t2 = tbl:match('^([^,]+),(.+)$')
      sets[#sets + 1] = { rows = rows, ranks = tonumber(ranks), table = t1 or tbl, table2 = t2 }
   end
end
if #sets == 0 then error('perf_validate: give ROWS,RANKS,TABLE (see the header)', 0) end

local function read(set)
   local rows = {}
   for line in io.lines(set.rows) do
      local f = {}
      for x in (line .. '|'):gmatch('([^|]*)|') do f[#f + 1] = x end
      if f[1] == 'ROW' then
         rows[#rows + 1] = { model = f[2], rate = f[4], alg = f[6], overlap = f[7] == 'true', compute = tonumber(f[8]),
            step = tonumber(f[9]), comm = tonumber(f[10]), compress = f[12] or 'none', density = tonumber(f[13]) or 1,
            selMs = tonumber(f[16]) or 0 }
      end
   end
   return rows
end

local function predict(set, row, pattern)
   local path = pattern:gsub('%%r', (row.rate:gsub('[^%w.]', '_'))):gsub('%%n', tostring(set.ranks))
   local net = perf.network { table = path }
   local prof = perf.fromLayers(perf.models.layers(row.model), row.compute, nil, row.model)
   local q = { profile = prof, network = net, workers = set.ranks, algorithm = row.alg, overlap = row.overlap,
      compress = row.compress, density = row.density }
   if row.compress == 'rgc' then
      local sparse = 0
      for _, u in ipairs(perf.simulate.units(prof)) do
         if u.hi - u.lo >= perf.simulate.DEFAULTS.minSize then sparse = sparse + (u.hi - u.lo) end
      end
      q.selectionCost, q.selectionFixed = row.selMs / 1000 / sparse, 0
   end
   return perf.predict(q).step * 1000
end

local errs = { table = {}, table2 = {} }
local out = {}
local function say(s) out[#out + 1] = s end
if md then
   say('| ranks | model | rate | algorithm | compress | measured ms | predicted ms | error | from TABLE2 ms | error |')
   say('| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |')
else
   say(('%-5s %-9s %-7s %-6s %-8s %10s %10s %8s %10s %8s'):format('ranks', 'model', 'rate', 'alg', 'compress',
      'measured', 'predicted', 'error', 'TABLE2', 'error'))
end
for _, set in ipairs(sets) do
   for _, r in ipairs(read(set)) do
      local t = predict(set, r, set.table)
      local c = set.table2 and predict(set, r, set.table2)
      local et, ec = (t - r.step) / r.step, c and (c - r.step) / r.step
      errs.table[#errs.table + 1] = math.abs(et)
      if ec then errs.table2[#errs.table2 + 1] = math.abs(ec) end
      local cs, es = c and ('%.1f'):format(c) or '-', ec and ('%+.1f%%'):format(100 * ec) or '-'
      if md then
         say(('| %d | %s | %s | %s | %s | %.1f | %.1f | %+.1f%% | %s | %s |'):format(set.ranks, r.model, r.rate, r.alg,
            r.compress, r.step, t, 100 * et, cs, es))
      else
         say(('%-5d %-9s %-7s %-6s %-8s %10.1f %10.1f %+7.1f%% %10s %8s'):format(set.ranks, r.model, r.rate, r.alg,
            r.compress, r.step, t, 100 * et, cs, es))
      end
   end
end
for _, s in ipairs(out) do print(s) end
for _, k in ipairs({ 'table', 'table2' }) do
   local e = errs[k]
   table.sort(e)
   local n = #e
   if n > 0 then
      local median = n % 2 == 1 and e[(n + 1) / 2] or (e[n / 2] + e[n / 2 + 1]) / 2
      local within = 0
      for _, x in ipairs(e) do if x <= 0.10 then within = within + 1 end end
      print(('%s: %d points, median |error| %.1f%%, max %.1f%%, %d within 10%%'):format(k == 'table' and 'TABLE'
         or 'TABLE2', n, 100 * median, 100 * e[n], within))
   end
end
