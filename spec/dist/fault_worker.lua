-- fault_worker.lua: `mpirun -np N luajit spec/dist/fault_worker.lua MODE TIMEOUT`: ranks train
-- a small model under DataParallel; at step 5 rank 1 raises (MODE raise), kills itself with
-- SIGKILL (kill) or stops itself with SIGSTOP (stop). dist/faults_spec.lua checks that every
-- other rank ends, in time, naming rank 1 and the collective it was waiting in. MODE ps-kill and
-- ps-stop: the same under dist.ParameterServer with 2 servers, rank 1 being server 1. MODE
-- left-fail, late and finalize-stop: see below.
package.path = './?.lua;./lua/?.lua;./lua/?/init.lua;' .. package.path
local ffi = require 'ffi'
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local dist = require 'moontorch.dist'
ffi.cdef 'int getpid(void); int kill(int pid, int sig); int usleep(unsigned int usec);'

local mode, timeout = arg[1], tonumber(arg[2] or 10)
-- (late: no signature exchange before each call, so that rank 0 is inside MPI_Allreduce itself
-- when it is given up on)
dist.init{ timeout = timeout, model = false, check = mode ~= 'late' }

-- MODE left-fail (3 ranks): rank 2 leaves (ends its communicator without finalize, as an
-- uncaught error does, but stays alive), a second later rank 1 fails; rank 0, waiting in an
-- allreduce since rank 2 left, must still hear rank 1's failure, within the 2 s it gives a
-- peer that left, and say what it was
if mode == 'left-fail' then
   local function sleep(s) ffi.C.usleep(s * 1e6) end
   dist.barrier()
   if dist.rank() == 2 then
      require('moontorch.dist.lib').C.mt_dist_free(dist._comm())
      sleep(6)
   elseif dist.rank() == 1 then
      sleep(1)
      dist.fail('injected failure after rank 2 left')
      sleep(6)
   else
      local ok, err = pcall(dist.allreduce, torch.FloatTensor(4):fill(1), 'sum', { algorithm = 'ring' })
      print(('rank 0: %s'):format(ok and 'the allreduce completed' or tostring(err)))
      io.stdout:flush()
   end
   os.exit(1) -- without finalize (the gc'd communicator too): the job is over
end
-- MODE late (2 ranks): rank 1 comes to a blocking MPI_Allreduce long after rank 0's timeout.
-- Rank 0 is given up on, drops its tensor and takes same-sized ones in its place; when the
-- late call returns, MPI must write into memory still reserved for it, not into those.
if mode == 'late' then
   local function sleep(s) ffi.C.usleep(s * 1e6) end
   local n = 65536
   if dist.rank() == 1 then
      sleep(timeout + 3)
      local ok1, err1 = pcall(dist.allreduce, torch.FloatTensor(n):fill(1), 'sum', { algorithm = 'mpi' })
      print(('rank 1: %s'):format(ok1 and 'the late allreduce completed' or tostring(err1)))
      sleep(3)
   else
      local t = torch.FloatTensor(n):fill(2)
      local ok, err = pcall(dist.allreduce, t, 'sum', { algorithm = 'mpi' })
      print(('rank 0: %s'):format(ok and 'the allreduce completed' or tostring(err)))
      t = nil -- luacheck: ignore 311 (dropped on purpose: the library must keep the buffer)
      collectgarbage()
      collectgarbage()
      local others = {}
      for i = 1, 8 do others[i] = torch.FloatTensor(n):fill(5) end
      sleep(6) -- rank 1's call arrives meanwhile and the abandoned MPI_Allreduce returns
      local intact = true
      for i = 1, 8 do intact = intact and others[i]:eq(5):all() end
      print(('rank 0: tensors allocated after the timeout %s'):format(intact and 'intact' or 'OVERWRITTEN'))
   end
   io.stdout:flush()
   os.exit(1)
end

-- MODE finalize-stop (2 ranks): after the last collective rank 1 stops itself (SIGSTOP);
-- rank 0's dist.finalize() must come back within the timeout naming it (MPI_Finalize would
-- wait for it forever), then rank 0 ends rank 1
if mode == 'finalize-stop' then
   local pids = torch.DoubleTensor(2)
   dist.allgather(pids, torch.DoubleTensor(1):fill(ffi.C.getpid()))
   dist.allreduce(torch.FloatTensor(4):fill(1), 'sum')
   if dist.rank() == 1 then ffi.C.kill(ffi.C.getpid(), 19) end
   local ok, err = pcall(dist.finalize)
   print(('rank 0: %s'):format(ok and 'finalize returned' or tostring(err)))
   io.stdout:flush()
   ffi.C.kill(pids[2], 9)
   os.exit(1)
end

dist.run(function()
   torch.manualSeed(1)
   local model = nn.Sequential():add(nn.Linear(20, 64)):add(nn.ReLU()):add(nn.Linear(64, 4))
   local ps = mode:find('^ps%-') ~= nil
   mode = mode:gsub('^ps%-', '')
   local dp = ps and dist.ParameterServer(model, { servers = 2, staleness = 1 })
      or dist.DataParallel(model, { bucketMB = 0.001 })
   local crit = nn.MSECriterion()
   local x, y = torch.randn(8, 20), torch.randn(8, 4)
   for step = 1, 1000 do
      if step == 5 and dist.rank() == 1 then
         if mode == 'raise' then error('injected failure at step ' .. step) end
         if mode == 'kill' then ffi.C.kill(ffi.C.getpid(), 9) end
         if mode == 'stop' then ffi.C.kill(ffi.C.getpid(), 19) end
      end
      dp:zeroGradParameters()
      local out = dp:forward(x)
      crit:forward(out, y)
      dp:backward(x, crit:backward(out, y))
      if ps then dp:clock(0.01) else dp:updateParameters(0.01) end
   end
end)
dist.finalize()
