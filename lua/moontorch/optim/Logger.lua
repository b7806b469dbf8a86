-- optim.Logger(filename [, timestamp]): logs rows of numbers (or strings) to a text file as
-- Torch7's Logger does: a header row of the symbol names, then one row per add, each value as
-- '%11.4e' followed by a tab. Without a filename the rows go to stdout.
--   logger = optim.Logger('accuracy.log'); logger:setNames{'train', 'test'}; logger:add{0.5, 0.4}
-- plot(): Torch7 draws through gnuplot into filename .. '.eps' (and a window). This project has no
-- gnuplot: plot writes an SVG chart of every logged series (or the named ones) to
-- filename .. '.svg' with no dependencies; display(false/true) is kept and has nothing to show.
-- Styles: '-' lines, '.' or '+' markers, '+-' both, '~' lines, '|' bars; other strings
-- (gnuplot options in Torch7) are drawn as lines.
local torch = require 'moontorch'

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

local COLORS = { '#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f' }
local function esc(s) return (tostring(s):gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;')) end

-- The SVG text of the given series: list of {label, values, style}.
function Logger:svg(series)
   local W, H, L, T, PW, PH = 720, 420, 80, 40, 600, 320
   local ymin, ymax, n = math.huge, -math.huge, 2
   local function y_of(v)
      if self.logscale then return (v > 0) and math.log10(v) or nil end
      return v
   end
   for _, s in ipairs(series) do
      n = math.max(n, #s[2])
      for _, v in ipairs(s[2]) do
         local y = type(v) == 'number' and y_of(v)
         if y and y == y and math.abs(y) ~= math.huge then ymin, ymax = math.min(ymin, y), math.max(ymax, y) end
      end
   end
   if ymin > ymax then ymin, ymax = 0, 1 end
   if ymax == ymin then ymin, ymax = ymin - 0.5, ymax + 0.5 end
   local function px(i) return L + (i - 1) / (n - 1) * PW end
   local function py(y) return T + PH - (y - ymin) / (ymax - ymin) * PH end
   local out = {
      ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'):format(W, H),
      '<rect width="100%" height="100%" fill="white"/>',
      ('<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>'):format(W / 2,
         esc('<Logger::' .. self.name .. '>')),
      ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>'):format(L, T, PW, PH),
   }
   for k = 0, 4 do -- y ticks (and grid), in log10 units when logscale is on
      local y = ymin + k * (ymax - ymin) / 4
      out[#out + 1] = ('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'):format(L, L + PW, py(y), py(y))
      out[#out + 1] = ('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>'):format(L - 6, py(y) + 4,
         ('%.3g'):format(self.logscale and 10 ^ y or y))
   end
   out[#out + 1] = ('<text x="%d" y="%d" font-size="11">1</text>'
      .. '<text x="%d" y="%d" font-size="11" text-anchor="end">%d</text>')
      :format(L, T + PH + 16, L + PW, T + PH + 16, n)
   for j, s in ipairs(series) do
      local color, style = COLORS[(j - 1) % #COLORS + 1], s[3]
      local pts = {}
      for i, v in ipairs(s[2]) do
         local y = type(v) == 'number' and y_of(v)
         if y and y == y and math.abs(y) ~= math.huge then pts[#pts + 1] = { px(i), py(y) } end
      end
      local marks = style == '+' or style == '.' or style == '+-'
      local bars = style == '|'
      if not marks and not bars or style == '+-' then
         local p = {}
         for _, q in ipairs(pts) do p[#p + 1] = ('%.1f,%.1f'):format(q[1], q[2]) end
         out[#out + 1] = ('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'):format(color,
            table.concat(p, ' '))
      end
      for _, q in ipairs(pts) do
         if bars then
            out[#out + 1] = ('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%d" stroke="%s" stroke-width="3"/>'):format(q[1],
               q[1], q[2], T + PH, color)
         elseif marks then
            out[#out + 1] = ('<circle cx="%.1f" cy="%.1f" r="%s" fill="%s"/>'):format(q[1], q[2],
               style == '.' and '1.5' or '3', color)
         end
      end
      out[#out + 1] = ('<text x="%d" y="%d" font-size="12" fill="%s">%s</text>'):format(L + 10, T + 16 * j, color,
         esc(s[1]))
   end
   out[#out + 1] = '</svg>'
   return table.concat(out, '\n') .. '\n'
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
   local tmp = self.svgfile .. '.tmp'
   local f, err = io.open(tmp, 'w')
   if not f then error('optim.Logger.plot: cannot write ' .. self.svgfile .. ': ' .. tostring(err), 2) end
   f:write(self:svg(series))
   f:close()
   assert(os.rename(tmp, self.svgfile))
   return self.svgfile
end

return Logger
