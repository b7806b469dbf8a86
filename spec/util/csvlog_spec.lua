-- csvlog_spec.lua: moontorch.util.csvlog, the CSV log of a training run: rows of random values read
-- back, quoting, and the append-on-resume that keeps the earlier epochs.
local util = require 'spec.util'
local logger = require 'moontorch.util.csvlog'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

describe('logger', function()
   it('writes CSV rows that read back, and appends on resume keeping earlier epochs', function()
      local path = tmp('log.csv')
      local rows = {}
      local log = logger.new(path, { 'epoch', 'loss', 'note' })
      for e = 1, 3 do
         rows[e] = { epoch = e, loss = math.random(), note = e == 2 and 'a,"b"' or 'x' }
         log:add(rows[e])
      end
      log:close()
      local cols, back = logger.read(path)
      assert.are.same({ 'epoch', 'loss', 'note' }, cols)
      assert.are.equal(3, #back)
      for e = 1, 3 do
         assert.are.equal(e, back[e].epoch)
         util.assert_close({ back[e].loss }, { rows[e].loss }, { atol = 1e-6, rtol = 1e-5 }, 'loss')
      end
      -- resume after epoch 2: rows of epoch 3 dropped, new rows appended
      log = logger.new(path, { 'epoch', 'loss', 'note' }, { append = true, keep = function(r) return r.epoch <= 2 end })
      log:add({ epoch = 3, loss = 0.5, note = 'y' })
      log:close()
      back = select(2, logger.read(path))
      assert.are.equal(3, #back)
      assert.are.equal(0.5, back[3].loss)
      assert.are.equal('y', back[3].note)
      assert.are.equal(2, back[2].epoch)
   end)
end)
