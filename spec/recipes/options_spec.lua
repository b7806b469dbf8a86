-- options_spec.lua: the command lines of both recipes (recipes/*/opts.lua): grouped as -h
-- prints them, every number with its declared range and every choice with its list, the groups
-- both recipes have taken from moontorch.train.flags (the same options, once), and main files
-- that stay short enough to read top to bottom.
require 'moontorch'
local util = require 'spec.util'

local RECIPES = {
   { main = 'fashion_mnist', opts = 'recipes.fashion_mnist.opts' },
   { main = 'resnet50_imagenet', opts = 'recipes.imagenet.opts' },
}
local GROUPS = { 'Data:', 'Model:', 'Optimization:', 'Run:', 'Precision:', 'Distributed (mpirun):',
   'Compression (with -dist):', 'Checkpoints:' }

describe('the recipes\' options', function()
   it('declare a range for every number and a list for every choice', function()
      for _, r in ipairs(RECIPES) do
         local cmd, n = require(r.opts).cmdline(), 0
         for key, o in pairs(cmd.options) do
            n = n + 1
            if o.type == 'number' then assert.truthy(o.range or o.choices, r.main .. ' ' .. key .. ' has no range') end
            if o.choices then assert.is_true(#o.choices >= 2, r.main .. ' ' .. key) end
         end
         assert.is_true(n >= 40, ('%s: %d options'):format(r.main, n))
      end
   end)

   it('share the groups of moontorch.train.flags, with the same declarations', function()
      local flags = require 'moontorch.train.flags'
      local torch = require 'moontorch'
      local shared = torch.CmdLine()
      flags.largeBatch(shared)
      flags.precision(shared)
      flags.distributed(shared)
      flags.compression(shared, 0)
      flags.checkpoints(shared, '')
      for _, r in ipairs(RECIPES) do
         local cmd = require(r.opts).cmdline()
         for key, o in pairs(shared.options) do
            local mine = cmd.options[key]
            assert.truthy(mine, r.main .. ' lacks ' .. key)
            assert.are.same({ o.help, o.type, o.range, o.integer, o.choices },
               { mine.help, mine.type, mine.range, mine.integer, mine.choices }, r.main .. ' ' .. key)
         end
      end
   end)

   it('-h prints them by group and exits 0', function()
      for _, r in ipairs(RECIPES) do
         local out, code = util.sh(('luajit recipes/%s.lua -h'):format(r.main))
         assert.are.equal(0, code, out)
         local at = 0
         for _, g in ipairs(GROUPS) do
            local i = out:find('\n' .. g .. '\n', 1, true)
            assert.truthy(i and i > at, r.main .. ': group ' .. g .. ' missing or out of order:\n' .. out)
            at = i
         end
         assert.truthy(out:find('-batchSize', 1, true) and out:find('(an integer >= 1)', 1, true), out)
      end
   end)

   it('keep the main files short: the epoch loop in view', function()
      for _, r in ipairs(RECIPES) do
         local n, loop = 0, false
         for line in io.lines(('recipes/%s.lua'):format(r.main)) do
            n = n + 1
            loop = loop or line:find('for epoch = trainer.startEpoch, trainer.lastEpoch do', 1, true) ~= nil
         end
         assert.is_true(n <= 100, ('recipes/%s.lua has %d lines'):format(r.main, n))
         assert.is_true(loop, r.main .. ': no epoch loop')
      end
   end)
end)
