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
end)
