-- collectives_spec.lua: collectives on tensors in GPU memory, run by ctest solo and under
-- `mpirun -np N` (N = 1..4) like every spec here. Host-staged algorithms (mpi, ring,
-- multicolor, hierarchical) work with any number of ranks per GPU; NCCL needs one GPU per rank,
-- so its cases run only when there are as many GPUs as ranks and are shown pending otherwise.
-- Every result is compared with a float64 reference that each rank computes on the CPU from
-- every rank's seed. Without a GPU every case is pending with '[no GPU]'.
-- ctest: ranks 1 2 3 4
local torch = require 'moontorch'
local dist = require 'moontorch.dist'
local util = require 'spec.util'

local HAS_GPU = util.has_gpu()
local world = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or '1')
dist.init{ timeout = 120, model = false, groupSize = world >= 2 and 2 or 0 }
local R, N = dist.rank(), dist.size()
local seed = dist.broadcastNumber(tonumber(os.getenv('MT_TEST_SEED'))
   or (os.time() % 100000 * 1000 + math.floor(os.clock() * 1e3) % 1000))
if R == 0 then io.stderr:write(('[dist cuda spec seed %d, %d ranks]\n'):format(seed, N)) end
-- every rank sees the same host here, so all agree on which cases run and collectives line up
local gpus = HAS_GPU and torch.cuda.deviceCount() or 0
local ALL_GPU = HAS_GPU
local HAS_NCCL = require('moontorch.dist.lib').transports().nccl and true or false
local NCCL_OK = ALL_GPU and HAS_NCCL and N <= gpus

local function gpu_it(name, fn)
   if ALL_GPU then it(name, fn) else pending('[no GPU] ' .. name) end
end
local function nccl_it(name, fn)
   if not ALL_GPU then pending('[no GPU] ' .. name)
   elseif not HAS_NCCL then pending('[built without NCCL] ' .. name)
   elseif not NCCL_OK then pending(('[%d ranks share %d GPU(s): NCCL needs one per rank] %s'):format(N, gpus, name))
   else it(name, fn) end
end

local TYPES = {
   { 'torch.FloatTensor', 1e-6 }, { 'torch.DoubleTensor', 1e-12 },
   { 'torch.HalfTensor', 2e-3 }, { 'torch.BFloat16Tensor', 1.6e-2 },
}

-- rank r's input, as stored in dtype ty (so its rounding is part of the reference)
local function input(ty, n, r, salt)
   torch.manualSeed(seed + 7919 * r + 104729 * salt)
   return torch.rand(n):double():mul(4):add(-2):type(ty)
end

local function reference(ty, n, op, salt)
   local acc
   for r = 0, N - 1 do
      local t = input(ty, n, r, salt):double()
      if not acc then acc = t
      elseif op == 'max' then acc = torch.cmax(acc, t)
      elseif op == 'min' then acc = torch.cmin(acc, t)
      else acc:add(t) end
   end
   if op == 'avg' then acc:div(N) end
   return acc
end

-- |got - want| within tol times the largest magnitude that went into the sum (N * 2)
local function close(got, want, tol, what)
   local g = got:cpu():double()
   assert(g:ne(g):sum() == 0, what .. ': NaN in the result')
   local err = (g - want):abs():max()
   assert(err <= tol * 2 * N + 1e-300, ('%s: max error %g over tolerance %g'):format(what, err, tol * 2 * N))
end

describe('collectives on CUDA tensors', function()
   -- a rank that ends without finalize is taken by its peers as gone
   teardown(function() dist.finalize() end)
   local salt = 0
   for _, alg in ipairs { 'mpi', 'ring', 'multicolor', 'hierarchical' } do
      gpu_it(('allreduce through host staging (%s), float/double/half/bf16, sum/avg/max'):format(alg), function()
         for _, tt in ipairs(TYPES) do
            for _, op in ipairs { 'sum', 'avg', 'max' } do
               for _, n in ipairs { 1, 7, 65537, 1048583 } do
                  salt = salt + 1
                  local x = input(tt[1], n, R, salt):cuda()
                  dist.allreduce(x, op, { algorithm = alg })
                  assert(x:type():match('Cuda'), 'allreduce left the GPU: ' .. x:type())
                  close(x, reference(tt[1], n, op, salt), tt[2], ('%s %s %s n=%d'):format(alg, tt[1], op, n))
               end
            end
         end
      end)
   end

   gpu_it('allreduceAsync on a CUDA tensor completes on :wait()', function()
      salt = salt + 1
      local x = input('torch.FloatTensor', 300007, R, salt):cuda()
      local h = dist.allreduceAsync(x, 'sum', { algorithm = 'ring' })
      h:wait()
      close(x, reference('torch.FloatTensor', 300007, 'sum', salt), 1e-6, 'async ring')
   end)

   nccl_it('allreduce through NCCL (explicit and auto), float/half/bf16, sum/avg/max/min', function()
      for _, alg in ipairs { 'nccl', 'auto' } do
         for _, tt in ipairs(TYPES) do
            for _, op in ipairs { 'sum', 'avg', 'max', 'min' } do
               for _, n in ipairs { 1, 1000, 1048583 } do
                  salt = salt + 1
                  local x = input(tt[1], n, R, salt):cuda()
                  dist.allreduce(x, op, { algorithm = alg })
                  close(x, reference(tt[1], n, op, salt), tt[2], ('%s %s %s n=%d'):format(alg, tt[1], op, n))
               end
            end
         end
      end
   end)

   nccl_it('broadcast and allgather of CUDA tensors through NCCL', function()
      salt = salt + 1
      local n = 4099
      for root = 0, N - 1 do
         local x = input('torch.FloatTensor', n, R, salt + root):cuda()
         dist.broadcast(x, root)
         close(x, input('torch.FloatTensor', n, root, salt + root):double(), 0, 'broadcast from ' .. root)
      end
      salt = salt + N
      local mine = input('torch.FloatTensor', n, R, salt):cuda()
      local out = torch.CudaTensor(N * n):uniform()
      dist.allgather(out, mine)
      local want = torch.DoubleTensor(N * n)
      for r = 0, N - 1 do want:narrow(1, r * n + 1, n):copy(input('torch.FloatTensor', n, r, salt):double()) end
      close(out, want, 0, 'allgather')
   end)
end)
