-- recipe_spec.lua: moontorch.train.recipe and moontorch.train.flags, what both recipes share:
-- the script wrapper (one line on stderr naming the program and the rank, the other ranks told,
-- the exit status), printing on rank 0 alone, -dist's set-up without a launcher, the optimizer's
-- config, the wrappers of a model, the layer segments of LARS/LAMB, and the shared option groups
-- (every number with its range, every choice with its list, the combinations refused).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local recipe = require 'moontorch.train.recipe'
local flags = require 'moontorch.train.flags'

local tmpdir = util.tmpdir()
teardown(function() os.execute(('rm -rf %q'):format(tmpdir)) end)

-- runs a script made of body from the repository root; its stderr and exit status
local function script(body, ...)
   local path = ('%s/s%d.lua'):format(tmpdir, math.random(1, 1e9))
   local f = assert(io.open(path, 'w'))
   f:write("require 'moontorch'\nlocal recipe = require 'moontorch.train.recipe'\n", body)
   f:close()
   local p = io.popen(('luajit %q %s 2>&1 >/dev/null; echo "exit status $?"'):format(path, table.concat({ ... }, ' ')))
   local out = p:read('*a')
   p:close()
   return out:gsub('exit status %d+%s*$', ''), tonumber(out:match('exit status (%d+)%s*$'))
end

describe('train.recipe.script', function()
   local MAIN = [[
local function main(args)
   if args[1] == 'ok' then return 0.5, {}, {} end
   if args[1] == 'code' then return nil, nil, tonumber(args[2]) end
   error('demo: the data are missing\nsecond line', 0)
end
]]
   it('runs main; an error is one stderr line naming the program, and exit status 1', function()
      local err, code = script(MAIN .. "recipe.script('demo', main, arg)", 'fail')
      assert.are.equal(1, code)
      assert.are.equal('demo: the data are missing\nsecond line\n', err) -- the prefix once
      err, code = script(MAIN .. "recipe.script('demo', main, arg)", 'ok')
      assert.are.same({ '', 0 }, { err, code })
      local k = math.random(2, 9)
      err, code = script(MAIN .. "recipe.script('demo', main, arg)", 'code', tostring(k))
      assert.are.same({ '', k }, { err, code })
   end)

   it('with moontorch.dist loaded, tells the other ranks first and names its rank', function()
      local fake = [[
package.loaded['moontorch.dist'] = { size = function() return 4 end, rank = function() return 3 end,
   fail = function(msg) io.stderr:write('[dist.fail: ', msg, ']\n') end }
]]
      local err, code = script(fake .. MAIN .. "recipe.script('demo', main, arg)", 'fail')
      assert.are.equal(1, code)
      assert.are.equal('[dist.fail: demo: the data are missing]\ndemo: rank 3: the data are missing\nsecond line\n',
         err)
   end)
end)

describe('train.recipe', function()
   local function capture(f)
      local lines, say = {}, _G.print
      _G.print = function(...) lines[#lines + 1] = table.concat({ ... }, ' ') end
      local ok, a, b = pcall(f)
      _G.print = say
      return lines, ok, a, b
   end

   it('onRankZero: ranks other than 0 print nothing while f runs, and print comes back', function()
      local function f(x) print('hello', x) return x, x + 1 end
      local rank
      local dist = { rank = function() return rank end }
      for _, r in ipairs { 0, 1 + math.random(0, 6) } do
         rank = r
         local lines, ok, a, b = capture(function() return recipe.onRankZero(dist, f, 41) end)
         assert.is_true(ok, a)
         assert.are.same({ 41, 42 }, { a, b })
         assert.are.same(r == 0 and { 'hello 41' } or {}, lines)
      end
      rank = 1
      local say = _G.print
      local _, ok, err = capture(function() return recipe.onRankZero(dist, error, 'boom', 0) end)
      assert.is_false(ok)
      assert.matches('boom', err)
      assert.are.equal(say, _G.print)
      assert.are.same({ 'hello 7' }, (capture(function() recipe.onRankZero(nil, f, 7) end)))
   end)

   it('distribute without -dist: rank 0 of 1, the whole batch', function()
      local bs = math.random(1, 512)
      local opt = { dist = false, batchSize = bs, threads = 3 }
      assert.is_nil(recipe.distribute(opt))
      assert.are.same({ 0, 1, bs, 3 }, { opt.rank, opt.world, opt.localBatch, opt.threads })
   end)

   it('distribute under a launcher of several processes without -dist: refused, naming -dist', function()
      local ffi = require 'ffi'
      pcall(ffi.cdef, 'int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);')
      ffi.C.setenv('OMPI_COMM_WORLD_SIZE', '3', 1)
      local ok, err = pcall(recipe.distribute, { dist = false, batchSize = 8, threads = 1 })
      ffi.C.unsetenv('OMPI_COMM_WORLD_SIZE')
      assert.is_false(ok)
      assert.matches('started as 3 processes by a launcher but without %-dist.*add %-dist', err)
   end)

   it('optimConfig: momentum for sgd and lars, Nesterov\'s for sgd, -eta for lars', function()
      local base = { weightDecay = 1e-4, momentum = 0.9, nesterov = true, eta = 0.02 }
      local function config(optimizer, extra)
         local o = { optimizer = optimizer }
         for k, v in pairs(base) do o[k] = v end
         for k, v in pairs(extra or {}) do o[k] = v end
         return recipe.optimConfig(o, 0.5)
      end
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4, momentum = 0.9, nesterov = true, dampening = 0 },
         config('sgd'))
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4, momentum = 0 }, config('sgd', { momentum = 0 }))
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4, momentum = 0.9 }, config('sgd', { nesterov = false }))
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4, momentum = 0.9, eta = 0.02 }, config('lars'))
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4 }, config('lamb'))
      assert.are.same({ learningRate = 0.5, weightDecay = 1e-4 }, config('adam'))
   end)

   it('wrap without -dist: the model itself, and the loss scaler -precision and -clip ask for', function()
      local model = nn.Linear(3, 2)
      local function wrap(precision, clip)
         return recipe.wrap(model, {}, { precision = precision, clip = clip or 0, lossScale = 1024, scaleWindow = 7,
            compress = 'none' }, nil)
      end
      local m, scaler, _ = wrap('fp32')
      assert.are.equal(model, m)
      assert.is_nil(scaler)
      _, scaler = wrap('fp16')
      assert.are.same({ true, 1024, 7 }, { scaler.dynamic, scaler.initScale, scaler.growthInterval })
      _, scaler = wrap('bf16')
      assert.are.same({ false, 1 }, { scaler.dynamic, scaler.initScale })
      _, scaler = wrap('fp32', 2.5)
      assert.are.same({ false, 1, 2.5 }, { scaler.dynamic, scaler.initScale, scaler.clip })
   end)

   it('layerwise: LARS and LAMB get one segment per parameter tensor, the 1-D ones excluded', function()
      local model = nn.Sequential():add(nn.Linear(4, 5)):add(nn.BatchNormalization(5)):add(nn.Linear(5, 2))
      local params = model:getParameters()
      for _, o in ipairs { 'sgd', 'adam', 'lars', 'lamb' } do
         local config = {}
         recipe.layerwise(model, params, config, { optimizer = o })
         if o == 'lars' or o == 'lamb' then
            assert.are.same({ 6, 4 }, { #config.layers, #config.lars_exclude })
         else
            assert.are.same({}, config)
         end
      end
   end)

   it('resume without -resume and without compression leaves the trainer alone', function()
      local trainer = { model = {}, resume = function() error('not to be called') end }
      recipe.resume(trainer, { resume = '' })
   end)
end)

describe('train.flags', function()
   local function groups()
      local cmd = torch.CmdLine()
      cmd.name = 'demo'
      flags.group(cmd, 'Optimization')
      flags.largeBatch(cmd)
      flags.precision(cmd)
      flags.distributed(cmd)
      flags.compression(cmd, 2)
      flags.checkpoints(cmd, 'runs/demo')
      return cmd
   end

   it('declares a range for every number and a list for every choice', function()
      local cmd, n = groups(), 0
      for key, o in pairs(cmd.options) do
         n = n + 1
         if o.type == 'number' then assert.truthy(o.range or o.choices, key .. ' has no range') end
      end
      assert.is_true(n >= 25, n .. ' options')
      local opt = cmd:parse {}
      assert.are.same({ 2, 'runs/demo', 'fp32', 'none', false }, { opt.densityWarmup, opt.save, opt.precision,
         opt.compress, opt.dist })
      util.assert_error(function() cmd:parse { '-density', '0' } end, 'demo: option -density must be in (0, 1], got 0')
      util.assert_error(function() cmd:parse { '-accumulate', '1.5' } end, '-accumulate must be an integer >= 1',
         '1.5')
      util.assert_error(function() cmd:parse { '-lossScale', 'inf' } end, '-lossScale must be > 0, got inf')
      util.assert_error(function() cmd:parse { '-precision', 'fp8' } end, '"fp8" is not one of fp32, tf32')
   end)

   it('check refuses the combinations ranges cannot', function()
      local cmd = groups()
      cmd:option('-optimizer', 'sgd', 'which', { choices = { 'sgd', 'lars' } })
      cmd:option('-device', 'cpu', 'where', { choices = { 'cpu', 'cuda' } })
      util.assert_error(function() flags.check(cmd:parse { '-compress', 'rgc' }) end, '-compress rgc needs -dist')
      util.assert_error(function() flags.check(cmd:parse { '-compress', 'rgc', '-dist', '-optimizer', 'lars' }) end,
         'needs -optimizer sgd, got lars')
      local opt = cmd:parse { '-compress', 'rgc', '-dist' }
      assert.are.equal(opt, flags.check(opt))
      if not util.has_gpu() then
         util.assert_error(function() flags.check(cmd:parse { '-device', 'cuda' }) end, '-device cuda but')
      end
   end)
end)
