-- repl/init.lua (moontorch.repl): the `moontorch` command: LuaJIT with torch loaded, as an interactive REPL (GNU
-- readline editing, history and completion when stdin is a terminal) or running a script or
-- -e code like luajit. bin/moontorch runs this file as a script; `require 'moontorch.repl'`
-- gives the pieces (pretty, completions, help, Session, main) without starting anything.
local ffi = require 'ffi'

local M = {}

local USAGE = [==[
usage: moontorch [options] [script [args...]]
  -e code    run code (may repeat)
  -l name    require library 'name' into the global of that name
  -i         enter the REPL after running a script or -e code
  -v         print the version and exit unless a script, -e or -i follows
  -h         print this help and exit
  --         stop handling options
  -          run stdin as a script
With no script and no -e, starts the REPL: torch (and nn, optim when installed) are loaded.
When stdin is not a terminal the REPL reads plain lines (no editing) and exits with status 1
if any chunk failed. History: $MOONTORCH_HISTORY (default ~/.moontorch_history, '' for none),
at most $MOONTORCH_HISTSIZE entries (default 1000). MOONTORCH_READLINE=0 turns line editing off.]==]

local REPL_HELP = [[
moontorch REPL: type Lua; an expression's values are printed, statements are run.
  =expr           print expr (same as typing expr)
  ?name           one-line help, e.g. ?torch.zeros  ?t:sum  ?nn.Linear  ?optim.sgd
  help(x)         help for a function, a class, a name ('torch.cat'), a tensor, or a package
                  (torch, torch.Tensor, torch.cuda, nn, optim, optim.schedule) listing its names
  traceback       the stack traceback of the last error (errors print only their message;
                  MT_TRACEBACK=1 prints every error's traceback)
  TAB             complete globals, fields (torch.ze<TAB>) and tensor methods (t:siz<TAB>)
  Ctrl-C          discard the line being typed, or interrupt a running computation
                  (a JIT-compiled loop may not notice; a second Ctrl-C then ends moontorch)
  Ctrl-D          quit]]

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or repeat
   return then true until while]]):gmatch('%a+') do KEYWORDS[w] = true end

local function is_ident(s) return type(s) == 'string' and s:match('^[%a_][%w_]*$') ~= nil and not KEYWORDS[s] end

-- torch is loaded lazily so that `moontorch -h` works before the library is built
local torch, T
local function load_torch()
   if torch then return torch end
   torch = require 'moontorch'
   T = require 'moontorch.internal'
   return torch
end
M.load_torch = load_torch

local function is_tensor(v) return T ~= nil and T.is_tensor(v) end

---------------------------------------------------------------------------------------------
-- pretty printing

local MAX_ENTRIES = 50  -- entries shown per table before eliding the rest
local MAX_LINES = 300   -- lines per printed value; past this, nested tables print as {...}
local MAX_DEPTH = 6     -- nesting shown before `{...}`
local MAX_STRING = 200  -- characters of a nested string before eliding
local INLINE_WIDTH = 72 -- a flat table that fits on a line this wide prints on one line

local ESC = { ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r', ['"'] = '\\"', ['\\'] = '\\\\' }
local function quote(s)
   local more = ''
   if #s > MAX_STRING then
      more = ('...(%d more bytes)'):format(#s - MAX_STRING)
      s = s:sub(1, MAX_STRING)
   end
   return '"' .. (s:gsub('[%c"\\]', function(c) return ESC[c] or ('\\%03d'):format(c:byte()) end)) .. '"' .. more
end

-- 'torch.FloatTensor of size 2x3' (a tensor inside a table: the values would swamp the table)
local function tensor_summary(t)
   local ok, s = pcall(function()
      local sizes = T.sizes(t)
      local size = #sizes == 0 and '[] (0-d)' or table.concat(sizes, 'x')
      return t:type() .. ' of size ' .. size
   end)
   return ok and s or '<freed tensor>'
end

local function safe_tostring(v)
   local ok, s = pcall(tostring, v)
   if ok and type(s) == 'string' then return s end
   return ('<%s: __tostring failed: %s>'):format(type(v), tostring(s))
end

-- numbers first (in order), then strings, then anything else by its printed form
local KEY_RANK = { number = 1, string = 2, boolean = 3 }
local function key_less(a, b)
   local ra, rb = KEY_RANK[type(a)] or 4, KEY_RANK[type(b)] or 4
   if ra ~= rb then return ra < rb end
   if ra <= 2 then return a < b end
   return tostring(a) < tostring(b)
end

local function key_str(k)
   if is_ident(k) then return k end
   if type(k) == 'string' then return '[' .. quote(k) .. ']' end
   return '[' .. safe_tostring(k) .. ']'
end

local pretty_value
local budget = { lines = 0 } -- lines emitted by the value being printed

-- A table as lines. `path` holds the tables being printed around this one, to mark cycles.
local function pretty_table(t, indent, path, depth)
   if T and T.is_size(t) then return 'torch.LongStorage{' .. table.concat(t, ', ') .. '}' end
   local mt = getmetatable(t)
   if mt and mt.__tostring then
      -- a multi-line printed form (a storage, ...) stays inside the table's indentation
      return (safe_tostring(t):gsub('\n', '\n' .. indent))
   end
   if depth > MAX_DEPTH or budget.lines > MAX_LINES then return '{...}' end
   local keys, n = {}, 0
   for k in pairs(t) do
      n = n + 1
      keys[n] = k
   end
   if n == 0 then return '{}' end
   table.sort(keys, key_less)
   path[t] = true
   -- the array part 1..m prints without its keys
   local m = 0
   while m < n and keys[m + 1] == m + 1 do m = m + 1 end
   local items, flat = {}, true
   local shown = math.min(n, MAX_ENTRIES)
   for i = 1, shown do
      local k, v = keys[i], rawget(t, keys[i])
      local s = pretty_value(v, indent .. '  ', path, depth + 1)
      if s:find('\n', 1, true) then flat = false end
      items[i] = i <= m and s or (key_str(k) .. ' = ' .. s)
   end
   path[t] = nil
   if n > shown then items[#items + 1] = ('...(%d more entries)'):format(n - shown) end
   if flat then
      local line = '{' .. table.concat(items, ', ') .. '}'
      if #line + #indent <= INLINE_WIDTH then return line end
   end
   local inner = indent .. '  '
   budget.lines = budget.lines + #items
   return '{\n' .. inner .. table.concat(items, ',\n' .. inner) .. '\n' .. indent .. '}'
end

pretty_value = function(v, indent, path, depth)
   local tv = type(v)
   if tv == 'string' then return quote(v) end
   if tv == 'table' then
      if path[v] then return '<cycle: ' .. safe_tostring(v) .. '>' end
      return pretty_table(v, indent, path, depth)
   end
   if is_tensor(v) then return tensor_summary(v) end
   return (safe_tostring(v):gsub('\n', '\n' .. indent))
end

-- The printed form of one value at the REPL's top level: strings raw, tensors through their
-- printer (tostring), tables nested.
function M.pretty(v)
   if type(v) == 'string' then return v end
   if is_tensor(v) then
      local s = safe_tostring(v)
      -- until a tensor printer is installed tostring gives 'cdata<struct mt_tensor_ref>: 0x...'
      if s:match('^cdata<') then return tensor_summary(v) end
      return s
   end
   budget.lines = 0
   return pretty_value(v, '', {}, 1)
end

---------------------------------------------------------------------------------------------
-- completion

-- v[k] without letting a failing __index escape
local function get(v, k)
   local ok, r = pcall(function() return v[k] end)
   if ok then return r end
   return nil
end

-- Resolve 'a.b.c' from env without calling anything but __index.
local function resolve(path, env)
   local v = env
   for name in path:gmatch('[^.]+') do
      if v == nil then return nil end
      if type(v) ~= 'table' and type(v) ~= 'userdata' and not is_tensor(v) then return nil end
      v = get(v, name)
   end
   return v
end
M.resolve = resolve

-- Field names reachable from v (own keys and the __index chain). methods: only callables.
local function fields(v, methods, out)
   if is_tensor(v) then
      for k in pairs(T.tensor_methods) do out[k] = true end
      return
   end
   if type(v) == 'string' then v = string end
   local seen = 0
   while v ~= nil and seen < 10 do
      seen = seen + 1
      if type(v) == 'table' then
         for k, x in pairs(v) do
            if is_ident(k) and (not methods or type(x) == 'function' or type(x) == 'table') then out[k] = true end
         end
      end
      local ok, mt = pcall(getmetatable, v)
      if not ok or type(mt) ~= 'table' or type(mt.__index) ~= 'table' then break end
      v = mt.__index
   end
end

-- Candidates for `word` given the text before it on the line: fields after `expr.` or
-- `expr:`, else globals and keywords. Returns a sorted array of whole words.
function M.completions(word, before, env)
   env = env or _G
   local names = {}
   local sep = before:sub(-1)
   if sep == '.' or sep == ':' then
      local path = before:sub(1, -2):match('[%a_][%w_.]*$')
      if not path or path:find('..', 1, true) or path:sub(-1) == '.' then return {} end
      -- `x[1].`, `f().`, `"s".`, `1e.`: not a plain name path; don't guess
      if before:sub(1, -2 - #path):match('[%w_.%]%)"\']$') then return {} end
      local v = resolve(path, env)
      if v == nil then return {} end
      fields(v, sep == ':', names)
   else
      if before:match('[%w_]$') then return {} end
      fields(env, false, names)
      for k in pairs(KEYWORDS) do names[k] = true end
   end
   local r = {}
   for k in pairs(names) do
      if k:sub(1, #word) == word then r[#r + 1] = k end
   end
   table.sort(r)
   return r
end

---------------------------------------------------------------------------------------------
-- help

local helpdb = require 'moontorch.repl.help'

-- The value a help key names ('torch.Tensor.add' is the method), or nil.
local LIBS = { nn = 'moontorch.nn', optim = 'moontorch.optim' }

local function value_of(key)
   if key == 'help' then return M.help end
   local lib, lpath = key:match('^(%a+)%.(.*)$')
   if LIBS[lib] then
      local mod = package.loaded[LIBS[lib]]
      return type(mod) == 'table' and resolve(lpath, mod) or nil
   end
   if not torch then return nil end
   local rest = key:match('^torch%.Tensor%.([%w_]+)$')
   if rest then return T.tensor_methods[rest] end
   local path = key:match('^torch%.(.*)$')
   if not path then return nil end
   return resolve(path, torch)
end

-- function/table -> help key, built on first use and again when nn's help has been added
local by_value, by_value_n
local function key_for(v)
   helpdb.load_library()
   if by_value_n ~= #helpdb.names then
      by_value, by_value_n = {}, #helpdb.names
      for _, key in ipairs(helpdb.names) do
         local x = value_of(key)
         if (type(x) == 'function' or type(x) == 'table') and by_value[x] == nil then by_value[x] = key end
      end
   end
   return by_value[v]
end

-- 'torch', 'torch.Tensor', 'torch.cuda', 'nn', 'optim' or 'optim.schedule' for those tables
local function namespace(x)
   if not torch or type(x) ~= 'table' then return nil end
   if rawequal(x, torch) then return 'torch' end
   if rawequal(x, torch.Tensor) then return 'torch.Tensor' end
   if rawequal(x, rawget(torch, 'cuda')) then return 'torch.cuda' end
   local nn, optim = package.loaded['moontorch.nn'], package.loaded['moontorch.optim']
   if nn ~= nil and rawequal(x, nn) then return 'nn' end
   if optim ~= nil and rawequal(x, optim) then return 'optim' end
   if type(optim) == 'table' and rawequal(x, rawget(optim, 'schedule')) then return 'optim.schedule' end
   return nil
end

local function help_line(key)
   local line = helpdb.line(key)
   if torch and value_of(key) == nil then line = line .. '  (not available in this build)' end
   return line
end

-- help(x): x a function, a name ('torch.zeros', 't:add'), a tensor, torch / torch.cuda, or
-- nothing for the REPL's own help. Prints; returns nothing.
function M.help(x, env)
   env = env or _G
   if x == nil then
      print(REPL_HELP)
      return
   end
   if type(x) == 'string' then
      -- a name in the session first (?t with t a tensor, ?t:add, ?torch.zeros), then the
      -- help table's own names (?zeros, ?torch.cumsum even where this build lacks it)
      local name = x:match('^%s*(.-)%s*$')
      local path, method = name:match('^([%a_][%w_.]*):([%a_][%w_]*)$')
      local v
      if path then
         local obj = resolve(path, env)
         if obj ~= nil then v = get(obj, method) end
      elseif name:match('^[%a_][%w_.]*$') then
         v = resolve(name, env)
      end
      if v ~= nil and (key_for(v) or is_tensor(v) or namespace(v)) then return M.help(v, env) end
      local key = helpdb.find(name)
      if key then
         print(help_line(key))
      else
         print(("help: no help for '%s'"):format(name))
      end
      return
   end
   if is_tensor(x) then
      print(tensor_summary(x) .. "; help(torch.Tensor) lists the methods, ?t:name describes one")
      return
   end
   -- namespaces: list what is documented under them
   local space = namespace(x)
   if space then
      local prefix = space .. '.'
      if helpdb.entries[space] then print(help_line(space)) end
      print(('%s: ?%s<name> or help(%s<name>) describes one of:'):format(space, prefix, prefix))
      local names = {}
      for _, k in ipairs(helpdb.under(prefix)) do names[#names + 1] = k:sub(#prefix + 1) end
      -- wrapped at 80 columns
      local line = ' '
      for _, nm in ipairs(names) do
         if #line + #nm + 1 > 80 then
            print(line)
            line = ' '
         end
         line = line .. ' ' .. nm
      end
      print(line)
      return
   end
   local key = key_for(x)
   -- an object of a documented class (a model's nn.Linear): its class's help
   if not key and type(x) == 'table' and torch then
      local ok, tn = pcall(torch.typename, x)
      if ok and type(tn) == 'string' and helpdb.entries[tn] then key = tn end
   end
   if key then
      print(help_line(key))
      return
   end
   print(('help: no help for %s'):format(safe_tostring(x)))
end

---------------------------------------------------------------------------------------------
-- evaluation

-- LuaJIT's SIGINT handler ('interrupted!' at the next Lua instruction) uninstalls itself when
-- it fires and luajit only reinstalls it per script run; we reinstall it before every read
-- and evaluation so each Ctrl-C interrupts instead of the second one killing the process.
pcall(ffi.cdef, 'typedef void (*mtrepl_sighandler_t)(int);')
pcall(ffi.cdef, 'mtrepl_sighandler_t signal(int, mtrepl_sighandler_t);')
local SIGINT = 2
local sigint_handler
local function capture_sigint()
   local ok, h = pcall(function() return ffi.C.signal(SIGINT, nil) end)
   if not ok then return end
   ffi.C.signal(SIGINT, h)
   local v = tonumber(ffi.cast('intptr_t', h))
   if v ~= 0 and v ~= 1 and v ~= -1 then sigint_handler = h end -- not SIG_DFL, SIG_IGN, SIG_ERR
end
local function arm_sigint()
   if sigint_handler then ffi.C.signal(SIGINT, sigint_handler) end
end

-- A traceback without the REPL's own frames below the user's chunk.
local function traceback(e, level)
   local msg = type(e) == 'string' and e or M.pretty(e)
   local tb = debug.traceback(msg, level or 2)
   local cut = tb:find('\n%s*%[C%]: in function \'xpcall\'')
   if cut then tb = tb:sub(1, cut - 1) end
   return tb
end
M.traceback = traceback

-- An error in an entered line: its message, and the traceback kept for the `traceback` command
-- (a typo should not scroll a screen of frames away).
local function capture_error(e)
   return { msg = type(e) == 'string' and e or M.pretty(e), tb = traceback(e, 3) }
end

local function write_err(s)
   io.stdout:flush()
   io.stderr:write(s, '\n')
   io.stderr:flush()
end

local function print_results(n, ...)
   if n == 0 then return end
   local parts, multi = {}, false
   for i = 1, n do
      parts[i] = M.pretty((select(i, ...)))
      multi = multi or parts[i]:find('\n', 1, true) ~= nil
   end
   -- several values side by side like Lua's REPL, or one below the other when they span lines
   io.stdout:write(table.concat(parts, multi and '\n' or '\t'), '\n')
   io.stdout:flush()
end

local Session = {}
Session.__index = Session
M.Session = Session

-- A REPL session: feed it lines; it evaluates complete chunks in env (default _G). An error
-- prints its message; with MT_TRACEBACK=1 (or opts.traceback) its traceback too.
function Session.new(env, opts)
   local tb = (opts and opts.traceback)
   if tb == nil then tb = os.getenv('MT_TRACEBACK') == '1' end
   return setmetatable({ env = env or _G, buf = nil, failed = false, show_tb = tb }, Session)
end

-- Run one compiled chunk, print its values or its error. Returns true on success.
function Session:run(fn)
   arm_sigint()
   local function pack(ok, ...) return ok, select('#', ...), { ... } end
   local ok, n, res = pack(xpcall(fn, capture_error))
   if ok then
      print_results(n, unpack(res, 1, n))
   else
      self.failed = true
      self.last_tb = res[1].tb
      write_err(self.show_tb and res[1].tb or res[1].msg)
   end
   return ok
end

-- The REPL's own words, typed alone on a line: `help` (not the help function's address) and
-- `traceback` (the last error's frames).
local COMMANDS = {
   help = function(self) M.help(nil, self.env) end,
   traceback = function(self)
      if self.last_tb then write_err(self.last_tb) else print('traceback: no error so far') end
   end,
}

-- Feed one line. Returns 'done' (chunk run or empty), or 'more' (incomplete chunk: prompt
-- for a continuation line).
function Session:feed(line)
   if self.buf == nil then
      local cmd = COMMANDS[line:match('^%s*([%a]+)%s*$') or '']
      if cmd then
         cmd(self)
         return 'done'
      end
      local q = line:match('^%s*%?(.*)$')
      if q then
         q = q:match('^%s*(.-)%s*$')
         M.help(q ~= '' and q or nil, self.env)
         return 'done'
      end
      local e = line:match('^%s*=(.*)$')
      if e then line = 'return ' .. e end
      self.buf = line
   else
      self.buf = self.buf .. '\n' .. line
   end
   local src = self.buf
   -- An expression first (its values get printed), then a statement. The expression is an
   -- argument, not `return expr`: that would make `error('x')` a tail call, and the error
   -- would lose its 'stdin:1:' position.
   local fn = loadstring('return (function(...) return ... end)(' .. src .. '\n)', '=stdin')
   local err
   if not fn then fn, err = loadstring(src, '=stdin') end
   if not fn then
      if err:sub(-7) == "'<eof>'" then return 'more' end
      self.buf = nil
      self.failed = true
      write_err(err)
      return 'done'
   end
   self.buf = nil
   if fn then setfenv(fn, self.env) end
   self:run(fn)
   return 'done'
end

-- The source of the chunk being typed, if any (for history), and a reset.
function Session:pending() return self.buf end
function Session:reset() self.buf = nil end

---------------------------------------------------------------------------------------------
-- the interactive loop

local function cuda_status()
   local ok, s = pcall(function()
      local C = require('moontorch.internal').clib
      if C.mt_cuda_is_compiled() == 0 then return 'CUDA: not compiled in' end
      local n = C.mt_cuda_device_count()
      if n == 0 then return 'CUDA: compiled in, no device available' end
      local buf = ffi.new('char[256]')
      local name = C.mt_cuda_device_name(0, buf, 256) == 0 and ffi.string(buf) or '?'
      return ('CUDA: available, %d device%s (%s)'):format(n, n > 1 and 's' or '', name)
   end)
   return ok and s or 'CUDA: unknown (' .. tostring(s) .. ')'
end

local function banner(loaded)
   return ('moontorch %s  (%s, %d CPU threads)  %s\n'
      .. 'loaded: %s.  help() for help, ?torch.zeros for one function, Ctrl-D to quit.')
      :format(torch.version, jit and jit.version or _VERSION, torch.getnumthreads(), cuda_status(),
         table.concat(loaded, ', '))
end

-- Put torch (and nn, optim when they exist) in the globals; returns the names loaded.
local function load_globals()
   load_torch()
   _G.torch = torch
   _G.help = function(...)
      if select('#', ...) == 0 then return M.help(nil, _G) end
      if (...) == nil then
         print('help: the argument is nil (a misspelt name, or something this build lacks?)')
         return
      end
      return M.help((...), _G)
   end
   local loaded = { 'torch' }
   for _, name in ipairs({ 'nn', 'optim' }) do
      for _, modname in ipairs({ 'moontorch.' .. name, name }) do
         local ok, mod = pcall(require, modname)
         if ok and type(mod) == 'table' then
            _G[name] = mod
            loaded[#loaded + 1] = name
            break
         end
      end
   end
   return loaded
end

local function history_path()
   local p = os.getenv('MOONTORCH_HISTORY')
   if p then return p ~= '' and p or nil end
   local home = os.getenv('HOME')
   return home and home ~= '' and (home .. '/.moontorch_history') or nil
end

-- The loop body runs interpreted: see readline.lua on SIGINT and compiled traces.
local function interact(session, read, add_history, interactive)
   while true do
      local prompt = session:pending() and '>> ' or '> '
      arm_sigint()
      local ok, line, why = pcall(read, interactive and prompt or '')
      if not ok then
         -- Ctrl-C landing between reads: LuaJIT raises 'interrupted!' wherever we are
         if not tostring(line):find('interrupted', 1, true) then write_err(tostring(line)) end
         session:reset()
      elseif line == nil and why == 'interrupt' then
         io.stdout:write('\n')
         session:reset()
      elseif line == nil then
         if session:pending() then
            -- EOF inside a chunk: report what Lua says about it
            local _, err = loadstring(session:pending(), '=stdin')
            session:reset()
            session.failed = true
            write_err(err or 'incomplete chunk at end of input')
         end
         if interactive then io.stdout:write('\n') end
         return
      else
         local first = session:pending() == nil
         local status = session:feed(line)
         if add_history then
            if status == 'more' and first then session.hist = { line }
            elseif session.hist then session.hist[#session.hist + 1] = line end
            if status == 'done' then
               -- a multi-line chunk goes back as one entry when joining its lines is safe
               local lines = session.hist or { line }
               session.hist = nil
               local joined = table.concat(lines, ' ')
               if #lines > 1 and (joined:find('--', 1, true) or joined:find('[[', 1, true)) then
                  for _, l in ipairs(lines) do add_history(l) end
               else
                  add_history(joined)
               end
            end
         end
      end
   end
end
jit.off(interact)

-- The REPL on stdin. Returns the process exit status.
function M.repl()
   local loaded = load_globals()
   capture_sigint()
   local session = Session.new(_G)
   local rlmod = require 'moontorch.repl.readline'
   local why = rlmod.unavailable()
   if not why and os.getenv('MOONTORCH_READLINE') == '0' then why = 'MOONTORCH_READLINE=0' end
   local interactive = ffi.C.isatty(0) ~= 0
   if interactive then print(banner(loaded)) end
   if why then
      write_err('moontorch: ' .. why .. ': reading plain lines, without line editing or history')
      local read = function() return io.read('*l') end
      if interactive then
         read = function(prompt)
            io.stdout:write(prompt)
            io.stdout:flush()
            return io.read('*l')
         end
      end
      interact(session, read, nil, interactive)
      if not interactive and session.failed then return 1 end
      return 0
   end
   local reader, err = rlmod.open {
      history = history_path(),
      history_size = tonumber(os.getenv('MOONTORCH_HISTSIZE')) or 1000,
      complete = function(word, before) return M.completions(word, before, _G) end,
   }
   if not reader then
      write_err('moontorch: ' .. err)
      return 1
   end
   -- os.exit() from the prompt should still trim the history file
   local real_exit = os.exit
   os.exit = function(...) -- luacheck: ignore 122 (wrapped while the prompt runs, restored below)
      reader:close()
      return real_exit(...)
   end
   local ok, e = pcall(interact, session, function(p) return reader:read(p) end,
      function(l) reader:add_history(l) end, true)
   local saved, serr = reader:close()
   os.exit = real_exit -- luacheck: ignore 122 (the real one back)
   if not saved then write_err('moontorch: ' .. serr) end
   if not ok then
      write_err('moontorch: ' .. tostring(e))
      return 1
   end
   return 0
end

---------------------------------------------------------------------------------------------
-- command line

local function fail(msg)
   write_err('moontorch: ' .. msg)
   return 1
end

-- Run a loaded chunk like luajit does: errors go to stderr with a traceback.
local function run_chunk(fn, ...)
   arm_sigint()
   local ok, err = xpcall(fn, traceback, ...)
   if not ok then return fail(tostring(err)) end
   return 0
end

-- main(argv): argv is luajit's `arg` for this file (argv[1..n] are our arguments).
function M.main(argv)
   argv = argv or {}
   local i, n = 1, #argv
   local actions, interactive_after, version = {}, false, false
   while i <= n do
      local a = argv[i]
      if a == '--' then
         i = i + 1
         break
      elseif a == '-h' or a == '--help' then
         print(USAGE)
         return 0
      elseif a == '-e' or a == '-l' then
         if i == n then return fail(a .. ' needs an argument\n' .. USAGE) end
         actions[#actions + 1] = { a, argv[i + 1] }
         i = i + 2
      elseif a:match('^%-e.') or a:match('^%-l.') then
         actions[#actions + 1] = { a:sub(1, 2), a:sub(3) }
         i = i + 1
      elseif a == '-i' then
         interactive_after = true
         i = i + 1
      elseif a == '-v' then
         version = true
         i = i + 1
      elseif a:sub(1, 1) == '-' and a ~= '-' then
         return fail("unknown option '" .. a .. "'\n" .. USAGE)
      else
         break
      end
   end
   local script = argv[i]
   -- -e code and the REPL see an arg table like a script's, naming the command
   _G.arg = { [0] = 'moontorch' }

   local ok, err = pcall(load_globals)
   if not ok then return fail(tostring(err)) end
   capture_sigint()
   if version then print('moontorch ' .. torch.version .. '  (' .. (jit and jit.version or _VERSION) .. ')') end

   for _, act in ipairs(actions) do
      local status
      if act[1] == '-e' then
         local fn, lerr = loadstring(act[2], '=(command line)')
         if not fn then return fail(lerr) end
         status = run_chunk(fn)
      else
         local lok, mod = xpcall(require, traceback, act[2])
         if not lok then return fail(mod) end
         _G[act[2]] = mod
         status = 0
      end
      if status ~= 0 then return status end
   end

   if script then
      -- the script sees arg like under luajit: arg[0] its name, arg[1..] its arguments
      local sarg = { [-1] = 'moontorch', [0] = script }
      for k = i + 1, n do sarg[#sarg + 1] = argv[k] end
      _G.arg = sarg
      local fn, lerr = loadfile(script ~= '-' and script or nil)
      if not fn then return fail(lerr) end
      local status = run_chunk(fn, unpack(sarg, 1, #sarg))
      if status ~= 0 or not interactive_after then return status end
   elseif (#actions > 0 or version) and not interactive_after then
      return 0
   end
   return M.repl()
end

-- Started as a script (bin/moontorch runs `luajit .../repl/init.lua args...`): run main and exit
-- with its status. Under require, only return the module.
local src = debug.getinfo(1, 'S').source
if arg and arg[0] and src == '@' .. arg[0] then
   local status = M.main(arg)
   io.stdout:flush()
   if status ~= 0 then os.exit(status) end
end

return M
