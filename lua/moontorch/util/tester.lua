-- tester.lua: torch.Tester and torch.TestSuite, Torch7's unit-test framework (tester.md).
--   local tests, tester = torch.TestSuite(), torch.Tester()
--   function tests.add() tester:eq(torch.DoubleTensor{1, 2} + 1, torch.DoubleTensor{2, 3}, 1e-12, 'add') end
--   tester:add(tests):run()          -- prints progress and a summary; raises an error on any failure
-- Tests run in the order they were added (a plain table's in name order), where Torch7 used
-- pairs() order. The [WAIT] marker before each result is only drawn on a terminal.
local ffi = require 'ffi'
local class = require 'moontorch.class'
pcall(ffi.cdef, 'int isatty(int);')

local NCOLS = 80
local THIS = debug.getinfo(1, 'S').source

-- Output goes through io.write, looked up at each call (a test may capture it).
local io_write = io.write
local function write(...) io.write(...) end
local function flush() io.stdout:flush() end
local function plural(n, word) return n .. ' ' .. word .. (n == 1 and '' or 's') end

-- Where the failing assert was called: the first frame outside this file.
local function location()
   for level = 3, 40 do
      local info = debug.getinfo(level, 'Sln')
      if not info then break end
      if info.source ~= THIS and info.what ~= 'C' and not info.source:match('tester_check%.lua$') then
         local fn = info.what == 'main' and 'main chunk'
            or ('function <%s:%d>'):format(info.short_src, info.linedefined)
         return ('stack traceback:\n\t%s:%d: in %s\n'):format(info.short_src, info.currentline, fn)
      end
   end
   return ''
end

-- An assert's optional message (a string; no other arguments).
local function get_message(message, ...)
   if select('#', ...) > 0 then error('Tester: Unexpected arguments passed to the assert', 3) end
   if message == nil or message == '' then return '' end
   if type(message) ~= 'string' then error('Tester: the message must be a string, got ' .. type(message), 3) end
   return message .. '\n'
end

-- Tolerance and message, in either order (Torch7 accepted both).
local function get_tolerance_message(default, ...)
   local tolerance, message
   for i = 1, select('#', ...) do
      local a = select(i, ...)
      if type(a) == 'string' then
         if message then error('Tester: a second message string was given: ' .. a, 3) end
         message = a .. '\n'
      elseif type(a) == 'number' then
         if tolerance then error('Tester: a second tolerance was given: ' .. a, 3) end
         if not (a >= 0) then -- luacheck: ignore 581 (rejects NaN)
            error('Tester: the tolerance must be >= 0, got ' .. tostring(a), 3)
         end
         tolerance = a
      elseif a ~= nil then
         error('Tester: expected a tolerance (number) or a message (string), got ' .. type(a), 3)
      end
   end
   return tolerance or default, message or ''
end

return function(torch, T)
   local check = require('moontorch.util.tester_check')(torch, T)
   local Tester = class('torch.Tester', nil, torch)

   function Tester:__init()
      self.errors, self.warnings = {}, {}
      self.tests, self.order = {}, {}   -- name -> function; names in the order added
      self.disabledTests = {}
      self._warningCount = {}
      self._currentTestName = ''
      -- assertTensorEq lets {{1}} equal {1} (with a warning), as Torch7 did for old tests; eq does not
      self._assertTensorEqIgnoresDims = true
   end

   function Tester:setEarlyAbort(v) self.earlyAbort = v; return self end
   function Tester:setRethrowErrors(v) self.rethrow = v; return self end
   function Tester:setSummaryOnly(v) self.summaryOnly = v; return self end

   local function debug_info(self, message)
      local name = self._currentTestName
      return (name ~= '' and name .. '\n' or '') .. message .. '\n' .. location()
   end

   function Tester:_success()
      local name = self._currentTestName
      if self.assertionPass and self.assertionPass[name] then
         self.assertionPass[name] = self.assertionPass[name] + 1
      end
      return true
   end

   function Tester:_failure(message)
      if self.rethrow then error(message, 0) end
      local name = self._currentTestName
      if self.assertionFail and self.assertionFail[name] then
         self.assertionFail[name] = self.assertionFail[name] + 1
      end
      self.errors[#self.errors + 1] = debug_info(self, message)
      return false
   end

   function Tester:_warning(message)
      local name = self._currentTestName
      self._warningCount[name] = (self._warningCount[name] or 0) + 1
      self.warnings[#self.warnings + 1] = { name = name, text = debug_info(self, message) }
   end

   function Tester:_assert_sub(ok, message)
      if ok then return self:_success() end
      return self:_failure(message)
   end

   ------------------------------------------------------------------------------------------
   -- asserts: each returns whether it passed
   function Tester:assert(condition, ...)
      local message = get_message(...)
      if type(condition) ~= 'boolean' then
         self:_warning(' :assert should only be used for boolean conditions. To check for non-nil variables, '
            .. 'do this explicitly: Tester:assert(var ~= nil).')
      end
      return self:_assert_sub(condition, ('%sBOOL violation condition=%s'):format(message, tostring(condition)))
   end

   local function eq_or_ne(self, got, expected, negate, ...)
      local tolerance, message = get_tolerance_message(0, ...)
      local ok, sub = check.eq(got, expected, tolerance, negate)
      return self:_assert_sub(ok, message .. (sub or ''))
   end
   function Tester:assertGeneralEq(got, expected, ...) return eq_or_ne(self, got, expected, false, ...) end
   function Tester:assertGeneralNe(got, unexpected, ...) return eq_or_ne(self, got, unexpected, true, ...) end
   Tester.eq, Tester.ne = Tester.assertGeneralEq, Tester.assertGeneralNe

   local function compare(name, op, sym)
      Tester[name] = function(self, a, b, ...)
         local message = get_message(...)
         return self:_assert_sub(op(a, b),
            ('%s%s failed: %s %s %s'):format(message, name:sub(7):upper(), tostring(a), sym, tostring(b)))
      end
   end
   compare('assertlt', function(a, b) return a < b end, '>=')
   compare('assertgt', function(a, b) return a > b end, '<=')
   compare('assertle', function(a, b) return a <= b end, '>')
   compare('assertge', function(a, b) return a >= b end, '<')

   function Tester:asserteq(a, b, ...)
      local message = get_message(...)
      return self:_assert_sub(a == b, ('%sEQ failed: %s ~= %s'):format(message, tostring(a), tostring(b)))
   end

   function Tester:assertne(a, b, ...)
      local message = get_message(...)
      if type(a) == type(b) and (type(a) == 'table' or type(a) == 'userdata' or type(a) == 'cdata') then
         self:_warning(' :assertne should only be used to compare basic lua objects (numbers, booleans, etc). '
            .. 'Consider using either :assertGeneralNe or :assert(a ~= b).')
      end
      return self:_assert_sub(a ~= b, ('%sNE failed: %s == %s'):format(message, tostring(a), tostring(b)))
   end

   function Tester:assertalmosteq(a, b, ...)
      local tolerance, message = get_tolerance_message(1e-16, ...)
      local ok = a == b or math.abs(a - b) <= tolerance
      return self:_assert_sub(ok, ('%sALMOST_EQ failed: %s ~= %s with tolerance=%s'):format(
         message, tostring(a), tostring(b), tostring(tolerance)))
   end

   local function tensor_eq_or_ne(self, ta, tb, negate, ...)
      if not T.is_tensor(ta) then error('Tester: First argument should be a Tensor, got ' .. torch.type(ta), 3) end
      if not T.is_tensor(tb) then error('Tester: Second argument should be a Tensor, got ' .. torch.type(tb), 3) end
      local tolerance, message = get_tolerance_message(1e-16, ...)
      local ignore = self._assertTensorEqIgnoresDims
      local ok, sub = check.tensors(ta, tb, tolerance, negate, ignore)
      if ignore and ok and not negate and not ta:isSameSizeAs(tb) then
         self:_warning('Tensors have the same content but different dimensions. For backwards compatibility, '
            .. 'they are considered equal, but this may change in the future. '
            .. 'Consider using :eq to check for equality instead.')
      end
      return self:_assert_sub(ok, message .. (sub or ''))
   end
   function Tester:assertTensorEq(ta, tb, ...) return tensor_eq_or_ne(self, ta, tb, false, ...) end
   function Tester:assertTensorNe(ta, tb, ...) return tensor_eq_or_ne(self, ta, tb, true, ...) end

   local function table_eq_or_ne(self, ta, tb, negate, ...)
      if type(ta) ~= 'table' then error('Tester: First argument should be a Table, got ' .. torch.type(ta), 3) end
      if type(tb) ~= 'table' then error('Tester: Second argument should be a Table, got ' .. torch.type(tb), 3) end
      return eq_or_ne(self, ta, tb, negate, ...)
   end
   function Tester:assertTableEq(ta, tb, ...) return table_eq_or_ne(self, ta, tb, false, ...) end
   function Tester:assertTableNe(ta, tb, ...) return table_eq_or_ne(self, ta, tb, true, ...) end

   function Tester:assertErrorObj(f, errcomp, ...)
      local message = get_message(...)
      local ok, err = pcall(f)
      return self:_assert_sub(not ok and not not errcomp(err),
         ('%sERROR violation: err=%s'):format(message, tostring(err)))
   end
   function Tester:assertError(f, ...) return self:assertErrorObj(f, function() return true end, ...) end
   function Tester:assertErrorMsg(f, errmsg, ...)
      return self:assertErrorObj(f, function(err) return err == errmsg end, ...)
   end
   function Tester:assertErrorPattern(f, pattern, ...)
      return self:assertErrorObj(f, function(err) return type(err) == 'string' and err:find(pattern) ~= nil end, ...)
   end
   function Tester:assertNoError(f, ...)
      local message = get_message(...)
      local ok, err = pcall(f)
      return self:_assert_sub(ok, ('%sERROR violation: err=%s'):format(message, tostring(err)))
   end

   ------------------------------------------------------------------------------------------
   -- adding and running tests

   -- add(function, name) or add(table of functions); '_setUp' and '_tearDown' run around each test.
   function Tester:add(f, name)
      if type(f) == 'table' then
         if name ~= nil then error('Tester:add: a name is not allowed with a table of tests (ambiguous)', 2) end
         local names
         if rawget(f, '__isTestSuite') then
            names = rawget(f, '__order')
            f = rawget(f, '__tests')
         else
            self:_warning('Should use TestSuite rather than plain lua table')
            names = {}
            for k in pairs(f) do names[#names + 1] = k end
            table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
         end
         for _, k in ipairs(names) do
            if type(f[k]) == 'table' then
               error('Tester:add: Nested sets of tests are not supported (' .. tostring(k) .. ')', 2)
            end
            self:add(f[k], k)
         end
         return self
      end
      if type(f) ~= 'function' then
         error('Tester:add: only functions and tables of functions are supported, got ' .. type(f), 2)
      end
      if name == '_setUp' or name == '_tearDown' then
         if self[name] then error('Tester:add: Only one ' .. name .. ' function allowed', 2) end
         self[name] = f
         return self
      end
      name = name or 'unknown'
      if self.tests[name] ~= nil then error('Test with name ' .. tostring(name) .. ' already exists!', 2) end
      self.tests[name] = f
      self.order[#self.order + 1] = name
      return self
   end

   function Tester:disable(names)
      if type(names) == 'string' then names = { names } end
      if type(names) ~= 'table' then
         error('Tester:disable: expected a test name or a list of names, got ' .. type(names), 2)
      end
      for _, name in ipairs(names) do
         if not self.tests[name] then error("Tester:disable: unrecognized test '" .. tostring(name) .. "'", 2) end
         self.disabledTests[name] = true
      end
      return self
   end

   -- The names to run, in order: all, or those matching any of the patterns (string.match).
   function Tester:_getTests(patterns)
      if patterns == nil then return { unpack(self.order) } end
      if type(patterns) == 'string' then patterns = { patterns } end
      if type(patterns) ~= 'table' then
         error('Tester:run: expected a test name or a list of names (or nil for all tests), got ' .. type(patterns), 3)
      end
      local chosen = {}
      for _, p in ipairs(patterns) do
         local found = false
         for _, name in ipairs(self.order) do
            if tostring(name):match(p) then chosen[name], found = true, true end
         end
         if not found then error("Tester:run: couldn't find test '" .. tostring(p) .. "'", 3) end
      end
      local names = {}
      for _, name in ipairs(self.order) do if chosen[name] then names[#names + 1] = name end end
      return names
   end

   function Tester:_pcall(f)
      local nerr = #self.errors
      local ok, result = xpcall(f, debug.traceback)
      if not ok then
         result = tostring(result):gsub('\n[^\n]*in function \'xpcall\'.*$', '') -- the tester's own frames
         self.errors[#self.errors + 1] = self._currentTestName .. '\n Function call failed\n' .. result .. '\n'
      end
      return ok, ok and nerr == #self.errors
   end

   function Tester:_run(names)
      local n = #names
      local w = #tostring(n)
      local numlen = 2 * w + 2
      local tty = io.write == io_write and ffi.C.isatty(1) == 1
      write('Running ' .. plural(n, 'test') .. '\n')
      for i, name in ipairs(names) do
         self._currentTestName = name
         local sname = tostring(name)
         local head = ('%' .. w .. 'd/%d '):format(i, n) .. sname .. ' '
            .. string.rep('.', NCOLS - 8 - numlen - #sname) .. ' '
         if tty then write(head, '[WAIT]'); flush() end
         local skip, ok, pass = self.disabledTests[name], true, true
         if not skip then
            if self._setUp then self._setUp(name) end
            if self.rethrow then
               local nerr = #self.errors
               self.tests[name]()
               pass = nerr == #self.errors
            else
               ok, pass = self:_pcall(self.tests[name])
            end
            if self._tearDown then self._tearDown(name) end
         end
         if tty then write('\r') end
         write(head)
         if skip then write('[SKIP]')
         elseif not ok then self.testError[name] = 1; write('[ERROR]')
         elseif not pass then write('[FAIL]')
         else
            write('[PASS]')
            if self._warningCount[name] > 0 then write('\n' .. string.rep(' ', NCOLS - 10) .. '[+warning]') end
         end
         write('\n')
         flush()
         if self.earlyAbort and i < n and not skip and not (ok and pass) then
            write('Aborting on first error, not all tests have been executed\n')
            break
         end
         collectgarbage()
      end
      self._currentTestName = ''
   end

   function Tester:_report(names)
      local ntests, nfail, nerr, nskip, nwarn, nasserts = #names, 0, 0, 0, 0, 0
      for _, name in ipairs(names) do
         nasserts = nasserts + self.assertionPass[name] + self.assertionFail[name]
         if self.assertionFail[name] > 0 then nfail = nfail + 1 end
         if self.testError[name] > 0 then nerr = nerr + 1 end
         if self._warningCount[name] > 0 then nwarn = nwarn + 1 end
         if self.disabledTests[name] then nskip = nskip + 1 end
      end
      nwarn = nwarn + (self._warningCount[''] or 0)
      self.countasserts = nasserts
      write('Completed ', plural(nasserts, 'assert'), ' in ', plural(ntests, 'test'), ' with ',
         plural(nfail, 'failure'), ' and ', plural(nerr, 'error'))
      if nwarn > 0 then write(' and ', plural(nwarn, 'warning')) end
      if nskip > 0 then write(' and ', nskip .. ' disabled') end
      write('\n')
      if self.summaryOnly then return end
      local dashes = string.rep('-', NCOLS) .. '\n'
      local first = true
      local function section(text)
         if first then write(dashes); first = false end
         write(text, '\n', dashes)
      end
      for _, e in ipairs(self.errors) do section(e) end
      for _, wng in ipairs(self.warnings) do section(wng.text) end
   end

   -- Runs the tests (all, or those matching testNames), prints the report, and raises an error
   -- when any failed or raised one, so a test script exits non-zero. Returns 0.
   function Tester:run(testNames)
      local names = self:_getTests(testNames)
      self.errors = {}
      local kept = {} -- warnings from add() stay; those of an earlier run go
      for _, wng in ipairs(self.warnings) do if wng.name == '' then kept[#kept + 1] = wng end end
      self.warnings = kept
      self.assertionPass, self.assertionFail, self.testError = {}, {}, {}
      for _, name in ipairs(names) do
         self.assertionPass[name], self.assertionFail[name], self.testError[name] = 0, 0, 0
         self._warningCount[name] = 0
      end
      self:_run(names)
      self:_report(names)
      for _, name in ipairs(names) do
         if self.assertionFail[name] > 0 or self.testError[name] > 0 then
            error('An error was found while running tests!', 2)
         end
      end
      return 0
   end

   ------------------------------------------------------------------------------------------
   -- A table of tests that refuses a second test of the same name.
   function torch.TestSuite()
      local tests, order = {}, {}
      return setmetatable({ __isTestSuite = true, __tests = tests, __order = order }, {
         __index = function(_, k) return tests[k] end,
         __newindex = function(_, k, v)
            if tests[k] ~= nil then error('Test ' .. tostring(k) .. ' is already defined.', 2) end
            if type(v) ~= 'function' then
               if type(v) == 'table' then error('Nested tables of tests are not supported', 2) end
               error('Only functions are supported as members of a TestSuite, got ' .. type(v) .. ' for '
                  .. tostring(k), 2)
            end
            tests[k] = v
            order[#order + 1] = k
         end,
      })
   end
end
