-- cmdline.lua: torch.CmdLine, Torch7's command-line parser and run logger (cmdline.md).
--   local cmd = torch.CmdLine()
--   cmd:text('Training a simple network')
--   cmd:option('-seed', 123, 'initial random seed')
--   cmd:option('-cuda', false, 'run on the GPU')            -- a bare -cuda flips the default
--   cmd:option('-optim', 'sgd', 'sgd | adam', { choices = { 'sgd', 'adam' } })   -- moontorch: choices
--   cmd:option('-batchSize', 64, 'mini-batch size', { range = '[1, inf)', integer = true })  -- and ranges
--   cmd:argument('-data', 'dataset directory')              -- positional
--   local params = cmd:parse(arg)
--   params.rundir = cmd:string('experiment', params, { dir = true })   -- 'experiment,seed=456'
--   cmd:log(params.rundir .. '/log', params)                 -- print() now also writes the log
-- An option's type is its default's (or the 4th argument): numbers must parse as numbers; a
-- boolean flips when given bare and also takes an explicit `true`/`false`. Bad input (an unknown
-- option, a bad number, a missing value or argument) is a Lua error naming the option and the
-- value; Torch7 printed the help and exited instead. `-h`, `-help` and `--help` print the help
-- and call cmd.exit(0) (os.exit unless replaced, e.g. in tests).
-- moontorch's additions, so that checks are declared rather than written out: `choices` (the
-- value must be one of them), `range` for numbers, an interval such as '[1, inf)', '(0, 1]' or
-- '[0, nEpochs)' whose bounds are numbers, inf, or the name of another number option (checked
-- against its parsed value), and `integer = true` (whole numbers only). parse() checks every
-- value, defaults included, once all arguments are read; cmd:check(params) checks a table of
-- values the same way (the keys it holds). Errors start with cmd.name ('torch.CmdLine' unless
-- set, e.g. to the program's name).
local class = require 'moontorch.class'

local function strip(key) return (key:match('^%-*(.*)$')) end
local function pad(s, n) return s .. string.rep(' ', n - #s) end
local TYPES = { number = true, string = true, boolean = true }

-- '[lo, hi)' -> { lo =, hi =, loOpen =, hiOpen =, text = }; a bound is a number (inf, -inf) or
-- the name of another option
local function parse_range(key, s)
   local open, lo, hi, close = tostring(s):match('^%s*([%[%(])%s*([^,%s]+)%s*,%s*([^,%s]+)%s*([%]%)])%s*$')
   local function bound(b)
      if tonumber(b) then return tonumber(b) end
      if b:match('^[%a_][%w_]*$') then return b end
   end
   if not open or bound(lo) == nil or bound(hi) == nil then
      error(('torch.CmdLine.option: option %s has range %s (expected an interval such as \'[0, 1)\')'):format(key,
         tostring(s)), 3)
   end
   return { lo = bound(lo), hi = bound(hi), loOpen = open == '(', hiOpen = close == ')', text = { lo, hi } }
end

local screen_print -- the print that was in place before the first log(); log() keeps using it

return function(torch)
   local CmdLine = class('torch.CmdLine', nil, torch)

   function CmdLine:__init(argseparator, keyseparator)
      self.name = 'torch.CmdLine' -- starts every parse error
      self.argseparator = argseparator or ','
      self.keyseparator = keyseparator or '='
      self.options = {}    -- '-seed' -> { key =, default =, help =, type =, choices = }
      self.byname = {}     -- 'seed' -> the same option
      self.arguments = {}  -- positional, in order
      self.helplines = {}  -- text lines, options and arguments, in declaration order
      self.dateformat = nil
      self.silentio = false
      self.exit = os.exit
   end

   -- A parse error: a Lua error that names what was wrong.
   function CmdLine:error(msg)
      error(self.name .. ': ' .. msg .. ' (-h lists the options)', 0)
   end

   function CmdLine:text(txt)
      txt = txt or ''
      if type(txt) ~= 'string' then error('torch.CmdLine.text: expected a string, got ' .. type(txt), 2) end
      self.helplines[#self.helplines + 1] = txt
   end

   -- option(key, default, help [, type | { type =, choices = }])
   function CmdLine:option(key, default, help, extra)
      if type(key) ~= 'string' or not key:match('^%-%-?[%a_][%w_%.%-]*$') then
         error('torch.CmdLine.option: the name must look like -name, got ' .. tostring(key), 2)
      end
      if default == nil then error('torch.CmdLine.option: option ' .. key .. ' has no default value', 2) end
      local ty, choices, range, integer = extra, nil, nil, nil
      if type(extra) == 'table' then
         ty, choices, range, integer = extra.type, extra.choices, extra.range, extra.integer
      end
      ty = ty or type(default)
      if not TYPES[ty] then
         error(('torch.CmdLine.option: option %s has type %s (number, string or boolean expected)'):format(key,
            tostring(ty)), 2)
      end
      if type(default) ~= ty then
         error(('torch.CmdLine.option: option %s has a default of type %s, not %s'):format(key, type(default), ty), 2)
      end
      if (range or integer) and ty ~= 'number' then
         error(('torch.CmdLine.option: option %s has a range but is a %s'):format(key, ty), 2)
      end
      local name = strip(key)
      if self.byname[name] then error('torch.CmdLine.option: option ' .. key .. ' is already defined', 2) end
      local o = { key = key, default = default, help = help, type = ty, choices = choices, integer = integer,
         range = range and parse_range(key, range) }
      self.options[key], self.byname[name] = o, o
      self.helplines[#self.helplines + 1] = o
   end

   -- argument(key, help [, type]): a positional argument; all declared ones are required.
   function CmdLine:argument(key, help, ty)
      if type(key) ~= 'string' then error('torch.CmdLine.argument: expected a name, got ' .. type(key), 2) end
      if ty ~= nil and ty ~= 'string' and ty ~= 'number' then
         error('torch.CmdLine.argument: argument ' .. key .. ' has type ' .. tostring(ty)
            .. ' (number or string expected)', 2)
      end
      local a = { key = key, help = help, type = ty, positional = true }
      self.arguments[#self.arguments + 1] = a
      self.helplines[#self.helplines + 1] = a
   end

   function CmdLine:silent() self.silentio = true end

   -- Prefix each line of the log file (not the screen) with the date, and [name] when given.
   function CmdLine:addTime(name, format)
      format = format or '%F %T'
      if type(format) ~= 'string' then
         error('torch.CmdLine.addTime: the format must be a string, got ' .. type(format), 2)
      end
      self.dateformat = format
      self.timename = name and ('[' .. tostring(name) .. ']: ') or ' '
   end

   function CmdLine:default()
      local params = {}
      for _, o in pairs(self.options) do params[strip(o.key)] = o.default end
      return params
   end

   local function check_choice(self, o, v)
      if not o.choices then return end
      for _, c in ipairs(o.choices) do if c == v then return end end
      local names = {}
      for i, c in ipairs(o.choices) do names[i] = tostring(c) end
      self:error(('option %s: %q is not one of %s'):format(o.key, tostring(v), table.concat(names, ', ')))
   end

   -- what a range asks of a value, as messages say it: 'an integer >= 1', 'in [0, nEpochs = 2)'
   local function describe(o, params)
      local r, what = o.range, o.integer and 'an integer' or ''
      if not r then return what end
      local function show(i)
         local b = i == 1 and r.lo or r.hi
         if type(b) == 'string' and params then return ('%s = %s'):format(b, tostring(params[b])) end
         return r.text[i]
      end
      local sep = o.integer and ' ' or ''
      if r.lo == -math.huge and r.hi == math.huge then return what end
      if r.hi == math.huge then return what .. sep .. (r.loOpen and '> ' or '>= ') .. show(1) end
      if r.lo == -math.huge then return what .. sep .. (r.hiOpen and '< ' or '<= ') .. show(2) end
      return ('%s%sin %s%s, %s%s'):format(what, sep, r.loOpen and '(' or '[', show(1), show(2), r.hiOpen and ')' or ']')
   end

   -- whether v lies in o's range (a bound naming an option without a value is not checked)
   local function in_range(o, v, params)
      if o.integer and v ~= math.floor(v) then return false end
      local r = o.range
      if not r then return true end
      local lo, hi = r.lo, r.hi
      if type(lo) == 'string' then lo = tonumber(params[lo]) or -math.huge end
      if type(hi) == 'string' then hi = tonumber(params[hi]) or math.huge end
      return (r.loOpen and v > lo or not r.loOpen and v >= lo) and (r.hiOpen and v < hi or not r.hiOpen and v <= hi)
   end

   -- Checks the values params holds against their options' choices and ranges; an error names
   -- the first option that is out of bounds, its value and what it must be.
   function CmdLine:check(params)
      for _, o in ipairs(self.helplines) do
         local v = type(o) == 'table' and not o.positional and params[strip(o.key)] or nil
         for _, b in ipairs(o.range and { o.range.lo, o.range.hi } or {}) do
            if type(b) == 'string' and not self.byname[b] then
               error(('torch.CmdLine: the range of option %s names %s, which is no option'):format(o.key, b), 2)
            end
         end
         if v ~= nil then
            check_choice(self, o, v)
            if (o.range or o.integer) and (type(v) ~= 'number' or not in_range(o, v, params)) then
               self:error(('option %s must be %s, got %s'):format(o.key, describe(o, params), tostring(v)))
            end
         end
      end
      return params
   end

   -- Reads the option at args[i]; returns how many words it used.
   local function read_option(self, params, o, args, i)
      local name = strip(o.key)
      local nxt = args[i + 1]
      if o.type == 'boolean' then
         if nxt == 'true' or nxt == 'false' then
            params[name] = nxt == 'true'
            return 2
         end
         params[name] = not o.default
         return 1
      end
      if nxt == nil then self:error(('option %s needs a value (a %s)'):format(o.key, o.type)) end
      local v = nxt
      if o.type == 'number' then
         v = tonumber(nxt)
         if v == nil then self:error(('option %s expects a number, got %q'):format(o.key, nxt)) end
      end
      check_choice(self, o, v)
      params[name] = v
      return 2
   end

   function CmdLine:parse(args)
      args = args or rawget(_G, 'arg') or {}
      local params = self:default()
      local npos = 0
      local i = 1
      while i <= #args do
         local a = args[i]
         if type(a) ~= 'string' then self:error(('argument %d is a %s, not a string'):format(i, type(a))) end
         if a == '-h' or a == '-help' or a == '--help' then
            self:help(args)
            return self.exit(0)
         end
         local o = self.options[a] or (a:match('^%-%-?[%a_]') and self.byname[strip(a)])
         if o then
            i = i + read_option(self, params, o, args, i)
         elseif a:match('^%-%-?[%a_]') then
            self:error('unknown option ' .. a)
         else
            npos = npos + 1
            local p = self.arguments[npos]
            if not p then self:error(('unexpected argument %q'):format(a)) end
            local v = a
            if p.type == 'number' then
               v = tonumber(a)
               if v == nil then self:error(('argument <%s> expects a number, got %q'):format(strip(p.key), a)) end
            end
            params[strip(p.key)] = v
            i = i + 1
         end
      end
      if npos < #self.arguments then
         self:error(('missing argument <%s>'):format(strip(self.arguments[npos + 1].key)))
      end
      return self:check(params)
   end

   -- The help, as parse() prints it for -h.
   function CmdLine:help(args)
      local out = { 'Usage: ' }
      if args and args[0] then out[#out + 1] = tostring(args[0]) .. ' ' end
      out[#out + 1] = '[options]'
      for _, a in ipairs(self.arguments) do out[#out + 1] = ' <' .. strip(a.key) .. '>' end
      out[#out + 1] = '\n'
      local width = 0
      for _, h in ipairs(self.helplines) do
         if type(h) == 'table' then
            width = math.max(width, h.positional and #strip(h.key) + 2 or #h.key)
         end
      end
      for _, h in ipairs(self.helplines) do
         if type(h) == 'string' then
            out[#out + 1] = h
         elseif h.positional then
            out[#out + 1] = '  ' .. pad('<' .. strip(h.key) .. '>', width) .. (h.help and ' ' .. h.help or '')
         else
            local bounds = (h.range or h.integer) and (' (%s)'):format(describe(h)) or ''
            out[#out + 1] = '  ' .. pad(h.key, width) .. (h.help and ' ' .. h.help or '')
               .. ' [' .. tostring(h.default) .. ']' .. bounds
         end
         out[#out + 1] = '\n'
      end
      io.write(table.concat(out))
   end

   -- The run name: prefix, then the positional arguments in order, then the options that differ
   -- from their defaults, sorted, as key=value (booleans t/f), joined by the separator.
   -- ignore = { dir = true } leaves an option out; { seed = false } keeps it even at its default.
   function CmdLine:string(prefix, params, ignore)
      prefix, ignore = prefix or '', ignore or {}
      if type(params) ~= 'table' then
         error('torch.CmdLine.string: expected the params table as argument 2, got ' .. type(params), 2)
      end
      local positional, opts = {}, {}
      for k, v in pairs(params) do
         local o = self.byname[k]
         if not ignore[k] then -- ignored ones are left out
            if o and not o.positional then
               if v ~= o.default or ignore[k] == false then
                  if type(v) == 'boolean' then v = v and 't' or 'f' end
                  opts[#opts + 1] = k .. self.keyseparator .. tostring(v)
               end
            else
               for n, a in ipairs(self.arguments) do
                  if strip(a.key) == k then positional[n] = k .. self.keyseparator .. tostring(v) end
               end
            end
         end
      end
      table.sort(opts)
      local parts = {}
      for n = 1, #self.arguments do if positional[n] then parts[#parts + 1] = positional[n] end end
      for _, s in ipairs(opts) do parts[#parts + 1] = s end
      if #parts == 0 then return prefix end
      return prefix .. self.argseparator .. table.concat(parts, self.argseparator)
   end

   -- Send print() to the file (a name, or an open file) as well as the screen, and log params.
   function CmdLine:log(file, params)
      local f = file
      if io.type(file) ~= 'file' then
         if type(file) ~= 'string' then
            error('torch.CmdLine.log: expected a file name or an open file, got ' .. type(file), 2)
         end
         local err
         f, err = io.open(file, 'w')
         if not f then error('torch.CmdLine.log: cannot open the log file: ' .. tostring(err), 2) end
      end
      screen_print = screen_print or print
      local show, cmd = screen_print, self
      rawset(_G, 'print', function(...)
         if not cmd.silentio then show(...) end
         local n, words = select('#', ...), {}
         for k = 1, n do words[k] = tostring((select(k, ...))) end
         local line = table.concat(words, '\t')
         if cmd.dateformat then line = os.date(cmd.dateformat) .. cmd.timename .. line end
         f:write(line, '\n')
         f:flush()
      end)
      print('[program started on ' .. os.date() .. ']')
      print('[command line arguments]')
      if params then
         local keys = {}
         for k in pairs(params) do keys[#keys + 1] = k end
         table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
         for _, k in ipairs(keys) do print(k, params[k]) end
      end
      print('[----------------------]')
   end
end
