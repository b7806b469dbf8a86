-- readline.lua: GNU readline through the FFI, for the REPL: line editing, persistent history,
-- tab completion and Ctrl-C that discards the line being typed.
--
-- It uses readline's callback interface (rl_callback_read_char fed from our own poll loop)
-- rather than the blocking readline(): a blocking read() is restarted after SIGINT, so Ctrl-C
-- would do nothing until Enter; with poll() we see EINTR at once and can drop the line.
--
--   local rl = require('moontorch.repl.readline').open{ history = path, history_size = 1000,
--                                                  complete = function(word, before) ... end }
--   local line, why = rl:read('> ')  -- line; or nil, 'eof'; or nil, 'interrupt'
--   rl:add_history(line)  -- also appends it to the history file
--   rl:close()            -- trims the history file to history_size entries
local ffi = require 'ffi'

local M = {}

-- One declaration per pcall: another module may already have declared the same libc names.
local function cdef(s) pcall(ffi.cdef, s) end
cdef 'void free(void *);'
cdef 'char *strdup(const char *);'
cdef 'int isatty(int);'
cdef 'struct pollfd { int fd; short events; short revents; };'
cdef 'int poll(struct pollfd *fds, unsigned long nfds, int timeout);'
cdef [[
typedef char *mtrl_compentry_func_t(const char *, int);
typedef char **mtrl_completion_func_t(const char *, int, int);
typedef void mtrl_vcpfunc_t(char *);
typedef char *mtrl_cpvfunc_t(void);
void rl_callback_handler_install(const char *prompt, mtrl_vcpfunc_t *handler);
void rl_callback_read_char(void);
void rl_callback_handler_remove(void);
void rl_callback_sigcleanup(void);
void rl_free_line_state(void);
void rl_cleanup_after_signal(void);
char **rl_completion_matches(const char *text, mtrl_compentry_func_t *entry);
void using_history(void);
void add_history(const char *line);
int read_history(const char *filename);
int write_history(const char *filename);
int append_history(int n, const char *filename);
int history_truncate_file(const char *filename, int lines);
void stifle_history(int max);
extern mtrl_completion_func_t *rl_attempted_completion_function;
extern int rl_attempted_completion_over;
extern int rl_completion_append_character;
extern int rl_completion_quote_character;
extern mtrl_cpvfunc_t *rl_completion_word_break_hook;
extern int rl_point;
extern const char *rl_completer_word_break_characters;
extern const char *rl_completer_quote_characters;
extern const char *rl_readline_name;
extern char *rl_line_buffer;
extern int rl_catch_signals;
]]

local C = ffi.C
local POLLIN, POLLGONE = 1, 8 + 16 + 32 -- POLLERR | POLLHUP | POLLNVAL
local EINTR = 4

-- Debian ships libreadline.so.8 (the unversioned name only comes with libreadline-dev).
local NAMES = { 'readline', 'libreadline.so.8', 'libreadline.so.7', 'libreadline.so.6', 'libreadline.so' }

local lib, load_error
local function load()
   if lib or load_error then return lib, load_error end
   local errs = {}
   for _, name in ipairs(NAMES) do
      local ok, l = pcall(ffi.load, name)
      -- a library that loads but lacks the callback interface is no use to us
      if ok and pcall(function() return l.rl_callback_read_char end) then
         lib = l
         return lib
      end
      errs[#errs + 1] = ok and (name .. ': no rl_callback_read_char') or tostring(l)
   end
   load_error = 'GNU readline could not be loaded (' .. table.concat(errs, '; ') .. ')'
   return nil, load_error
end
M.load = load

-- Why line editing is unavailable for fd 0, or nil when readline can be used.
function M.unavailable()
   if C.isatty(0) == 0 then return 'stdin is not a terminal' end
   local _, err = load()
   return err
end

-- readline keeps pointers to these strings: they must outlive every call, so they live here.
local keep = {
   name = ffi.new('char[?]', 10, 'moontorch'),
   -- '.' and ':' break words, so `torch.ze` completes the word `ze` and the match list readline
   -- shows for several candidates holds field names, not whole paths.
   breaks = ffi.new('char[?]', 40, ' \t\n"\\\'`@$><=;|&{(+-*/%^,)[]~#.:'),
   -- inside a string literal: file names, where '/', '.' and '~' are part of the word
   string_breaks = ffi.new('char[?]', 6, ' \t\n"\''),
   quotes = ffi.new('char[?]', 3, '"\''),
}

-- Is position `n` of the line inside a '...' or "..." literal?
local function in_string(line, n)
   local q, i = nil, 1
   while i <= n do
      local c = line:sub(i, i)
      if q then
         if c == '\\' then i = i + 1 elseif c == q then q = nil end
      elseif c == '"' or c == "'" then
         q = c
      end
      i = i + 1
   end
   return q ~= nil
end

local Reader = {}
Reader.__index = Reader

-- opts.history: history file (nil: no history file); opts.history_size: bound on entries;
-- opts.complete(word, before): candidates (full words) for `word`, `before` being the line up
-- to the word.
function M.open(opts)
   local rl, err = load()
   if not rl then return nil, err end
   opts = opts or {}
   local self = setmetatable({ rl = rl, history = opts.history, size = opts.history_size or 1000,
      complete = opts.complete }, Reader)

   rl.rl_readline_name = keep.name
   rl.rl_catch_signals = 0 -- SIGINT stays with LuaJIT's handler; see read()
   rl.rl_completer_word_break_characters = keep.breaks
   rl.rl_completer_quote_characters = keep.quotes
   rl.using_history()
   rl.stifle_history(self.size)
   -- Each line is appended to the file as it is entered, so a killed session keeps its history
   -- and sessions running side by side don't overwrite each other's; append needs the file.
   if self.history and rl.read_history(self.history) ~= 0 then
      local e = rl.write_history(self.history)
      if e ~= 0 then self.write_error = ('cannot write history file %s (errno %d)'):format(self.history, e) end
   end

   -- Callbacks run inside rl_callback_read_char, itself called from read(). Errors must not
   -- cross the C frames, so every body is guarded.
   local matches, pos = {}, 0
   self.entry_cb = ffi.cast('mtrl_compentry_func_t *', function(_, state)
      local ok, res = pcall(function()
         if state == 0 then pos = 0 end
         pos = pos + 1
         local m = matches[pos]
         if m == nil then return nil end
         return C.strdup(m) -- readline frees what we return
      end)
      if ok then return res end
      return nil
   end)
   self.complete_cb = ffi.cast('mtrl_completion_func_t *', function(text, start)
      local ok, res = pcall(function()
         -- inside a string: let readline complete file names
         if rl.rl_completion_quote_character ~= 0 then return nil end
         rl.rl_attempted_completion_over = 1 -- no file-name fallback for code
         rl.rl_completion_append_character = 0 -- `torch.zeros`, not `torch.zeros `
         if not self.complete then return nil end
         local before = ffi.string(rl.rl_line_buffer, start)
         matches = self.complete(ffi.string(text), before) or {}
         if #matches == 0 then return nil end
         return rl.rl_completion_matches(text, self.entry_cb)
      end)
      if ok then return res end
      return nil
   end)
   rl.rl_attempted_completion_function = self.complete_cb
   self.breaks_cb = ffi.cast('mtrl_cpvfunc_t *', function()
      local ok, inside = pcall(function() return in_string(ffi.string(rl.rl_line_buffer, rl.rl_point), rl.rl_point) end)
      if ok and inside then return keep.string_breaks end
      return keep.breaks
   end)
   rl.rl_completion_word_break_hook = self.breaks_cb

   self.done, self.line = false, nil
   self.line_cb = ffi.cast('mtrl_vcpfunc_t *', function(p)
      pcall(function()
         if p ~= nil then
            self.line = ffi.string(p)
            C.free(p)
         else
            self.line = nil
         end
         self.done = true
         rl.rl_callback_handler_remove()
      end)
   end)
   self.fds = ffi.new('struct pollfd[1]')
   self.fds[0].fd = 0
   self.fds[0].events = POLLIN
   return self
end

-- The poll loop. It must run in the interpreter, not as a compiled trace: LuaJIT's SIGINT
-- handler sets a hook that raises 'interrupted!' at the next interpreted instruction, and a
-- trace looping around poll() would never reach one.
local function loop(self)
   local rl, fds = self.rl, self.fds
   while not self.done do
      fds[0].revents = 0
      local n = C.poll(fds, 1, -1)
      if n > 0 and bit.band(fds[0].revents, POLLIN) == 0 and bit.band(fds[0].revents, POLLGONE) ~= 0 then
         -- the terminal went away: end of input
         rl.rl_callback_handler_remove()
         self.done, self.line = true, nil
      elseif n > 0 then
         rl.rl_callback_read_char()
      elseif n < 0 and ffi.errno() ~= EINTR then
         error('readline: poll failed (errno ' .. ffi.errno() .. ')')
      end
   end
end
jit.off(loop)

-- Read one line with `prompt`. Returns the line; nil, 'eof' on Ctrl-D; nil, 'interrupt' on
-- Ctrl-C (the partial line is dropped and the terminal restored).
function Reader:read(prompt)
   local rl = self.rl
   self.done, self.line = false, nil
   rl.rl_callback_handler_install(prompt, self.line_cb)
   local ok, err = pcall(loop, self)
   if not ok then
      rl.rl_free_line_state()
      pcall(function() rl.rl_callback_sigcleanup() end) -- readline >= 7
      rl.rl_cleanup_after_signal()
      rl.rl_callback_handler_remove()
      if tostring(err):find('interrupted', 1, true) then return nil, 'interrupt' end
      error(err, 0)
   end
   if self.line == nil then return nil, 'eof' end
   return self.line
end
jit.off(Reader.read)

-- Add an entry (and append it to the file) unless it is blank or repeats the previous one.
function Reader:add_history(line)
   if line:match('^%s*$') or line == self.last then return end
   self.last = line
   self.rl.add_history(line)
   if self.history and not self.write_error then
      local e = self.rl.append_history(1, self.history)
      if e ~= 0 then self.write_error = ('cannot write history file %s (errno %d)'):format(self.history, e) end
   end
end

-- Bound the history file to history_size entries. Returns true, or nil and the first write
-- error of the session.
function Reader:close()
   if self.closed then return true end
   self.closed = true
   if not self.history then return true end
   if self.write_error then return nil, self.write_error end
   self.rl.history_truncate_file(self.history, self.size)
   return true
end

return M
