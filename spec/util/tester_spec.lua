-- tester_spec.lua: torch.Tester and torch.TestSuite (tester.md). Each assert on values that
-- pass and values that fail (its return value, the failure count and message); the runner's
-- options; and two Torch7-style test files run unchanged in a child process (bin/moontorch,
-- like `th`, and plain luajit with a global torch), their report and exit status checked.
local torch = require 'moontorch'
require 'spec.util' -- seeds math.random afresh each run (the seed is printed)

local BUILD = os.getenv('MOONTORCH_BUILD') or ''
local LUA_INIT = "package.path='./lua/?.lua;./lua/?/init.lua;'..package.path; torch = require 'moontorch'"

-- run a shell command; returns its stdout, exit status and stderr
local errfile = os.tmpname()
local function sh(cmd)
   local marker = '__exit_status__'
   local h = io.popen(("MOONTORCH_BUILD='%s' %s 2>'%s'; echo %s$?"):format(BUILD, cmd, errfile, marker))
   local out = h:read('*a')
   h:close()
   local f = io.open(errfile, 'rb')
   local err = f and f:read('*a') or ''
   if f then f:close() end
   local body, code = out:match('^(.*)' .. marker .. '(%d+)%s*$')
   return body, tonumber(code), err
end

-- Run tester:run(...) in-process with io.write captured; returns ok, error, output.
local function run_captured(tester, ...)
   local out = {}
   local write = io.write
   io.write = function(...) -- luacheck: ignore 122 (captures the report; restored below)
      for _, s in ipairs { ... } do out[#out + 1] = tostring(s) end
   end
   local ok, err = pcall(tester.run, tester, ...)
   io.write = write -- luacheck: ignore 122 (restores the real io.write)
   return ok, err, table.concat(out)
end

-- A tester inside a running test, so asserts count: calls f(tester) as the test body.
local function within(f)
   local tester = torch.Tester()
   tester:add(function() f(tester) end, 'body')
   local ok, err, out = run_captured(tester)
   return tester, ok, err, out
end

local function rand_list(n)
   local t = {}
   for i = 1, n do t[i] = math.random() * 2 - 1 end
   return t
end

describe('torch.Tester asserts', function()
   it('eq/ne on tensors: elementwise within the tolerance, types and sizes must match', function()
      local n = math.random(3, 11)
      local a = torch.DoubleTensor(rand_list(n))
      local b = a:clone()
      local k = math.random(1, n)
      local delta = 0.25 + math.random()
      b[k] = b[k] + delta
      local results
      local tester = within(function(t)
         results = {
            t:eq(a, a:clone()),                 -- 1 pass
            t:eq(a, b),                          -- 2 fail: max diff = delta
            t:eq(a, b, delta + 1e-9),            -- 3 pass within tolerance
            t:eq(a, b, delta - 1e-6, 'msg'),     -- 4 fail
            t:ne(a, b),                          -- 5 pass
            t:ne(a, b, delta + 1e-9),            -- 6 fail: equal within tolerance
            t:eq(a, a:float()),                  -- 7 fail: types differ
            t:eq(a, a:view(1, n)),               -- 8 fail: dims differ (eq checks them)
            t:assertTensorEq(a, a:view(1, n)),   -- 9 pass with a warning (Torch7 compatibility)
            t:assertTensorNe(a, b, 1e-3),        -- 10 pass
            t:assertTensorEq(a, b, 1e-3),        -- 11 fail
         }
      end)
      assert.are.same({ true, false, true, false, true, false, false, false, true, true, false }, results)
      assert.are.equal(11, tester.countasserts)
      assert.are.equal(6, tester.assertionFail.body)
      local e = tester.errors
      assert.are.equal(6, #e)
      assert.are.equal(('body\nTensorEQ(==) violation: max diff=%s, tolerance=0\n')
         :format(tostring(a:clone():add(-1, b):abs():max())), e[1]:match('^(.-\n.-\n)'))
      assert.matches('^body\nmsg\nTensorEQ%(==%) violation: max diff=', e[2])
      assert.matches('TensorNE%(==%) violation', e[3])
      assert.matches('The tensors have different types', e[4])
      assert.matches('The tensors have different dimensions', e[5])
      assert.matches('util/tester_spec%.lua:%d+: in function <', e[1]) -- points at the assert's line
      assert.are.equal(1, tester._warningCount.body)
   end)

   it('NaN never passes eq; equal infinities do', function()
      local r
      within(function(t)
         local x = torch.DoubleTensor{ 1, 0 / 0, 2 }
         local inf = torch.DoubleTensor{ math.huge, -math.huge }
         r = { t:eq(x, x), t:eq(x, x, 1e9), t:ne(x, x), t:eq(0 / 0, 0 / 0), t:eq(inf, inf:clone()),
            t:eq(math.huge, math.huge), t:eq({ 0 / 0 }, { 0 / 0 }, 1) }
      end)
      assert.are.same({ false, false, true, false, true, true, false }, r)
   end)

   it('eq/ne on numbers, strings, nested tables, mixed types', function()
      local x = math.random() + 1
      local r, tester
      tester = within(function(t)
         local nested = { a = { b = { c = x, d = torch.FloatTensor{ x } } }, 'str' }
         local same = { a = { b = { c = x, d = torch.FloatTensor{ x } } }, 'str' }
         local off = { a = { b = { c = x + 0.5, d = torch.FloatTensor{ x } } }, 'str' }
         r = {
            t:eq(x, x + 1e-7, 1e-6), t:eq(x, x + 1e-5, 1e-6), t:eq('s', 's'), t:eq('s', 't'),
            t:eq(nested, same), t:eq(nested, off), t:eq(nested, off, 0.6), t:ne(nested, off),
            t:eq(1, '1'), t:ne(1, '1'), t:eq({ 1 }, { 1, 2 }), t:assertTableEq({ 1, { 2 } }, { 1, { 2 } }),
            t:assertTableNe({ 1 }, { 2 }),
         }
      end)
      assert.are.same({ true, false, true, false, true, false, true, true, false, true, false, true, true }, r)
      local e = tester.errors
      assert.matches(('EQ failed: %s ~= %s with tolerance=1e%%-06'):format(tostring(x), tostring(x + 1e-5))
         :gsub('%.', '%%.'), e[1])
      assert.matches('EQ failed: s %(string%) ~= t %(string%)', e[2])
      assert.matches('At table location a%.b%.c: EQ failed', e[3])
      assert.matches('EQ failed: values have different types %(first: number, second: string%)', e[4])
      assert.matches('Entry 2 missing in first table %(is 2 in second%)', e[5])
   end)

   it('ordering, identity and almost-equal asserts', function()
      local a = math.random()
      local b = a + 0.5
      local r, tester
      tester = within(function(t)
         r = { t:assertlt(a, b), t:assertlt(b, a), t:assertgt(b, a), t:assertgt(a, a), t:assertle(a, a),
            t:assertle(b, a), t:assertge(a, a), t:assertge(a, b), t:asserteq(a, a), t:asserteq(a, b), t:assertne(a, b),
            t:assertne(a, a), t:assertalmosteq(a, a + 1e-8, 1e-7), t:assertalmosteq(a, a + 1e-8), t:assert(true),
            t:assert(false, 'why') }
      end)
      assert.are.same({ true, false, true, false, true, false, true, false, true, false, true, false, true, false,
         true, false }, r)
      local e = tester.errors
      assert.matches(('LT failed: %s >= %s'):format(b, a):gsub('%.', '%%.'), e[1])
      assert.matches('GT failed: .* <= ', e[2])
      assert.matches('LE failed: .* > ', e[3])
      assert.matches('GE failed: .* < ', e[4])
      assert.matches('EQ failed: .* ~= ', e[5])
      assert.matches('NE failed: .* == ', e[6])
      assert.matches('ALMOST_EQ failed: .* with tolerance=1e%-16', e[7])
      assert.matches('^body\nwhy\nBOOL violation condition=false', e[8])
   end)

   it('error asserts', function()
      local r, tester
      tester = within(function(t)
         local boom = function() error('boom 42', 0) end
         local fine = function() return 1 end
         r = { t:assertError(boom), t:assertError(fine), t:assertNoError(fine), t:assertNoError(boom, 'no raise'),
            t:assertErrorMsg(boom, 'boom 42'), t:assertErrorMsg(boom, 'boom'), t:assertErrorPattern(boom, 'm %d+'),
            t:assertErrorPattern(boom, '^x'),
            t:assertErrorObj(function() error({ 7 }) end, function(e) return e[1] == 7 end),
            t:assertErrorObj(boom, function(e) return e == 'other' end) }
      end)
      assert.are.same({ true, false, true, false, true, false, true, false, true, false }, r)
      assert.matches('^body\nno raise\nERROR violation: err=boom 42', tester.errors[2])
   end)

   it('rejects bad assert arguments', function()
      local t = torch.Tester()
      assert.has_error(function() t:eq(1, 1, -1) end, 'Tester: the tolerance must be >= 0, got -1')
      assert.has_error(function() t:eq(1, 1, 'a', 'b') end, 'Tester: a second message string was given: b')
      assert.has_error(function() t:assertlt(1, 2, 'm', 'extra') end,
         'Tester: Unexpected arguments passed to the assert')
      -- Torch7's words (its own test_Tester.lua matches them), with what was given
      assert.has_error(function() t:assertTensorEq({}, torch.DoubleTensor(1)) end,
         'Tester: First argument should be a Tensor, got table')
      assert.has_error(function() t:assertTensorEq(torch.DoubleTensor(1), math.random()) end,
         'Tester: Second argument should be a Tensor, got number')
      assert.has_error(function() t:assertTableEq(1, {}) end,
         'Tester: First argument should be a Table, got number')
      assert.has_error(function() t:assertTableEq({}, 3) end,
         'Tester: Second argument should be a Table, got number')
   end)
end)

describe('torch.Tester runner and torch.TestSuite', function()
   it('TestSuite refuses a second test of the same name and non-functions', function()
      local s = torch.TestSuite()
      function s.a() end
      assert.has_error(function() s.a = function() end end, 'Test a is already defined.')
      assert.has_error(function() s.b = {} end, 'Nested tables of tests are not supported')
      assert.has_error(function() s.c = 3 end,
         'Only functions are supported as members of a TestSuite, got number for c')
      assert.are.equal('function', type(s.a))
   end)

   it('add: names unique, one setUp/tearDown; disable needs a known test', function()
      local t = torch.Tester()
      t:add(function() end, 'x')
      assert.has_error(function() t:add(function() end, 'x') end, 'Test with name x already exists!')
      assert.has_error(function() t:add(3) end,
         'Tester:add: only functions and tables of functions are supported, got number')
      assert.has_error(function() t:add({}, 'name') end,
         'Tester:add: a name is not allowed with a table of tests (ambiguous)')
      t:add(function() end, '_setUp')
      assert.has_error(function() t:add(function() end, '_setUp') end, 'Tester:add: Only one _setUp function allowed')
      t:add(function() end, '_tearDown')
      assert.has_error(function() t:add(function() end, '_tearDown') end,
         'Tester:add: Only one _tearDown function allowed')
      assert.has_error(function() torch.Tester():add({ { function() end } }) end,
         'Tester:add: Nested sets of tests are not supported (1)')
      assert.has_error(function() t:disable('nope') end, "Tester:disable: unrecognized test 'nope'")
      assert.are.equal(t, t:disable('x'))
   end)

   it('run(names) runs the matching tests in order with setUp/tearDown around each', function()
      local t, log = torch.Tester(), {}
      local s = torch.TestSuite()
      for _, name in ipairs { 'alpha', 'beta', 'alphabet', 'gamma' } do
         s[name] = function() log[#log + 1] = name; t:assert(true) end
      end
      t:add(s)
      t:add(function(n) log[#log + 1] = 'up:' .. n end, '_setUp')
      t:add(function(n) log[#log + 1] = 'down:' .. n end, '_tearDown')
      local ok, err, out = run_captured(t, { '^alpha', 'gamma' })
      assert.is_true(ok, err)
      assert.are.same({ 'up:alpha', 'alpha', 'down:alpha', 'up:alphabet', 'alphabet', 'down:alphabet',
         'up:gamma', 'gamma', 'down:gamma' }, log)
      assert.are.equal(table.concat({
         'Running 3 tests',
         '1/3 alpha ' .. string.rep('.', 80 - 8 - 4 - 5) .. ' [PASS]',
         '2/3 alphabet ' .. string.rep('.', 80 - 8 - 4 - 8) .. ' [PASS]',
         '3/3 gamma ' .. string.rep('.', 80 - 8 - 4 - 5) .. ' [PASS]',
         'Completed 3 asserts in 3 tests with 0 failures and 0 errors', '' }, '\n'), out)
      assert.are.equal(80, #out:match('\n(1/3[^\n]*)'))
      assert.has_error(function() t:run('delta') end, "Tester:run: couldn't find test 'delta'")
   end)

   it('run raises when a test fails or errors; early abort stops; summary-only hides the details', function()
      local function make()
         local t = torch.Tester()
         local s = torch.TestSuite()
         function s.a() t:eq(1, 2) end
         function s.b() error('oops') end
         function s.c() t:eq(1, 1) end
         return t:add(s)
      end
      local ok, err, out = run_captured(make())
      assert.is_false(ok)
      assert.matches('An error was found while running tests!', err)
      assert.matches('Completed 2 asserts in 3 tests with 1 failure and 1 error\n', out, 1, true)
      assert.matches('\nb\n Function call failed\n[^\n]*oops', out)
      assert.matches('%[ERROR%]', out)

      local t = make():setEarlyAbort(true)
      local _
      ok, _, out = run_captured(t)
      assert.is_false(ok)
      assert.matches('Aborting on first error, not all tests have been executed\n', out, 1, true)
      assert.is_nil(out:find('2/3', 1, true))

      ok, _, out = run_captured(make():setSummaryOnly(true))
      assert.is_false(ok)
      assert.is_nil(out:find('----', 1, true))
      assert.is_nil(out:find('EQ failed', 1, true))
   end)

   it('setRethrowErrors lets failures and errors escape the runner', function()
      local t = torch.Tester():setRethrowErrors(true)
      t:add(function() t:eq(1, 2, 'rethrown') end, 'f')
      local ok, err = run_captured(t)
      assert.is_false(ok)
      assert.are.equal('rethrown\nEQ failed: 1 ~= 2', err)
   end)

   it('disabled tests are reported as skipped', function()
      local t = torch.Tester()
      local ran = false
      t:add(function() ran = true end, 'off'):add(function() t:assert(true) end, 'on')
      local ok, err, out = run_captured(t:disable('off'))
      assert.is_true(ok, err)
      assert.is_false(ran)
      assert.matches('1/2 off %.+ %[SKIP%]\n', out)
      assert.matches('Completed 1 assert in 2 tests with 0 failures and 0 errors and 1 disabled\n', out, 1, true)
   end)
end)

describe('Torch7-style test files run unchanged', function()
   it('a passing file: every test PASS, the disabled one SKIP, exit status 0 (bin/moontorch and luajit)', function()
      local seed = math.random(1, 1e6)
      for _, runner in ipairs { 'bin/moontorch', ('luajit -e "%s"'):format(LUA_INIT) } do
         local out, code, err = sh(('%s spec/fixtures/torch7_style_test.lua %d'):format(runner, seed))
         assert.are.equal(0, code, out .. err)
         assert.are.equal('', err)
         local expect = { 'Running 6 tests' }
         for i, name in ipairs { 'tensorArithmetic', 'floatTolerance', 'tables', 'comparisons', 'errors',
            'brokenUpstream' } do
            expect[#expect + 1] = ('%d/6 %s %s %s'):format(i, name, string.rep('.', 80 - 8 - 4 - #name),
               i == 6 and '[SKIP]' or '[PASS]')
         end
         expect[#expect + 1] = 'Completed 24 asserts in 6 tests with 0 failures and 0 errors and 1 disabled'
         expect[#expect + 1] = 'setUp 5 tearDown 5'
         expect[#expect + 1] = ''
         assert.are.equal(table.concat(expect, '\n'), out)
      end
      -- test names on the command line select by pattern
      local out, code = sh(('bin/moontorch spec/fixtures/torch7_style_test.lua %d tables errors'):format(seed))
      assert.are.equal(0, code, out)
      assert.matches('Running 2 tests\n1/2 tables .+\n2/2 errors .+\n'
         .. 'Completed 9 asserts in 2 tests with 0 failures and 0 errors\nsetUp 2 tearDown 2\n$', out)
   end)

   it('a failing file: the counts, the report and a non-zero exit status', function()
      local out, code, err = sh('bin/moontorch spec/fixtures/torch7_style_failing_test.lua all')
      assert.are.equal(1, code, out .. err)
      assert.matches('torch7_style_failing_test%.lua:34: An error was found while running tests!', err)
      local lines = {}
      for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
      assert.are.same({ 'Running 5 tests', '[PASS]', '[FAIL]', '[ERROR]', '[FAIL]', '[PASS]' },
         { lines[1], lines[2]:sub(-6), lines[3]:sub(-6), lines[4]:sub(-7), lines[5]:sub(-6), lines[6]:sub(-6) })
      assert.are.equal('[+warning]', lines[7]:match('%S+'))
      assert.are.equal('Completed 7 asserts in 5 tests with 2 failures and 1 error and 1 warning', lines[8])
      -- one section per failed assert, error and warning
      local _, sections = out:gsub(string.rep('%-', 80) .. '\n', '')
      assert.are.equal(7, sections) -- 6 sections + the opening line
      assert.matches('tensorMismatch\na and b should be equal\nTensorEQ%(==%) violation: max diff=1, tolerance=0\n'
         .. 'stack traceback:\n\tspec/fixtures/torch7_style_failing_test%.lua:13: '
         .. 'in function <spec/fixtures/torch7_style_failing_test%.lua:11>', out)
      assert.matches('raises\n Function call failed\nspec/fixtures/torch7_style_failing_test%.lua:18: attempt to index',
         out)
      assert.matches('LT failed: 3 >= 2', out)
      assert.matches('NaN equals nothing\nEQ failed: %-?nan ~= %-?nan', out)
      assert.matches('types differ\nThe tensors have different types', out)
      assert.is_nil(out:find('not reached', 1, true))

      out, code, err = sh(('luajit -e "%s" spec/fixtures/torch7_style_failing_test.lua abort'):format(LUA_INIT))
      assert.matches('An error was found while running tests!', err)
      assert.are.equal(1, code, out)
      assert.matches('2/5 tensorMismatch %.+ %[FAIL%]\nAborting on first error, not all tests have been executed\n'
         .. 'Completed 3 asserts in 5 tests with 1 failure and 0 errors\n', out)

      out, code = sh('bin/moontorch spec/fixtures/torch7_style_failing_test.lua summary')
      assert.are.equal(1, code, out)
      assert.matches('Completed 7 asserts in 5 tests with 2 failures and 1 error and 1 warning\n$', out)
   end)
end)
