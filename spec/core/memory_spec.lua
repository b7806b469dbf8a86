-- memory_spec.lua: tensor memory is given back. The Lua GC sees a tensor as a few bytes, so a
-- loop that makes a fresh megabyte tensor every step would grow to gigabytes unless the GC is
-- pushed by the C allocation counters (Tensor.lua's pressure logic); t:free() releases at once;
-- views keep their storage alive; a freed tensor raises a clear error.
-- ctest: noasan: it measures RSS, which ASan's shadow memory distorts
local torch = require 'moontorch'
local util = require 'spec.util'

local PAGE = tonumber(assert(io.popen('getconf PAGESIZE')):read('*l')) or 4096

local function rss()
   local f = assert(io.open('/proc/self/statm'))
   local resident = f:read('*l'):match('^%d+%s+(%d+)')
   f:close()
   return tonumber(resident) * PAGE
end

local MB = 1024 * 1024

-- Run body(step) for `steps` steps and sample memory every few steps. Returns the peaks over the
-- first `warm` steps and over the rest: a leak shows as a later peak well above the early one
-- (the GC's sawtooth makes single samples too noisy to compare).
local function run_loop(steps, warm, body, allocated)
   local early = { rss = 0, alloc = 0 }
   local late = { rss = 0, alloc = 0 }
   for step = 1, steps do
      body(step)
      if step % 25 == 0 then
         local p = step <= warm and early or late
         p.rss = math.max(p.rss, rss())
         p.alloc = math.max(p.alloc, allocated())
      end
   end
   return early, late
end

local function cpu_allocated() return torch.memoryStats().allocated end

local function assert_flat(early, late, bound, what)
   local msg = ('%s: peak RSS %.0f MB in steps 1-1000, %.0f MB after; peak allocated %.0f MB then %.0f MB')
      :format(what, early.rss / MB, late.rss / MB, early.alloc / MB, late.alloc / MB)
   assert(late.alloc <= bound, msg .. ' (allocated above ' .. bound / MB .. ' MB)')
   assert(late.alloc <= early.alloc + 64 * MB, msg .. ' (allocated grows)')
   assert(late.rss <= early.rss + 128 * MB, msg .. ' (RSS grows)')
end

describe('memory', function()
   before_each(function() collectgarbage() collectgarbage() end)

   it('stays flat over 10,000 steps that each allocate a fresh 1 MB tensor', function()
      local n = 256 * 1024 -- floats: 1 MB
      local checked = 0
      local early, late = run_loop(10000, 1000, function(step)
         local v = step % 97 - 48
         local x = torch.FloatTensor(n):fill(v)
         if step % 500 == 0 then -- the fill really happened (spot check at a random element)
            local i = math.random(0, n - 1)
            assert.are.equal(v, x:data()[i])
            checked = checked + 1
         end
      end, cpu_allocated)
      assert.are.equal(20, checked)
      -- without GC pressure this would be ~10 GB; with it, the live set stays near the 256 MB floor
      assert_flat(early, late, 600 * MB, 'fill loop')
   end)

   it('stays flat in a training-like loop of random inputs, products and sums', function()
      local total, ref_total = 0, 0
      local early, late = run_loop(3000, 1000, function(step)
         local x = torch.rand(256, 256)
         local y = torch.mul(x, 2)
         local z = torch.add(y, x)
         if step % 300 == 0 then
            total = total + z:sum()
            ref_total = ref_total + 3 * x:sum()
         end
      end, cpu_allocated)
      util.assert_close({ total }, { ref_total }, { atol = 1e-2, rtol = 1e-4 }, 'sums of 3x')
      assert_flat(early, late, 600 * MB, 'training loop')
   end)

   it('t:free() releases the storage at once', function()
      collectgarbage('stop') -- no finalizer may run between the two readings
      local ok, err = pcall(function()
         local n = 1000000 + math.random(0, 999)
         local t = torch.DoubleTensor(n)
         local before = cpu_allocated()
         t:free()
         assert.are.equal(n * 8, before - cpu_allocated())
         t:free() -- a second free is harmless
         assert.are.equal(n * 8, before - cpu_allocated())
      end)
      collectgarbage('restart')
      assert(ok, err)
   end)

   it('keeps a storage alive while a view of it exists', function()
      local n = 1000 + math.random(0, 99)
      local base = util.rand_tensor({ n }, 'torch.FloatTensor')
      local view = base:narrow(1, 11, 50)
      local flat = util.flat(base) -- the stored (float-rounded) values
      collectgarbage()
      collectgarbage()
      local before = cpu_allocated()
      base:free()
      assert.are.equal(before, cpu_allocated())
      base = nil -- luacheck: ignore 311 (drops the tensor so that collectgarbage() could free it)
      collectgarbage()
      collectgarbage()
      assert.are.equal(before, cpu_allocated())
      local p = view:data()
      for i = 0, 49 do assert.are.equal(flat[11 + i], p[i]) end
      -- dropping the last view gives the whole storage back
      view = nil -- luacheck: ignore 311 (drops the last view so that collectgarbage() frees the storage)
      collectgarbage()
      collectgarbage()
      assert.are.equal(n * 4, before - cpu_allocated())
   end)

   it('raises "tensor was freed" on use after free', function()
      local t = torch.FloatTensor(4, 5)
      t:free()
      util.assert_error(function() return t:size() end, 'tensor was freed')
      util.assert_error(function() return t:nElement() end, 'tensor was freed')
      util.assert_error(function() return t:fill(1) end, 'tensor was freed')
      util.assert_error(function() return t:narrow(1, 1, 2) end, 'tensor was freed')
      util.assert_error(function() return torch.add(t, t) end, 'tensor was freed')
   end)

   util.gpu_it('keeps GPU memory flat over 10,000 steps of fresh 1 MB CUDA tensors', function()
      local function gpu_allocated() return torch.cuda.memoryStats().allocated end
      local n = 256 * 1024
      local early, late = run_loop(10000, 1000, function(step)
         local x = torch.CudaTensor(n):fill(step % 13)
         if step % 2500 == 0 then assert.are.equal(step % 13 * n, x:sum()) end
      end, gpu_allocated)
      assert_flat(early, late, 600 * MB, 'CUDA fill loop')
      -- and free gives device memory back at once
      collectgarbage()
      collectgarbage('stop')
      local ok, err = pcall(function()
         local t = torch.CudaTensor(n)
         local before = gpu_allocated()
         t:free()
         assert.are.equal(n * 4, before - gpu_allocated())
      end)
      collectgarbage('restart')
      assert(ok, err)
   end)
end)
