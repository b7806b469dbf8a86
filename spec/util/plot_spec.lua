-- plot_spec.lua: moontorch.util.plot, the SVG plot of a training run: one point per finite value
-- in each panel, NaNs skipped, the title escaped.
local util = require 'spec.util'
local plot = require 'moontorch.util.plot'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end
local slurp = util.slurp

describe('plot', function()
   it('draws one point per finite value in each panel', function()
      local n = math.random(3, 9)
      local h = { epoch = {}, train_loss = {}, test_acc = {} }
      for e = 1, n do
         h.epoch[e], h.train_loss[e], h.test_acc[e] = e, 2 * math.random(), 0.5 + 0.5 * math.random()
      end
      h.train_loss[2] = 0 / 0 -- skipped, not drawn as NaN
      local path = tmp('plot.svg')
      plot.write(path, h, 'a <title>')
      local svg = slurp(path)
      assert.truthy(svg:match('^<svg'))
      assert.truthy(svg:match('</svg>\n$'))
      assert.truthy(svg:find('a &lt;title&gt;', 1, true))
      local lines, circles = 0, 0
      for pts in svg:gmatch('<polyline[^>]*points="([^"]*)"') do
         lines = lines + 1
         local k = 0
         for _ in pts:gmatch('[%d.]+,[%d.]+') do k = k + 1 end
         circles = circles + k
      end
      assert.are.equal(2, lines)
      assert.are.equal(2 * n - 1, circles)
      assert.falsy(svg:lower():find('nan'))
   end)

   it('labels both panels, and every number in the SVG is finite', function()
      local n = math.random(2, 12)
      local h = { epoch = {}, train_loss = {}, test_acc = {} }
      for e = 1, n do
         h.epoch[e], h.train_loss[e], h.test_acc[e] = e, 1e3 * math.random(), math.random()
      end
      h.test_acc[n] = 1 / 0 -- skipped, like a NaN
      local svg = plot.svg(h, 'run & "title"')
      for _, text in ipairs({ 'run &amp; &quot;title&quot;', '>training loss<', '>test accuracy<', '>epoch<',
         '>loss<', '>accuracy (%)<' }) do
         assert.truthy(svg:find(text, 1, true), text)
      end
      local counts = {}
      for pts in svg:gmatch('<polyline[^>]*points="([^"]*)"') do
         local k = 0
         for _ in pts:gmatch('[^ ]+') do k = k + 1 end
         counts[#counts + 1] = k
      end
      assert.are.same({ n, n - 1 }, counts)
      for num in svg:gmatch('"(%-?[%d.]+[eE]?[-+]?%d*)"') do assert.truthy(tonumber(num), num) end
      assert.falsy(svg:lower():find('nan') or svg:lower():find('inf'))
   end)

   it('draws a chart of several series with a legend, markers, bars and a log axis', function()
      local a, b, c = {}, {}, {}
      for i = 1, 7 do a[i], b[i], c[i] = math.random(), 10 ^ (3 * math.random() - 2), -i end
      b[4] = -1 -- not on a log axis
      local chart = plot.chart({ 50, 40, 400, 300 }, { title = 'T', legend = true, ylog = true, series = {
         { label = 'a<1>', ys = a, style = '+-' }, { label = 'b', ys = b, style = '|' },
         { label = 'c', ys = c } } })
      local svg = plot.document(500, 400, nil, chart)
      assert.truthy(svg:find('>a&lt;1&gt;<', 1, true) and svg:find('>b<', 1, true) and svg:find('>c<', 1, true))
      local _, polylines = svg:gsub('<polyline', '')
      local _, circles = svg:gsub('<circle', '')
      local _, bars = svg:gsub('stroke%-width="3"', '')
      assert.are.same({ 1, 7, 6 }, { polylines, circles, bars }) -- c has nothing above 0 to draw
      assert.falsy(svg:lower():find('nan') or svg:lower():find('inf'))
   end)
end)
