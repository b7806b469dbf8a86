-- torch7_tests_spec.lua: tools/torch7_tests.sh, the runner of Torch7's own test files, on small
-- checkouts made here in Torch7's shapes (the upstream files are not in this repository): a
-- torch7 one (test/test.lua defining torch.test, a file with two testers where the second checks
-- the first) and an nn one (test.lua defining nn.test). Each test must get its own verdict:
-- pass, failed assert, error, timeout; the summary and exit status must follow.
local util = require 'spec.util'

local ROOT = io.popen('pwd'):read('*l')

local function write(path, text)
   local f = assert(io.open(path, 'w'))
   f:write(text)
   f:close()
end

local function run(dir, pattern)
   return util.sh(('T7_TIMEOUT=8 T7_JOBS=2 MOONTORCH_BUILD=%s %s/tools/torch7_tests.sh %s %s 2>&1'):format(
      os.getenv('MOONTORCH_BUILD') or ROOT .. '/build', ROOT, dir, pattern or ''))
end

local function line(out, pattern)
   for l in out:gmatch('[^\n]+') do if l:match(pattern) then return l end end
end

describe('tools/torch7_tests.sh', function()
   it('gives each test of a torch7 checkout its own verdict, and a later tester sees the earlier one run', function()
      local dir = util.tmpdir()
      util.sh('mkdir -p ' .. dir .. '/test')
      write(dir .. '/Tensor.lua', '')
      local n = math.random(3, 9)
      write(dir .. '/test/test.lua', ([[
local torchtest = torch.TestSuite()
local tester
function torchtest.adds()
   local a = torch.rand(%d)
   tester:eq(a + a, a * 2, 1e-12, 'a + a')
   tester:assert(torch.getdefaulttensortype() == 'torch.DoubleTensor', 'DoubleTensor default')
end
function torchtest.fails() tester:assert(torch.rand(%d):sum() < 0, 'a sum of rand is not negative') end
function torchtest.errors() local t = torch.rand(2); return t:nosuchmethod() end
function torchtest.hangs() while true do end end
function torch.test(tests)
   tester = torch.Tester()
   tester:add(torchtest)
   tester:run(tests)
end
]]):format(n, n))
      write(dir .. '/test/test_two.lua', [[
local calls = 0
local first, firstTests = torch.Tester(), torch.TestSuite()
function firstTests.one() calls = calls + 1; first:assert(true) end
function firstTests.two() calls = calls + 1; first:assert(true) end
first:add(firstTests):run()
local second, secondTests = torch.Tester(), torch.TestSuite()
function secondTests.counted() second:eq(calls, 2, 'the first tester ran both tests') end
second:add(secondTests):run()
]])
      local out, rc = run(dir)
      assert.are_not.equal(0, rc)
      assert.truthy(line(out, '^PASS test:adds$'), out)
      assert.truthy(line(out, '^FAIL test:fails .*sum of rand is not negative'), out)
      assert.truthy(line(out, '^FAIL test:errors .*nosuchmethod'), out)
      assert.truthy(line(out, '^TIME test:hangs'), out)
      assert.truthy(line(out, '^PASS test_two:one$'), out)
      assert.truthy(line(out, '^PASS test_two:counted@2$'), out)
      assert.truthy(line(out, '^summary: 4 of 7 passed'), out)
      -- a pattern picks tests; all passing gives exit status 0
      out, rc = run(dir, "'adds|counted'")
      assert.are.equal(0, rc, out)
      assert.truthy(line(out, '^summary: 2 of 2 passed %(100.0%%%)'), out)
   end)

   it("runs an nn checkout's test.lua through nn.test, seeded from the clock as nn does", function()
      local dir = util.tmpdir()
      write(dir .. '/Module.lua', '')
      write(dir .. '/test.lua', [[
local mytester = torch.Tester()
local nntest = torch.TestSuite()
function nntest.Linear()
   local m = nn.Linear(3, 2)
   local err = nn.Jacobian.testJacobian(m, torch.rand(4, 3))
   mytester:assertlt(err, 1e-5, 'Linear gradient')
end
function nntest.Broken() mytester:eq(nn.Linear(3, 2):forward(torch.rand(3)):size(1), 3, 'output size') end
mytester:add(nntest)
function nn.test(tests, seed)
   seed = seed or (1e5 * torch.tic())
   torch.manualSeed(seed)
   mytester:run(tests)
end
]])
      local out, rc = run(dir)
      assert.are_not.equal(0, rc)
      assert.truthy(line(out, '^PASS test:Linear$'), out)
      assert.truthy(line(out, '^FAIL test:Broken .*output size'), out)
      assert.truthy(line(out, '^summary: 1 of 2 passed'), out)
   end)

   it('refuses a folder that is neither checkout, naming it', function()
      local dir = util.tmpdir()
      local out, rc = run(dir)
      assert.are.equal(2, rc)
      assert.truthy(out:find(dir, 1, true) and out:find('neither a torch7 checkout', 1, true), out)
   end)
end)
