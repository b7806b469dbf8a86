-- user_checklist_spec.lua: what a user meets first, tried as a user would, through the
-- recipes' command lines: every bad flag is one line and exit status 1 before any data is read
-- (-data points nowhere, so reading it first would say so instead), and -resume's file is
-- checked before the data too: missing, cut off, not a checkpoint, another recipe's, another
-- -batchSize, a finished run. The progress bar and the epoch summary agree over 2 ranks. Ctrl-C
-- and SIGTERM: a checkpoint at the step's end, the -resume command, exit 130 / 143, and the
-- resumed run ends where the unbroken one does (on 2 ranks with the signal sent to one).
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

-- main(args)'s error, in this process: the message a script prints after 'name: '
local function mainError(recipe, args)
   local words = {}
   for w in (recipe[2]:gsub('-save ""', '') .. ' ' .. args):gmatch('%S+') do words[#words + 1] = w end
   local ok, err = pcall(require('recipes.' .. recipe[1]).main, words)
   assert.is_false(ok, recipe[1] .. ' ' .. args .. ' was accepted')
   return tostring(err)
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
         local fm = recipe[1] == FM[1]
         local cases = { unpack(BAD) }
         cases[#cases + 1] = fm and { '-warmup -3', '-warmup must be >= 0' } or { '-warmupEpochs -3', '-warmupEpochs' }
         cases[#cases + 1] = { fm and '-testBatchSize 0' or '-nThreads -1', 'must be an integer' }
         cases[#cases + 1] = fm and { '-width 0', '-width' } or { '-depth 19', '-depth' }
         for _, b in ipairs(cases) do
            local err = mainError(recipe, b[1])
            assert.falsy(err:find('%.lua:%d+:'), b[1] .. ': a source position: ' .. err)
            assert.falsy(err:find('nonexistent%-mt%-data'), b[1] .. ': the data were read first: ' .. err)
            assert.truthy(err:find(b[2], 1, true), b[1] .. ': expected "' .. b[2] .. '" in: ' .. err)
         end
         -- as a script: the same line after the recipe's name, and exit status 1
         refused(recipe, '-LR -1', '-LR must be')
         refused(recipe, '-nesterov maybe', 'unexpected argument "maybe"')
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
         refused(recipe, '-resume ' .. tmp .. '/no-such-file', 'no such checkpoint')
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

describe('the progress bar and the epoch summary', function()
   it('agree on 2 ranks: every rank\'s rows, weighted by rows', function()
      -- each rank trains on its half of every batch: a bar of rank 0's rows alone would differ
      local out, code = runs.run('fashion_mnist', '-dist -nEpochs 1 -limitBatches 12 -limitTestBatches 1 '
         .. '-batchSize 8 -threads 2 -save "" -allreduce ring -bucketMB 1', runs.mpirun(2))
      assert.are.equal(0, code, out)
      local barLoss, barAcc = out:match('epoch 1/1 %[=+%] 12/12  loss (%d+%.%d+)  acc +(%d+%.%d+)%%')
      local sumLoss, sumAcc = out:match('epoch 1: train loss (%d+%.%d+)  train acc (%d+%.%d+)%%')
      assert.truthy(barLoss and sumLoss, out)
      assert.are.same({ sumLoss, sumAcc }, { barLoss, barAcc }, out)
   end)
end)

-- the newest process of session sid running the recipe (read from /proc: pkill hangs under
-- the sanitizer tier's LD_PRELOAD)
local function newestRank(sid)
   local fs = require 'moontorch.io.fs'
   local best, bestStart
   for _, e in ipairs(fs.list('/proc')) do
      local pid = tonumber(e)
      local stat = pid and util.slurp(('/proc/%d/stat'):format(pid))
      local cmd = stat and util.slurp(('/proc/%d/cmdline'):format(pid))
      if cmd and cmd:find('^luajit%z+recipes/fashion_mnist.lua') then
         -- after the command's ')': state ppid pgrp session ... field 22 is the start time
         local fields = {}
         for f in stat:match('%) (.*)$'):gmatch('%S+') do fields[#fields + 1] = f end
         local start = tonumber(fields[20])
         if tonumber(fields[4]) == sid and (not bestStart or start > bestStart) then best, bestStart = pid, start end
      end
   end
   return assert(best, 'no rank of the job found in /proc')
end

-- Starts `launcher luajit recipes/fashion_mnist.lua args` in a session of its own (as a terminal
-- runs a job), waits until it trains (its log.csv exists), sends sig to the whole process group
-- (Ctrl-C reaches every process of the job that way) or, with one = true, to one rank's process
-- alone; returns the output and exit status.
local function interrupted(args, save, sig, launcher, one)
   local pidf, outf = save .. '.pid', save .. '.out'
   os.execute(('mkdir -p %q && rm -f %q'):format(save, pidf))
   -- the shell traps the signals with a command (its children get the default back) so that it
   -- outlives them and writes their exit status
   os.execute(('setsid sh -c \'trap : INT TERM; echo $$ > %q; %s luajit recipes/fashion_mnist.lua %s -save %q > %q '
      .. '2>&1; echo "exit status $?" >> %q\' &'):format(pidf, launcher or '', args, save, outf, outf))
   local t0 = os.time()
   while not util.exists(save .. '/log.csv') and os.time() - t0 < 120 do os.execute('sleep 0.05') end
   assert(util.exists(save .. '/log.csv'), 'the run never started training:\n' .. (util.slurp(outf) or ''))
   local pgid = tonumber(util.slurp(pidf))
   if one then
      os.execute(('/bin/kill -s %s %d'):format(sig, newestRank(pgid)))
   else
      os.execute(('/bin/kill -s %s -- -%d'):format(sig, pgid)) -- (dash's kill takes no process group)
   end
   while os.execute(('/bin/kill -0 -- -%d 2>/dev/null'):format(pgid)) == 0 and os.time() - t0 < 180 do
      os.execute('sleep 0.1')
   end
   local out = util.slurp(outf) or ''
   return out, tonumber(out:match('exit status (%d+)%s*$'))
end

describe('Ctrl-C and SIGTERM', function()
   local ARGS = '-nEpochs 2 -limitBatches 30 -limitTestBatches 1 -batchSize 32 -quiet'
   local DIST = ' -dist -allreduce ring -bucketMB 1'
   local function same(a, b)
      local ta, tb = ck.load(a .. '/checkpoint.safetensors'), ck.load(b .. '/checkpoint.safetensors')
      local n = 0
      for k, t in pairs(ta) do
         n = n + 1
         util.assert_close(tb[k], t, { atol = 0, rtol = 0 }, k)
      end
      assert.is_true(n > 5)
   end
   -- the stop's report, its exit status, and the command it prints run to the unbroken end
   local function stopsAndGoesOn(out, code, sig, expectCode, whole, cut, launcher)
      assert.are.equal(expectCode, code, out)
      assert.truthy(out:find('stopped by SIG' .. sig .. ' in epoch %d+ after batch %d+ of 30'), out)
      assert.falsy(out:find('traceback', 1, true), out)
      local cmd = out:match('To go on:\n  ([^\n]+)')
      assert.truthy(cmd and cmd:find('-resume ' .. cut, 1, true), out)
      if not whole then return end
      local args = cmd:match('luajit recipes/fashion_mnist.lua (.*)$')
      local out2, code2 = runs.run('fashion_mnist', args, launcher)
      assert.are.equal(0, code2, out2)
      assert.truthy(out2:find('resumed from', 1, true), out2)
      same(whole, cut)
   end

   it('SIGINT and SIGTERM: a checkpoint at the step\'s end, the command that goes on, exit 130 and 143; '
      .. 'resumed, the run ends where the unbroken one does', function()
      local whole = tmp .. '/whole'
      local out0, code0 = runs.run('fashion_mnist', ARGS .. ' -threads 1 -save ' .. whole)
      assert.are.equal(0, code0, out0)
      for _, case in ipairs({ { 'INT', 130 }, { 'TERM', 143 } }) do
         local cut = tmp .. '/cut-' .. case[1]
         local out, code = interrupted(ARGS .. ' -threads 1', cut, case[1])
         -- (the two stops write the same kind of checkpoint: SIGINT's run goes on to the end)
         stopsAndGoesOn(out, code, case[1], case[2], case[1] == 'INT' and whole or nil, cut)
      end
   end)

   it('on 2 ranks, a signal to one rank stops both at the same step', function()
      local whole, cut = tmp .. '/whole2', tmp .. '/cut2'
      local out0, code0 = runs.run('fashion_mnist', ARGS .. DIST .. ' -threads 2 -save ' .. whole, runs.mpirun(2))
      assert.are.equal(0, code0, out0)
      local out, code = interrupted(ARGS .. DIST .. ' -threads 2', cut, 'TERM', runs.mpirun(2), true)
      assert.truthy(code and code ~= 0, out)
      stopsAndGoesOn(out, code, 'TERM', code, whole, cut, runs.mpirun(2))
   end)
end)
