-- device_spec.lua: the CUDA backend's infrastructure and torch.cuda.
--  * Everywhere: the torch.cuda API answers sensibly, and without a GPU (or without CUDA in the
--    build) every CUDA request fails with a clear message.
--  * With a GPU: devices and constructors, copies between all dtypes and devices in every
--    layout, random numbers identical to the CPU's, and the caching allocator's accounting and
--    reuse. (Every op against the CPU: cuda/tensor_ops_spec.lua.)
-- GPU tests show as pending on machines without one.
local torch = require 'moontorch'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'
local unpack = unpack or table.unpack
local HAS_GPU = cu.HAS_GPU
local gpu_it, multi_gpu_it, nogpu_it = cu.gpu_it, cu.multi_gpu_it, cu.nogpu_it
local same, cuda_name, no_cuda_fragment = cu.same, cu.cuda_name, cu.no_cuda_fragment
local FLOATS, ALL_TYPES = cu.FLOATS, cu.ALL_TYPES

---------------------------------------------------------------------------------------------
describe('torch.cuda without a GPU', function()
   it('reports what the build and machine offer', function()
      assert.are.equal('boolean', type(torch.cuda.isCompiled()))
      local n = torch.cuda.deviceCount()
      assert(type(n) == 'number' and n >= 0 and n == math.floor(n), 'deviceCount: ' .. tostring(n))
      assert.are.equal(torch.cuda.isCompiled() and n > 0, torch.cuda.isAvailable())
      assert.are.equal(1, torch.cuda.getDevice())
   end)

   nogpu_it('isAvailable() is false', function()
      assert.is_false(torch.cuda.isAvailable())
   end)

   nogpu_it('t:cuda() and torch.CudaTensor(...) raise a clear error', function()
      local t = util.rand_tensor({ 3 }, 'torch.FloatTensor')
      util.assert_error(function() return t:cuda() end, 'cuda: ', no_cuda_fragment())
      util.assert_error(function() return torch.CudaTensor(2) end, 'torch.CudaTensor', no_cuda_fragment())
      util.assert_error(function() return torch.CudaDoubleTensor({ 1, 2 }) end, 'torch.CudaDoubleTensor',
         no_cuda_fragment())
      util.assert_error(function() return t:type('torch.CudaTensor') end, no_cuda_fragment())
   end)

   nogpu_it('memory stats, synchronize, emptyCache and device names raise a clear error', function()
      util.assert_error(function() return torch.cuda.memoryStats() end, 'cuda.memoryStats', no_cuda_fragment())
      util.assert_error(function() return torch.cuda.resetPeakMemoryStats() end, no_cuda_fragment())
      util.assert_error(function() torch.cuda.synchronize() end, 'cuda.synchronize', no_cuda_fragment())
      util.assert_error(function() torch.cuda.emptyCache() end, 'cuda.emptyCache', no_cuda_fragment())
      util.assert_error(function() return torch.cuda.getDeviceName() end, no_cuda_fragment())
      util.assert_error(function() torch.cuda.setDevice(1) end, 'cuda.setDevice', no_cuda_fragment())
   end)

   it('t:cpu() returns a host tensor itself', function()
      local t = util.rand_tensor({ 2, 3 }, 'torch.FloatTensor')
      assert.is_true(rawequal(t, t:cpu()))
   end)

   it('pinned tensors hold data (page-locked only when a GPU exists)', function()
      local t, flat = util.rand_tensor({ 4, 5 }, 'torch.DoubleTensor')
      local p = t:pin()
      assert.are.equal('torch.DoubleTensor', p:type())
      assert.are.equal(HAS_GPU, p:isPinned())
      util.assert_close(p, flat, nil, 'pin')
      if HAS_GPU then assert.is_true(rawequal(p, p:pin())) end
      local q = torch.pinnedTensor('torch.ByteTensor', 3, 2)
      assert.are.equal('torch.ByteTensor', q:type())
      assert.are.same({ 3, 2 }, T.sizes(q))
      local r = torch.pinnedTensor(torch.LongStorage { 6 })
      assert.are.same({ 6 }, T.sizes(r))
      util.assert_error(function() return torch.pinnedTensor('torch.CudaTensor', 2) end, 'pinnedTensor',
         'torch.CudaTensor')
   end)
end)

---------------------------------------------------------------------------------------------
describe('torch.cuda devices and tensors', function()
   gpu_it('devices: count, names, current device', function()
      local n = torch.cuda.deviceCount()
      assert(n >= 1)
      for d = 1, n do
         local name = torch.cuda.getDeviceName(d)
         assert(type(name) == 'string' and #name > 0, 'device name')
      end
      assert.are.equal(1, torch.cuda.getDevice())
      util.assert_error(function() torch.cuda.setDevice(n + 1) end, 'cuda.setDevice', 'out of range', tostring(n + 1))
      util.assert_error(function() torch.cuda.setDevice(0) end, 'cuda.setDevice', 'out of range')
      util.assert_error(function() return torch.cuda.memoryStats(n + 1) end, 'cuda.memoryStats', 'out of range')
      torch.cuda.setDevice(n)
      assert.are.equal(n, torch.cuda.getDevice())
      assert.are.equal(n, torch.CudaTensor(2):getDevice())
      torch.cuda.setDevice(1)
      torch.cuda.synchronize()
      torch.cuda.synchronize(1)
   end)

   gpu_it('t:cuda() keeps the dtype and the values; t:cpu() brings them back', function()
      for _, ty in ipairs(ALL_TYPES) do
         local t = util.rand_tensor({ 3, 4 }, ty, 0, 100)
         local flat = util.flat(t) -- the values as stored (float rounding included)
         local g = t:cuda()
         assert.are.equal(cuda_name(ty), g:type())
         assert.are.equal(1, g:getDevice())
         assert.is_true(rawequal(g, g:cuda()))
         local back = g:cpu()
         assert.are.equal(ty, back:type())
         util.assert_close(back, flat, nil, ty .. ' round trip')
      end
      local f = util.rand_tensor({ 2 }, 'torch.FloatTensor')
      assert.are.equal('torch.CudaTensor', f:type('torch.CudaTensor'):type())
      assert.are.equal('torch.CudaDoubleTensor', f:type('torch.CudaDoubleTensor'):type())
   end)

   gpu_it('constructors build on the GPU', function()
      local a = torch.CudaTensor(2, 3)
      assert.are.equal('torch.CudaTensor', a:type())
      assert.are.same({ 2, 3 }, T.sizes(a))
      local b = torch.CudaDoubleTensor({ { 1.5, -2 }, { 3, 4.25 } })
      assert.are.equal('torch.CudaDoubleTensor', b:type())
      util.assert_close(b, { 1.5, -2, 3, 4.25 }, nil, 'from table')
      local c = torch.CudaLongTensor(torch.LongStorage { 4 })
      assert.are.same({ 4 }, T.sizes(c))
      local shared = torch.CudaDoubleTensor(b)
      shared:copy(torch.DoubleTensor({ { 9, 8 }, { 7, 6 } }))
      util.assert_close(b, { 9, 8, 7, 6 }, nil, 'shared storage')
      util.assert_error(function() return torch.CudaTensor(b) end, 'cannot share storage')
   end)

   gpu_it('element reads and writes on GPU tensors', function()
      local t, flat = util.rand_tensor({ 5 }, 'torch.DoubleTensor')
      local g = t:cuda()
      for i = 1, 5 do assert.are.equal(flat[i], g[i]) end
      g[3] = 42.5
      assert.are.equal(42.5, g:cpu()[3])
   end)

   gpu_it('errors name the op for GPU-specific limits', function()
      local a = torch.CudaIntTensor(3, 3):fill(1)
      util.assert_error(function() return torch.mm(a, a) end, 'integer matrices are not supported on CUDA')
      local x = torch.CudaTensor(3):fill(1)
      local y = torch.FloatTensor(3):fill(1)
      util.assert_error(function() return torch.add(x, y) end, 'different devices', 'cuda:0', 'cpu')
   end)
end)

---------------------------------------------------------------------------------------------
describe('CUDA copies', function()
   gpu_it('host -> device and device -> host between every dtype pair', function()
      for _, sty in ipairs(ALL_TYPES) do
         for _, dty in ipairs(ALL_TYPES) do
            -- values in [0, 200): representable by every dtype, so conversions are well defined
            local src = util.rand_tensor({ 3, 7 }, sty, 0, 200)
            local want = T.tensor_types[dty](3, 7):copy(src)
            local g = T.tensor_types[cuda_name(dty)](3, 7):copy(src)
            same(want, g, dty, sty .. ' -> ' .. cuda_name(dty))
            local gs = src:cuda()
            local back = T.tensor_types[dty](3, 7):copy(gs)
            util.assert_close(back, want, nil, cuda_name(sty) .. ' -> ' .. dty)
            local dd = T.tensor_types[cuda_name(dty)](3, 7):copy(gs)
            same(want, dd, dty, cuda_name(sty) .. ' -> ' .. cuda_name(dty))
         end
      end
   end)

   gpu_it('non-contiguous sources and destinations on either side', function()
      for _, sty in ipairs { 'torch.DoubleTensor', 'torch.HalfTensor', 'torch.ByteTensor' } do
         for _, dty in ipairs { 'torch.FloatTensor', 'torch.LongTensor' } do
            local base = util.rand_tensor({ 6, 9 }, sty, 0, 100)
            local views = {
               transposed = function(t) return t:t() end,
               narrowed = function(t) return t:narrow(2, 3, 5) end,
               strided = function(t) return t:narrow(1, 2, 4):t() end,
            }
            for vname, view in pairs(views) do
               local cv = view(base)
               local want = T.tensor_types[dty](unpack(T.sizes(cv))):copy(cv)
               -- host view -> GPU, GPU view -> host, GPU view -> GPU
               same(want, T.tensor_types[cuda_name(dty)](unpack(T.sizes(cv))):copy(cv), dty, 'h2d ' .. vname)
               local gv = view(base:cuda())
               util.assert_close(T.tensor_types[dty](unpack(T.sizes(cv))):copy(gv), want, nil, 'd2h ' .. vname)
               same(want, T.tensor_types[cuda_name(dty)](unpack(T.sizes(cv))):copy(gv), dty, 'd2d ' .. vname)
               -- into a non-contiguous destination, on the host and on the GPU
               local hdst = T.tensor_types[dty](unpack(T.sizes(cv))):t():contiguous():t()
               local hdst_gapped = T.tensor_types[dty](T.sizes(cv)[1], T.sizes(cv)[2] + 2):narrow(2, 2, T.sizes(cv)[2])
               util.assert_close(hdst:copy(gv), want, nil, 'd2h into transposed ' .. vname)
               util.assert_close(hdst_gapped:copy(gv), want, nil, 'd2h into narrowed ' .. vname)
               local gdst = T.tensor_types[cuda_name(dty)](T.sizes(cv)[2], T.sizes(cv)[1]):t()
               util.assert_close(gdst:copy(cv), want, nil, 'h2d into transposed ' .. vname)
               local gdst2 = T.tensor_types[cuda_name(dty)](T.sizes(cv)[1], T.sizes(cv)[2] + 3)
               gdst2 = gdst2:narrow(2, 3, T.sizes(cv)[2])
               util.assert_close(gdst2:copy(gv), want, nil, 'd2d into narrowed ' .. vname)
            end
         end
      end
   end)

   gpu_it('broadcast (expanded) sources and 0-d tensors', function()
      local row, flat = util.rand_tensor({ 1, 5 }, 'torch.FloatTensor')
      local want = torch.DoubleTensor(4, 5):copy(row:expand(4, 5))
      same(want, torch.CudaDoubleTensor(4, 5):copy(row:expand(4, 5)), 'torch.DoubleTensor', 'expanded h2d')
      same(want, torch.CudaDoubleTensor(4, 5):copy(row:cuda():expand(4, 5)), 'torch.DoubleTensor', 'expanded d2d')
      util.assert_close(torch.DoubleTensor(4, 5):copy(row:cuda():expand(4, 5)), want, nil, 'expanded d2h')
      local s = torch.CudaDoubleTensor(5):copy(row:cuda()):narrow(1, 3, 1):view(torch.LongStorage {})
      assert.are.equal(0, s:dim())
      util.assert_close(s:cpu(), { flat[3] }, util.tol['torch.FloatTensor'], '0-d')
   end)

   gpu_it('large copies (staged and direct) and pinned buffers', function()
      for _, n in ipairs { 1, 1000, 3 * 1024 * 1024 + 7, 9 * 1024 * 1024 + 1 } do
         local t = torch.FloatTensor(n):uniform(-1, 1)
         local g = t:cuda()
         local back = g:cpu()
         assert.is_false(torch.ne(back, t):any(), 'round trip of ' .. n)
         local p = t:pin()
         assert.is_true(p:isPinned())
         local g2 = p:cuda()
         -- the copy from p may still be running: overwrite p only after synchronising
         torch.cuda.synchronize()
         p:fill(0)
         assert.is_false(torch.ne(g2:cpu(), t):any(), 'pinned round trip of ' .. n)
         local p2 = torch.pinnedTensor(n)
         p2:copy(g)
         assert.is_false(torch.ne(p2, t):any(), 'device to pinned of ' .. n)
      end
   end)

   gpu_it('queued work and copies keep their order on the stream', function()
      local n = 1048576
      local g = torch.CudaTensor(n)
      for i = 1, 50 do
         g:fill(i)
         -- a fresh pinned buffer per step, dropped while its async copy may still be queued:
         -- the host cache must not hand it out again before the copy has read it
         g:add(torch.pinnedTensor(n):fill(i + 0.5):cuda())
         collectgarbage('step')
      end
      local c = g:cpu()
      assert.are.equal(100.5, c[1])
      assert.are.equal(100.5, c[n])
   end)

   multi_gpu_it('copies between devices', function()
      for _, sty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         local t = util.rand_tensor({ 7, 11 }, sty)
         local a = t:cuda(1)
         local b = a:cuda(2)
         assert.are.equal(2, b:getDevice())
         util.assert_close(b, t, nil, 'device 1 -> 2')
         local c = torch.CudaDoubleTensor(11, 7)
         torch.cuda.setDevice(2)
         local d = torch.CudaDoubleTensor(11, 7):copy(a:t())
         torch.cuda.setDevice(1)
         assert.are.equal(2, d:getDevice())
         util.assert_close(c:copy(d), t:t():double(), nil, 'transposed 1 -> 2 -> 1')
      end
   end)
end)

---------------------------------------------------------------------------------------------
---------------------------------------------------------------------------------------------
describe('CUDA random numbers match the CPU', function()
   gpu_it('same seed: identical uniform, normal and bernoulli draws', function()
      local seed = util.seed + 17
      for _, ty in ipairs(FLOATS) do
         -- doubles: uniform bit for bit, normal to libm differences; floats: to one rounding
         local low = ty == 'torch.HalfTensor' or ty == 'torch.BFloat16Tensor'
         local exact = { atol = 0, rtol = 0 }
         local tol_u = ty == 'torch.DoubleTensor' and exact or (low and util.tol[ty] or { atol = 1e-6, rtol = 1e-6 })
         local tol_n = ty == 'torch.DoubleTensor' and { atol = 1e-12, rtol = 1e-12 }
            or (low and util.tol[ty] or { atol = 1e-5, rtol = 1e-5 })
         for _, case in ipairs {
            { 'uniform', function(t) return t:uniform(-2, 3) end, tol_u },
            { 'normal', function(t) return t:normal(0.5, 2) end, tol_n },
            { 'bernoulli', function(t) return t:bernoulli(0.3) end, exact },
         } do
            for _, n in ipairs { 1, 1001, 65537 } do
               torch.manualSeed(seed)
               local c = case[2](T.tensor_types[ty](n))
               local after_cpu = torch.getRNGState()
               torch.manualSeed(seed)
               local g = case[2](T.tensor_types[cuda_name(ty)](n))
               -- (states are ByteTensors: compare their bytes, not the objects)
               assert.are.same(util.flat(after_cpu), util.flat(torch.getRNGState()), 'generator advanced alike')
               assert.are.equal(cuda_name(ty), g:type())
               util.assert_close(g, c, case[3], ('%s %s n=%d'):format(case[1], ty, n))
            end
         end
      end
      -- consecutive draws continue the same sequence on both devices
      torch.manualSeed(seed)
      local c1, c2 = torch.DoubleTensor(100):uniform(), torch.DoubleTensor(37):normal()
      torch.manualSeed(seed)
      local g1, g2 = torch.CudaDoubleTensor(100):uniform(), torch.CudaDoubleTensor(37):normal()
      util.assert_close(g1, c1, { atol = 0, rtol = 0 }, 'first draw')
      util.assert_close(g2, c2, { atol = 1e-12, rtol = 1e-12 }, 'second draw')
   end)

   gpu_it('non-contiguous random fills follow the CPU', function()
      torch.manualSeed(util.seed)
      local c = torch.DoubleTensor(6, 8):t():uniform()
      torch.manualSeed(util.seed)
      local g = torch.CudaDoubleTensor(6, 8):t():uniform()
      util.assert_close(g, c, { atol = 0, rtol = 0 }, 'transposed uniform')
   end)
end)

---------------------------------------------------------------------------------------------
---------------------------------------------------------------------------------------------
describe('CUDA caching allocator', function()
   local MiB = 1024 * 1024
   local function quiesce()
      collectgarbage('collect')
      collectgarbage('collect')
      torch.cuda.synchronize()
   end

   gpu_it('1000 allocate/free cycles of one size make no new system allocations', function()
      quiesce()
      for _, n in ipairs { 1000, 300 * 1024, 3 * MiB } do
         local w = torch.CudaTensor(n)
         w:free()
         local s0 = torch.cuda.memoryStats()
         for _ = 1, 1000 do
            local t = torch.CudaTensor(n)
            t:free()
         end
         local s1 = torch.cuda.memoryStats()
         assert.are.equal(s0.systemAllocs, s1.systemAllocs, 'system allocations for size ' .. n)
         assert.are.equal(s0.allocs + 1000, s1.allocs, 'allocations counted')
         assert.are.equal(s0.allocated, s1.allocated, 'nothing left allocated')
      end
   end)

   gpu_it('allocated, reserved and peak accounting', function()
      quiesce()
      torch.cuda.emptyCache() -- no odd-sized cached block to serve the requests below
      collectgarbage('stop')
      local ok, err = pcall(function()
         torch.cuda.resetPeakMemoryStats()
         local s0 = torch.cuda.memoryStats()
         assert.are.equal(s0.allocated, s0.peak)
         assert(s0.reserved >= s0.allocated)
         local a = torch.CudaTensor(MiB) -- 4 MiB: a multiple of the rounding
         local s1 = torch.cuda.memoryStats()
         assert.are.equal(s0.allocated + 4 * MiB, s1.allocated)
         assert(s1.reserved >= s1.allocated)
         local b = torch.CudaDoubleTensor(1000) -- 8000 bytes, rounded up to 8192
         local s2 = torch.cuda.memoryStats()
         assert.are.equal(s1.allocated + 8192, s2.allocated)
         assert.are.equal(s2.allocated, s2.peak)
         a:free()
         b:free()
         local s3 = torch.cuda.memoryStats()
         assert.are.equal(s0.allocated, s3.allocated)
         assert.are.equal(s2.peak, s3.peak)
         assert(s3.peakReserved >= s2.reserved)
         torch.cuda.resetPeakMemoryStats()
         assert.are.equal(s3.allocated, torch.cuda.memoryStats().peak)
      end)
      collectgarbage('restart')
      assert(ok, err)
   end)

   gpu_it('freed blocks are reused and split blocks merge back', function()
      quiesce()
      torch.cuda.emptyCache() -- so the pieces below can only come from the segment freed next
      local a = torch.CudaTensor(6 * MiB) -- 24 MiB: its own segment
      a:free()
      local s0 = torch.cuda.memoryStats()
      -- pieces of the freed segment serve smaller large requests without new segments
      local p1, p2 = torch.CudaTensor(3 * MiB), torch.CudaTensor(2 * MiB)
      p1:fill(1)
      p2:fill(2)
      assert.are.equal(s0.systemAllocs, torch.cuda.memoryStats().systemAllocs)
      assert.are.equal(3 * MiB, p1:sum())
      assert.are.equal(4 * MiB, p2:sum())
      local s1 = torch.cuda.memoryStats() -- (the sums may have taken a small block for their result)
      p1:free()
      p2:free()
      -- merged again: the whole 24 MiB fits without a new segment
      local b = torch.CudaTensor(6 * MiB)
      assert.are.equal(s1.systemAllocs, torch.cuda.memoryStats().systemAllocs)
      b:free()
   end)

   gpu_it('emptyCache returns cached memory to the driver', function()
      quiesce()
      local big = torch.CudaTensor(16 * MiB) -- 64 MiB
      big:fill(1)
      big:free()
      local s0 = torch.cuda.memoryStats()
      assert(s0.reserved >= s0.allocated + 64 * MiB, 'freed memory stays cached')
      torch.cuda.emptyCache()
      local s1 = torch.cuda.memoryStats()
      assert(s1.reserved <= s0.reserved - 64 * MiB, ('reserved %d -> %d'):format(s0.reserved, s1.reserved))
      assert.are.equal(s0.allocated, s1.allocated)
      -- a new allocation after emptying needs the driver again
      local again = torch.CudaTensor(16 * MiB)
      assert.are.equal(s1.systemAllocs + 1, torch.cuda.memoryStats().systemAllocs)
      again:free()
   end)

   gpu_it('a 10,000-step loop allocating a tensor per step keeps GPU memory flat', function()
      quiesce()
      local at1000
      for i = 1, 10000 do
         -- 256 KiB, dropped to the GC each step
         local t = torch.CudaTensor(256, 256):fill(i) -- luacheck: ignore 231 (t = nil below drops it to the GC)
         if i == 1000 then at1000 = torch.cuda.memoryStats() end
         t = nil
      end
      local at10000 = torch.cuda.memoryStats()
      -- without the GC pressure logic and the cache this would grow by ~2.3 GB
      assert(at10000.reserved <= at1000.reserved + 300 * MiB,
         ('reserved grew from %d to %d bytes'):format(at1000.reserved, at10000.reserved))
      assert(at10000.allocated <= 1024 * MiB, 'allocated ' .. at10000.allocated)
      assert(at10000.systemAllocs - at1000.systemAllocs <= 200,
         ('%d system allocations after step 1000'):format(at10000.systemAllocs - at1000.systemAllocs))
   end)

   gpu_it('out-of-memory is an error naming the sizes, and the allocator recovers', function()
      quiesce()
      local err = util.assert_error(function() return torch.CudaTensor(1024 * 1024 * 1024 * 1024) end,
         'out of memory', 'cuda:0', 'reserved')
      assert(err:find('4398046511104', 1, true), err)
      local t = torch.CudaTensor(100):fill(1)
      assert.are.equal(100, t:sum())
   end)

   gpu_it('pinned host buffers are cached and reused', function()
      quiesce()
      local p = torch.pinnedTensor(4096)
      p:fill(3)
      local g = p:cuda()
      p:free()
      torch.cuda.synchronize()
      local q = torch.pinnedTensor(4096)
      assert.is_true(q:isPinned())
      q:copy(g)
      assert.are.equal(3 * 4096, q:sum())
   end)
end)
