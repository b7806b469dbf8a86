-- train.recipe: what a recipe's main file does besides its own model and data, written once.
--   if modname ~= 'recipes.x' then recipe.script('x', M.main, arg) end  -- errors: 'x: msg', exit 1
--   local dist = recipe.distribute(opt)      -- -dist: join the ranks (nil without -dist)
--   local last = recipe.onRankZero(dist, run, opt, dist)   -- other ranks print nothing
--   local config = recipe.optimConfig(opt, lr)              -- sgd, adam(w), lars, lamb
--   local model, scaler = recipe.wrap(model, config, opt, dist)  -- DataParallel, rgc, -ps, GradScaler
--   print(recipe.psBanner(opt)); print(recipe.psReport(tr.ps))   -- -ps's lines
--   recipe.layerwise(trainer.model, trainer.params, config, opt)   -- LARS/LAMB layer segments
--   recipe.checkResume(opt, format, check, dist)              -- -resume's file, before the data
--   recipe.resume(trainer, opt, check)                        -- -resume, density warm-up
--   recipe.exitIfStopped(trainer, opt, dist)                  -- Ctrl-C/SIGTERM: where, how to go on, exit
-- The options these read are train.flags' groups and the recipes' -batchSize, -threads,
-- -nThreads, -device, -optimizer, -momentum, -nesterov, -weightDecay.
local torch = require 'moontorch'

local R = {}

-- Runs main(args) as a script. An error (or a failure on another rank) is written to stderr
-- in one write as 'name: [rank r: ]message', after telling the other ranks with dist.fail so
-- that they stop at once, naming this one; the exit status is then 1. main's third result,
-- when a number, is the exit status (resnet50_imagenet: 1 when there are no data).
-- MT_TRACEBACK=1 adds the Lua traceback to the message.
function R.script(name, main, args)
   local handler = os.getenv('MT_TRACEBACK') and debug.traceback or tostring
   local ok, res, _, code = xpcall(main, handler, args)
   if not ok then
      local msg = tostring(res)
      local dist = package.loaded['moontorch.dist']
      if dist then dist.fail(msg:match('^[^\n]*')) end
      local who = dist and dist.size() > 1 and ('rank %d: '):format(dist.rank()) or ''
      io.stderr:write(name .. ': ' .. who .. msg:gsub('^' .. name .. ': ', '') .. '\n')
      os.exit(1)
   end
   if type(code) == 'number' then os.exit(code) end
end

-- With -dist: join the ranks of mpirun, check they can share -batchSize (the global batch),
-- give each rank its share of its host's cores (-threads and -nThreads are for a whole host)
-- and a GPU of its host. Sets opt.rank, opt.world and opt.localBatch (this rank's slice of a
-- batch) and returns moontorch.dist; without -dist rank 0 of 1 and nil. The cost table of
-- -allreduce auto is measured (once per cluster shape) only when auto is asked for.
-- Under mpirun without -dist every process would train alone into the same -save folder: refused
-- (rank 0 says so, the others leave quietly, so the user reads one line). With -dist and no
-- launcher the job is one rank: said once, with how to start more.
local function launchedRanks()
   local n = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or os.getenv('PMI_SIZE') or '1') or 1
   local r = tonumber(os.getenv('OMPI_COMM_WORLD_RANK') or os.getenv('PMI_RANK') or '0') or 0
   return n, r
end

function R.distribute(opt)
   opt.rank, opt.world, opt.localBatch = 0, 1, opt.batchSize
   local launched, launchRank = launchedRanks()
   if not opt.dist then
      if launched > 1 then
         if launchRank ~= 0 then os.exit(1) end
         error(('started as %d processes by a launcher but without -dist: each would train alone and write '
            .. 'the same -save folder; add -dist'):format(launched), 0)
      end
      return nil
   end
   local costs -- nil: the default cache; false: none
   if opt.allreduce ~= 'auto' then costs = false end
   local dist = require('moontorch.dist').init{ timeout = opt.timeout, algorithm = opt.allreduce, model = costs }
   opt.rank, opt.world = dist.rank(), dist.size()
   if not dist.launched() then
      local script = arg and arg[0] or '<recipe>'
      io.stderr:write(('%s -dist without a launcher: 1 rank; for N ranks start it as '
         .. '`mpirun -np N luajit %s -dist ...`\n'):format(script, script))
   end
   if opt.batchSize % opt.world ~= 0 then
      if opt.rank ~= 0 then os.exit(1) end -- the same check fails everywhere: rank 0 says it once
      error(('-batchSize %d is not a multiple of the %d ranks (-batchSize is the global batch with -dist)'):format(
         opt.batchSize, opt.world), 0)
   end
   opt.localBatch = opt.batchSize / opt.world
   local here = dist.localSize()
   opt.threads = math.max(1, math.floor(opt.threads / here))
   if opt.nThreads then opt.nThreads = math.max(1, math.floor(opt.nThreads / here)) end
   if opt.device == 'cuda' then
      local cuda = require('moontorch').cuda -- one GPU per rank of a host, round-robin when fewer
      cuda.setDevice(dist.localRank() % cuda.deviceCount() + 1)
   end
   return dist
end

-- f(...)'s results; on ranks other than 0 print is silenced while f runs (the library's
-- messages too), and comes back however f ends. Errors still reach stderr through R.script.
function R.onRankZero(dist, f, ...)
   if not dist or dist.rank() == 0 then return f(...) end
   local say = print
   print = function() end -- luacheck: ignore 121 (silences this rank; restored below)
   local res = { xpcall(f, os.getenv('MT_TRACEBACK') and debug.traceback or tostring, ...) }
   print = say -- luacheck: ignore 121 (the real print back)
   if not res[1] then error(res[2], 0) end
   return unpack(res, 2, table.maxn(res))
end

-- the optimizer's config: the rate, weight decay, and momentum (sgd, lars), Nesterov's (sgd
-- with -nesterov and momentum), LARS's -eta
function R.optimConfig(opt, lr)
   local config = { learningRate = lr, weightDecay = opt.weightDecay }
   if opt.optimizer == 'sgd' or opt.optimizer == 'lars' then config.momentum = opt.momentum end
   if opt.optimizer == 'lars' then config.eta = opt.eta end
   if opt.optimizer == 'sgd' and opt.nesterov and opt.momentum > 0 then config.nesterov, config.dampening = true, 0 end
   return config
end

-- The wrappers of a model on its device, built here only: with -dist a dist.DataParallel
-- (with -compress rgc or auto, momentum and weight decay then moved from config into the
-- compressor), or with -ps a dist.ParameterServer (the optimizer's config going to its servers,
-- -straggler's worker slowed), and the loss scaler of -precision fp16/bf16 or -clip (nil otherwise). The
-- Trainer drives both through the same calls as a bare model and optimizer.
function R.wrap(model, config, opt, dist)
   if dist and opt.ps then
      model = dist.ParameterServer(model, { staleness = opt.staleness, servers = opt.servers, pushEvery = opt.pushEvery,
         lookahead = opt.lookahead, momentum = config.momentum, dampening = config.dampening,
         nesterov = config.nesterov, weightDecay = config.weightDecay, learningRate = config.learningRate })
      local who, factor = opt.straggler:match('^(%w+):(.+)$')
      if who == 'any' then model.straggle, model.straggleAny = tonumber(factor), true
      elseif who and tonumber(who) == dist.rank() then model.straggle = tonumber(factor) end
   elseif dist then
      local dpopts = { bucketMB = opt.bucketMB > 0 and opt.bucketMB or nil, algorithm = opt.allreduce }
      model = dist.DataParallel(model, require('moontorch.dist.compressflags').recipeSetup(opt, config, dpopts))
   end
   return model, require('moontorch.train.precision').scaler(opt)
end

-- -bucketMB as the banner says it
function R.buckets(opt)
   return opt.bucketMB > 0 and ('buckets of %g MB'):format(opt.bucketMB) or 'buckets sized by moontorch.perf'
end

-- with -ps: the line a recipe prints about its workers and servers, and its epoch report line
function R.psBanner(opt)
   return ('parameter server: %d workers, %d server%s (beside ranks 0..%d), staleness %d%s, push every %s, '
      .. '%d threads per rank%s'):format(opt.world, opt.servers, opt.servers == 1 and '' or 's', opt.servers - 1,
      opt.staleness, opt.staleness > 0 and not opt.lookahead and ' (no lookahead)' or '', opt.pushEvery, opt.threads,
      opt.straggler ~= '' and (', straggler ' .. opt.straggler) or '')
end

function R.psReport(ps)
   return ('  ps: staleness mean %.2f, max %d (pulls %s); waited %.1f ms/step (held %.1f for the bound; per worker '
      .. '%s); %.2f MB pushed, %.2f MB pulled per step'):format(ps.ps_staleness, ps.ps_stale_max, ps.ps_hist,
      ps.ps_wait_ms, ps.ps_held_ms, ps.ps_wait_ms_by_worker, ps.ps_push_MB, ps.ps_pull_MB)
end

-- LARS and LAMB scale per layer: config gets the layers' segments of the flat parameters
-- (the Trainer's params), the 1-D ones (BN scales and shifts, biases) stepping plainly
-- without weight decay
function R.layerwise(model, params, config, opt)
   if opt.optimizer == 'lars' or opt.optimizer == 'lamb' then
      config.layers, config.lars_exclude = require('moontorch.optim').layerSegments(model, params)
   end
end

-- -resume checked before any data is read (a typo must not cost an ImageNet cache fill): the
-- file exists, is whole and is this recipe's (format), check(meta, path) accepts it, and it was
-- written with this -batchSize (the data order and the schedule depend on it); a finished run is
-- said. -resume auto: -save's checkpoint, or a fresh start when there is none yet. With dist
-- every rank reads it (each loads the model from it): when every rank fails, rank 0 alone says
-- why. Returns the checkpoint's path and metadata (nil without -resume).
function R.checkResume(opt, format, check, dist)
   local fs = require 'moontorch.io.fs'
   if opt.resume == 'auto' then -- -save's checkpoint when there is one (moontorch-run's restarts)
      if opt.save == '' then error('-resume auto continues from -save\'s checkpoint: give -save', 0) end
      opt.resume = opt.save .. '/checkpoint.safetensors'
      if not fs.isfile(opt.resume) then
         print(('-resume auto: no checkpoint in %s yet; starting from the beginning'):format(opt.save))
         opt.resume = ''
      end
   end
   if opt.resume == '' then return nil end
   local path = fs.isdir(opt.resume) and opt.resume .. '/checkpoint.safetensors' or opt.resume
   local ok, meta = pcall(function()
      if not fs.isfile(path) then error(('-resume %s: no such checkpoint'):format(path), 0) end
      local ok1, m = pcall(require('moontorch.checkpoint').peek, path)
      if not ok1 then error(('-resume %s: %s'):format(path, m), 0) end
      if format and m.format ~= format then
         error(('-resume %s: not a checkpoint of this recipe (format %s, expected %s)'):format(path,
            tostring(m.format), format), 0)
      end
      if check then
         local okc, why = pcall(check, m, path)
         if not okc then error(tostring(why):find('^%-resume ') and why or '-resume ' .. tostring(why), 0) end
      end
      local bs = tonumber(m.batchSize)
      if bs and bs ~= opt.batchSize then
         error(('-resume %s: written with -batchSize %d, this run has %d (the data order and the schedule depend '
            .. 'on it; resume with -batchSize %d)'):format(path, bs, opt.batchSize, bs), 0)
      end
      return m
   end)
   if dist and dist.size() > 1 then
      local t = torch.DoubleTensor(1):fill(ok and 1 or 0)
      dist.allreduce(t, 'sum')
      if t[1] == 0 and dist.rank() ~= 0 then os.exit(1) end -- the same failure everywhere: rank 0 says it
   end
   if not ok then error(meta, 0) end
   local done = tonumber(meta.epoch) or 0
   if done >= opt.nEpochs and (tonumber(meta.batch) or 0) == 0 then
      print(('-resume %s: that run has finished (%d epochs done, -nEpochs %d); nothing to train, raise -nEpochs '
         .. 'to go on'):format(path, done, opt.nEpochs))
   end
   return path, meta
end

-- the shell's form of one word
local function quote(w)
   if w:match('^[%w%-%+=/%.,:_@%%]+$') then return w end
   return "'" .. w:gsub("'", "'\\''") .. "'"
end

-- the command that continues this run from its -save folder: the script's own command line
-- (the global arg) without -resume and its value, then -resume SAVE; under mpirun with its -np
function R.resumeCommand(opt, dist)
   local args = arg or {}
   local words = { 'luajit', quote(args[0] or '<recipe>.lua') }
   local i = 1
   while args[i] do
      if args[i] == '-resume' then i = i + 1 else words[#words + 1] = quote(args[i]) end
      i = i + 1
   end
   words[#words + 1] = '-resume ' .. quote(opt.save)
   local cmd = table.concat(words, ' ')
   if dist and dist.launched() then cmd = ('mpirun -np %d %s'):format(dist.size(), cmd) end
   return cmd
end

local SIGNALS = { [2] = 'SIGINT', [15] = 'SIGTERM' }

-- After the epoch loop: when a signal stopped the trainer (Trainer's stopOnSignal), say where,
-- what was saved and the command that goes on, and end the process with 128 + the signal's
-- number (130 for Ctrl-C, 143 for SIGTERM), as a shell reports a process the signal ended.
function R.exitIfStopped(trainer, opt, dist)
   local s = trainer.stopped
   if not s then return end
   local where = s.batch > 0 and ('in epoch %d after batch %d of %d'):format(s.epoch + 1, s.batch,
      trainer.trainBatches) or ('after epoch %d'):format(s.epoch)
   local name = SIGNALS[s.signal] or ('signal %d'):format(s.signal)
   if opt.save ~= '' then
      print(('stopped by %s %s; checkpoint in %s. To go on:\n  %s'):format(name, where, opt.save,
         R.resumeCommand(opt, dist)))
   else
      print(('stopped by %s %s; nothing saved (-save "")'):format(name, where))
   end
   io.stdout:flush()
   if dist then dist.finalize() end
   os.exit(128 + s.signal)
end

-- -densityWarmup as steps, and -resume: the trainer continues from the checkpoint (check(meta,
-- path) may refuse it) and the density warm-up from that step; residuals are per rank and come
-- back from each rank's file beside the checkpoint
function R.resume(trainer, opt, check)
   local c = not trainer.model.auto and trainer.model.compressor -- with -compress rgc (auto: no warm-up)
   if c then c:schedule(math.floor(opt.densityWarmup * trainer.trainBatches)) end
   if opt.resume == '' then return end
   trainer:resume(opt.resume, check)
   if c then c:schedule(c.o.warmupSteps, (trainer.startEpoch - 1) * trainer.trainBatches + trainer.firstBatch - 1) end
end

return R
