-- cmdline_spec.lua: torch.CmdLine (cmdline.md): typed options, flipping booleans, positional
-- arguments, errors that name the option and value, -h, the run-name string, print logging;
-- and moontorch's declared checks (choices, ranges, integers, check()) that the recipes,
-- benches and tools rely on.
local torch = require 'moontorch'
local util = require 'spec.util' -- seeds math.random afresh each run (the seed is printed)

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute('mkdir -p ' .. tmpdir)
local function read_all(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end

-- the cmdline.md example
local function example()
   local cmd = torch.CmdLine()
   cmd:text()
   cmd:text('Training a simple network')
   cmd:text()
   cmd:text('Options')
   cmd:option('-seed', 123, 'initial random seed')
   cmd:option('-booloption', false, 'boolean option')
   cmd:option('-stroption', 'mystring', 'string option')
   cmd:text()
   return cmd
end

local function err_of(f, ...)
   local ok, e = pcall(f, ...)
   assert.is_false(ok, 'expected an error')
   return e
end

describe('torch.CmdLine', function()
   it('is a torch.CmdLine; parse returns the defaults when nothing is given', function()
      local cmd = example()
      assert.are.equal('torch.CmdLine', torch.type(cmd))
      assert.are.same({ seed = 123, booloption = false, stroption = 'mystring' }, cmd:parse({}))
   end)

   it('parses numbers (any sign and form), strings, and flips booleans given bare', function()
      local cmd = example()
      cmd:option('-on', true, 'a flag that defaults to true')
      cmd:option('-lr', 0.1, 'learning rate')
      for _ = 1, 20 do
         local x = (math.random() - 0.5) * 10 ^ math.random(-8, 8)
         local n = math.random(-1000, 1000)
         local s = ('-s%d'):format(math.random(1, 99)) -- a value that looks like an option
         local p = cmd:parse { '-lr', ('%.17g'):format(x), '-seed', tostring(n), '-stroption', s, '-booloption', '-on' }
         assert.are.same({ lr = x, seed = n, stroption = s, booloption = true, on = false }, p)
      end
      assert.are.equal(255, cmd:parse({ '-seed', '0xff' }).seed)
      assert.are.equal(2.5e-3, cmd:parse({ '--lr', '2.5e-3' }).lr) -- --name works too
      -- an explicit true/false is taken as the value
      assert.are.same({ false, true },
         { cmd:parse({ '-on', 'false' }).on, cmd:parse({ '-booloption', 'true' }).booloption })
      assert.are.equal(true, cmd:parse({ '-on', 'true' }).on)
   end)

   it('errors name the option and the bad value', function()
      local cmd = example()
      assert.are.equal('torch.CmdLine: option -seed expects a number, got "12abc" (-h lists the options)',
         err_of(cmd.parse, cmd, { '-seed', '12abc' }))
      assert.are.equal('torch.CmdLine: unknown option -sead (-h lists the options)',
         err_of(cmd.parse, cmd, { '-sead', '1' }))
      assert.are.equal('torch.CmdLine: option -seed needs a value (a number) (-h lists the options)',
         err_of(cmd.parse, cmd, { '-seed' }))
      assert.are.equal('torch.CmdLine: unexpected argument "extra" (-h lists the options)',
         err_of(cmd.parse, cmd, { 'extra' }))
   end)

   it('checks option definitions', function()
      local cmd = torch.CmdLine()
      assert.are.equal('torch.CmdLine.option: option -x has no default value',
         err_of(cmd.option, cmd, '-x', nil, 'help'))
      assert.matches('option %-x has a default of type string, not number',
         err_of(cmd.option, cmd, '-x', 'a', 'help', 'number'))
      assert.matches('the name must look like %-name, got x', err_of(cmd.option, cmd, 'x', 1, 'help'))
      cmd:option('-x', 1, 'help')
      assert.matches('option %-x is already defined', err_of(cmd.option, cmd, '-x', 2, 'again'))
   end)

   it('restricts a value to its choices (moontorch: option 4th argument { choices = })', function()
      local cmd = torch.CmdLine()
      cmd:option('-optim', 'sgd', 'sgd | adam', { choices = { 'sgd', 'adam' } })
      cmd:option('-depth', 50, 'depth', { choices = { 18, 50 } })
      assert.are.same({ optim = 'adam', depth = 18 }, cmd:parse { '-optim', 'adam', '-depth', '18' })
      assert.are.equal('torch.CmdLine: option -optim: "rms" is not one of sgd, adam (-h lists the options)',
         err_of(cmd.parse, cmd, { '-optim', 'rms' }))
      assert.matches('"34" is not one of 18, 50', err_of(cmd.parse, cmd, { '-depth', '34' }))
   end)

   it('reads positional arguments in order, typed when asked, all required', function()
      local cmd = torch.CmdLine()
      cmd:argument('-data', 'dataset directory')
      cmd:argument('-n', 'how many', 'number')
      cmd:option('-v', false, 'verbose')
      local k = math.random(-50, 50)
      assert.are.same({ data = '/d', n = k, v = true }, cmd:parse { '-v', '/d', tostring(k) })
      assert.are.same({ data = '/e', n = 3, v = false }, cmd:parse { '/e', '3' })
      assert.are.equal('torch.CmdLine: missing argument <n> (-h lists the options)', err_of(cmd.parse, cmd, { '/d' }))
      assert.are.equal('torch.CmdLine: argument <n> expects a number, got "x" (-h lists the options)',
         err_of(cmd.parse, cmd, { '/d', 'x' }))
      assert.are.equal('torch.CmdLine: unexpected argument "4" (-h lists the options)',
         err_of(cmd.parse, cmd, { '/d', '3', '4' }))
   end)

   it('-h, -help and --help print the help and call cmd.exit(0)', function()
      for _, flag in ipairs { '-h', '-help', '--help' } do
         local cmd = example()
         cmd:argument('-data', 'dataset directory')
         local out, code = {}, nil
         cmd.exit = function(c) code = c return 'exited' end
         local write = io.write
         io.write = function(...) -- luacheck: ignore 122 (captures the help text; restored below)
            for _, s in ipairs { ... } do out[#out + 1] = s end
         end
         local ok, r = pcall(cmd.parse, cmd, { [0] = 'train.lua', '-seed', '5', flag, '-bogus' })
         io.write = write -- luacheck: ignore 122 (restores the real io.write)
         assert.is_true(ok, r)
         assert.are.equal('exited', r)
         assert.are.equal(0, code)
         assert.are.equal(table.concat({
            'Usage: train.lua [options] <data>',
            '',
            'Training a simple network',
            '',
            'Options',
            '  -seed       initial random seed [123]',
            '  -booloption boolean option [false]',
            '  -stroption  string option [mystring]',
            '',
            '  <data>      dataset directory',
            '' }, '\n'), table.concat(out))
      end
   end)

   it('string() names a run by its non-default options, as cmdline.md shows', function()
      local cmd = example()
      local params = cmd:parse {}
      assert.are.equal('experiment', cmd:string('experiment', params, { dir = true }))
      params = cmd:parse { '-seed', '456', '-stroption', 'mycustomstring' }
      params.dir = 'ignored'
      assert.are.equal('experiment,seed=456,stroption=mycustomstring', cmd:string('experiment', params, { dir = true }))
      params = cmd:parse { '-booloption', '-seed', '7' }
      assert.are.equal('x,booloption=t,seed=7', cmd:string('x', params, {}))
      -- { key = false } keeps an option at its default; { key = true } drops it
      assert.are.equal('x,booloption=t,seed=7,stroption=mystring', cmd:string('x', params, { stroption = false }))
      assert.are.equal('x,seed=7', cmd:string('x', params, { booloption = true }))
      -- positional arguments first, in order; custom separators
      local c2 = torch.CmdLine('_', ':')
      c2:argument('-b', 'second')
      c2:option('-z', 1, 'z')
      c2:argument('-a', 'third')
      local p = c2:parse { 'B', 'A', '-z', '2' }
      assert.are.equal('run_b:B_a:A_z:2', c2:string('run', p))
   end)

   it('log() writes the params and every print to the file as well as the screen', function()
      local cmd = example()
      local params = cmd:parse { '-seed', '9' }
      local screen = {}
      local saved = print
      _G.print = function(...)
         local w = {}
         for i = 1, select('#', ...) do w[i] = tostring((select(i, ...))) end
         screen[#screen + 1] = table.concat(w, '\t')
      end
      local path = tmpdir .. '/log'
      local ok, err = pcall(function()
         cmd:log(path, params)
         print('hello', 3, nil, true)
         cmd:addTime('proj', '%Y')
         print('stamped')
         cmd:silent()
         print('file only')
      end)
      _G.print = saved
      assert.is_true(ok, err)
      local lines = {}
      for l in read_all(path):gmatch('([^\n]*)\n') do lines[#lines + 1] = l end
      assert.matches('^%[program started on .+%]$', lines[1])
      local expect = { '[command line arguments]', 'booloption\tfalse', 'seed\t9', 'stroption\tmystring',
         '[----------------------]', 'hello\t3\tnil\ttrue', os.date('%Y') .. '[proj]: stamped',
         os.date('%Y') .. '[proj]: file only' }
      assert.are.same(expect, { unpack(lines, 2) })
      -- the screen saw the same lines without the time stamps, and nothing once silent
      assert.are.same({ 'seed\t9', 'hello\t3\tnil\ttrue' }, { screen[4], screen[7] })
      assert.are.equal('stamped', screen[#screen])
      assert.are.equal(8, #screen)
   end)

   it('log() also takes an open file', function()
      local cmd = example()
      local path = tmpdir .. '/log2'
      local f = assert(io.open(path, 'w'))
      local saved = print
      _G.print = function() end
      local ok, err = pcall(function()
         cmd:log(f, nil)
         print('x')
      end)
      _G.print = saved
      f:close()
      assert.is_true(ok, err)
      assert.matches('%[command line arguments%]\n%[%-+%]\nx\n$', read_all(path))
      assert.matches('cannot open the log file', err_of(cmd.log, cmd, tmpdir .. '/no/such/dir/log', {}))
   end)

   it('checks declared ranges and integers once every argument is read, defaults included', function()
      local function cmdline()
         local cmd = torch.CmdLine()
         cmd:option('-nEpochs', 10, 'epochs', { range = '[1, inf)', integer = true })
         cmd:option('-LR', 0.1, 'rate', { range = '(0, inf)' })
         cmd:option('-momentum', 0.9, 'momentum', { range = '[0, 1)' })
         cmd:option('-density', 0.5, 'density', { range = '(0, 1]' })
         cmd:option('-warmup', 0, 'warm-up epochs', { range = '[0, nEpochs)' })
         cmd:option('-delta', 0, 'any number', { range = '(-inf, 0]' })
         cmd:option('-n', 3, 'a whole number', { integer = true })
         return cmd
      end
      local cmd = cmdline()
      for _ = 1, 20 do
         local n, m = math.random(1, 100), math.random() * 0.999
         local p = cmd:parse { '-nEpochs', tostring(n), '-momentum', ('%.17g'):format(m), '-density', '1',
            '-warmup', tostring(n - 0.5), '-delta', '-2.5', '-n', '-7' }
         assert.are.same({ nEpochs = n, LR = 0.1, momentum = m, density = 1, warmup = n - 0.5, delta = -2.5, n = -7 },
            p)
      end
      local function err(args) return err_of(cmd.parse, cmd, args) end
      local k = math.random(-5, 0)
      assert.are.equal(
         ('torch.CmdLine: option -nEpochs must be an integer >= 1, got %d (-h lists the options)'):format(k),
         err { '-nEpochs', tostring(k) })
      assert.matches('option %-nEpochs must be an integer >= 1, got 2.5', err { '-nEpochs', '2.5' })
      assert.matches('option %-LR must be > 0, got 0', err { '-LR', '0' })
      assert.matches('option %-LR must be > 0, got nan', err { '-LR', 'nan' })
      assert.matches('option %-LR must be > 0, got inf', err { '-LR', 'inf' }) -- (0, inf) leaves inf out
      assert.matches('option %-momentum must be in %[0, 1%), got 1', err { '-momentum', '1' })
      assert.matches('option %-density must be in %(0, 1%], got 0', err { '-density', '0' })
      assert.matches('option %-delta must be <= 0, got 1', err { '-delta', '1' })
      assert.matches('option %-n must be an integer, got 0.5', err { '-n', '0.5' })
      -- a bound naming another option takes that option's parsed value, wherever it was given
      assert.are.equal('torch.CmdLine: option -warmup must be in [0, nEpochs = 2), got 3 (-h lists the options)',
         err { '-warmup', '3', '-nEpochs', '2' })
      assert.are.equal(2, cmd:parse({ '-nEpochs', '3', '-warmup', '2' }).warmup)
      -- defaults are checked too, so a bad default shows on the first parse
      local c2 = torch.CmdLine()
      c2:option('-x', 0, 'x', { range = '(0, 1)' })
      assert.matches('option %-x must be in %(0, 1%), got 0', err_of(c2.parse, c2, {}))
      -- declarations are checked where they are made
      assert.matches('option %-y has range %[0, 1 %(expected an interval',
         err_of(c2.option, c2, '-y', 0, 'y', { range = '[0, 1' }))
      assert.matches('option %-z has a range but is a string',
         err_of(c2.option, c2, '-z', 'a', 'z', { range = '[0, 1]' }))
      local c3 = torch.CmdLine()
      c3:option('-w', 0, 'w', { range = '[0, nosuch)' })
      assert.matches('the range of option %-w names nosuch, which is no option', err_of(c3.parse, c3, {}))
   end)

   it('check() checks the values a table holds; name starts the messages; -h shows the ranges', function()
      local cmd = torch.CmdLine()
      cmd.name = 'recipe'
      cmd:option('-nEpochs', 10, 'epochs', { range = '[1, inf)', integer = true })
      cmd:option('-warmup', 0, 'warm-up epochs', { range = '[0, nEpochs)' })
      cmd:option('-optimizer', 'sgd', 'which', { choices = { 'sgd', 'adam' } })
      local t = { warmup = 5, optimizer = 'adam', other = 'not an option' }
      assert.are.equal(t, cmd:check(t)) -- nEpochs absent: the bound is not checked
      assert.are.equal('recipe: option -warmup must be in [0, nEpochs = 5), got 5 (-h lists the options)',
         err_of(cmd.check, cmd, { nEpochs = 5, warmup = 5 }))
      assert.are.equal('recipe: option -optimizer: "rms" is not one of sgd, adam (-h lists the options)',
         err_of(cmd.check, cmd, { optimizer = 'rms' }))
      assert.matches('^recipe: option %-nEpochs expects a number, got "ten"',
         err_of(cmd.parse, cmd, { '-nEpochs', 'ten' }))
      local out = {}
      cmd.exit = function() end
      local write = io.write
      io.write = function(...) -- luacheck: ignore 122 (captures the help text; restored below)
         for _, s in ipairs { ... } do out[#out + 1] = s end
      end
      local ok, e = pcall(cmd.parse, cmd, { '-h' })
      io.write = write -- luacheck: ignore 122 (restores the real io.write)
      assert.is_true(ok, e)
      local text = table.concat(out)
      assert.truthy(text:find('-nEpochs   epochs [10] (an integer >= 1)', 1, true), text)
      assert.truthy(text:find('-warmup    warm-up epochs [0] (in [0, nEpochs))', 1, true), text)
   end)

   it('takes a string for a number option only when it parses, and -name for --name', function()
      local cmd = torch.CmdLine()
      cmd:option('-LR', 0.1, 'rate', { range = '(0, inf)' })
      local lr = math.random()
      assert.are.equal(tonumber(('%.17g'):format(lr)), cmd:parse({ '--LR', ('%.17g'):format(lr) }).LR)
      util.assert_error(function() cmd:parse { '-LR', 'fast' } end, '-LR expects a number', 'fast')
   end)
end)
