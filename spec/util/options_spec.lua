-- options_spec.lua: moontorch.util.options, the option parser of the recipes and benches: numbers,
-- strings, flags and choices, errors that name the option, and -h's usage text.
local util = require 'spec.util'
local options = require 'moontorch.util.options'

describe('options', function()
   local spec = {
      { 'nEpochs', 10, 'epochs' }, { 'LR', 0.1, 'learning rate' }, { 'nesterov', false, 'flag' },
      { 'optimizer', 'sgd', 'which', choices = { 'sgd', 'adam' } }, { 'save', 'runs', 'dir' },
   }
   it('parses numbers, strings, flags and keeps defaults', function()
      local n, lr = math.random(1, 100), math.random()
      local lrs = ('%.17g'):format(lr)
      local o = options.parse({ '-nEpochs', tostring(n), '-LR', lrs, '-nesterov', '-optimizer', 'adam' }, spec)
      assert.are.equal(n, o.nEpochs)
      assert.are.equal(tonumber(lrs), o.LR)
      assert.is_true(o.nesterov)
      assert.are.equal('adam', o.optimizer)
      assert.are.equal('runs', o.save)
      o = options.parse({ '-nesterov', 'false', '-save', 'x' }, spec)
      assert.is_false(o.nesterov)
      assert.are.equal('x', o.save)
      assert.are.equal(10, o.nEpochs)
   end)
   it('rejects bad input naming the option', function()
      util.assert_error(function() options.parse({ '-nEpochs', 'ten' }, spec) end, '-nEpochs', 'expected a number',
         'ten')
      util.assert_error(function() options.parse({ '-epochs', '3' }, spec) end, 'unknown option -epochs')
      util.assert_error(function() options.parse({ '-optimizer', 'rmsprop' }, spec) end, 'rmsprop', 'sgd, adam')
      util.assert_error(function() options.parse({ '-LR' }, spec) end, '-LR needs a value')
      util.assert_error(function() options.parse({ 'stray' }, spec) end, 'unexpected argument "stray"')
   end)
   it('prints a usage with every option on -h', function()
      local text = options.parse({ '-h' }, spec, 'banner', function(t) return t end)
      for _, o in ipairs(spec) do assert.truthy(text:find('-' .. o[1], 1, true)) end
      assert.truthy(text:find('banner', 1, true))
   end)
end)
