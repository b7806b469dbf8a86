-- bench/layers_table.lua: the -layers table of bench/conv_layers.lua. Each case of
-- bench/layers_cases.lua is run forward and backward (updateGradInput + accGradParameters, or
-- a criterion's forward / backward), its inputs, parameters, output and gradients written to a
-- scratch folder as raw float32, and timed; bench/layers_peer.py then times PyTorch's equivalent
-- on those same tensors and prints the largest absolute difference of its results from ours.
-- With -rounds R (R > 1) both sides are timed R times, alternating (ours for every case, then
-- PyTorch's), and each cell is the median over the rounds; the ratio is the median of the
-- rounds' ratios, with their range: on a shared machine a slow spell then skews one round, not
-- one side.
local torch = require 'moontorch'
local ffi = require 'ffi'

return function(opt, time_ms)
   local want = {}
   for n in opt.layers:gmatch('[^,]+') do want[n] = true end
   local all = dofile('bench/layers_cases.lua')()
   local cases = {}
   for _, c in ipairs(all) do if want.all or want[c.name] then cases[#cases + 1] = c end end
   if #cases == 0 then error('conv_layers: -layers ' .. opt.layers .. ' names no case of bench/layers_cases.lua') end

   local dir = os.tmpname()
   os.remove(dir)
   assert(os.execute('mkdir -p ' .. dir) == 0 or true)
   local manifest = {}
   local function save(i, name, t)
      if type(t) == 'number' then t = torch.FloatTensor(1):fill(t) end
      t = t:float():contiguous()
      local f = assert(io.open(('%s/%d_%s.bin'):format(dir, i, name), 'wb'))
      f:write(ffi.string(t:data(), t:nElement() * 4))
      f:close()
      manifest[#manifest + 1] = ('T %d %s %s'):format(i, name, table.concat(t:size():totable(), 'x'))
   end
   local function save_list(i, prefix, x)
      if type(x) == 'table' then
         for k, v in ipairs(x) do save(i, prefix .. k, v) end
      else
         save(i, prefix, x)
      end
   end

   local rows = {}
   for i, c in ipairs(cases) do
      torch.manualSeed(1234 + i)
      local m, x, third = c.build()
      m:float()
      local y, dy, gx
      if c.criterion then
         y = m:forward(x, third)
         gx = m:backward(x, third):clone()
         save(i, 'target', third)
      else
         y = m:forward(x)
         dy = type(y) == 'table' and error('conv_layers: table outputs are not benched')
            or torch.randn(y:size()):float()
         if m.zeroGradParameters then m:zeroGradParameters() end
         gx = m:backward(x, dy)
         save(i, 'dy', dy)
         for name, t in pairs(type(third) == 'table' and third or {}) do save(i, name, t) end
      end
      manifest[#manifest + 1] = ('C %d %s %s'):format(i, c.kind, #c.args > 0 and table.concat(c.args, ',') or '-')
      save_list(i, 'x', x)
      save(i, 'y', y)
      if not (torch.isTensor(x) and x:type() == 'torch.LongTensor') then
         save_list(i, 'gx', type(gx) == 'table' and gx or gx:clone())
      end
      for _, p in ipairs(c.save or {}) do
         save(i, p, m[p])
         local g = 'grad' .. p:sub(1, 1):upper() .. p:sub(2)
         save(i, g, m[g])
      end
      for name, t in pairs(c.extra and c.extra(m) or {}) do save(i, name, t) end
      if c.criterion then
         rows[i] = { function() m:forward(x, third) end, function() m:backward(x, third) end }
      else
         rows[i] = { function() m:forward(x) end, function() m:backward(x, dy) end }
      end
   end
   local f = assert(io.open(dir .. '/manifest.txt', 'w'))
   f:write(table.concat(manifest, '\n'), '\n')
   f:close()

   local function peer_round()
      local peer = {}
      -- OPENBLAS_NUM_THREADS: PyTorch's torch.set_num_threads does not reach Debian's pthread
      -- OpenBLAS, whose pool would otherwise run PyTorch's GEMMs (mm, bmm, slow_conv*) on every core
      local cmd = ('OPENBLAS_NUM_THREADS=%d /usr/bin/python3 bench/layers_peer.py --threads %d --reps %d'
         .. ' --warmup %d --dir %s 2>&1')
         :format(opt.threads, opt.threads, opt.reps, opt.warmup, dir)
      local p = io.popen(cmd)
      local out = p:read('*a')
      p:close()
      for i, fw, bw, d in out:gmatch('(%d+) ([%d.]+) ([%d.]+) (%S+)\n') do
         peer[tonumber(i)] = { tonumber(fw), tonumber(bw), d }
      end
      if #cases ~= #peer then
         io.stderr:write('conv_layers: the PyTorch peer did not answer every case:\n', out, '\n')
      end
      return peer
   end

   local rounds = math.max(1, opt.rounds or 1)
   local ours, theirs = {}, {} -- [round][case] = { fwd, bwd[, diff] }
   for r = 1, rounds do
      ours[r] = {}
      for i = 1, #cases do ours[r][i] = { time_ms(rows[i][1]), time_ms(rows[i][2]) } end
      theirs[r] = opt.nopeer and {} or peer_round()
   end
   os.execute('rm -rf ' .. dir)

   local median = require('bench.timing').median
   local function over_rounds(side, i, k)
      local v = {}
      for r = 1, rounds do
         if not side[r][i] then return nil end
         v[r] = side[r][i][k]
      end
      return median(v)
   end
   print(('\nnn layers, %d threads, median of %d%s (ms per call; PyTorch in brackets); diff: max |ours - PyTorch|')
      :format(opt.threads, opt.reps, rounds > 1 and (', median of %d alternating rounds'):format(rounds) or ''))
   print(('%-30s %-34s %18s %18s %7s %9s%s'):format('module', 'shape', 'forward', 'backward', 'ratio', 'diff',
      rounds > 1 and '  ratio range' or ''))
   for i, c in ipairs(cases) do
      local t = { over_rounds(ours, i, 1), over_rounds(ours, i, 2) }
      local p = theirs[1][i] and { over_rounds(theirs, i, 1), over_rounds(theirs, i, 2), theirs[1][i][3] }
      local cell = function(k) return p and ('%8.2f (%7.2f)'):format(t[k], p[k]) or ('%8.2f'):format(t[k]) end
      local ratio, range = '-', ''
      if p then
         local rs = {}
         for r = 1, rounds do
            local a, b = ours[r][i], theirs[r][i]
            rs[r] = (a[1] + a[2]) / (b[1] + b[2])
         end
         ratio = ('%.2f'):format(median(rs))
         if rounds > 1 then range = ('  %.2f-%.2f'):format(math.min(unpack(rs)), math.max(unpack(rs))) end
      end
      print(('%-30s %-34s %18s %18s %7s %9s%s'):format(c.name, c.desc, cell(1), cell(2), ratio, p and p[3] or '-',
         range))
   end
end
