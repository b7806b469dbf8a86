-- progress_spec.lua: moontorch.util.progress, the progress bar: running mean loss, accuracy,
-- images/s and ETA on the line, and the time format.
local progress = require 'moontorch.util.progress'

describe('progress', function()
   it('shows loss, accuracy, images/s and ETA', function()
      local chunks = {}
      local out = { write = function(_, ...) for _, s in ipairs({ ... }) do chunks[#chunks + 1] = s end end,
         flush = function() end }
      local bar = progress.new(10, { title = 'epoch 1', out = out, tty = true, interval = 0 })
      local losses = {}
      for i = 1, 4 do
         losses[i] = math.random()
         bar:update(i, { loss = losses[i], acc = 0.5, images = 32 })
      end
      local line = bar:line(4)
      local mean = (losses[1] + losses[2] + losses[3] + losses[4]) / 4
      assert.truthy(line:find(('loss %.4f'):format(mean), 1, true), line)
      assert.truthy(line:find('acc 50.00%', 1, true), line)
      assert.truthy(line:find('img/s', 1, true), line)
      assert.truthy(line:find('ETA', 1, true), line)
      assert.truthy(line:find('4/10', 1, true), line)
      assert.is_true(#chunks > 0)
      assert.are.equal('1:05', progress.format_time(65))
      assert.are.equal('1:01:01', progress.format_time(3661))
   end)
end)
