-- mixed_precision_spec.lua: the mixed-precision pieces on CUDA against the CPU on the same fresh random
-- inputs: the fused optimizer steps with a float32 master, a float16/bfloat16 (or float32)
-- gradient read times a gradient scale != 1 and a compute copy of the gradient's dtype written
-- in the same pass (SGD, Adam, AdamW, LARS, LAMB), and mt_grad_check's inf/NaN count and sum of
-- squares with planted non-finite values. The steps are called through the C entry points, so
-- this spec does not depend on how the Lua optimizers expose them. GPU tests show as pending
-- without a GPU.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'
local C = T.clib

local MASTER = 'torch.FloatTensor'
local GRADS = { 'torch.HalfTensor', 'torch.BFloat16Tensor', 'torch.FloatTensor' }
-- float32 updates on both devices differ by contracted multiply-adds and sqrt/division
-- roundings, a few ulps after several steps
local XSCALE = 30

local function rand(n, ty, lo, hi) return (util.rand_tensor({ n }, ty, lo or -1, hi or 1)) end

-- a fresh loss scale and gradient scale: gradients arrive multiplied by the loss scale and the
-- step multiplies them by gscale = clip / loss scale (not a power of two, so the products round)
local function scales()
   local loss_scale = 2 ^ math.random(4, 10)
   local clip = 0.5 + 0.45 * math.random()
   return loss_scale, clip / loss_scale
end

-- the segments of a layer-wise step: three layers, the middle one excluded (a BN or bias part)
local function segments(n)
   local a, b = 7, 5
   local k = 3
   local seg = { count = k, off = ffi.new('int64_t[3]', { 0, a, a + b }),
      len = ffi.new('int64_t[3]', { a, b, n - a - b }), ex = ffi.new('uint8_t[3]', { 0, 1, 0 }) }
   return seg
end

-- One step of `method` on tensors of one device. st holds x's state tensors and the step count.
local function step(method, x, g, st, cfg, gscale, copy)
   local ch = copy and copy.h or nil
   if method == 'sgd' then
      T.check(C.mt_sgd_step(x.h, g.h, st.buf and st.buf.h or nil, nil, nil, cfg.lr, cfg.momentum or 0,
         cfg.dampening or 0, cfg.wd or 0, cfg.nesterov and 1 or 0, st.t == 0 and 1 or 0, gscale, ch))
   elseif method == 'adam' or method == 'adamw' then
      T.check(C.mt_adam_step(x.h, g.h, st.m.h, st.v.h, cfg.lr, 0.9, 0.999, 1e-8, cfg.wd or 0, st.t + 1,
         method == 'adamw' and 1 or 0, gscale, ch))
   elseif method == 'lars' then
      T.check(C.mt_lars_step(x.h, g.h, st.buf.h, st.seg.count, st.seg.off, st.seg.len, st.seg.ex, cfg.lr, 0.9,
         cfg.wd or 0, 0.02, 0, st.t == 0 and 1 or 0, st.trust, gscale, ch))
   elseif method == 'lamb' then
      T.check(C.mt_lamb_step(x.h, g.h, st.m.h, st.v.h, st.seg.count, st.seg.off, st.seg.len, st.seg.ex, cfg.lr,
         0.9, 0.999, 1e-6, cfg.wd or 0, st.t + 1, 10, st.trust, gscale, ch))
   end
   st.t = st.t + 1
end

local function new_state(method, x, n)
   local st = { t = 0 }
   if method == 'sgd' or method == 'lars' then st.buf = torch.zerosLike(x) end
   if method == 'adam' or method == 'adamw' or method == 'lamb' then
      st.m, st.v = torch.zerosLike(x), torch.zerosLike(x)
   end
   if method == 'lars' or method == 'lamb' then
      st.seg = segments(n)
      st.trust = ffi.new('double[3]')
   end
   return st
end

-- several steps on the CPU and on the GPU from the same master, gradients and scale; the master,
-- the state, the copy and the trust ratios compared, and on each device the copy must be the
-- master rounded to the gradient's dtype
local function compare(method, cfg, gty, n)
   local loss_scale, gscale = scales()
   local x0 = rand(n, MASTER)
   local grads = {}
   for i = 1, 3 do grads[i] = rand(n, gty, -loss_scale, loss_scale) end
   local function run(dev)
      local x = dev and x0:cuda() or x0:clone()
      local copy = dev and torch.zerosLike(grads[1]:cuda()) or torch.zerosLike(grads[1])
      local st = new_state(method, x, n)
      local trusts = {}
      for i = 1, #grads do
         step(method, x, dev and grads[i]:cuda() or grads[i], st, cfg, gscale, copy)
         if st.trust then
            for k = 0, st.seg.count - 1 do trusts[#trusts + 1] = st.trust[k] end
         end
      end
      return x, copy, st, trusts
   end
   local what = ('%s, %s gradient, gscale %g, n %d'):format(method, gty, gscale, n)
   local xc, cc, sc, tc = run(false)
   local xg, cg, sg, tg = run(true)
   cu.same(xc, xg, MASTER, what .. ': master', XSCALE)
   cu.same(cc, cg, gty, what .. ': copy', 2)
   for _, k in ipairs { 'buf', 'm', 'v' } do
      if sc[k] then cu.same(sc[k], sg[k], MASTER, what .. ': ' .. k, XSCALE) end
   end
   if #tc > 0 then util.assert_close(tg, tc, cu.tolerance(MASTER, XSCALE), what .. ': trust ratios') end
   -- the copy is the stored master rounded, exactly, on each device
   util.assert_close(cc, xc:type(gty), { atol = 0, rtol = 0 }, what .. ': CPU copy is the rounded master')
   util.assert_close(cg:cpu(), xg:cpu():type(gty), { atol = 0, rtol = 0 }, what .. ': GPU copy is the rounded master')
end

describe('mixed-precision optimizer steps on CUDA against the CPU', function()
   local SIZES = { 40, 4099 }

   cu.gpu_it('sgd (plain, momentum with weight decay, nesterov) with a float32 master', function()
      for _, gty in ipairs(GRADS) do
         for _, n in ipairs(SIZES) do
            compare('sgd', { lr = 0.1 }, gty, n)
            compare('sgd', { lr = 0.1, momentum = 0.9, dampening = 0.1, wd = 1e-2 }, gty, n)
            compare('sgd', { lr = 0.05, momentum = 0.9, nesterov = true }, gty, n)
         end
      end
   end)

   cu.gpu_it('adam and adamw with a float32 master', function()
      for _, gty in ipairs(GRADS) do
         for _, n in ipairs(SIZES) do
            compare('adam', { lr = 0.01, wd = 1e-3 }, gty, n)
            compare('adamw', { lr = 0.01, wd = 1e-2 }, gty, n)
         end
      end
   end)

   cu.gpu_it('lars and lamb over three segments, one excluded, with a float32 master', function()
      for _, gty in ipairs(GRADS) do
         for _, n in ipairs(SIZES) do
            compare('lars', { lr = 0.1, wd = 1e-3 }, gty, n)
            compare('lamb', { lr = 0.01, wd = 1e-2 }, gty, n)
         end
      end
   end)
end)

describe('grad_check on CUDA against the CPU', function()
   local function check(t)
      local bad, ss = ffi.new('int64_t[1]'), ffi.new('double[1]')
      T.check(C.mt_grad_check(t.h, bad, ss))
      return tonumber(bad[0]), ss[0]
   end

   -- a random gradient with `nbad` inf, -inf and NaN planted at distinct random places
   local function planted(n, ty, nbad)
      local g = rand(n, ty, -100, 100)
      local used, specials = {}, { math.huge, -math.huge, 0 / 0 }
      local k = 0
      while k < nbad do
         local i = math.random(1, n)
         if not used[i] then
            used[i] = true
            k = k + 1
            g:narrow(1, i, 1):fill(specials[(k - 1) % 3 + 1])
         end
      end
      return g
   end

   cu.gpu_it('counts planted inf/NaN and sums the squares of the finite elements', function()
      for _, ty in ipairs(cu.FLOATS) do
         for _, n in ipairs { 1, 37, 300007 } do
            for _, nbad in ipairs { 0, 1, math.min(n, 17) } do
               local g = planted(n, ty, nbad)
               local what = ('grad_check %s n %d with %d non-finite'):format(ty, n, nbad)
               local bc, sc = check(g)
               local bg, sg = check(g:cuda())
               assert.are.equal(nbad, bc, what .. ': CPU count')
               assert.are.equal(nbad, bg, what .. ': GPU count')
               -- both sum the same squares in float64, in another order
               util.assert_close({ sg }, { sc }, { atol = 1e-12, rtol = 1e-11 }, what .. ': sum of squares')
               assert(sg == sg and sg < math.huge, what .. ': GPU sum of squares is not finite')
            end
         end
      end
   end)

   cu.gpu_it('a non-contiguous CUDA gradient is checked like its contiguous copy', function()
      local g = planted(2 * 513, 'torch.HalfTensor', 5):view(2, 513):t()
      local bc, sc = check(g:contiguous())
      local bg, sg = check(g:cuda())
      assert.are.equal(bc, bg, 'count')
      util.assert_close({ sg }, { sc }, { atol = 1e-12, rtol = 1e-11 }, 'sum of squares')
   end)
end)
