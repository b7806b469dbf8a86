-- torch7_tests.lua: runs Torch7's own test files (torch7/test/*.lua, nn/test.lua) against moontorch,
-- unchanged: `require 'torch'` and `require 'nn'` give moontorch, DoubleTensor is the default type.
--   luajit tools/torch7_tests.lua FILE list        -- the test names in FILE, one per line
--   luajit tools/torch7_tests.lua FILE run NAME    -- runs NAME alone; exit 0 when it passed
-- tools/torch7_tests.sh drives it, one process per test. Two adaptations, both to moontorch's packaging, not
-- to what a test checks: `paths` is a global, as Torch7's `require 'torch'` left it, and test_writeObject.lua,
-- which reads back the closures it wrote, is opted into loading code (moontorch refuses it unless asked).
-- nn's NaN and DontCast tests need the moses package (Debian: lua-moses); they were written for moses 1.x,
-- whose map passes (key, value), and Debian's moses 2 passes (value, key): the runner gives them 1.x's order.
local file, mode, only = arg[1], arg[2], arg[3]
if not file or (mode ~= 'list' and mode ~= 'run') or (mode == 'run' and not only) then
   io.stderr:write('usage: luajit tools/torch7_tests.lua FILE list | FILE run NAME\n')
   os.exit(2)
end

local torch = require 'moontorch'
_G.torch = torch
package.loaded.torch = torch
local nn = require 'moontorch.nn'
_G.nn = nn
package.preload.nn = function() return nn end
torch.setdefaulttensortype('torch.DoubleTensor')
_G.paths = require 'moontorch.io.paths'
package.preload.moses = function()
   local moses = dofile(assert(package.searchpath('moses', package.path)))
   if moses.map({ 'v' }, function(first) return first end)[1] == 'v' then -- moses 2: (value, key)
      local map = moses.map
      moses.map = function(t, f, ...) return map(t, function(v, k, ...) return f(k, v, ...) end, ...) end
   end
   return moses
end
if file:match('test_writeObject%.lua$') then
   local readObject = torch.File.readObject
   torch.File.readObject = function(self, options) return readObject(self, options or { allowCode = true }) end
end

-- Upstream files call tester:run() themselves, or define torch.test / nn.test for the user to call.
-- Each top-level run is replaced: list prints the names, run runs the one test asked for.
local Tester = torch.Tester
local original_run = Tester.run
-- A file may run several testers (test_Tester.lua does); a test of the k-th top-level run, k > 1,
-- is named NAME@k; the testers before it then run whole, since a later tester may check what an
-- earlier one did (test_Tester.lua's postTester counts the set-up calls of the first).
local depth, runs, found, passed = 0, 0, false, true
local want_run = 1
if mode == 'run' and only:match('@%d+$') then
   only, want_run = only:match('^(.*)@(%d+)$')
   want_run = tonumber(want_run)
end
local function escape(s) return (s:gsub('[%^%$%(%)%%%.%[%]%*%+%-%?]', '%%%0')) end
function Tester:run(names)
   if depth > 0 then return original_run(self, names) end -- a tester run by a test
   runs = runs + 1
   if mode == 'list' then
      local suffix = runs > 1 and '@' .. runs or ''
      for _, name in ipairs(self.order) do print('TEST\t' .. tostring(name) .. suffix) end
      return self
   end
   if runs < want_run then
      depth = depth + 1
      pcall(original_run, self)
      depth = depth - 1
      return self
   end
   if runs ~= want_run or self.tests[only] == nil then return self end
   found = true
   depth = depth + 1
   local before = #self.errors
   local ok, err = pcall(original_run, self, { '^' .. escape(only) .. '$' })
   depth = depth - 1
   if #self.errors > before or ((self.testError or {})[only] or 0) ~= 0 then passed = false end
   if not ok and passed then passed = false; print(err) end
   return self
end

local defined = { torch = torch.test, nn = nn.test }
local chunk = assert(loadfile(file))
local ok, err = xpcall(chunk, debug.traceback)
if not ok then
   print('loading ' .. file .. ' failed: ' .. tostring(err))
   os.exit(3)
end
-- test.lua files define a runner instead of running: call it as `th -e "torch.test()"` would.
if torch.test ~= defined.torch then torch.test(mode == 'run' and { only } or nil)
elseif nn.test ~= defined.nn then nn.test(mode == 'run' and { only } or nil) end
if mode == 'run' then
   if not found then print('no test named ' .. only); os.exit(4) end
   os.exit(passed and 0 or 1)
end
