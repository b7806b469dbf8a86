-- conv_settings_spec.lua: the CUDA numerics settings (torch.cuda.allowTF32,
-- torch.cuda.convAlgorithm) and channels-last convolution; at the end, the CPU's counterpart,
-- torch.convBackend (oneDNN or native float32 convolutions). The settings' argument checks and
-- the channels-last helper run everywhere; the convolutions compare a GPU run (channels-last
-- operands, heuristic or searched algorithms, small or no workspace, TF32 on or off) with the
-- CPU's NCHW result on the same fresh random inputs, and show as pending without a GPU.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'

local function rand(shape, ty, lo, hi)
   return (util.rand_tensor(shape, ty or 'torch.DoubleTensor', lo or -1, hi or 1))
end

-- restore the process-wide settings whatever a test did
local function with_settings(fn)
   local tf32 = torch.cuda.allowTF32()
   local mode, mb = torch.cuda.convAlgorithm()
   local ok, err = pcall(fn)
   torch.cuda.allowTF32(tf32)
   torch.cuda.convAlgorithm(mode, mb)
   if not ok then error(err, 0) end
end

describe('torch.cuda settings', function()
   if torch.cuda.isCompiled() then
      it('allowTF32 is off by default and returns the previous setting', function()
         with_settings(function()
            assert.is_false(torch.cuda.allowTF32(), 'TF32 must be off by default')
            assert.is_false(torch.cuda.allowTF32(true))
            assert.is_true(torch.cuda.allowTF32())
            assert.is_true(torch.cuda.allowTF32(false))
            assert.is_false(torch.cuda.allowTF32())
            util.assert_error(function() torch.cuda.allowTF32(1) end, 'allowTF32', 'boolean')
         end)
      end)

      it('convAlgorithm sets the mode and workspace limit and returns the previous ones', function()
         with_settings(function()
            local mode, mb = torch.cuda.convAlgorithm()
            assert.are.equal('heuristic', mode)
            assert.are.equal(1024, mb)
            local m1, w1 = torch.cuda.convAlgorithm('search', 64)
            assert.are.equal('heuristic', m1)
            assert.are.equal(1024, w1)
            local m2, w2 = torch.cuda.convAlgorithm('heuristic')
            assert.are.equal('search', m2)
            assert.are.equal(64, w2)
            assert.are.same({ 'heuristic', 64 }, { torch.cuda.convAlgorithm() })
            util.assert_error(function() torch.cuda.convAlgorithm('fastest') end, 'convAlgorithm', 'fastest')
            util.assert_error(function() torch.cuda.convAlgorithm('search', -1) end, 'convAlgorithm', 'workspaceMB')
            util.assert_error(function() torch.cuda.convAlgorithm('search', 1e12) end, 'convAlgorithm', 'workspace')
         end)
      end)
   else
      it('the settings say that this build has no CUDA', function()
         util.assert_error(function() torch.cuda.allowTF32(true) end, 'allowTF32', 'no CUDA support')
         util.assert_error(function() torch.cuda.allowTF32() end, 'allowTF32', 'no CUDA support')
         util.assert_error(function() torch.cuda.convAlgorithm('search') end, 'convAlgorithm', 'no CUDA support')
      end)
   end

   it('channelsLast copies a 4-d tensor into NHWC strides with the same values', function()
      local x = rand({ 2, 3, 4, 5 })
      local y = torch.cuda.channelsLast(x)
      assert.are.same({ 2, 3, 4, 5 }, T.sizes(y))
      assert.are.same({ 60, 1, 15, 3 }, { y:stride(1), y:stride(2), y:stride(3), y:stride(4) })
      assert.is_true(y:isChannelsLast())
      assert.is_false(x:isChannelsLast())
      util.assert_close(y, x, { atol = 0, rtol = 0 }, 'channelsLast values')
      assert.is_true(x:channelsLast():isChannelsLast())
      util.assert_error(function() torch.cuda.channelsLast(torch.zeros(3, 4)) end, 'channelsLast', '4-d')
   end)
end)

describe('CUDA convolution layouts and algorithms against the CPU', function()
   local SCALE = { ['torch.DoubleTensor'] = 1000, ['torch.FloatTensor'] = 30, ['torch.HalfTensor'] = 2,
      ['torch.BFloat16Tensor'] = 2 }

   -- forward, gradInput and the parameter gradients of one convolution on the CPU (NCHW) and on
   -- the GPU with the input (and optionally the weight) channels-last; tol overrides the dtype's
   local function compare(ty, geom, opts)
      opts = opts or {}
      local nIn, nOut, k, s, p, g = geom[1], geom[2], geom[3], geom[4], geom[5], geom[6] or 1
      local N, H, W = 2, 9, 7
      local cm = nn.SpatialConvolution(nIn, nOut, k, k, s, s, p, p, g):type(ty)
      cm.weight:copy(rand(T.sizes(cm.weight), ty))
      cm.bias:copy(rand(T.sizes(cm.bias), ty))
      local gm = cm:clone():type(cu.cuda_name(ty))
      if opts.weight_cl then gm.weight = gm.weight:channelsLast() end
      local x = rand({ N, nIn, H, W }, ty)
      local xg = x:cuda():channelsLast()
      local what = ('%s conv %s%s'):format(ty, table.concat(geom, ','), opts.what or '')
      local sc = opts.scale or SCALE[ty]
      local function same(c, gpu, part)
         if opts.tol then
            util.assert_close(gpu:cpu(), c, opts.tol, what .. ' ' .. part)
         else
            cu.same(c, gpu, ty, what .. ' ' .. part, sc)
         end
      end
      local yc, yg = cm:forward(x), gm:forward(xg)
      same(yc, yg, 'output')
      assert.is_true(yg:isChannelsLast() or yg:isContiguous(), what .. ': output layout')
      if nOut > 1 and yg:size(3) * yg:size(4) > 1 then
         assert.is_true(yg:isChannelsLast(), what .. ': a channels-last input gives a channels-last output')
      end
      local dy = rand(T.sizes(yc), ty)
      local dyg = dy:cuda():channelsLast()
      cm:zeroGradParameters()
      gm:zeroGradParameters()
      same(cm:backward(x, dy), gm:backward(xg, dyg), 'gradInput')
      same(cm.gradWeight, gm.gradWeight, 'gradWeight')
      same(cm.gradBias, gm.gradBias, 'gradBias')
   end

   local GEOMS = { { 3, 8, 3, 1, 1 }, { 8, 16, 1, 1, 0 }, { 8, 8, 3, 2, 1, 2 } }

   cu.gpu_it('channels-last input, heuristic algorithms, every float dtype', function()
      with_settings(function()
         torch.cuda.convAlgorithm('heuristic', 1024)
         for _, ty in ipairs(cu.FLOATS) do
            for _, geom in ipairs(GEOMS) do
               compare(ty, geom)
               compare(ty, geom, { weight_cl = true, what = ' (channels-last weight)' })
            end
         end
      end)
   end)

   cu.gpu_it('timed algorithm search, and a zero workspace limit', function()
      with_settings(function()
         for _, setting in ipairs { { 'search', 1024 }, { 'search', 0 }, { 'heuristic', 0 } } do
            torch.cuda.convAlgorithm(setting[1], setting[2])
            for _, ty in ipairs { 'torch.FloatTensor', 'torch.HalfTensor' } do
               for _, geom in ipairs(GEOMS) do
                  compare(ty, geom, { what = (' (%s, %g MiB)'):format(setting[1], setting[2]) })
               end
            end
         end
      end)
   end)

   cu.gpu_it('TF32 on: float32 convolutions and products within TF32 rounding of the CPU', function()
      with_settings(function()
         torch.cuda.allowTF32(true)
         -- TF32 keeps 10 mantissa bits: relative error about 1e-3 per product, summed over the
         -- reduction; inputs in [-1, 1], sums of at most 126 terms
         local tol = { atol = 5e-2, rtol = 2e-2 }
         for _, mode in ipairs { 'heuristic', 'search' } do
            torch.cuda.convAlgorithm(mode)
            for _, geom in ipairs(GEOMS) do compare('torch.FloatTensor', geom, { tol = tol, what = ' (TF32)' }) end
         end
         local a, b = rand({ 33, 70 }, 'torch.FloatTensor'), rand({ 70, 20 }, 'torch.FloatTensor')
         util.assert_close(a:cuda():mm(b:cuda()):cpu(), a:mm(b), tol, 'mm with TF32')
         torch.cuda.allowTF32(false)
         cu.same(a:mm(b), a:cuda():mm(b:cuda()), 'torch.FloatTensor', 'mm with TF32 off again', 30)
      end)
   end)
end)

-- torch.convBackend: the CPU's float32 convolutions through oneDNN ('onednn' and 'onednn_nchw'
-- forced, or 'auto' timing them against the native kernels once per shape), against the float64
-- path (native kernels, which nn/conv_pool_spec checks against Lua loops) and the native float32 path,
-- on fresh random inputs of odd shapes. Without oneDNN in the build these show as pending.
describe('torch.convBackend (CPU, oneDNN)', function()
   local onednn_it = torch.hasOneDNN() and it or function(name) pending('[built without oneDNN] ' .. name) end
   local TOL = { atol = 1e-4, rtol = 1e-4 } -- float32 sums over up to a few thousand products
   local names = { 'output', 'gradInput', 'gradWeight', 'gradBias' }
   -- forward, gradInput, then gradWeight/gradBias accumulated twice (scale 1 and 0.5) under mode
   local function passes(m, x, gy, mode)
      local old = torch.convBackend(mode)
      local ok, r = pcall(function()
         m:zeroGradParameters()
         local y = m:forward(x):clone()
         local gi = m:updateGradInput(x, gy):clone()
         m:accGradParameters(x, gy, 1)
         m:accGradParameters(x, gy, 0.5)
         return { y, gi, m.gradWeight:clone(), m.bias and m.gradBias:clone() or nil }
      end)
      torch.convBackend(old)
      if not ok then error(r, 0) end
      return r
   end
   -- { N, C, H, W, O, kW, kH, sW, sH, padW, padH, dilW, dilH, groups, bias }
   local function check(cfgs, modes, threads)
      local n0 = torch.getnumthreads()
      for k, c in ipairs(cfgs) do
         local N, C, H, W, O, kW, kH, sW, sH, pW, pH, dW, dH, g, bias = table.unpack(c)
         local md = nn.SpatialConvolution(C, O, kW, kH, sW, sH, pW, pH, g):double()
         md.dilationW, md.dilationH = dW, dH
         if not bias then md:noBias() end
         local xd = rand({ N, C, H, W })
         local yd = md:forward(xd)
         local gyd = rand(T.sizes(yd))
         local ref = passes(md, xd, gyd, 'native') -- float64: the native kernels only
         local m, x, gy = md:clone():float(), xd:float(), gyd:float()
         for _, nt in ipairs(threads(k)) do
            torch.setnumthreads(nt)
            local native = passes(m, x, gy, 'native')
            for _, mode in ipairs(modes) do
               local r = passes(m, x, gy, mode)
               for i = 1, 4 do
                  if ref[i] then
                     local what = ('%s %s %d threads %s'):format(table.concat(c, ',', 1, 14), mode, nt, names[i])
                     util.assert_close(r[i], util.flat(ref[i]), TOL, what)
                     util.assert_close(r[i], util.flat(native[i]), TOL, what .. ' vs native')
                  end
               end
            end
         end
         torch.setnumthreads(n0)
      end
   end

   it('reads, sets and checks the mode (native by default)', function()
      local old = torch.convBackend()
      assert.are.equal('native', old)
      assert.are.equal('native', torch.convBackend('auto'))
      assert.are.equal('auto', torch.convBackend())
      util.assert_error(function() torch.convBackend('mkl') end, 'convBackend', "'native', 'onednn' or 'onednn_nchw'",
         'mkl')
      if not torch.hasOneDNN() then
         util.assert_error(function() torch.convBackend('onednn') end, 'convBackend', 'no oneDNN', 'libdnnl-dev')
      end
      torch.convBackend(old)
   end)

   onednn_it("'onednn' and 'onednn_nchw' match float64 and native "
      .. "(stride, padding, dilation, groups, no bias)", function()
      check({
         { 2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true },
         { 1, 2, 9, 8, 3, 3, 2, 2, 2, 1, 0, 1, 1, 1, true },
         { 3, 4, 6, 7, 6, 3, 3, 1, 2, 0, 1, 1, 1, 2, true },
         { 2, 3, 9, 9, 2, 3, 3, 1, 1, 2, 2, 2, 2, 1, false },
         { 3, 4, 5, 3, 2, 1, 1, 2, 1, 0, 1, 1, 1, 2, true },
         { 1, 4, 8, 5, 4, 5, 3, 2, 1, 2, 1, 1, 2, 4, true },
         { 5, 3, 4, 5, 5, 2, 4, 3, 1, 0, 2, 1, 1, 1, true },
      }, { 'onednn', 'onednn_nchw' }, function() return { torch.getnumthreads() } end)
   end)

   onednn_it("'auto' (timed, then cached) and 'onednn' on larger shapes, on 1 and 2 threads", function()
      check({ -- large enough for 'auto' to time them (4e6 multiply-adds)
         { 2, 32, 19, 21, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, true },
         { 4, 48, 23, 17, 64, 3, 3, 2, 2, 1, 0, 1, 1, 2, false },
         { 6, 96, 15, 16, 128, 1, 1, 2, 2, 0, 0, 1, 1, 1, true },
      }, { 'auto', 'auto', 'onednn' }, function(k) return k == 1 and { 1, 2 } or { 2 } end)
   end)
end)
