-- repl_spec.lua: the moontorch command. The REPL is driven through a real pseudo-terminal like
-- a person at a keyboard (posix_openpt + fork + exec of bin/moontorch, keystrokes written to
-- the master side, the screen read back with poll); also piped stdin, -e, scripts, and the
-- pure-Lua pieces (pretty printer, completion, help) in-process.
local ffi = require 'ffi'
local torch = require 'moontorch'
require 'spec.util' -- seeds math.random afresh each run (the seed is printed for replays)
local repl = require 'moontorch.repl'
local methods = require('moontorch.internal').tensor_methods
local helpdb = require 'moontorch.repl.help'
local nn, optim = require 'moontorch.nn', require 'moontorch.optim' -- their help is looked up below
repl.load_torch()

---------------------------------------------------------------------------------------------
-- a pseudo-terminal running a child process

local function cdef(s) pcall(ffi.cdef, s) end
cdef 'int posix_openpt(int flags);'
cdef 'int grantpt(int fd);'
cdef 'int unlockpt(int fd);'
cdef 'char *ptsname(int fd);'
cdef 'int open(const char *path, int flags, ...);'
cdef 'int close(int fd);'
cdef 'int fork(void);'
cdef 'int setsid(void);'
cdef 'int dup2(int a, int b);'
cdef 'int execv(const char *path, char *const argv[]);'
cdef 'void _exit(int status);'
cdef 'long read(int fd, void *buf, unsigned long n);'
cdef 'long write(int fd, const void *buf, unsigned long n);'
cdef 'struct pollfd { int fd; short events; short revents; };'
cdef 'int poll(struct pollfd *fds, unsigned long nfds, int timeout);'
cdef 'int waitpid(int pid, int *status, int options);'
cdef 'int kill(int pid, int sig);'
cdef 'int setenv(const char *name, const char *value, int overwrite);'
cdef 'int unsetenv(const char *name);'
cdef 'struct winsize { unsigned short ws_row, ws_col, ws_xpixel, ws_ypixel; };'
cdef 'int ioctl(int fd, unsigned long request, ...);'
local C = ffi.C
local O_RDWR, O_NOCTTY, TIOCSWINSZ, WNOHANG, SIGKILL = 2, 0x100, 0x5414, 1, 9
local TIMEOUT = 30 -- seconds to wait for expected output (the CI machine may be busy)

local ROOT = assert(io.popen('pwd')):read('*l')
local BIN = ROOT .. '/bin/moontorch'

local Pty = {}
Pty.__index = Pty

-- Start argv[1] (a path) on a new terminal; env: name -> value, or false to unset.
function Pty.spawn(argv, env)
   local m = C.posix_openpt(O_RDWR + O_NOCTTY)
   assert(m >= 0, 'posix_openpt failed')
   assert(C.grantpt(m) == 0 and C.unlockpt(m) == 0, 'grantpt/unlockpt failed')
   local slave = ffi.string(C.ptsname(m))
   C.ioctl(m, TIOCSWINSZ, ffi.new('struct winsize', 40, 200, 0, 0)) -- wide: no line wrapping
   -- everything the child needs is built before fork: it only makes system calls
   local keep, cargv = {}, ffi.new('char *[?]', #argv + 1)
   for i, a in ipairs(argv) do
      keep[i] = ffi.new('char[?]', #a + 1, a)
      cargv[i - 1] = keep[i]
   end
   local cslave = ffi.new('char[?]', #slave + 1, slave)
   local envl = {}
   for k, v in pairs(env or {}) do envl[#envl + 1] = { k, v } end
   local pid = C.fork()
   if pid == 0 then
      pcall(function()
         C.setsid() -- new session: the terminal opened next becomes the controlling one
         local s = C.open(cslave, O_RDWR)
         if s < 0 then return end
         C.dup2(s, 0)
         C.dup2(s, 1)
         C.dup2(s, 2)
         if s > 2 then C.close(s) end
         C.close(m)
         for _, kv in ipairs(envl) do
            if kv[2] == false then C.unsetenv(kv[1]) else C.setenv(kv[1], kv[2], 1) end
         end
         C.execv(cargv[0], cargv)
      end)
      C._exit(127) -- never return into busted in the child
   end
   assert(pid > 0, 'fork failed')
   return setmetatable({ fd = m, pid = pid, raw = '', mark = 1, keep = keep, fds = ffi.new('struct pollfd[1]'),
      buf = ffi.new('char[4096]') }, Pty)
end

-- Read what the terminal shows, waiting up to ms. Returns false at end of output.
function Pty:pump(ms)
   self.fds[0].fd, self.fds[0].events = self.fd, 1
   if C.poll(self.fds, 1, ms) > 0 then
      local n = C.read(self.fd, self.buf, 4096)
      if n <= 0 then return false end
      self.raw = self.raw .. ffi.string(self.buf, n)
   end
   return true
end

-- The screen text without carriage returns, bells and terminal control sequences.
local function clean(s)
   return (s:gsub('\27%[[%d;?]*%a', ''):gsub('[%z\1-\8\11-\31]', ''))
end

-- Everything shown so far (cleaned).
function Pty:screen() return clean(self.raw) end

-- Wait until `text` appears after the previous match; moves past it. Returns true, or false
-- on timeout / exit.
function Pty:expect(text)
   local t0 = os.time()
   while true do
      local s = clean(self.raw)
      local _, j = s:find(text, self.mark, true)
      if j then
         self.mark = j + 1
         return true
      end
      if not self:pump(100) or os.time() - t0 > TIMEOUT then return false end
   end
end

function Pty:send(keys) C.write(self.fd, keys, #keys) end

-- Let output settle for ms (used where nothing specific is expected).
function Pty:settle(ms)
   for _ = 1, ms / 50 do self:pump(50) end
end

-- Wait for the process to end; returns its exit status (nil if it had to be killed).
function Pty:wait()
   local st = ffi.new('int[1]')
   local t0 = os.time()
   while os.time() - t0 <= TIMEOUT do
      self:pump(50)
      if C.waitpid(self.pid, st, WNOHANG) == self.pid then
         C.close(self.fd)
         if bit.band(st[0], 0x7f) ~= 0 then return nil end
         return bit.band(bit.rshift(st[0], 8), 0xff)
      end
   end
   C.kill(self.pid, SIGKILL)
   C.waitpid(self.pid, st, 0)
   C.close(self.fd)
   return nil
end

local made = {} -- temporary directories, removed when the file's tests are done
local function tmpdir()
   local d = os.tmpname()
   os.remove(d)
   os.execute("mkdir -p '" .. d .. "'")
   made[#made + 1] = d
   return d
end
teardown(function()
   for _, d in ipairs(made) do os.execute("rm -rf '" .. d .. "'") end
end)

local function readfile(path)
   local f = io.open(path, 'rb')
   if not f then return nil end
   local s = f:read('*a')
   f:close()
   return s
end

local function writefile(path, s)
   local f = assert(io.open(path, 'wb'))
   f:write(s)
   f:close()
end

-- A REPL on a fresh terminal with HOME in a new temporary directory (history goes there).
local function start(extra_env)
   local home = tmpdir()
   local env = { HOME = home, TERM = 'dumb', MOONTORCH_HISTORY = false, MOONTORCH_HISTSIZE = false }
   for k, v in pairs(extra_env or {}) do env[k] = v end
   local p = Pty.spawn({ BIN }, env)
   p.home = home
   return p
end

-- assert with the screen in the message, so a failure shows what the terminal showed
local function see(p, text, what)
   assert(p:expect(text), ('%s: expected %q on the screen; it shows:\n%s'):format(what or 'repl', text, p:screen()))
end

-- Run a shell command; returns stdout, stderr, exit status.
local function sh(cmd, stdin)
   local dir = tmpdir()
   local inp = ''
   if stdin then
      writefile(dir .. '/in', stdin)
      inp = " < '" .. dir .. "/in'"
   end
   local f = assert(io.popen(cmd .. inp .. " 2>'" .. dir .. "/err'; echo \"<rc=$?>\""))
   local out = f:read('*a')
   f:close()
   local rc = tonumber(out:match('<rc=(%d+)>%s*$'))
   out = out:gsub('<rc=%d+>%s*$', '')
   local err = readfile(dir .. '/err') or ''
   os.execute("rm -rf '" .. dir .. "'")
   return out, err, rc
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

---------------------------------------------------------------------------------------------

describe('moontorch REPL on a terminal', function()
   it('shows the banner, evaluates expressions and keeps history', function()
      local p = start()
      see(p, 'moontorch ' .. torch.version, 'banner')
      see(p, 'CUDA:', 'banner')
      see(p, '> ')
      local a, b = math.random(100, 999), math.random(100, 999)
      p:send(('%d+%d\r'):format(a, b))
      see(p, '\n' .. (a + b) .. '\n', 'sum of two numbers')
      see(p, '> ')
      -- statement, then the value back; several values print side by side
      local s = ('k%d'):format(math.random(1e6))
      p:send(('v = "%s"\r'):format(s))
      see(p, '> ')
      p:send(('=v, %d, nil\r'):format(a))
      see(p, '\n' .. s .. '\t' .. a .. '\tnil\n', '=expr shorthand')
      see(p, '> ')
      p:send('\4') -- Ctrl-D quits
      assert.are.equal(0, p:wait())
      local hist = readfile(p.home .. '/.moontorch_history')
      assert(hist, 'no history file in HOME after Ctrl-D')
      assert.truthy(hist:find(('%d+%d'):format(a, b), 1, true), 'history lacks the first line: ' .. hist)
      assert.truthy(hist:find(('=v, %d, nil'):format(a), 1, true), 'history lacks the last line: ' .. hist)
   end)

   it('reads a multi-line chunk with a continuation prompt', function()
      local p = start()
      see(p, '> ')
      local n, k = math.random(3, 6), math.random(2, 9)
      p:send(('for i = 1, %d do\r'):format(n))
      see(p, '>> ', 'continuation prompt')
      p:send(('  io.write("<", i * %d, ">")\r'):format(k))
      see(p, '>> ')
      p:send('end\r')
      local want = {}
      for i = 1, n do want[i] = '<' .. i * k .. '>' end
      see(p, table.concat(want), 'loop output')
      see(p, '> ')
      -- an expression across lines
      p:send('math.max(\r')
      see(p, '>> ')
      p:send(('%d, %d)\r'):format(n, k))
      see(p, '\n' .. math.max(n, k) .. '\n', 'multi-line expression')
      see(p, '> ') -- keys typed before the prompt may meet the terminal in its cooked mode
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('prints an error as its message, the traceback on request, and keeps running', function()
      local p = start()
      see(p, '> ')
      p:send('traceback\r')
      see(p, 'traceback: no error so far', 'traceback before any error')
      see(p, '> ')
      local tag = 'oops' .. math.random(1e6)
      p:send(('local function f() error("%s") end f()\r'):format(tag))
      local from = p.mark
      see(p, 'stdin:1: ' .. tag, 'error message')
      see(p, '> ')
      local shown = p:screen():sub(from, p.mark)
      assert.falsy(shown:find('stack traceback', 1, true), 'an error printed its traceback:\n' .. shown)
      p:send('traceback\r')
      see(p, 'stdin:1: ' .. tag, 'traceback command: the message')
      see(p, 'stack traceback:', 'traceback command')
      see(p, "in function 'f'", 'traceback frame')
      see(p, '> ')
      p:send('1 +* 2\r') -- a syntax error
      see(p, 'stdin:1:', 'syntax error')
      see(p, '> ')
      p:send('torch.Tensor(2):size(5)\r') -- a library error names the op and sizes
      see(p, 'size: dimension 5 out of range', 'library error')
      see(p, '> ')
      local a = math.random(10, 99)
      p:send(('%d*2\r'):format(a))
      see(p, '\n' .. a * 2 .. '\n', 'still running after errors')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('completes fields, tensor methods and globals with TAB', function()
      local p = start()
      see(p, '> ')
      -- readline inserts the longest common prefix of the candidates
      local function common(prefix, keys)
         local c
         for k in pairs(keys) do
            if type(k) == 'string' and k:sub(1, #prefix) == prefix then
               if not c then
                  c = k
               else
                  local i = 0
                  while i < #c and c:sub(i + 1, i + 1) == k:sub(i + 1, i + 1) do i = i + 1 end
                  c = c:sub(1, i)
               end
            end
         end
         return c
      end
      local r, c = math.random(2, 9), math.random(2, 9)
      local got = common('zer', torch)
      assert.truthy(got and ('zeros'):sub(1, #got) == got)
      p:send('torch.zer\t')
      see(p, 'torch.' .. got, 'completed field')
      p:send(('zeros'):sub(#got + 1) .. ('(%d, %d):size(1)\r'):format(r, c))
      see(p, '\n' .. r .. '\n', 'the completed call runs')
      see(p, '> ')
      p:send(('t = torch.Tensor(%d, %d)\r'):format(r, c))
      see(p, '> ')
      got = common('siz', methods)
      assert.are.equal('size', got)
      p:send('t:siz\t')
      see(p, 't:size', 'completed tensor method')
      p:send('(2)\r')
      see(p, '\n' .. c .. '\n', 't:size(2) after completion')
      see(p, '> ')
      local name = 'myvar' .. math.random(1e6)
      p:send(name .. ' = {alpha = 1, beta = 2}\r')
      see(p, '> ')
      p:send(name:sub(1, 6) .. '\t.al\t\r')
      see(p, name .. '.alpha', 'completed global then field')
      see(p, '\n1\n', 'value of the completed field')
      see(p, '> ')
      -- inside a string literal TAB completes file names
      local dir = tmpdir()
      local fname = ('data_%d.t7'):format(math.random(1e6))
      writefile(dir .. '/' .. fname, 'x')
      p:send(('f = "%s/da\t\r'):format(dir))
      see(p, dir .. '/' .. fname, 'completed file name')
      see(p, '> ')
      p:send('#f\r')
      see(p, '\n' .. #(dir .. '/' .. fname) .. '\n', 'the completed string')
      see(p, '> ')
      -- several candidates: TAB inserts the common prefix, further TABs list them
      p:send('torch.ze\t\t\t')
      see(p, 'zerosLike', 'list of candidates')
      -- wait for the line to be redrawn under the list: a Ctrl-C that arrives earlier makes the
      -- terminal flush its input queue, and the Ctrl-D below could be flushed with it
      see(p, '> torch.zero', 'the line redrawn')
      p:send('\3') -- Ctrl-C drops the line
      see(p, '\n> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('prints tracebacks of every error with MT_TRACEBACK=1', function()
      local p = start { MT_TRACEBACK = '1' }
      see(p, '> ')
      local tag = 'oops' .. math.random(1e6)
      p:send(('local function g() error("%s") end g()\r'):format(tag))
      see(p, 'stdin:1: ' .. tag, 'error message')
      see(p, 'stack traceback:', 'traceback')
      see(p, "in function 'g'", 'traceback frame')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('shows one-line help with ?name and help()', function()
      local p = start()
      see(p, '> ')
      p:send('?torch.zeros\r')
      see(p, helpdb.line('torch.zeros'), '?torch.zeros')
      see(p, '> ')
      p:send('?nn.Linear\r')
      see(p, helpdb.line('nn.Linear'), '?nn.Linear')
      see(p, '> ')
      p:send('?optim.sgd\r')
      see(p, helpdb.line('optim.sgd'), '?optim.sgd')
      see(p, '> ')
      p:send('help(nn.MSECriterion)\r')
      see(p, helpdb.line('nn.MSECriterion'), 'help(class)')
      see(p, '> ')
      -- plain `help` is the REPL's help, not the help function's address
      p:send('help\r')
      local from = p.mark
      see(p, 'moontorch REPL: type Lua', 'plain help')
      see(p, '> ')
      local shown = p:screen():sub(from, p.mark)
      assert.falsy(shown:find('function: 0x', 1, true), 'plain help printed a function:\n' .. shown)
      p:send('help(torch.isTensor)\r')
      see(p, helpdb.line('torch.isTensor'), 'help(fn)')
      see(p, '> ')
      p:send('t = torch.Tensor(3)\r')
      see(p, '> ')
      p:send('?t:size\r')
      see(p, helpdb.line('torch.Tensor.size'), '?t:method')
      see(p, '> ')
      p:send('?no_such_thing\r')
      see(p, "no help for 'no_such_thing'", 'unknown name')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('Ctrl-C drops the typed line and interrupts a running loop', function()
      local p = start()
      see(p, '> ')
      p:send('this line is dropped')
      p:settle(200)
      p:send('\3')
      see(p, '> ')
      local a = math.random(100, 999)
      p:send(a .. '\r')
      see(p, '\n' .. a .. '\n', 'after Ctrl-C')
      see(p, '> ')
      -- JIT-compiled loops don't see LuaJIT's interrupt hook; interpreted ones do, every time
      for round = 1, 2 do
         p:send('jit.off() while true do end\r')
         p:settle(300)
         p:send('\3')
         see(p, 'interrupted!', 'interrupt ' .. round)
         see(p, '> ')
      end
      p:send(a .. '+1\r')
      see(p, '\n' .. a + 1 .. '\n', 'after interrupts')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('evaluates tensor code: range, sum and printing', function()
      local p = start()
      see(p, '> ')
      local n = math.random(4, 9)
      p:send(('x = torch.range(1, %d)\r'):format(n))
      see(p, '> ')
      p:send('x:sum()\r')
      see(p, '\n' .. n * (n + 1) / 2 .. '\n', 'x:sum()')
      see(p, '> ')
      p:send('x\r')
      -- whatever the tensor printer shows for this tensor, the REPL shows
      local want = tostring(torch.range(1, n))
      see(p, '\n' .. want, 'tensor printed')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
   end)

   it('writes history to $MOONTORCH_HISTORY, bounded by $MOONTORCH_HISTSIZE', function()
      local dir = tmpdir()
      local path = dir .. '/hist'
      local p = start({ MOONTORCH_HISTORY = path, MOONTORCH_HISTSIZE = '3' })
      see(p, '> ')
      local vals = {}
      for i = 1, 5 do
         vals[i] = math.random(1e5, 1e6 - 1)
         p:send(vals[i] .. '\r')
         see(p, '\n' .. vals[i] .. '\n')
         see(p, '> ')
      end
      -- lines reach the file as they are entered (a killed session keeps them) ...
      local function lines_of(file)
         local r = {}
         for l in assert(readfile(file), 'no history file at $MOONTORCH_HISTORY'):gmatch('[^\n]+') do r[#r + 1] = l end
         return r
      end
      local all = {}
      for i = 1, 5 do all[i] = tostring(vals[i]) end
      assert.are.same(all, lines_of(path))
      -- ... and the file is cut to $MOONTORCH_HISTSIZE entries at exit
      p:send('\4')
      assert.are.equal(0, p:wait())
      assert.are.same({ all[3], all[4], all[5] }, lines_of(path))
      -- the next session sees it: Ctrl-P brings back the last line
      p = start({ MOONTORCH_HISTORY = path })
      see(p, '> ')
      p:send('\16\r')
      see(p, '\n' .. vals[5] .. '\n', 'recalled from history')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
      os.execute("rm -rf '" .. dir .. "'")
   end)
end)

describe('moontorch without readline', function()
   it('reads plain lines on a terminal when line editing is off', function()
      local p = start({ MOONTORCH_READLINE = '0' })
      see(p, 'moontorch ' .. torch.version, 'banner')
      see(p, 'reading plain lines', 'the note about plain input')
      see(p, '> ')
      local a, b = math.random(100, 999), math.random(100, 999)
      p:send(('%d*%d\r'):format(a, b))
      see(p, '\n' .. a * b .. '\n', 'product')
      see(p, '> ')
      p:send('do\r')
      see(p, '>> ')
      p:send(('print(%d)\r'):format(a))
      see(p, '>> ')
      p:send('end\r')
      see(p, '\n' .. a .. '\n', 'multi-line chunk')
      see(p, '> ')
      p:send('\4')
      assert.are.equal(0, p:wait())
      local _, count = p:screen():gsub('reading plain lines', '')
      assert.are.equal(1, count, 'the note comes once')
      assert.is_nil(readfile(p.home .. '/.moontorch_history'), 'no history without readline')
   end)
end)

describe('moontorch command line', function()
   it('reads plain lines from a pipe', function()
      local a, b = math.random(100, 999), math.random(100, 999)
      local out, err, rc = sh(q(BIN),
         ('%d+%d\nfor i = 1, 2 do\nio.write(i * %d, ";")\nend\nprint("")\n'):format(a, b, a))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find('^' .. (a + b) .. '\n'), out)
      assert.truthy(out:find(a .. ';' .. 2 * a .. ';', 1, true), out)
      local _, count = err:gsub('not a terminal', '')
      assert.are.equal(1, count, 'the note about plain input comes once: ' .. err)
      -- a failing chunk: reported on stderr, the rest still runs, exit status 1
      out, err, rc = sh(q(BIN), ('error("bad%d")\n%d\n'):format(a, b))
      assert.are.equal(1, rc)
      assert.truthy(err:find('stdin:1: bad' .. a, 1, true), err)
      assert.falsy(err:find('stack traceback', 1, true), 'a failing line printed its traceback: ' .. err)
      assert.truthy(out:find(tostring(b), 1, true), out)
   end)

   it('runs -e code, scripts with arguments, and prints usage', function()
      local out, err, rc = sh(q(BIN) .. " -e 'print(torch.version)'")
      assert.are.equal(0, rc, err)
      assert.are.equal(torch.version .. '\n', out)

      local a = math.random(1e6)
      out, err, rc = sh(q(BIN) .. ' -e ' .. q(('x = %d') :format(a)) .. ' -e "print(x * 2)"')
      assert.are.equal(0, rc, err)
      assert.are.equal(2 * a .. '\n', out)

      local dir = tmpdir()
      writefile(dir .. '/s.lua', 'local x, y = ...\n'
         .. 'print(arg[0], select("#", ...), x, y, arg[1], arg[2], torch.isTensor(torch.Tensor(2)))\n')
      out, err, rc = sh(q(BIN) .. ' ' .. q(dir .. '/s.lua') .. ' ' .. a .. ' two')
      assert.are.equal(0, rc, err)
      assert.are.equal(('%s/s.lua\t2\t%d\ttwo\t%d\ttwo\ttrue\n'):format(dir, a, a), out)

      writefile(dir .. '/bad.lua', 'local x = nil\nreturn x.field\n')
      err, rc = select(2, sh(q(BIN) .. ' ' .. q(dir .. '/bad.lua')))
      assert.are.equal(1, rc)
      assert.truthy(err:find('bad.lua:2:', 1, true), err)

      err, rc = select(2, sh(q(BIN) .. ' ' .. q(dir .. '/missing.lua')))
      assert.are.equal(1, rc)
      assert.truthy(err:find('missing.lua', 1, true), err)

      out, err, rc = sh(q(BIN) .. ' -h')
      assert.are.equal(0, rc, err)
      assert.truthy(out:find('usage: moontorch', 1, true), out)

      err, rc = select(2, sh(q(BIN) .. ' --bogus'))
      assert.are.equal(1, rc)
      assert.truthy(err:find("unknown option '--bogus'", 1, true), err)
      os.execute("rm -rf '" .. dir .. "'")
   end)

   it('works through a symlink and from another directory', function()
      local dir = tmpdir()
      os.execute('ln -s ' .. q(BIN) .. ' ' .. q(dir .. '/mt'))
      local a = math.random(1e6)
      local out, err, rc = sh('cd / && ' .. q(dir .. '/mt') .. ' -e ' .. q(('print(%d + 1, torch.version)'):format(a)))
      assert.are.equal(0, rc, err)
      assert.are.equal((a + 1) .. '\t' .. torch.version .. '\n', out)
      os.execute("rm -rf '" .. dir .. "'")
   end)
end)

describe('REPL pieces', function()
   it('pretty-prints tables: nested, sorted keys, cycles, elision', function()
      local k1, k2 = 'b' .. math.random(100), 'a' .. math.random(100)
      local v = math.random(1e6)
      local t = { [k1] = v, [k2] = { 1, 2 }, 'first' }
      local s = repl.pretty(t)
      assert.are.equal(('{"first", %s = {1, 2}, %s = %d}'):format(k2, k1, v), s)
      local c = { name = 'x' }
      c.self = c
      s = repl.pretty(c)
      assert.truthy(s:find('<cycle: ' .. tostring(c) .. '>', 1, true), s)
      local big = {}
      local n = math.random(120, 200)
      for i = 1, n do big[i] = { i, tostring(i) } end
      s = repl.pretty(big)
      assert.truthy(s:find(('...(%d more entries)'):format(n - 50), 1, true), s)
      assert.truthy(s:find('\n  {1, "1"},\n', 1, true), s) -- nested tables indented, one per line
      assert.are.equal('"a\\nb"', repl.pretty({ 'a\nb' }):match('^{(.*)}$'))
      assert.are.equal('plain', repl.pretty('plain')) -- top-level strings print raw
      local x = torch.Tensor(3, 2)
      assert.are.equal('{' .. x:type() .. ' of size 3x2}', repl.pretty({ x }))
      assert.are.equal('{s = torch.LongStorage{3, 2}}', repl.pretty({ s = x:size() }))
   end)

   it('completes names from a given environment', function()
      local env = { alpha = { beta = 1, gamma = function() end }, alps = 2, t = torch.Tensor(2) }
      assert.are.same({ 'alpha', 'alps', 'and' }, repl.completions('a', '', env))
      assert.are.same({ 'beta' }, repl.completions('b', 'x = alpha.', env))
      assert.are.same({ 'gamma' }, repl.completions('', 'alpha:', env)) -- methods only
      local want = {}
      for m in pairs(methods) do
         if m:sub(1, 2) == 'st' then want[#want + 1] = m end
      end
      table.sort(want)
      assert.truthy(#want >= 2) -- stride, storageOffset at least
      assert.are.same(want, repl.completions('st', 't:', env))
      assert.are.same({}, repl.completions('x', '1.', env))
      assert.are.same({}, repl.completions('b', 'f().', env))
      assert.are.same({}, repl.completions('z', 'nothere.', env))
   end)

   it('finds help by name and by value', function()
      assert.are.equal('torch.zeros', helpdb.find('torch.zeros'))
      assert.are.equal('torch.zeros', helpdb.find('zeros'))
      assert.are.equal('torch.Tensor.size', helpdb.find('t:size'))
      assert.is_nil(helpdb.find('torch.nonexistent'))
      for _, name in ipairs({ 'torch.mm', 'torch.cat', 'torch.Tensor.view', 'torch.Tensor.sum', 'torch.Tensor.gather',
         'torch.cuda.isAvailable', 'torch.rand', 'torch.Tensor.indexSelect', 'torch.Tensor.topk' }) do
         assert.truthy(helpdb.line(name), 'no help for ' .. name)
      end
      -- every documented name exists (a typo or a renamed function shows here), and every
      -- tensor method is documented; cumsum/cumprod are an optional part
      local optional = { cumsum = true, cumprod = true }
      local missing = {}
      for _, key in ipairs(helpdb.names) do
         local short = key:match('([%w_]+)$')
         local v
         if key == 'help' then v = repl.help
         elseif key:match('^torch%.Tensor%.') then v = methods[short]
         elseif key:match('^nn%.') then v = repl.resolve(key:sub(4), nn)
         elseif key:match('^optim%.') then v = repl.resolve(key:sub(7), optim)
         else v = repl.resolve(key:sub(7), torch) end
         if v == nil and not optional[short] then missing[#missing + 1] = key end
      end
      assert.are.same({}, missing)
      local undocumented = {}
      for m in pairs(methods) do
         if not helpdb.entries['torch.Tensor.' .. m] then undocumented[#undocumented + 1] = m end
      end
      assert.are.same({}, undocumented)
   end)

   it('has one-line help for every nn class and optim function, by name and by value', function()
      local line = helpdb.line('nn.Linear')
      assert.truthy(line and line:find('^nn%.Linear%(inputSize, outputSize'), 'nn.Linear: ' .. tostring(line))
      assert.truthy(helpdb.line('optim.sgd'):find('optim.sgd(feval, x', 1, true), helpdb.line('optim.sgd'))
      assert.are.equal('nn.Linear', helpdb.find('Linear'))
      assert.are.equal('optim.adam', helpdb.find('adam'))
      local missing, n = {}, 0
      local function check(key, v)
         n = n + 1
         local got = helpdb.line(key)
         if not got or got:find('\n') then missing[#missing + 1] = key end
         -- help(value) finds the same line (a class, a function, and for nn an instance of it)
         local printed = {}
         local real = _G.print
         _G.print = function(...) printed[#printed + 1] = table.concat({ ... }, '\t') end
         local ok, err = pcall(repl.help, v)
         _G.print = real
         assert(ok, err)
         if printed[1] ~= got then missing[#missing + 1] = key .. ' (by value: ' .. tostring(printed[1]) .. ')' end
      end
      for name, cls in pairs(nn) do
         if type(name) == 'string' and name:match('^%u') and type(cls) == 'table' then check('nn.' .. name, cls) end
      end
      for name, f in pairs(optim) do
         if type(name) == 'string' and not name:match('^_') and name ~= 'schedule' then check('optim.' .. name, f) end
      end
      for name, f in pairs(optim.schedule) do check('optim.schedule.' .. name, f) end
      table.sort(missing)
      assert.are.same({}, missing)
      assert.truthy(n > 180, n .. ' names checked')
      -- an nn object is described by its class
      local printed
      local real = _G.print
      _G.print = function(s) printed = s end
      repl.help(nn.Linear(2, 3))
      _G.print = real
      assert.are.equal(helpdb.line('nn.Linear'), printed)
   end)
end)
