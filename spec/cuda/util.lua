-- util.lua: shared helpers of the CUDA specs (cuda_spec.lua, cuda_ops_spec.lua): run an op
-- on the CPU and on the GPU from the same fresh random inputs, in several memory layouts, and
-- compare with dtype tolerances.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local unpack = unpack or table.unpack
local assert = require 'luassert' -- busted's assert lives in the spec files' environment
local M = {}

---------------------------------------------------------------------------------------------
-- which tests run

local HAS_GPU = util.has_gpu()
M.HAS_GPU = HAS_GPU
-- busted defines it/pending in each spec file's environment: take the caller's
function M.gpu_it(name, fn)
   local env = getfenv(2)
   if HAS_GPU then env.it(name, fn) else env.pending('[no GPU] ' .. name) end
end
function M.multi_gpu_it(name, fn)
   local env = getfenv(2)
   if HAS_GPU and torch.cuda.deviceCount() >= 2 then
      env.it(name, fn)
   else
      env.pending('[fewer than 2 GPUs] ' .. name)
   end
end
function M.nogpu_it(name, fn)
   local env = getfenv(2)
   if HAS_GPU then env.pending('[GPU present] ' .. name) else env.it(name, fn) end
end

-- the message a CUDA request gets on this machine without a usable GPU
function M.no_cuda_fragment()
   if not torch.cuda.isCompiled() then return 'no CUDA support' end
   return 'no CUDA device is available'
end

---------------------------------------------------------------------------------------------
-- comparison helpers

M.FLOATS = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }
M.ALL_TYPES = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor',
   'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor', 'torch.BoolTensor' }

function M.cuda_name(ty) return T.typename((T.parse_typename(ty)), 0) end

-- tolerance for results of a type (integers: exact), widened by scale (e.g. long sums)
function M.tolerance(ty, scale)
   local t = util.tol[ty]
   if not t then return { atol = 0, rtol = 0 } end
   scale = scale or 1
   return { atol = t.atol * scale, rtol = t.rtol * scale }
end

-- A GPU result against the CPU's: numbers, booleans or tensors (same dtype and sizes).
function M.same(cpu, gpu, ty, what, scale)
   if type(cpu) == 'number' then
      assert(type(gpu) == 'number', what .. ': GPU gave a ' .. type(gpu) .. ', expected a number')
      util.assert_close({ gpu }, { cpu }, M.tolerance(ty, scale), what)
   elseif type(cpu) == 'boolean' then
      assert.are.equal(cpu, gpu, what)
   else
      assert(T.is_tensor(gpu), what .. ': GPU gave a ' .. type(gpu) .. ', expected a tensor')
      assert(gpu:isCuda(), what .. ': the result of a GPU op is not on the GPU')
      assert.are.equal(M.cuda_name(cpu:type()), gpu:type(), what .. ' type')
      assert.are.same(T.sizes(cpu), T.sizes(gpu), what .. ' sizes')
      util.assert_close(util.flat(gpu), util.flat(cpu), M.tolerance(cpu:type(), scale), what)
   end
end

-- fn applied to CPU inputs and to the same inputs on the GPU; every result compared.
-- Non-tensor arguments are passed unchanged.
function M.on_both(what, ty, fn, inputs, scale)
   local gin = {}
   for i = 1, #inputs do
      local x = inputs[i]
      gin[i] = T.is_tensor(x) and x:cuda() or x
   end
   local cpu = { fn(unpack(inputs, 1, #inputs)) }
   local gpu = { fn(unpack(gin, 1, #inputs)) }
   assert(#cpu > 0, what .. ': no result')
   assert.are.equal(#cpu, #gpu, what .. ': number of results')
   for i = 1, #cpu do M.same(cpu[i], gpu[i], ty, what .. ' (result ' .. i .. ')', scale) end
   return cpu, gpu
end

-- Layouts of a logical shape: each builds a base tensor (created on the CPU, moved to the
-- GPU as is) and a view of it, so the GPU kernels see the same strides as the CPU ones.
function M.copy_shape(s)
   local r = {}
   for i, v in ipairs(s) do r[i] = v end
   return r
end
function M.layouts(shape, with_expand)
   local n = #shape
   local L = { { 'contiguous', shape, function(t) return t end } }
   if n >= 2 then
      local s = M.copy_shape(shape)
      s[n - 1], s[n] = shape[n], shape[n - 1]
      L[#L + 1] = { 'transposed', s, function(t) return t:transpose(n - 1, n) end }
   end
   if n >= 1 then
      local s = M.copy_shape(shape)
      s[n] = s[n] + 3
      L[#L + 1] = { 'narrowed', s, function(t) return t:narrow(n, 2, shape[n]) end }
   end
   if with_expand and n >= 1 and shape[1] > 1 then
      local s = M.copy_shape(shape)
      s[1] = 1
      L[#L + 1] = { 'expanded', s, function(t) return t:expand(unpack(shape)) end }
   end
   return L
end

-- A random view with a given layout, on the CPU and the same on the GPU.
function M.rand_pair(layout, ty, lo, hi)
   local base = util.rand_tensor(layout[2], ty, lo, hi)
   return layout[3](base), layout[3](base:cuda())
end

-- Like on_both, but inputs are (layout, ty, lo, hi) specs built fresh for each layout.
function M.on_layouts(what, ty, shape, fn, ranges, scale, with_expand)
   for _, L in ipairs(M.layouts(shape, with_expand)) do
      local cin, gin = {}, {}
      for i, r in ipairs(ranges) do
         if type(r) == 'table' then
            cin[i], gin[i] = M.rand_pair(L, r.ty or ty, r[1], r[2])
         else
            cin[i], gin[i] = r, r
         end
      end
      local cpu = { fn(unpack(cin, 1, #ranges)) }
      local gpu = { fn(unpack(gin, 1, #ranges)) }
      assert.are.equal(#cpu, #gpu, what .. ': number of results')
      for i = 1, #cpu do
         M.same(cpu[i], gpu[i], ty, ('%s %s %s (result %d)'):format(what, ty, L[1], i), scale)
      end
   end
end

M.SHAPES = { { 7 }, { 3, 5 }, { 4, 1, 6 }, { 2, 3, 33 } }

-- indices from the GPU must point at the CPU's extreme values (ties may pick either)
function M.check_indices(what, a, dim, cvals, gidx)
   local picked = a:gather(dim, gidx:cpu())
   util.assert_close(picked, cvals, nil, what .. ' indices select the extreme values')
end


return M
