-- dp_worker.lua: the multi-rank check of dist.DataParallel. Every rank trains a small conv net
-- for a few SGD steps on its slice of a fixed global batch (the same seeded data everywhere;
-- ranks other than 0 start from perturbed weights, which the construction's broadcast must
-- undo); rank 0 then trains the same initial net on the whole batch in one process and the
-- final parameters must agree. Several bucket sizes (one smaller than the largest gradient),
-- with and without SpatialBatchNormalization (in evaluate mode: batch statistics would differ
-- between a slice and the whole batch), overlapped and not. Prints OK on rank 0 or fails.
--   mpirun -np 2 luajit spec/dist/dp_worker.lua [--steps 4] [--batch 4] [--algorithm ring] [--groupSize 2]
--   luajit spec/dist/dp_worker.lua --fake      (one process, a stand-in dist: the logic only)
-- Run from the repository root, with MOONTORCH_BUILD naming the build folder if not ./build.
package.path = './lua/?.lua;./lua/?/init.lua;./?.lua;./?/init.lua;' .. package.path
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local DataParallel = require 'moontorch.dist.DataParallel'

local cmd = torch.CmdLine()
cmd.name = 'dp_worker'
cmd:option('--steps', 4, 'SGD steps', { range = '[1, inf)', integer = true })
cmd:option('--batch', 4, 'global batch', { range = '[1, inf)', integer = true })
cmd:option('--algorithm', 'auto', 'allreduce algorithm (dist.init checks the name)')
cmd:option('--groupSize', 0, 'ranks per group for dist.init', { range = '[0, inf)', integer = true })
cmd:option('--fake', false, 'one process, a stand-in dist: the logic only')
local opt = cmd:parse(arg)

-- one process standing in for a dist of size 1
local function fakeDist()
   local function handle(t) return { wait = function() return t end, test = function() return true end } end
   return {
      init = function() end, initialized = function() return true end, finalize = function() end,
      rank = function() return 0 end, size = function() return 1 end, barrier = function() end,
      broadcast = function(t) return t end, allreduce = function(t) return t end,
      allgather = function(out, t) return out:copy(t) end, allreduceAsync = function(t) return handle(t) end,
      fail = function(msg) error(msg, 0) end,
   }
end

local dist = opt.fake and fakeDist() or require 'moontorch.dist'
-- no cost table (auto is then mpi): the algorithm under test is named
dist.init({ timeout = 120, model = false, algorithm = opt.algorithm, groupSize = opt.groupSize })
local rank, size = dist.rank(), dist.size()
local B = opt.batch

local function say(fmt, ...)
   if rank == 0 then io.write(('dp_worker: ' .. fmt .. '\n'):format(...)); io.flush() end
end

local function net(bn)
   local m = nn.Sequential():add(nn.SpatialConvolution(3, 8, 3, 3, 1, 1, 1, 1))
   if bn then m:add(nn.SpatialBatchNormalization(8)) end
   m:add(nn.ReLU()):add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(nn.SpatialConvolution(8, 16, 3, 3, 1, 1, 1, 1))
   if bn then m:add(nn.SpatialBatchNormalization(16)) end
   local flat = nn.View(16 * 4 * 4)
   flat:setNumInputDims(3)
   m:add(nn.ReLU()):add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(flat):add(nn.Linear(16 * 4 * 4, 10))
   for _, bnm in ipairs(m:findModules('nn.SpatialBatchNormalization')) do
      bnm.running_mean:uniform(-0.5, 0.5)
      bnm.running_var:uniform(0.5, 1.5)
      bnm.weight:uniform(0.5, 1.5)
      bnm.bias:uniform(-0.1, 0.1)
   end
   if bn then m:evaluate() end
   return m
end

-- the persistent tensors of a model (parameters and running statistics), listModules order
local function state(m)
   local list = {}
   for _, t in ipairs(m:parameters()) do list[#list + 1] = t end
   for _, bnm in ipairs(m:findModules('nn.SpatialBatchNormalization')) do
      list[#list + 1] = bnm.running_mean
      list[#list + 1] = bnm.running_var
   end
   return list
end

local function maxabs(t) return math.max(math.abs(t:max()), math.abs(t:min())) end

-- steps of SGD with momentum; the Torch7 getParameters idiom, or a hand-written loop
local function train(m, crit, X, Y, manual)
   local p, gp = m:getParameters()
   local cfg, st = { learningRate = 0.05, momentum = 0.9, weightDecay = 1e-4 }, {}
   for s = 1, X:size(1) do
      local x, y = X[s], Y[s]
      if manual then
         m:zeroGradParameters()
         local out = m:forward(x)
         crit:forward(out, y)
         m:backward(x, crit:backward(out, y))
         m:updateParameters(0.05)
      else
         optim.sgd(function()
            gp:zero()
            local out = m:forward(x)
            local loss = crit:forward(out, y)
            m:backward(x, crit:backward(out, y))
            return loss, gp
         end, p, cfg, st)
      end
   end
   return p
end

local configs = {
   { bn = false, bucketMB = 25 },
   { bn = false, bucketMB = 0.004 },                  -- 4 KiB: the Linear weight (10 KiB) alone
   { bn = true, bucketMB = 0.004 },
   { bn = true, bucketMB = 1e-6, overlap = false },   -- one gradient per bucket, after backward
   { bn = false, bucketMB = 0.002, manual = true },
}

local function main()
   -- the global batches, the same on every rank
   torch.manualSeed(7)
   local X = torch.randn(opt.steps, size * B, 3, 16, 16)
   local Y = torch.LongTensor(opt.steps, size * B):random(1, 10)
   local mine = X:narrow(2, rank * B + 1, B):contiguous()
   local myY = Y:narrow(2, rank * B + 1, B):contiguous()
   for i, c in ipairs(configs) do
      torch.manualSeed(1000 + i)
      local model = net(c.bn)
      local ref = rank == 0 and model:clone() or nil
      if rank ~= 0 then -- replicas start apart: the broadcast must make them rank 0's
         torch.manualSeed(2000 + rank)
         for _, t in ipairs(state(model)) do t:add(t:clone():uniform(0, 0.1)) end
      end
      local dp = DataParallel(model, { bucketMB = c.bucketMB, overlap = c.overlap, dist = dist })
      local p = train(dp, nn.CrossEntropyCriterion(), mine, myY, c.manual)
      -- the replicas must be equal
      for _, t in ipairs(state(model)) do
         local hi, lo = dist.allreduce(t:clone(), 'max'), dist.allreduce(t:clone(), 'min')
         local d = hi:add(-1, lo):abs():max()
         if d > 1e-6 then error(('config %d: the replicas differ by %g after training'):format(i, d), 0) end
      end
      if rank == 0 then
         local p0 = ref:getParameters():clone()
         local pr = train(ref, nn.CrossEntropyCriterion(), X, Y, c.manual)
         local diff = p:clone():add(-1, pr):abs():max()
         local tol = 1e-4 * math.max(1, maxabs(pr))
         local moved = pr:clone():add(-1, p0):abs():max()
         say('config %d (%s, bucketMB %g, %d bucket%s%s%s): max |dp - single process| = %.3g', i,
            c.bn and 'BN' or 'no BN', c.bucketMB, #dp.buckets, #dp.buckets == 1 and '' or 's',
            c.overlap == false and ', no overlap' or '', c.manual and ', manual loop' or '', diff)
         if not (moved > 1e-3) then -- luacheck: ignore 581 (rejects NaN)
            error(('config %d: training did not move the parameters'):format(i), 0)
         end
         if not (diff <= tol) then -- luacheck: ignore 581 (rejects NaN)
            error(('config %d: %d ranks x %d differ from 1 process x %d by %g (tolerance %g)'):format(i, size, B,
               size * B, diff, tol), 0)
         end
      end
      dist.barrier()
   end
   say('OK (%d rank%s, %d steps, batch %d per rank)', size, size == 1 and '' or 's', opt.steps, B)
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
   local msg = ('dp_worker rank %d: %s'):format(rank, tostring(err))
   io.stderr:write(msg .. '\n')
   if dist.fail then pcall(dist.fail, msg) end
   os.exit(1)
end
dist.finalize()
