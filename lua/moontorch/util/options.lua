-- options.lua: a command-line parser in fb.resnet.torch's style (`-nEpochs 10 -LR 0.1`).
--   local options = require 'moontorch.util.options'
--   local opt = options.parse(arg, {
--      { 'nEpochs', 10, 'number of epochs' },
--      { 'optimizer', 'sgd', 'sgd | adam', choices = { 'sgd', 'adam' } },
--      { 'nesterov', false, 'use Nesterov momentum' },
--   }, 'banner line')
-- An option's type is its default's: numbers must parse as numbers, booleans take `true/false`
-- (or nothing, meaning true), strings anything. `-h`/`--help` prints the usage; bad input is an
-- error naming the option, so a typo never runs silently with defaults.
local options = {}

function options.usage(spec, banner)
   local lines = { banner or 'Options:' }
   for _, o in ipairs(spec) do
      local def = o[2]
      if def == nil then def = '' end
      lines[#lines + 1] = ('  -%-18s %s [%s]'):format(o[1], o[3] or '', tostring(def))
   end
   return table.concat(lines, '\n')
end

local function convert(o, s)
   local name, def = o[1], o[2]
   local v
   if type(def) == 'number' then
      v = tonumber(s)
      if v == nil then error(('option -%s: expected a number, got %q'):format(name, tostring(s)), 0) end
   elseif type(def) == 'boolean' then
      if s == 'true' or s == '1' then v = true
      elseif s == 'false' or s == '0' then v = false
      else error(('option -%s: expected true or false, got %q'):format(name, tostring(s)), 0) end
   else
      v = s
   end
   if o.choices then
      local ok = false
      for _, c in ipairs(o.choices) do if c == v then ok = true end end
      if not ok then
         error(('option -%s: %q is not one of %s'):format(name, tostring(v), table.concat(o.choices, ', ')), 0)
      end
   end
   return v
end

-- Parse args (a list of strings) against spec; returns the options table, or prints the usage
-- and exits on -h. `onhelp` (optional) replaces the exit, for tests.
function options.parse(args, spec, banner, onhelp)
   local by_name, opt = {}, {}
   for _, o in ipairs(spec) do
      by_name[o[1]] = o
      opt[o[1]] = o[2]
   end
   local i = 1
   while i <= #args do
      local a = args[i]
      if a == '-h' or a == '--help' or a == '-help' then
         local text = options.usage(spec, banner)
         if onhelp then return onhelp(text) end
         print(text)
         os.exit(0)
      end
      local name = a:match('^%-%-?([%a_][%w_]*)$')
      if not name then
         error(('unexpected argument %q (options look like -name value; -h lists them)'):format(a), 0)
      end
      local o = by_name[name]
      if not o then error(('unknown option -%s (-h lists the options)'):format(name), 0) end
      local nxt = args[i + 1]
      if type(o[2]) == 'boolean'
         and (nxt == nil or not (nxt == 'true' or nxt == 'false' or nxt == '1' or nxt == '0')) then
         opt[name] = true -- a bare flag
      else
         if nxt == nil then error(('option -%s needs a value'):format(name), 0) end
         opt[name] = convert(o, nxt)
         i = i + 1
      end
      i = i + 1
   end
   return opt
end

return options
