-- progress_spec.lua: moontorch.util.progress, the progress bar: running mean loss, accuracy,
-- images/s and ETA on the line, and the time format; means weighted by rows; a bar started
-- part-way (a resumed epoch).
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

   it('weights each batch by its rows, the loss by its own rows, as an epoch summary does', function()
      local bar = progress.new(5, { tty = false, silent = true })
      local lossSum, lossRows, correct, rows = 0, 0, 0, 0
      for i = 1, 5 do
         local n, l = math.random(1, 64), math.random()
         local c = math.random(0, n)
         local ln = i == 3 and 0 or n -- a batch whose loss does not count (a skipped fp16 step)
         bar:update(i, { loss = ln > 0 and l or nil, lossWeight = ln, acc = c / n, weight = n, images = n })
         lossSum, lossRows, correct, rows = lossSum + l * ln, lossRows + ln, correct + c, rows + n
      end
      local st = bar:stats()
      assert.is_true(math.abs(st.loss - lossSum / lossRows) < 1e-12, st.loss)
      assert.is_true(math.abs(st.acc - correct / rows) < 1e-12, st.acc)
   end)

   it('started at step k of n (a resumed epoch) counts from k and shows k+i of n', function()
      local bar = progress.new(100, { tty = false, silent = true, first = 40 })
      bar.start = progress.now() - 10 -- 10 s for the 20 steps since its start: 20 s for the 40 left
      bar:update(60, { loss = 1, images = 10 })
      local line = bar:line(60)
      assert.truthy(line:find('60/100', 1, true), line)
      assert.truthy(line:find('ETA 0:20', 1, true), line)
   end)
end)
