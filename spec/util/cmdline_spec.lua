-- cmdline_spec.lua: torch.CmdLine (cmdline.md): typed options, flipping booleans, positional
-- arguments, errors that name the option and value, -h, the run-name string, print logging;
-- and that it parses the recipes' option tables (moontorch.util.options) the same way.
local torch = require 'moontorch'
require 'spec.util' -- seeds math.random afresh each run (the seed is printed)
local options = require 'moontorch.util.options'

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

   it('parses the recipes\' option tables as moontorch.util.options does', function()
      -- resnet50_imagenet's table, which includes the precision and rgc rows the recipes share
      local rows = require('recipes.imagenet.opts').spec
      local cmd = torch.CmdLine()
      for _, r in ipairs(rows) do cmd:option('-' .. r[1], r[2], r[3], r.choices and { choices = r.choices }) end
      for _ = 1, 30 do
         local args = {}
         for _, r in ipairs(rows) do
            if math.random() < 0.4 then
               local v
               if r.choices then v = tostring(r.choices[math.random(#r.choices)])
               elseif type(r[2]) == 'number' then v = ('%.17g'):format((math.random() - 0.3) * 10 ^ math.random(-4, 4))
               elseif type(r[2]) == 'boolean' then v = math.random() < 0.5 and 'true' or 'false'
               else v = 'v' .. math.random(1, 1000) end
               args[#args + 1] = '-' .. r[1]
               args[#args + 1] = v
            end
         end
         assert.are.same(options.parse(args, rows), cmd:parse(args))
      end
      -- both refuse the same bad input
      for _, bad in ipairs { { '-depth', '33' }, { '-LR', 'fast' }, { '-nosuch', '1' }, { '-optimizer' } } do
         assert.is_false(pcall(options.parse, bad, rows))
         assert.is_false(pcall(cmd.parse, cmd, bad))
      end
   end)
end)
