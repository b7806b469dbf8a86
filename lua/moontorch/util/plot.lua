-- plot.lua: the one SVG line-chart writer (no dependencies), used by the training run's plot
-- and by optim.Logger:plot.
--   plot.write('run/plot.svg', { epoch = {1,2,3}, train_loss = {...}, test_acc = {...} })
-- draws training loss and test accuracy per epoch, two panels side by side, beside a run's
-- checkpoint so a user can look instead of read. Accuracies are fractions in [0, 1] and shown
-- as percentages. The parts it is built from are public for other charts:
--   plot.chart(box, spec)            the SVG lines of one chart (axes, ticks, series, legend)
--   plot.document(W, H, title, ...)  an SVG document of those charts
--   plot.save(path, text)            write through a temporary file and a rename
local plot = {}

plot.COLORS = { '#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f' }

-- text for SVG content or attributes: markup escaped, control characters XML forbids dropped
function plot.esc(s)
   return (tostring(s):gsub('[%z\1-\8\11\12\14-\31]', ''):gsub('&', '&amp;'):gsub('<', '&lt;')
      :gsub('>', '&gt;'):gsub('"', '&quot;'))
end
local esc = plot.esc

-- a tick label: integers as integers, anything else to 3 significant digits
function plot.fmt_num(v)
   if math.abs(v) < 1e15 and math.abs(v - math.floor(v + 0.5)) < 1e-9 then
      return ('%d'):format(math.floor(v + 0.5))
   end
   return ('%.3g'):format(v)
end
local fmt_num = plot.fmt_num

local function finite(v) return type(v) == 'number' and v == v and math.abs(v) ~= math.huge end

-- round numbers for axis ticks covering [lo, hi], about n of them; returns the ticks and the
-- range they span
local function ticks(lo, hi, n)
   if hi <= lo then hi = lo + 1 end
   local raw = (hi - lo) / (n or 5)
   local mag = 10 ^ math.floor(math.log10(raw))
   local step = mag
   for _, m in ipairs({ 1, 2, 5, 10 }) do
      if m * mag >= raw then step = m * mag break end
   end
   local first, last = math.floor(lo / step) * step, math.ceil(hi / step) * step
   local count = math.floor((last - first) / step + 0.5)
   if not (step > 0 and finite(first) and finite(last) and count <= 50) then return { lo, hi }, lo, hi end
   local out = {}
   for k = 0, count do out[#out + 1] = first + k * step end
   return out, first, last
end

-- plot.chart(box, spec): the SVG lines (a list of strings) of one line chart whose plot area is
-- box = { x, y, w, h }; the title, tick labels and axis labels go around it.
-- spec.series: list of { label =, ys =, xs = (default 1..#ys), style =, color = (default from
--   plot.COLORS by position) }. x values are counts (epochs, rows): the x ticks are integers.
--   Values that are not finite numbers are skipped. style: '-' (the default) or any other string
--   a line, '+' or '.' markers, '+-' a line with markers, '|' bars.
-- spec.title, spec.xlabel, spec.ylabel: text, escaped here; spec.legend: list the series' labels
-- spec.ylog: a log10 y axis (values <= 0 skipped), labelled in the values' units
function plot.chart(box, spec)
   local x0, y0, w, h = box[1], box[2], box[3], box[4]
   local out = {}
   local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
   -- each series' points { x, y on the axis, the value }, and the range they cover
   local xmin, xmax, ymin, ymax = 1, 2, math.huge, -math.huge
   local points = {}
   for j, s in ipairs(spec.series) do
      local xs, ys, pts = s.xs, s.ys or {}, {}
      local n = xs and #xs or #ys
      xmax = math.max(xmax, n)
      for i = 1, n do
         local x, v = xs and xs[i] or i, ys[i]
         local y = v
         if spec.ylog and finite(y) then y = y > 0 and math.log10(y) or nil end
         if finite(x) and finite(y) then
            pts[#pts + 1] = { x, y, v }
            xmin, xmax = math.min(xmin, x), math.max(xmax, x)
            ymin, ymax = math.min(ymin, y), math.max(ymax, y)
         end
      end
      points[j] = pts
   end
   if ymin > ymax then ymin, ymax = 0, 1 end
   local yt, ylo, yhi = ticks(ymin, ymax, 5)
   local xt, xlo, xhi = ticks(xmin, xmax, math.min(8, xmax - xmin))
   if xhi <= xlo then xhi = xlo + 1 end
   if yhi <= ylo then yhi = ylo + 1 end
   local function X(v) return x0 + (v - xlo) / (xhi - xlo) * w end
   local function Y(v) return y0 + h - (v - ylo) / (yhi - ylo) * h end

   if spec.title then
      add('<text x="%.1f" y="%.1f" font-size="15" text-anchor="middle" font-weight="bold">%s</text>',
         x0 + w / 2, y0 - 12, esc(spec.title))
   end
   for _, v in ipairs(yt) do
      add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>', x0, Y(v), x0 + w, Y(v))
      add('<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>', x0 - 6, Y(v) + 4,
         fmt_num(spec.ylog and 10 ^ v or v))
   end
   for _, v in ipairs(xt) do
      if v == math.floor(v) then
         add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>', X(v), y0, X(v), y0 + h)
         add('<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>', X(v), y0 + h + 16, fmt_num(v))
      end
   end
   add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>', x0, y0, w, h)
   if spec.xlabel then
      add('<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>', x0 + w / 2, y0 + h + 34,
         esc(spec.xlabel))
   end
   if spec.ylabel then
      add('<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>',
         x0 - 42, y0 + h / 2, x0 - 42, y0 + h / 2, esc(spec.ylabel))
   end

   for j, s in ipairs(spec.series) do
      local color, style, pts = s.color or plot.COLORS[(j - 1) % #plot.COLORS + 1], s.style or '-', points[j]
      local marks = style == '+' or style == '.' or style == '+-'
      local bars = style == '|'
      if #pts > 0 and (style == '+-' or not (marks or bars)) then
         local coords = {}
         for _, p in ipairs(pts) do coords[#coords + 1] = ('%.1f,%.1f'):format(X(p[1]), Y(p[2])) end
         add('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>', color, table.concat(coords, ' '))
      end
      local prefix = (s.label and esc(s.label) .. ', ' or '') .. (spec.xlabel and esc(spec.xlabel) .. ' ' or '')
      for _, p in ipairs(pts) do
         local tip = ('<title>%s%s: %.4g</title>'):format(prefix, fmt_num(p[1]), p[3])
         if bars then
            add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3">%s</line>', X(p[1]),
               Y(p[2]), X(p[1]), y0 + h, color, tip)
         elseif marks then
            add('<circle cx="%.1f" cy="%.1f" r="%s" fill="%s">%s</circle>', X(p[1]), Y(p[2]),
               style == '.' and '1.5' or '3', color, tip)
         end
      end
      if spec.legend and s.label then
         add('<text x="%.1f" y="%.1f" font-size="12" fill="%s">%s</text>', x0 + 10, y0 + 16 * j, color, esc(s.label))
      end
   end
   return out
end

-- An SVG document W x H with a title (or nil) above the charts (lists of lines from plot.chart).
function plot.document(W, H, title, ...)
   local lines = {
      ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">')
         :format(W, H, W, H),
      '<rect width="100%" height="100%" fill="white"/>',
   }
   if title then
      lines[#lines + 1] = ('<text x="%d" y="22" font-size="16" text-anchor="middle">%s</text>'):format(W / 2,
         esc(title))
   end
   for _, chart in ipairs({ ... }) do
      for _, s in ipairs(chart) do lines[#lines + 1] = s end
   end
   lines[#lines + 1] = '</svg>'
   return table.concat(lines, '\n') .. '\n'
end

-- Write text to path through path .. '.tmp' and a rename, so a reader never sees half a file.
-- Returns true, or nil, 'write' or 'rename', and the system's message.
function plot.save(path, text)
   local tmp = path .. '.tmp'
   local f, err = io.open(tmp, 'w')
   if not f then return nil, 'write', err end
   local ok, werr = f:write(text)
   f:close()
   if not ok then
      os.remove(tmp)
      return nil, 'write', werr
   end
   local renamed, rerr = os.rename(tmp, path)
   if not renamed then return nil, 'rename', rerr end
   return true
end

-- Build the SVG text for a run's history.
function plot.svg(h, title)
   local xs = h.epoch or {}
   local acc = {}
   for i, v in pairs(h.test_acc or {}) do acc[i] = type(v) == 'number' and 100 * v or v end
   return plot.document(900, 380, title,
      plot.chart({ 70, 60, 330, 260 }, { title = 'training loss', xlabel = 'epoch', ylabel = 'loss',
         series = { { xs = xs, ys = h.train_loss or {}, style = '+-', color = plot.COLORS[1] } } }),
      plot.chart({ 530, 60, 330, 260 }, { title = 'test accuracy', xlabel = 'epoch', ylabel = 'accuracy (%)',
         series = { { xs = xs, ys = acc, style = '+-', color = plot.COLORS[2] } } }))
end

-- Write the SVG (through a temporary file and a rename, so a reader never sees half a plot).
function plot.write(path, h, title)
   local ok, stage, err = plot.save(path, plot.svg(h, title))
   if ok then return end
   if stage == 'rename' then
      error('plot: cannot rename ' .. path .. '.tmp to ' .. path .. ': ' .. tostring(err), 2)
   end
   error('plot: cannot write ' .. tostring(path) .. ': ' .. tostring(err), 2)
end

return plot
