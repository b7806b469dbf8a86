-- train.flags: the command-line options both recipes take, each group a block of a
-- torch.CmdLine with its heading, so that a recipe's opts.lua reads as its own groups with
-- these in between:
--   local cmd = torch.CmdLine()
--   flags.group(cmd, 'Optimization')
--   cmd:option('-LR', 0.1, 'learning rate', { range = '(0, inf)' })
--   flags.largeBatch(cmd)                 -- -eta, -polyPower, -ghostBatch (no heading)
--   flags.precision(cmd)                  -- Precision: -precision, -lossScale, ... -fuse
--   flags.distributed(cmd)                -- Distributed: -dist, -allreduce, -bucketMB, -timeout, -ps ...
--   flags.compression(cmd, 4)             -- Compression: -compress rgc|powersgd|... (rgc: 4 epochs' warm-up)
--   flags.checkpoints(cmd, 'runs/x')      -- Checkpoints: -save, -resume, -checkpointEvery, -stop*
-- Every number declares its range and every choice its list: torch.CmdLine checks them;
-- flags.check(opt) then refuses the combinations that do not go together.
local F = {}

-- a group's heading in the help
function F.group(cmd, title)
   cmd:text('')
   cmd:text(title .. ':')
end

-- the 4th argument of cmd:option for a whole number in range: flags.int '[1, inf)'
function F.int(range) return { range = range, integer = true } end
local INT = F.int

-- LARS and LAMB at large batch (You et al. 2017, 2019; Jia et al. 2018), in the optimization group
function F.largeBatch(cmd)
   cmd:option('-eta', 0.001, 'LARS trust coefficient: layer rate eta*||w||/(||g|| + wd*||w||) (LAMB has none)',
      { range = '(0, inf)' })
   cmd:option('-polyPower', 2, 'power of the poly schedule (2: Jia et al. 2018)', { range = '[0, inf)' })
   cmd:option('-ghostBatch', 0, 'batch norm statistics over ghost batches of about this many samples per process '
      .. '(Hoffer et al. 2017; 0: the whole batch)', INT('[0, inf)'))
end

-- what moontorch.train.precision makes of them
function F.precision(cmd)
   F.group(cmd, 'Precision')
   cmd:option('-precision', 'fp32',
      'fp32 | tf32 (fp32 with TF32 tensor cores on CUDA) | fp16 | bf16 (fp32 master weights) | fp64',
      { choices = { 'fp32', 'tf32', 'fp16', 'bf16', 'fp64', 'float', 'double' } })
   cmd:option('-lossScale', 65536, 'initial loss scale with -precision fp16 (dynamic)', { range = '(0, inf)' })
   cmd:option('-scaleWindow', 2000, 'clean steps before the loss scale doubles (fp16)', { range = '[1, inf)' })
   cmd:option('-clip', 0, 'clip the global gradient norm to this (0: no clipping)', { range = '[0, inf)' })
   cmd:option('-accumulate', 1,
      'micro-batches per batch (gradient accumulation; -batchSize stays the batch of one step)', INT('[1, inf)'))
   cmd:option('-layout', 'nchw', 'nchw | nhwc (channels-last weights and batches; cuDNN NHWC kernels on CUDA)',
      { choices = { 'nchw', 'nhwc' } })
   cmd:option('-fuse', false, 'fuse BatchNorm+ReLU and BatchNorm+residual add+ReLU into one pass each '
      .. '(nn.utils.fuseBatchNorm; same results)')
end

-- what moontorch.train.recipe.distribute makes of them
function F.distributed(cmd)
   F.group(cmd, 'Distributed (mpirun)')
   cmd:option('-dist', false, 'data-parallel over the ranks of mpirun (moontorch.dist); -batchSize is global')
   cmd:option('-allreduce', 'auto', 'allreduce algorithm with -dist',
      { choices = require('moontorch.dist').algorithms() }) -- csrc/moontorch.h's MT_DIST_ALGS
   cmd:option('-bucketMB', 0, 'gradient bucket size in MB with -dist (0: chosen by moontorch.perf after the first '
      .. 'step from the measured step and dist.init\'s cost table; 25 without one)', { range = '[0, inf)' })
   cmd:option('-timeout', 300, 'seconds a rank waits for the others before failing, with -dist', { range = '(0, inf)' })
   cmd:option('-ps', false, 'train through a stale-synchronous parameter server instead of allreduce '
      .. '(dist.ParameterServer; implies -dist; sgd, fp32, cpu)')
   cmd:option('-staleness', 0, 'with -ps: clocks a worker may run ahead of the slowest (0: synchronous)',
      INT('[0, 1000]'))
   cmd:option('-servers', 1, 'with -ps: server threads, one beside each of ranks 0 .. servers-1', INT('[1, inf)'))
   cmd:option('-pushEvery', 'layer', 'with -ps: push each layer\'s gradient as backward produces it, or once a step',
      { choices = { 'layer', 'step' } })
   cmd:option('-lookahead', true, 'with -ps: a stale read gets the parameters moved on by the momentum part of '
      .. 'the steps it has not seen (false: the servers\' state as it is)')
   cmd:option('-straggler', '', 'with -ps, for experiments: RANK:FACTOR makes that worker\'s steps FACTOR times '
      .. 'slower (it sleeps FACTOR-1 times its compute time); any:FACTOR slows one worker per clock, drawn anew '
      .. 'each clock (a transient straggler)')
end

-- the reason -ps's options cannot be used, or nil
local function psProblem(opt)
   if not opt.ps then
      for _, k in ipairs { 'staleness', 'servers', 'straggler', 'lookahead' } do
         local default = k == 'servers' and 1 or k == 'straggler' and '' or k == 'lookahead' and true or 0
         if opt[k] ~= nil and opt[k] ~= default then return ('-%s needs -ps'):format(k) end
      end
      return nil
   end
   if opt.optimizer ~= 'sgd' then return ('-ps: the servers run sgd; got -optimizer %s'):format(opt.optimizer) end
   if opt.compress ~= 'none' then return '-ps does not compress: leave out -compress' end
   local p = opt.precision
   if p ~= 'fp32' and p ~= 'float' then
      return ('-ps: the servers hold float32 parameters; got -precision %s'):format(p)
   end
   if opt.device ~= 'cpu' then return '-ps: the servers hold CPU parameters; use -device cpu' end
   if (opt.clip or 0) > 0 then return '-ps: the servers do not clip; leave out -clip' end
   local st = opt.straggler
   if st ~= '' and not (st:match('^%d+:%d*%.?%d+$') or st:match('^any:%d*%.?%d+$')) then
      return ("-straggler must be RANK:FACTOR or any:FACTOR (e.g. 1:2), got '%s'"):format(opt.straggler)
   end
end

-- gradient compression (moontorch.dist.compressors lists the compressors, dist.compressflags
-- checks and applies the flags); warmupEpochs: the -densityWarmup default
function F.compression(cmd, warmupEpochs)
   local COMPRESSORS = require 'moontorch.dist.compressors'
   F.group(cmd, 'Compression (with -dist)')
   local names, help = {}, {}
   for _, c in ipairs(COMPRESSORS.LIST) do
      names[#names + 1] = c.name
      help[#help + 1] = ('%s (%s)'):format(c.name, c.help)
   end
   cmd:option('-compress', 'none', 'gradient compression with -dist: ' .. table.concat(help, ' | '),
      { choices = names })
   cmd:option('-compressRank', 2, 'rank of the factors with -compress powersgd', INT('[1, inf)'))
   cmd:option('-compressStart', 100, 'plain averaged steps before -compress powersgd, onebit or fp16 begins',
      INT('[0, inf)'))
   cmd:option('-network', 'local', 'with -compress auto: the network the model assumes: a moontorch.perf preset '
      .. '(1gbit, 10gbit, 100gbit, ...), a cost table file, or local (the table dist.init measured)')
   cmd:option('-density', 0.001, 'fraction of each large gradient sent per step with -compress rgc',
      { range = '(0, 1]' })
   cmd:option('-densityWarmup', warmupEpochs,
      'epochs of density warm-up (25%, 6.25%, 1.56%, 0.4%, then -density) with -compress rgc', { range = '[0, inf)' })
   cmd:option('-rgcMethod', COMPRESSORS.TOPK_METHODS[1], 'top-k selection with -compress rgc',
      { choices = COMPRESSORS.TOPK_METHODS })
   cmd:option('-rgcExchange', 'allgather', 'with -compress rgc: allgather every rank\'s pairs, or hierarchical '
      .. '(merged at each node\'s leader, dense where cheaper; dist.sparseAllreduce)',
      { choices = { 'allgather', 'hierarchical' } })
   cmd:option('-wire', 'float', 'precision of sent values with -compress rgc',
      { choices = { 'float', 'half', 'bfloat16' } })
   cmd:option('-maskMomentum', true, 'clear the local velocity where values were sent with -compress rgc')
end

-- what train.Trainer writes and where it stops; save: the -save default
function F.checkpoints(cmd, save)
   F.group(cmd, 'Checkpoints')
   cmd:option('-save', save, 'directory for checkpoint.safetensors, log.csv, plot.svg (and TensorBoard events; '
      .. '"" for none)')
   cmd:option('-resume', '', 'checkpoint (or its directory) to continue from, at an epoch end or mid-epoch; auto: '
      .. 'the one in -save if there is one (bin/moontorch-run\'s restarts)')
   cmd:option('-checkpointEvery', 0,
      'also checkpoint every N training batches, for an exact resume mid-epoch (0: epoch ends only)', INT('[0, inf)'))
   cmd:option('-logEvery', 50, 'TensorBoard scalars (loss, learning rate, images/s, data wait) every N training '
      .. 'iterations, into -save (0: once an epoch only)', INT('[0, inf)'))
   cmd:option('-stopAfter', 0, 'stop after this epoch, as if interrupted (0: run all nEpochs)', INT('[0, inf)'))
   cmd:option('-stopAfterIter', 0, 'stop after this many training iterations in all, as if interrupted (0: no limit)',
      INT('[0, inf)'))
end

-- what ranges cannot say: options that do not go together, a -device this build or machine
-- lacks (an error naming them); returns opt
function F.check(opt)
   if opt.ps then opt.dist = true end
   local problem = psProblem(opt) or require('moontorch.dist.compressflags').recipeProblem(opt)
   if problem then error(problem, 0) end
   local cuda = require('moontorch').cuda
   if opt.device == 'cuda' and not (cuda and cuda.isAvailable and cuda.isAvailable()) then
      error('-device cuda but ' .. ((cuda and cuda.isCompiled and cuda.isCompiled()) and 'no CUDA device is available'
         or 'this build of moontorch has no CUDA support'), 0)
   end
   return opt
end

return F
