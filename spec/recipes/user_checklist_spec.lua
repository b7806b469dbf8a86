-- user_checklist_spec.lua: what a user meets first, tried as a user would, through the
-- recipes' command lines: every bad flag is one line and exit status 1 before any data is read
-- (-data points nowhere, so reading it first would say so instead), and -resume's file is
-- checked before the data too: missing, cut off, not a checkpoint, another recipe's, another
-- -batchSize, a finished run. Ctrl-C and SIGTERM: a checkpoint at the step's end, the -resume
-- command, exit 130 / 143, and the resumed run ends where the unbroken one does.
local util = require 'spec.util'
local runs = require 'spec.recipes.runs'
local ck = require 'moontorch.checkpoint'

local tmp = util.tmpdir()
teardown(function() os.execute(('rm -rf %q'):format(tmp)) end)

local NODATA = ' -data /nonexistent-mt-data'
local FM = { 'fashion_mnist', '-quiet -save ""' .. NODATA }
local IN = { 'resnet50_imagenet', '-quiet -save ""' .. NODATA }

-- one line on stderr/stdout naming the problem (no Lua source position), exit status 1
local function refused(recipe, args, expect)
   local out, code = runs.run(recipe[1], recipe[2] .. ' ' .. args)
   local where = recipe[1] .. ' ' .. args
   assert.are.equal(1, code, where .. ':\n' .. out)
   assert.are.equal(1, select(2, out:gsub('\n', '')), where .. ': not one line:\n' .. out)
   assert.falsy(out:find('%.lua:%d+:'), where .. ': a source position:\n' .. out)
   assert.falsy(out:find('nonexistent%-mt%-data'), where .. ': the data were read first:\n' .. out)
   assert.truthy(out:find(expect, 1, true), where .. ': expected "' .. expect .. '" in:\n' .. out)
end

describe('every flag is validated before the data are read', function()
   local BAD = {
      { '-LR -1', '-LR must be' }, { '-momentum 5', '-momentum must be in [0, 1)' },
      { '-nEpochs 1.5', '-nEpochs must be an integer' },
      { '-batchSize -4', '-batchSize must be an integer >= 1' }, { '-threads -2', '-threads must be an integer' },
      { '-limitBatches -1', '-limitBatches must be an integer >= 0' },
      { '-nesterov maybe', 'unexpected argument "maybe"' },
      { '-optimizer adagrad', '-optimizer' }, { '-precision fp8', '-precision' }, { '-nosuchflag 3', 'nosuchflag' },
   }
   for _, recipe in ipairs({ FM, IN }) do
      it(recipe[1], function()
         for _, b in ipairs(BAD) do refused(recipe, b[1], b[2]) end
         local fm = recipe[1] == FM[1]
         refused(recipe, fm and '-warmup -3' or '-warmupEpochs -3', fm and '-warmup must be >= 0' or '-warmupEpochs')
         refused(recipe, fm and '-testBatchSize 0' or '-nThreads -1', 'must be an integer')
         refused(recipe, fm and '-width 0' or '-depth 19', fm and '-width' or '-depth')
      end)
   end
end)

describe('boolean flags, as torch.CmdLine has them', function()
   it('a bare flag flips its default; true and false may follow it', function()
      local opts = require 'recipes.fashion_mnist.opts'
      assert.are.same({ true, false, false, true, false }, {
         opts.parse({}).nesterov, opts.parse({ '-nesterov' }).nesterov,
         opts.parse({ '-nesterov', 'false' }).nesterov, opts.parse({ '-nesterov', 'true' }).nesterov,
         opts.parse({ '-nesterov', '-augment', 'true' }).nesterov })
      assert.is_true(opts.parse({ '-quiet' }).quiet)
   end)
end)

describe('-resume is checked first', function()
   local good = tmp .. '/fm'
   setup(function()
      local out, code = runs.run('fashion_mnist', ('-nEpochs 1 -limitBatches 2 -limitTestBatches 1 -batchSize 32 '
         .. '-threads 1 -quiet -save %q'):format(good))
      assert(code == 0, out)
   end)

   it('missing, cut off, not a checkpoint, another recipe\'s: one line, before the data', function()
      local path = good .. '/checkpoint.safetensors'
      local bytes = util.slurp(path)
      local cut, junk = tmp .. '/cut.safetensors', tmp .. '/junk.safetensors'
      local f = io.open(cut, 'wb')
      f:write(bytes:sub(1, #bytes - 1000))
      f:close()
      f = io.open(junk, 'wb')
      f:write(('not a checkpoint\n'):rep(20))
      f:close()
      for _, recipe in ipairs({ FM, IN }) do
         refused(recipe, '-resume ' .. tmp .. '/no-such-file', 'no such file')
         refused(recipe, '-resume ' .. cut, ('truncated: expected %d bytes, found %d'):format(#bytes, #bytes - 1000))
         refused(recipe, '-resume ' .. junk, 'not a checkpoint')
      end
      refused(IN, '-resume ' .. good, 'not a checkpoint of this recipe')
      -- the checkpoint itself is whole
      local meta = ck.peek(path)
      assert.are.same({ 1, 32 }, { meta.epoch, meta.batchSize })
   end)

   it('another -batchSize is refused, naming the one to use; a finished run is said', function()
      refused(FM, '-batchSize 64 -resume ' .. good, 'written with -batchSize 32')
      local out, code = runs.run('fashion_mnist', ('-nEpochs 1 -batchSize 32 -limitTestBatches 1 -threads 1 -quiet '
         .. '-save "" -resume %q'):format(good))
      assert.are.equal(0, code, out)
      assert.truthy(out:find('that run has finished (1 epochs done, -nEpochs 1)', 1, true), out)
   end)
end)
