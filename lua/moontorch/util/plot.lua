-- plot.lua: an SVG of training loss and test accuracy per epoch, two panels side by side,
-- written beside a run's checkpoint so a user can look instead of read. No dependencies.
--   plot.write('run/plot.svg', { epoch = {1,2,3}, train_loss = {...}, test_acc = {...} })
-- Accuracies are fractions in [0, 1] and shown as percentages.
local plot = {}

local function esc(s) return (tostring(s):gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;')) end

-- round numbers for axis ticks covering [lo, hi]
local function ticks(lo, hi, n)
   if hi <= lo then hi = lo + 1 end
   local raw = (hi - lo) / (n or 5)
   local mag = 10 ^ math.floor(math.log10(raw))
   local step = mag
   for _, m in ipairs({ 1, 2, 5, 10 }) do
      if m * mag >= raw then step = m * mag break end
   end
   local first, out = math.floor(lo / step) * step, {}
   local last = math.ceil(hi / step) * step
   for v = first, last + step * 0.5, step do out[#out + 1] = v end
   return out, first, last
end

local function fmt_num(v)
   if math.abs(v - math.floor(v + 0.5)) < 1e-9 then return ('%d'):format(math.floor(v + 0.5)) end
   return ('%.3g'):format(v)
end

-- one panel: axes, grid, a polyline with dots; returns a list of SVG lines
local function panel(x0, y0, w, h, xs, ys, title, color, ylabel, yscale)
   local out = {}
   local function add(s) out[#out + 1] = s end
   local pts = {}
   for i = 1, #xs do
      local y = ys[i]
      if type(y) == 'number' and y == y and math.abs(y) ~= math.huge then pts[#pts + 1] = { xs[i], y * yscale } end
   end
   local xmin, xmax = 1, math.max(#xs, 2)
   for _, p in ipairs(pts) do xmin, xmax = math.min(xmin, p[1]), math.max(xmax, p[1]) end
   local ymin, ymax = math.huge, -math.huge
   for _, p in ipairs(pts) do ymin, ymax = math.min(ymin, p[2]), math.max(ymax, p[2]) end
   if ymin == math.huge then ymin, ymax = 0, 1 end
   local yt, ylo, yhi = ticks(ymin, ymax, 5)
   local xt, xlo, xhi = ticks(xmin, xmax, math.min(8, xmax - xmin))
   if xhi <= xlo then xhi = xlo + 1 end
   if yhi <= ylo then yhi = ylo + 1 end
   local function X(v) return x0 + (v - xlo) / (xhi - xlo) * w end
   local function Y(v) return y0 + h - (v - ylo) / (yhi - ylo) * h end
   add(('<text x="%.1f" y="%.1f" font-size="15" text-anchor="middle" font-weight="bold">%s</text>')
      :format(x0 + w / 2, y0 - 12, esc(title)))
   for _, v in ipairs(yt) do
      add(('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>'):format(x0, Y(v), x0 + w, Y(v)))
      add(('<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>'):format(x0 - 6, Y(v) + 4, fmt_num(v)))
   end
   for _, v in ipairs(xt) do
      if v == math.floor(v) then
         add(('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>'):format(X(v), y0, X(v), y0 + h))
         add(('<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>'):format(X(v), y0 + h + 16,
            fmt_num(v)))
      end
   end
   add(('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>'):format(x0, y0, w, h))
   add(('<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">epoch</text>'):format(x0 + w / 2, y0 + h + 34))
   add(('<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>')
      :format(x0 - 42, y0 + h / 2, x0 - 42, y0 + h / 2, esc(ylabel)))
   if #pts > 0 then
      local coords = {}
      for _, p in ipairs(pts) do coords[#coords + 1] = ('%.1f,%.1f'):format(X(p[1]), Y(p[2])) end
      add(('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'):format(color, table.concat(coords, ' ')))
      for _, p in ipairs(pts) do
         add(('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>epoch %s: %s</title></circle>')
            :format(X(p[1]), Y(p[2]), color, fmt_num(p[1]), ('%.4g'):format(p[2])))
      end
   end
   return out
end

-- Build the SVG text for a run's history.
function plot.svg(h, title)
   local xs = h.epoch or {}
   local W, H = 900, 380
   local lines = {
      ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">')
         :format(W, H, W, H),
      '<rect width="100%" height="100%" fill="white"/>',
   }
   if title then
      lines[#lines + 1] = ('<text x="%d" y="22" font-size="16" text-anchor="middle">%s</text>'):format(W / 2,
         esc(title))
   end
   for _, s in ipairs(panel(70, 60, 330, 260, xs, h.train_loss or {}, 'training loss', '#1f77b4', 'loss', 1)) do
      lines[#lines + 1] = s
   end
   local accuracy = panel(530, 60, 330, 260, xs, h.test_acc or {}, 'test accuracy', '#d62728', 'accuracy (%)', 100)
   for _, s in ipairs(accuracy) do
      lines[#lines + 1] = s
   end
   lines[#lines + 1] = '</svg>'
   return table.concat(lines, '\n') .. '\n'
end

-- Write the SVG (through a temporary file and a rename, so a reader never sees half a plot).
function plot.write(path, h, title)
   local tmp = path .. '.tmp'
   local f, err = io.open(tmp, 'w')
   if not f then error('plot: cannot write ' .. tostring(path) .. ': ' .. tostring(err), 2) end
   f:write(plot.svg(h, title))
   f:close()
   local ok, rerr = os.rename(tmp, path)
   if not ok then error('plot: cannot rename ' .. tmp .. ' to ' .. path .. ': ' .. tostring(rerr), 2) end
end

return plot
