-- optim.Logger(filename [, timestamp]): logs rows of numbers (or strings) to a text file as
-- Torch7's Logger does: a header row of the symbol names, then one row per add, each value as
-- '%11.4e' followed by a tab. Without a filename the rows go to stdout.
--   logger = optim.Logger('accuracy.log'); logger:setNames{'train', 'test'}; logger:add{0.5, 0.4}
-- plot(): Torch7 draws through gnuplot into filename .. '.eps' (and a window). This project has no
-- gnuplot: plot writes an SVG chart of every logged series (or the named ones) to
-- filename .. '.svg' (drawn by moontorch.util.plot); display(false/true) is kept and has nothing to show.
-- Styles: '-' lines, '.' or '+' markers, '+-' both, '~' lines, '|' bars; other strings
-- (gnuplot options in Torch7) are drawn as lines.
local torch = require 'moontorch'
local plot = require 'moontorch.util.plot'

local Logger = torch.class('optim.Logger')

function Logger:__init(filename, timestamp)
   if filename then
      if type(filename) ~= 'string' then
         error('optim.Logger: expected a file name (string), got ' .. type(filename), 2)
      end
      self.name = filename
      local dir = filename:match('^(.*)/[^/]*$')
      if dir and dir ~= '' then os.execute(('mkdir -p %q'):format(dir)) end
      if timestamp then filename = filename .. '-' .. os.date('%Y_%m_%d_%X') end
      local f, err = io.open(filename, 'w')
      if not f then error(('optim.Logger: cannot open %s for writing: %s'):format(filename, tostring(err)), 2) end
      self.file = f
      self.epsfile = self.name .. '.eps' -- Torch7's field; the plot goes to svgfile
      self.svgfile = self.name .. '.svg'
   else
      self.file = io.stdout
      self.name = 'stdout'
      print('<Logger> warning: no path provided, logging to std out')
   end
   self.empty = true
   self.symbols, self.styles, self.names, self.idx = {}, {}, {}, {}
   self.showPlot = true
   self.defaultStyle = '+'
   self.logscale = false
end

-- keys in a stable order: 1..n for lists, sorted for named symbols
local function keys(t)
   local ks = {}
   for k in pairs(t) do ks[#ks + 1] = k end
   table.sort(ks, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == 'number'
   end)
   return ks
end

function Logger:setNames(names)
   if type(names) ~= 'table' then error('optim.Logger.setNames: expected a list of names', 2) end
   self.names = names
   self.empty = false
   self.nsymbols = #names
   for _, k in ipairs(keys(names)) do
      local key = names[k]
      self.file:write(tostring(key) .. '\t')
      self.symbols[k] = {}
      self.styles[k] = { self.defaultStyle }
      self.idx[key] = k
   end
   self.file:write('\n')
   self.file:flush()
   return self
end

function Logger:add(symbols)
   if type(symbols) ~= 'table' then error('optim.Logger.add: expected a table of values', 2) end
   local ks = keys(symbols)
   if self.empty then -- first row: the names are the keys
      self.empty = false
      self.nsymbols = #symbols
      for _, k in ipairs(ks) do
         self.file:write(tostring(k) .. '\t')
         self.symbols[k] = {}
         self.styles[k] = { self.defaultStyle }
         self.names[k] = k
      end
      self.idx = self.names
      self.file:write('\n')
   end
   local row = {}
   for _, k in ipairs(ks) do
      local v = symbols[k]
      if self.symbols[k] == nil then
         error(('optim.Logger.add: unknown symbol %s (the names are set by setNames or the first add)')
            :format(tostring(k)), 2)
      end
      if type(v) == 'number' then row[#row + 1] = ('%11.4e'):format(v) .. '\t'
      elseif type(v) == 'string' then row[#row + 1] = v .. '\t'
      else
         error(('optim.Logger.add: can only log numbers and strings, got a %s for %s'):format(type(v), tostring(k)), 2)
      end
   end
   self.file:write(table.concat(row) .. '\n')
   self.file:flush()
   for _, k in ipairs(ks) do table.insert(self.symbols[k], symbols[k]) end
end

function Logger:style(symbols)
   for name, style in pairs(symbols) do
      if type(style) == 'string' then self.styles[name] = { style }
      elseif type(style) == 'table' then self.styles[name] = style
      else error('optim.Logger.style: style should be a string or a table of strings', 2) end
   end
   return self
end

function Logger:setlogscale(state) self.logscale = state end
function Logger:display(state) self.showPlot = state end

-- The SVG text of the given series: list of {label, values, style}, drawn by moontorch.util.plot
-- on a log10 y axis when setlogscale(true) is on; x is the row number.
function Logger:svg(series)
   local spec = { legend = true, ylog = self.logscale, series = {} }
   for j, s in ipairs(series) do spec.series[j] = { label = s[1], ys = s[2], style = s[3] } end
   return plot.document(720, 420, '<Logger::' .. self.name .. '>', plot.chart({ 80, 50, 600, 320 }, spec))
end

-- plot() draws every series, plot(name1, name2, ...) the named ones; a series needs 2 values.
function Logger:plot(...)
   local series = {}
   local function add(k)
      local list = self.symbols[k]
      if list and #list > 1 then
         for _, st in ipairs(self.styles[k] or { self.defaultStyle }) do
            series[#series + 1] = { tostring(self.names[k] or k), list, st }
         end
      end
   end
   local args = { ... }
   if args[1] == nil then
      for _, k in ipairs(keys(self.symbols)) do add(k) end
   else
      for _, name in ipairs(args) do
         if self.idx[name] == nil then error(('optim.Logger.plot: no symbol named %s'):format(tostring(name)), 2) end
         add(self.idx[name])
      end
   end
   if #series == 0 or not self.svgfile then return end
   local ok, stage, err = plot.save(self.svgfile, self:svg(series))
   if not ok and stage == 'rename' then error(err, 0) end -- as assert(os.rename(...)) raised it
   if not ok then error('optim.Logger.plot: cannot write ' .. self.svgfile .. ': ' .. tostring(err), 2) end
   return self.svgfile
end

return Logger
