-- conv_composed_spec.lua: the convolution group's composed modules (transposed convolution,
-- padding, up-sampling, adaptive and other pooling, normalization). Forward passes against
-- PyTorch 1.13's torch.nn.functional through /usr/bin/python3 (one process for the whole file,
-- Torch7's argument orders mapped to PyTorch's), gradients with nn.Jacobian, all in float64 on
-- fresh random inputs of small odd sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local dtol, rand, py, jac = peer.dtol, peer.rand, peer.py, peer.jac
local case, check_case = peer.cases()

describe('nn convolution group', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   -- every forward case is computed before the first comparison so that Python runs once
   setup(function()
      torch.setdefaulttensortype('torch.DoubleTensor')
      -- SpatialFullConvolution: weight nIn x nOut x kH x kW is conv_transpose2d's layout
      local m = nn.SpatialFullConvolution(3, 2, 3, 2, 2, 3, 1, 0, 1, 2)
      local x = rand(2, 3, 4, 5)
      case('full_batch', m:forward(x), ('F.conv_transpose2d(%s, %s, %s, stride=(3,2), padding=(0,1), ' ..
         'output_padding=(2,1))'):format(py(x), py(m.weight), py(m.bias)))
      local x3 = rand(3, 3, 5)
      case('full_single', m:forward(x3), ('F.conv_transpose2d(%s.unsqueeze(0), %s, %s, stride=(3,2), ' ..
         'padding=(0,1), output_padding=(2,1))[0]'):format(py(x3), py(m.weight), py(m.bias)))
      -- padding: F.pad takes (left, right, top, bottom)
      local xp = rand(2, 3, 5, 4)
      case('zero_pad', nn.SpatialZeroPadding(2, 1, 0, 3):forward(xp), ('F.pad(%s, (2,1,0,3))'):format(py(xp)))
      case('zero_crop', nn.SpatialZeroPadding(-1, 2, 1, -2):forward(xp), ('F.pad(%s, (-1,2,1,-2))'):format(py(xp)))
      case('reflect_pad', nn.SpatialReflectionPadding(3, 1, 2, 4):forward(xp),
         ('F.pad(%s, (3,1,2,4), mode="reflect")'):format(py(xp)))
      local xp3 = rand(2, 3, 4)
      case('reflect_pad3', nn.SpatialReflectionPadding(1, 2, 2, 0):forward(xp3),
         ('F.pad(%s.unsqueeze(0), (1,2,2,0), mode="reflect")[0]'):format(py(xp3)))
      case('replicate_pad', nn.SpatialReplicationPadding(3, 1, 2, 5):forward(xp),
         ('F.pad(%s, (3,1,2,5), mode="replicate")'):format(py(xp)))
      -- up-sampling: Torch7's bilinear aligns the corners
      local xu = rand(2, 3, 4, 5)
      case('up_nearest', nn.SpatialUpSamplingNearest(3):forward(xu),
         ('F.interpolate(%s, scale_factor=3, mode="nearest")'):format(py(xu)))
      case('up_bilinear', nn.SpatialUpSamplingBilinear(2):forward(xu),
         ('F.interpolate(%s, size=(8,10), mode="bilinear", align_corners=True)'):format(py(xu)))
      local xu3 = rand(2, 3, 4)
      case('up_bilinear_size', nn.SpatialUpSamplingBilinear({ oheight = 7, owidth = 5 }):forward(xu3),
         ('F.interpolate(%s.unsqueeze(0), size=(7,5), mode="bilinear", align_corners=True)[0]'):format(py(xu3)))
      -- adaptive pooling: Torch7 takes (W, H), PyTorch (H, W)
      local xa = rand(2, 3, 7, 9)
      case('adaptive_max', nn.SpatialAdaptiveMaxPooling(4, 3):forward(xa),
         ('F.adaptive_max_pool2d(%s, (3,4))'):format(py(xa)))
      case('adaptive_max_up', nn.SpatialAdaptiveMaxPooling(11, 8):forward(xa[1]),
         ('F.adaptive_max_pool2d(%s[0].unsqueeze(0), (8,11))[0]'):format(py(xa)))
      case('adaptive_avg', nn.SpatialAdaptiveAveragePooling(4, 3):forward(xa),
         ('F.adaptive_avg_pool2d(%s, (3,4))'):format(py(xa)))
      -- temporal: Torch7 is frames x features, PyTorch channels (features) x frames; Torch7's
      -- weight is out x (kW*in) frame-major
      local tc = nn.TemporalConvolution(3, 4, 3, 2)
      local xt = rand(2, 9, 3)
      case('temporal_conv', tc:forward(xt), ('F.conv1d(%s.transpose(1,2), %s.reshape(4,3,3).permute(0,2,1), %s, ' ..
         'stride=2).transpose(1,2)'):format(py(xt), py(tc.weight), py(tc.bias)))
      local tco = nn.TemporalConvolution(5, 3, 4, 3)
      local xto = rand(3, 15, 5) -- 3 divides 15: the flat layout (one GEMM per tap for the batch)
      case('temporal_conv_odd', tco:forward(xto), ('F.conv1d(%s.transpose(1,2), %s.reshape(3,4,5)' ..
         '.permute(0,2,1), %s, stride=3).transpose(1,2)'):format(py(xto), py(tco.weight), py(tco.bias)))
      case('temporal_conv_single', tc:forward(xt[2]), ('F.conv1d(%s[1].t().unsqueeze(0), %s.reshape(4,3,3)' ..
         '.permute(0,2,1), %s, stride=2)[0].t()'):format(py(xt), py(tc.weight), py(tc.bias)))
      case('temporal_max', nn.TemporalMaxPooling(3, 2):forward(xt),
         ('F.max_pool1d(%s.transpose(1,2), 3, 2).transpose(1,2)'):format(py(xt)))
      case('temporal_max_single', nn.TemporalMaxPooling(2):forward(xt[1]),
         ('F.max_pool1d(%s[0].t().unsqueeze(0), 2)[0].t()'):format(py(xt)))
      -- VolumetricBatchNormalization in training mode: batch statistics
      local vbn = nn.VolumetricBatchNormalization(3, 1e-3)
      vbn.weight:uniform(0.5, 1.5); vbn.bias:uniform(-1, 1)
      local xv = rand(2, 3, 3, 2, 5)
      case('vbn', vbn:forward(xv), ('F.batch_norm(%s, None, None, %s, %s, training=True, eps=1e-3)'):format(py(xv),
         py(vbn.weight), py(vbn.bias)))
      -- LRN: PyTorch's alpha is also divided by size
      local xl = rand(2, 7, 3, 4)
      case('lrn', nn.SpatialCrossMapLRN(5, 0.3, 0.6, 1.5):forward(xl),
         ('F.local_response_norm(%s, 5, alpha=0.3, beta=0.6, k=1.5)'):format(py(xl)))
      local xl3 = rand(4, 3, 2)
      case('lrn_single', nn.SpatialCrossMapLRN(3):forward(xl3),
         ('F.local_response_norm(%s.unsqueeze(0), 3, alpha=1e-4, beta=0.75, k=1)[0]'):format(py(xl3)))
      -- LP pooling: Torch7 (kW, kH, dW, dH), PyTorch (kH, kW), stride (dH, dW)
      local xlp = rand(2, 3, 7, 6)
      case('lp2', nn.SpatialLPPooling(3, 2, 3, 2, 2, 1):forward(xlp),
         ('F.lp_pool2d(%s, 2, (2,3), stride=(1,2))'):format(py(xlp)))
      local xlp3 = (util.rand_tensor({ 3, 5, 5 }, 'torch.DoubleTensor', 0.1, 1))
      case('lp3', nn.SpatialLPPooling(3, 3, 2, 2):forward(xlp3),
         ('F.lp_pool2d(%s.unsqueeze(0), 3, 2)[0]'):format(py(xlp3)))
      -- unpooling: the pooling's input is 5x7, so its last row and column are dropped and restored
      local xm = rand(2, 3, 5, 7)
      local pool = nn.SpatialMaxPooling(2, 2)
      local unpool = nn.SpatialMaxUnpooling(pool)
      case('unpool', unpool:forward(pool:forward(xm)), ('(lambda o: F.max_unpool2d(o[0], o[1], 2, ' ..
         'output_size=(5,7)))(F.max_pool2d(%s, 2, return_indices=True))'):format(py(xm)))
      -- locally connected: F.unfold's patches (C*kH*kW x positions) times each position's weights
      local lc = nn.SpatialConvolutionLocal(2, 3, 5, 4, 3, 2, 2, 1, 1, 0)
      local xc = rand(2, 2, 4, 5)
      case('local', lc:forward(xc), ('torch.einsum("lok,nkl->nol", %s.reshape(%d,3,12), F.unfold(%s, (2,3), ' ..
         'padding=(0,1), stride=(1,2))).reshape(2,3,%d,%d) + %s'):format(py(lc.weight), lc.oH * lc.oW, py(xc), lc.oH,
         lc.oW, py(lc.bias)))
      -- subtractive normalization: x minus the windowed mean over all planes, border-corrected
      local xs = rand(2, 3, 5, 6)
      local k2 = (util.rand_tensor({ 3, 5 }, 'torch.DoubleTensor', 0.1, 1))
      case('subnorm', nn.SpatialSubtractiveNormalization(3, k2):forward(xs), ('(lambda x, k: x - F.conv2d(x, ' ..
         'k.expand(1,3,3,5), padding=(1,2)) / F.conv2d(torch.ones_like(x), k.expand(1,3,3,5), padding=(1,2)))(%s, %s)')
         :format(py(xs), py(k2)))
      local k1 = (util.rand_tensor({ 3 }, 'torch.DoubleTensor', 0.1, 1))
      local xs3 = rand(2, 4, 5)
      case('subnorm1d', nn.SpatialSubtractiveNormalization(2, k1):forward(xs3), ('(lambda x, k: x - F.conv2d(x, ' ..
         'k.expand(1,2,3,3), padding=1) / F.conv2d(torch.ones_like(x), k.expand(1,2,3,3), padding=1))' ..
         '(%s.unsqueeze(0), torch.outer(%s, %s))[0]'):format(py(xs3), py(k1), py(k1)))
      -- fractional max pooling with the same random samples (PyTorch's _random_samples)
      local fm = nn.SpatialFractionalMaxPooling(2, 3, 4, 3)
      local xf = rand(2, 3, 7, 9)
      case('fractional', fm:forward(xf), ('F.fractional_max_pool2d(%s, (3,2), output_size=(3,4), ' ..
         '_random_samples=%s)'):format(py(xf), py(fm.randomSamples)))
      local fr = nn.SpatialFractionalMaxPooling(2, 2, 0.5, 0.7)
      local xf3 = rand(3, 8, 9)
      case('fractional_ratio', fr:forward(xf3), ('F.fractional_max_pool2d(%s.unsqueeze(0), 2, output_size=(5,4), ' ..
         '_random_samples=%s)[0]'):format(py(xf3), py(fr.randomSamples)))
      torch.setdefaulttensortype('torch.FloatTensor')
   end)

   describe('SpatialFullConvolution', function()
      it('matches conv_transpose2d (stride, padding, adj; batch and single)', function()
         check_case('full_batch')
         check_case('full_single')
      end)

      it('has correct input, weight and bias gradients', function()
         jac(nn.SpatialFullConvolution(2, 3, 3, 2, 2, 1, 1, 1, 1, 0), rand(2, 2, 3, 4), 'strided')
         jac(nn.SpatialFullConvolution(3, 2, 2, 3), rand(3, 4, 3), 'single')
         local m = nn.SpatialFullConvolution(2, 2, 3, 3, 2, 2, 1, 1):noBias()
         assert.is_nil(m.bias)
         jac(m, rand(1, 2, 3, 3), 'noBias')
      end)

      it('takes {input, target} and picks adj to reach the target size', function()
         local m = nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 1, 1)
         local x, target = rand(2, 2, 4, 5), rand(2, 3, 8, 10)
         local y = m:forward({ x, target })
         assert.are.same({ 2, 3, 8, 10 }, T.sizes(y))
         local ref = nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1)
         ref.weight:copy(m.weight); ref.bias:copy(m.bias)
         util.assert_close(y, ref:forward(x), dtol, 'table input')
         local g = m:backward({ x, target }, rand(2, 3, 8, 10))
         assert.are.same(T.sizes(x), T.sizes(g[1]))
         assert.are.equal(0, g[2]:abs():max())
      end)

      it('rejects bad arguments and inputs clearly', function()
         assert.has_error(function() nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 0, 0, 2, 0) end,
            'nn.SpatialFullConvolution: adjW 2 and adjH 0 must be smaller than dW 2 and dH 2')
         local m = nn.SpatialFullConvolution(2, 3, 3, 3)
         local ok, err = pcall(function() m:forward(rand(3, 4, 4)) end)
         assert(not ok and err:find('nn.SpatialFullConvolution: input has 3 planes, expected nInputPlane 2', 1, true),
            err)
         ok, err = pcall(function() m:forward(rand(4, 4)) end)
         assert(not ok and err:find('expected a 3-d or 4-d input', 1, true), err)
         assert.are.equal('nn.SpatialFullConvolution(2 -> 3, 3x3)', tostring(m))
         assert.are.equal('nn.SpatialFullConvolution(2 -> 3, 3x3, 2,2, 1,1, 1,1)',
            tostring(nn.SpatialFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1)))
      end)
   end)

   describe('padding', function()
      it('SpatialZeroPadding matches F.pad, crops with negative pads', function()
         check_case('zero_pad')
         check_case('zero_crop')
         jac(nn.SpatialZeroPadding(1, -1, 2, -2), rand(2, 5, 4), 'zero pad/crop')
         jac(nn.SpatialZeroPadding(2), rand(1, 2, 3, 3), 'zero pad')
         local ok, err = pcall(function() nn.SpatialZeroPadding(-3):forward(rand(1, 4, 5)) end)
         assert(not ok and err:find('nn.SpatialZeroPadding: input 4x5 is too small', 1, true), err)
      end)

      it('pads float16, bfloat16 and float64 exactly as float32 (loops by element size)', function()
         -- padding moves values, so each dtype's result is float32's result in that dtype
         local x = torch.FloatTensor(2, 3, 5, 7):uniform(-4, 4)
         for _, mk in ipairs { function() return nn.SpatialZeroPadding(1, -2, 2, 1) end, -- 8 x 6 (cropped)
            function() return nn.SpatialReflectionPadding(1, 0, 2, 1) end, -- 8 x 8,
            function() return nn.SpatialReplicationPadding(2, 1, 1, 2) end } do
            local ref = mk()
            local y = ref:forward(x)
            assert.are.same({ 2, 3, 8 }, { y:size(1), y:size(2), y:size(3) })
            local go = y:clone():uniform(-4, 4)
            local gi = ref:backward(x, go)
            for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor', 'torch.DoubleTensor' } do
               local m = mk():type(ty)
               local what = torch.type(ref) .. ' ' .. ty
               util.assert_close(m:forward(x:type(ty)):float(), y:type(ty):float(), { atol = 0, rtol = 0 }, what)
               -- the backward sums at most a few values per element: compare against float64's
               -- sums of the dtype's values, within the dtype's rounding
               local g = m:backward(x:type(ty), go:type(ty)):float()
               local want = mk():double():backward(x:double(), go:type(ty):double()):type(ty):float()
               util.assert_close(g, want, util.tol[ty], what .. ' backward')
               assert.are.equal(0, gi:ne(gi):sum(), 'no NaN')
            end
         end
      end)

      it('SpatialReflectionPadding matches mode="reflect"', function()
         check_case('reflect_pad')
         check_case('reflect_pad3')
         jac(nn.SpatialReflectionPadding(2, 1, 1, 2), rand(2, 3, 4), 'reflect')
         local ok, err = pcall(function() nn.SpatialReflectionPadding(4, 0, 0, 0):forward(rand(1, 3, 4)) end)
         assert(not ok and err:find('nn.SpatialReflectionPadding: width pads 4,0 must be smaller than the input size 4',
            1, true), err)
      end)

      it('SpatialReplicationPadding matches mode="replicate"', function()
         check_case('replicate_pad')
         jac(nn.SpatialReplicationPadding(3, 1, 2, 4), rand(1, 2, 2, 3), 'replicate')
      end)

      it('padding in one C pass: the three modes against float64 loops, float32, non-contiguous', function()
         local function src(o, n, before, mode)
            local i = o - before
            if i >= 0 and i < n then return i end
            if mode == 'Zero' then return nil end
            if mode == 'Reflection' then return i < 0 and -i or 2 * (n - 1) - i end
            return i < 0 and 0 or n - 1
         end
         local function ref(x, go, mode, l, r, t, b)
            local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
            local oH, oW = H + t + b, W + l + r
            local y, gi = torch.zeros(N, C, oH, oW), torch.zeros(N, C, H, W)
            for n = 1, N do for c = 1, C do
               local xp, yp, gp, gip = x[n][c], y[n][c], go[n][c], gi[n][c]
               for oh = 0, oH - 1 do for ow = 0, oW - 1 do
                  local ih, iw = src(oh, H, t, mode), src(ow, W, l, mode)
                  if ih and iw then
                     yp[oh + 1][ow + 1] = xp[ih + 1][iw + 1]
                     gip[ih + 1][iw + 1] = gip[ih + 1][iw + 1] + gp[oh + 1][ow + 1]
                  end
               end end
            end end
            return y, gi
         end
         for _, c in ipairs { { 'Zero', 1, 2, 3, 4 }, { 'Zero', -2, 3, 1, -3 }, { 'Reflection', 1, 2, 3, 4 },
                              { 'Reflection', 6, 0, 2, 8 }, { 'Replication', 1, 2, 3, 4 },
                              { 'Replication', 9, 0, 0, 5 } } do
            local mode, l, r, t, b = unpack(c)
            local x = torch.randn(2, 3, 7, 9):transpose(3, 4)   -- 2x3x9x7, non-contiguous
            local go = torch.randn(2, 3, 9 + t + b, 7 + l + r)
            local y, gi = ref(x:contiguous(), go, mode, l, r, t, b)
            for _, tp in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
               local m = nn['Spatial' .. mode .. 'Padding'](l, r, t, b):type(tp)
               local what = ('%s pad %d,%d,%d,%d %s'):format(mode, l, r, t, b, tp)
               local tol = tp == 'torch.DoubleTensor' and { atol = 1e-14, rtol = 1e-14 } or { atol = 1e-6, rtol = 1e-6 }
               util.assert_close(m:forward(x:type(tp)), y, tol, what)
               -- a replicated corner sums up to (l+1)(b+1) = 60 float32 gradients here: allow
               -- float32's accumulated rounding (about sqrt(60) * 6e-8 * |terms|, a few 1e-6)
               local btol = tp == 'torch.DoubleTensor' and tol or { atol = 3e-5, rtol = 1e-6 }
               util.assert_close(m:backward(x:type(tp), go:type(tp)), gi, btol, what .. ' backward')
            end
            jac(nn['Spatial' .. mode .. 'Padding'](l, r, t, b), rand(1, 2, 9, 7), mode .. ' pad jacobian')
         end
         local ok, err = pcall(function() nn.SpatialReflectionPadding(0, 0, 3, 0):forward(rand(1, 3, 4)) end)
         assert(not ok and err:find(
            'nn.SpatialReflectionPadding: height pads 3,0 must be smaller than the input size 3', 1, true), err)
      end)
   end)

   describe('up-sampling', function()
      it('SpatialUpSamplingNearest matches F.interpolate nearest', function()
         check_case('up_nearest')
         jac(nn.SpatialUpSamplingNearest(2), rand(2, 3, 3), 'nearest')
         -- scale 1 (a copy) and 3 (a third term per sum), 4-d
         jac(nn.SpatialUpSamplingNearest(1), rand(2, 2, 3, 2), 'nearest x1')
         jac(nn.SpatialUpSamplingNearest(3), rand(2, 2, 3, 2), 'nearest x3')
         assert.has_error(function() nn.SpatialUpSamplingNearest(1.5) end,
            'nn.SpatialUpSamplingNearest: scale must be a positive integer, got 1.5')
      end)

      it('SpatialUpSamplingBilinear matches F.interpolate bilinear with aligned corners', function()
         check_case('up_bilinear')
         check_case('up_bilinear_size')
         jac(nn.SpatialUpSamplingBilinear(3), rand(1, 2, 3, 2), 'bilinear')
         jac(nn.SpatialUpSamplingBilinear({ oheight = 5, owidth = 4 }), rand(2, 3, 3), 'bilinear size')
         assert.are.equal('nn.SpatialUpSamplingBilinear(5x4)',
            tostring(nn.SpatialUpSamplingBilinear({ oheight = 5, owidth = 4 })))
      end)
   end)

   describe('adaptive pooling', function()
      it('SpatialAdaptiveMaxPooling matches F.adaptive_max_pool2d (shrinking and growing)', function()
         check_case('adaptive_max')
         check_case('adaptive_max_up')
         jac(nn.SpatialAdaptiveMaxPooling(2, 3), rand(2, 2, 5, 4), 'adaptive max')
         jac(nn.SpatialAdaptiveMaxPooling(3, 2), rand(2, 3, 5), 'adaptive max single')
      end)

      it('SpatialAdaptiveMaxPooling passes NaN on; the C window max rejects windows outside the input', function()
         local x = rand(2, 3, 6, 5)
         x[1][2][4][1] = 0 / 0
         local m = nn.SpatialAdaptiveMaxPooling(2, 2)
         local y = m:forward(x)
         assert.is_true(y[1][2][2][1] ~= y[1][2][2][1], 'the cell holding the NaN gives NaN')
         assert.are.equal(0, y:ne(y):sum() - 1, 'and no other cell does')
         local g = m:backward(x, torch.ones(2, 3, 2, 2))
         assert.are.equal(1, g[1][2][4][1], 'its gradient goes to the NaN')
         local s, e = torch.LongTensor { { 0, 3 } }, torch.LongTensor { { 3, 7 } }
         local ok, err = pcall(function()
            T.check(T.clib.mt_nn_window_maxpool2d(torch.Tensor().h, torch.LongTensor().h, x.h, s.h, e.h, s.h,
               s:clone():add(1).h))
         end)
         assert(not ok and err:find('window_maxpool2d: row window 1 is %[3, 7%), not a non%-empty range inside 0..6'),
            tostring(err))
      end)

      -- the C window max (branch-free selects, then a pass for NaN) against a Lua loop on small
      -- integers: ties keep the first cell in row order, the first NaN of a cell wins
      it('SpatialAdaptiveMaxPooling keeps the first of equal maxima and the first NaN', function()
         for _, tname in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
            local x = torch.Tensor():type(tname):resize(2, 3, 7, 9):random(1, 3)
            for _ = 1, 10 do x[math.random(2)][math.random(3)][math.random(7)][math.random(9)] = 0 / 0 end
            local m = nn.SpatialAdaptiveMaxPooling(4, 3) -- overlapping cells both ways
            local y = m:forward(x)
            local g = m:backward(x, y:clone():fill(1))
            local hits = x:clone():zero()
            for n = 1, 2 do
               for c = 1, 3 do
                  for i = 0, 2 do
                     for j = 0, 3 do
                        local best, by, bx
                        for r = math.floor(i * 7 / 3), math.ceil((i + 1) * 7 / 3) - 1 do
                           for q = math.floor(j * 9 / 4), math.ceil((j + 1) * 9 / 4) - 1 do
                              local v = x[n][c][r + 1][q + 1]
                              if not best or (best == best and (v > best or v ~= v)) then
                                 best, by, bx = v, r + 1, q + 1
                              end
                           end
                        end
                        local got = y[n][c][i + 1][j + 1]
                        assert(got == best or (got ~= got and best ~= best),
                           ('%s y[%d][%d][%d][%d] = %s, want %s'):format(tname, n, c, i + 1, j + 1, tostring(got),
                              tostring(best)))
                        hits[n][c][by][bx] = hits[n][c][by][bx] + 1
                     end
                  end
               end
            end
            -- each cell's unit gradient lands on the cell it chose
            assert.are.equal(0, (g:double() - hits:double()):abs():max(), tname .. ' gradient')
         end
      end)

      it('SpatialAdaptiveAveragePooling matches F.adaptive_avg_pool2d', function()
         check_case('adaptive_avg')
         jac(nn.SpatialAdaptiveAveragePooling(2, 3), rand(2, 2, 5, 4), 'adaptive avg')
      end)
   end)

   describe('temporal', function()
      it('TemporalConvolution matches F.conv1d (Torch7 frame-major weight; batch and single)', function()
         check_case('temporal_conv')
         check_case('temporal_conv_single')
         jac(nn.TemporalConvolution(2, 3, 3, 2), rand(2, 7, 2), 'temporal conv')
         jac(nn.TemporalConvolution(3, 2, 2), rand(5, 3), 'temporal conv single')
         check_case('temporal_conv_odd')
         jac(nn.TemporalConvolution(3, 2, 4, 3), rand(2, 11, 3), 'temporal conv k4 d3')
         jac(nn.TemporalConvolution(3, 2, 4, 3), rand(2, 12, 3), 'temporal conv k4 d3, flat')
         -- float32 (strided GEMMs in place) against float64, with accumulated gradients
         local m64 = nn.TemporalConvolution(6, 5, 3, 2)
         local x, dy = rand(3, 10, 6), rand(3, 4, 5)
         local y, gi = m64:forward(x):clone(), m64:backward(x, dy):clone()
         local m32 = m64:clone():float()
         m32:backward(x:float(), dy:float(), 0.5)
         util.assert_close(m32:forward(x:float()):double(), y, { atol = 1e-5, rtol = 1e-5 }, 'float32 output')
         util.assert_close(m32:backward(x:float(), dy:float(), 0):double(), gi, { atol = 1e-5, rtol = 1e-5 },
            'float32 gradInput')
         util.assert_close(m32.gradWeight:double(), m64.gradWeight:clone():mul(1.5), { atol = 1e-4, rtol = 1e-4 },
            'float32 gradWeight')
         util.assert_close(m32.gradBias:double(), m64.gradBias:clone():mul(1.5), { atol = 1e-4, rtol = 1e-4 },
            'float32 gradBias')
         local m = nn.TemporalConvolution(3, 2, 4)
         local ok, err = pcall(function() m:forward(rand(6, 2)) end)
         assert(not ok and err:find('nn.TemporalConvolution: input frames have 2 features, expected inputFrameSize 3',
            1, true), err)
         ok, err = pcall(function() m:forward(rand(3, 3)) end)
         assert(not ok and err:find('input has 3 frames, fewer than kW 4', 1, true), err)
      end)

      it('TemporalMaxPooling matches F.max_pool1d', function()
         check_case('temporal_max')
         check_case('temporal_max_single')
         jac(nn.TemporalMaxPooling(2, 1), rand(2, 6, 3), 'temporal max')
         jac(nn.TemporalMaxPooling(3), rand(7, 2), 'temporal max single')
      end)

      -- its row-against-row C path: ties (small integers) keep the first frame, the first NaN of
      -- a window wins; against a Lua loop, in float32, with 1 and 2 threads
      it('TemporalMaxPooling keeps the first of equal maxima and the first NaN (float32, 1 and 2 threads)', function()
         local x = torch.FloatTensor(3, 9, 37):random(1, 3)
         for _ = 1, 12 do x[math.random(3)][math.random(9)][math.random(37)] = 0 / 0 end
         local threads = torch.getnumthreads()
         for _, nt in ipairs { 1, 2 } do
            torch.setnumthreads(nt)
            local m = nn.TemporalMaxPooling(3, 2)
            local y = m:forward(x)
            assert.are.same({ 3, 4, 37 }, T.sizes(y))
            for n = 1, 3 do
               for t = 1, 4 do
                  for f = 1, 37 do
                     local best, bi
                     for k = 0, 2 do
                        local v = x[n][(t - 1) * 2 + 1 + k][f]
                        if not best or (best == best and (v > best or v ~= v)) then best, bi = v, k end
                     end
                     local got = y[n][t][f]
                     assert(got == best or (got ~= got and best ~= best),
                        ('y[%d][%d][%d] = %s, want %s'):format(n, t, f, tostring(got), tostring(best)))
                     -- the gradient of a unit gradOutput lands on the chosen frame
                     local g = torch.FloatTensor(3, 4, 37):zero()
                     if f == 1 then
                        g[n][t][f] = 1
                        local gi = m:updateGradInput(x, g)
                        assert.are.equal(1, gi[n][(t - 1) * 2 + 1 + bi][f])
                        assert.are.equal(1, gi:sum())
                     end
                  end
               end
            end
         end
         torch.setnumthreads(threads)
      end)

      -- the general window loop (branch-free selects, then a pass for NaN): ties keep the first
      -- cell in row order, the first NaN of a window wins, padding cells never win; against a Lua
      -- loop on small integers, float32 and float64, NCHW and a channels-last view
      it('SpatialMaxPooling keeps the first of equal maxima and the first NaN (3x3, stride 2, pad 1)', function()
         for _, tname in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
            local x = torch.Tensor():type(tname):resize(2, 3, 9, 8):random(1, 3):add(-2)
            for _ = 1, 10 do x[math.random(2)][math.random(3)][math.random(9)][math.random(8)] = 0 / 0 end
            for _, layout in ipairs { 'nchw', 'nhwc' } do
               local xin = x
               if layout == 'nhwc' then xin = x:permute(1, 3, 4, 2):contiguous():permute(1, 4, 2, 3) end
               local m = nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1)
               local y = m:forward(xin)
               assert.are.same({ 2, 3, 5, 4 }, T.sizes(y))
               for n = 1, 2 do
                  for c = 1, 3 do
                     for oy = 1, 5 do
                        for ox = 1, 4 do
                           local best, by, bx
                           for ky = 0, 2 do
                              for kx = 0, 2 do
                                 local iy, ix = (oy - 1) * 2 + ky, (ox - 1) * 2 + kx -- 1-based after the pad
                                 if iy >= 1 and iy <= 9 and ix >= 1 and ix <= 8 then
                                    local v = x[n][c][iy][ix]
                                    if not best or (best == best and (v > best or v ~= v)) then
                                       best, by, bx = v, iy, ix
                                    end
                                 end
                              end
                           end
                           local got = y[n][c][oy][ox]
                           assert(got == best or (got ~= got and best ~= best),
                              ('%s %s y[%d][%d][%d][%d] = %s, want %s'):format(tname, layout, n, c, oy, ox,
                                 tostring(got), tostring(best)))
                           -- the index names the chosen cell: a unit gradient lands there
                           if n == 1 and c == 2 then
                              local g = y:clone():zero()
                              g[n][c][oy][ox] = 1
                              local gi = m:updateGradInput(xin, g)
                              assert.are.equal(1, gi[n][c][by][bx], ('%s %s cell %d,%d'):format(tname, layout, oy, ox))
                              assert.are.equal(1, gi:sum())
                           end
                        end
                     end
                  end
               end
            end
         end
      end)
   end)

   describe('VolumetricBatchNormalization', function()
      it('matches F.batch_norm on 5-d inputs and has correct gradients', function()
         check_case('vbn')
         local m = nn.VolumetricBatchNormalization(2)
         m.weight:uniform(0.5, 1.5); m.bias:uniform(-1, 1)
         jac(m, rand(3, 2, 2, 3, 2), 'vbn')
         local ok, err = pcall(function() m:forward(rand(3, 2, 3, 2)) end)
         assert(not ok and err:find('expected a 5-d input (batch x channels x time x height x width)', 1, true), err)
      end)
   end)

   describe('normalization and pooling', function()
      it('SpatialCrossMapLRN matches F.local_response_norm and has correct gradients', function()
         check_case('lrn')
         check_case('lrn_single')
         jac(nn.SpatialCrossMapLRN(3, 0.5, 0.75, 1), rand(2, 5, 2, 3), 'lrn 3')
         jac(nn.SpatialCrossMapLRN(4, 0.7, 0.6, 2), rand(6, 2, 3), 'lrn even size')
         assert.are.equal('nn.SpatialCrossMapLRN(5, 0.0001, 0.75, 1)', tostring(nn.SpatialCrossMapLRN(5)))
      end)

      it('SpatialLPPooling matches F.lp_pool2d', function()
         check_case('lp2')
         check_case('lp3')
         jac(nn.SpatialLPPooling(2, 2, 2, 3, 1, 2), rand(2, 2, 5, 4), 'lp2')
         jac(nn.SpatialLPPooling(2, 3, 2, 2), rand(2, 4, 5), 'lp3', 0.2, 1)
         -- as read from a Torch7 file: no pnorm or nInputPlane, p in the first (Power) layer
         local t7 = nn.SpatialLPPooling(3, 3, 2, 2)
         local xt = (util.rand_tensor({ 3, 4, 5 }, 'torch.DoubleTensor', 0.1, 1))
         local want = t7:forward(xt):clone()
         t7.pnorm, t7.nInputPlane, t7.modules = nil, nil, { { pow = 3 } }
         util.assert_close(t7:forward(xt), want, dtol, 'Torch7 layout')
         local ok, err = pcall(function() nn.SpatialLPPooling(3, 2, 2, 2):forward(rand(2, 4, 4)) end)
         assert(not ok and err:find('nn.SpatialLPPooling: expected a 3-d or 4-d input with 3 planes, got size 2x4x4',
            1, true), err)
      end)

      it('SpatialLPPooling in one C pass: p = 1, 2, 3, 2.5 against float64 loops, float32, non-contiguous', function()
         local function ref(x, go, p, kW, kH, dW, dH)
            local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
            local oH, oW = math.floor((H - kH) / dH) + 1, math.floor((W - kW) / dW) + 1
            local y, gi = torch.zeros(N, C, oH, oW), torch.zeros(N, C, H, W)
            for n = 1, N do for c = 1, C do
               local xp, gp, gip = x[n][c], go[n][c], gi[n][c]
               local yp = y[n][c]
               for oh = 1, oH do for ow = 1, oW do
                  local s = 0
                  for kh = 0, kH - 1 do for kw = 0, kW - 1 do
                     s = s + xp[(oh - 1) * dH + kh + 1][(ow - 1) * dW + kw + 1] ^ p
                  end end
                  yp[oh][ow] = s ^ (1 / p)
                  local f = gp[oh][ow] * s ^ (1 / p - 1)
                  for kh = 0, kH - 1 do for kw = 0, kW - 1 do
                     local h, w = (oh - 1) * dH + kh + 1, (ow - 1) * dW + kw + 1
                     gip[h][w] = gip[h][w] + f * xp[h][w] ^ (p - 1)
                  end end
               end end
            end end
            return y, gi
         end
         for _, c in ipairs { { 1, 3, 2, 2, 1 }, { 2, 2, 3, 1, 2 }, { 3, 2, 2, 2, 2 }, { 2.5, 3, 3, 2, 2 } } do
            local p, kW, kH, dW, dH = unpack(c)
            local x = torch.Tensor(2, 3, 7, 9):uniform(0.1, 2):transpose(3, 4)   -- 2x3x9x7, non-contiguous
            local y0 = ref(x:contiguous(), torch.zeros(2, 3, 9, 7), p, kW, kH, dW, dH)
            local go = torch.randn(y0:size())
            local y, gi = ref(x:contiguous(), go, p, kW, kH, dW, dH)
            for _, tp in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
               local tol = tp == 'torch.DoubleTensor' and { atol = 1e-12, rtol = 1e-11 } or { atol = 2e-5, rtol = 2e-5 }
               local m = nn.SpatialLPPooling(3, p, kW, kH, dW, dH):type(tp)
               local what = ('LP p=%g k%dx%d s%dx%d %s'):format(p, kW, kH, dW, dH, tp)
               util.assert_close(m:forward(x:type(tp)), y, tol, what)
               -- a replicated corner sums up to (l+1)(b+1) = 60 float32 gradients here: allow
               -- float32's accumulated rounding (about sqrt(60) * 6e-8 * |terms|, a few 1e-6)
               local btol = tp == 'torch.DoubleTensor' and tol or { atol = 3e-5, rtol = 1e-6 }
               util.assert_close(m:backward(x:type(tp), go:type(tp)), gi, btol, what .. ' backward')
            end
         end
         jac(nn.SpatialLPPooling(2, 1, 2, 3, 1, 2), rand(2, 2, 5, 4), 'lp1')
         jac(nn.SpatialLPPooling(2, 2.5, 2, 2, 1, 1), rand(2, 4, 5), 'lp2.5', 0.2, 1)
         local ok, err = pcall(function() nn.SpatialLPPooling(2, 2, 4, 4):forward(rand(2, 3, 5)) end)
         assert(not ok and err:find('nn.SpatialLPPooling: input image 3x5 is smaller than the kernel 4x4', 1, true),
            err)
      end)

      it('SpatialMaxUnpooling matches F.max_unpool2d and has correct gradients', function()
         check_case('unpool')
         local pool = nn.SpatialMaxPooling(2, 3)
         local unpool = nn.SpatialMaxUnpooling(pool)
         local y = pool:forward(rand(3, 7, 5))
         jac(unpool, y, 'unpool')
         assert.has_error(function() nn.SpatialMaxUnpooling(nn.SpatialMaxPooling(3, 3, 2, 2)) end,
            'nn.SpatialMaxUnpooling: the pooling kernel 3x3 must equal its stride 2,2')
         local ok, err = pcall(function() unpool:forward(rand(3, 2, 3)) end)
         assert(not ok and err:find('input has size 3x2x3 but the pooling produced 3x2x2', 1, true), err)
      end)
   end)

   describe('SpatialConvolutionLocal', function()
      it('matches unfolded patches times per-position weights (Torch7 layout)', function()
         check_case('local')
         local m = nn.SpatialConvolutionLocal(2, 2, 4, 5, 2, 3, 1, 2, 0, 1)
         assert.are.same({ m.oH, m.oW, 2, 2, 3, 2 }, T.sizes(m.weight))
         jac(m, rand(2, 2, 5, 4), 'local')
         jac(nn.SpatialConvolutionLocal(1, 2, 3, 3, 2, 2), rand(1, 3, 3), 'local single')
         -- accGradParameters reuses updateGradInput's permuted gradOutput only for that same
         -- tensor: another gradOutput, or a call without updateGradInput, gives fresh gradients
         local x, g1, g2 = rand(2, 2, 5, 4), rand(2, 2, m.oH, m.oW), rand(2, 2, m.oH, m.oW)
         local fresh = m:clone()
         m:zeroGradParameters(); fresh:zeroGradParameters()
         m:forward(x); fresh:forward(x)
         m:updateGradInput(x, g1)
         m:accGradParameters(x, g2)
         fresh:accGradParameters(x, g2)
         assert.are.equal(0, (m.gradWeight - fresh.gradWeight):abs():max())
         m:accGradParameters(x, g2) -- no updateGradInput before it: nothing cached is taken
         fresh:accGradParameters(x, g2)
         assert.are.equal(0, (m.gradWeight - fresh.gradWeight):abs():max())
         assert.are.equal(0, (m.gradBias - fresh.gradBias):abs():max())
         local ok, err = pcall(function() m:forward(rand(2, 5, 5)) end)
         assert(not ok and err:find('nn.SpatialConvolutionLocal: expected an input of size 2x5x4 ' ..
            '(or a batch of them), got 2x5x5', 1, true), err)
      end)
   end)

   describe('SpatialSubtractiveNormalization', function()
      it('subtracts the border-corrected local mean (2-d and separable 1-d kernels)', function()
         check_case('subnorm')
         check_case('subnorm1d')
         local k = (util.rand_tensor({ 3, 3 }, 'torch.DoubleTensor', 0.1, 1))
         jac(nn.SpatialSubtractiveNormalization(2, k), rand(2, 2, 4, 5), 'subnorm')
         jac(nn.SpatialSubtractiveNormalization(1), rand(1, 4, 3), 'subnorm default kernel')
         assert.has_error(function() nn.SpatialSubtractiveNormalization(2, torch.ones(4, 3)) end,
            'nn.SpatialSubtractiveNormalization: the averaging kernel must have odd sizes, got 4x3')
      end)
   end)

   describe('SpatialFractionalMaxPooling', function()
      it("matches F.fractional_max_pool2d given the module's random samples (size and ratio forms)", function()
         check_case('fractional')
         check_case('fractional_ratio')
         local m = nn.SpatialFractionalMaxPooling(2, 2, 3, 2):fixPoolingRegions()
         jac(m, rand(2, 2, 5, 4), 'fractional')
         -- fixed regions keep the samples; by default every forward pass draws new ones
         local x = rand(2, 3, 6, 7)
         local s = m:forward(x) and m.randomSamples:clone()
         m:forward(x)
         assert.are.equal(0, (m.randomSamples - s):abs():max())
         m:fixPoolingRegions(false)
         m:forward(x)
         assert(m.randomSamples:ne(s):sum() > 0)
         local ok, err = pcall(function() nn.SpatialFractionalMaxPooling(3, 3, 4, 4):forward(rand(1, 5, 9)) end)
         assert(not ok and err:find(
            'nn.SpatialFractionalMaxPooling: input 5x9 cannot give a 4x4 output with 3x3 windows', 1, true), err)
      end)
   end)

   it('every module runs in float32 after :float() and survives serialization', function()
      local pool = nn.SpatialMaxPooling(2, 2)
      local list = {
         { nn.SpatialFullConvolution(3, 2, 3, 3, 2, 2, 1, 1, 1, 1), { 2, 3, 4, 5 } },
         { nn.SpatialZeroPadding(1, -1, 2, 0), { 2, 3, 4, 5 } },
         { nn.SpatialReflectionPadding(1, 2, 3, 1), { 2, 3, 4, 5 } },
         { nn.SpatialReplicationPadding(1, 2, 3, 1), { 3, 4, 5 } },
         { nn.SpatialUpSamplingNearest(2), { 2, 3, 4, 5 } },
         { nn.SpatialUpSamplingBilinear(2), { 2, 3, 4, 5 } },
         { nn.SpatialAdaptiveMaxPooling(2, 3), { 2, 3, 4, 5 } },
         { nn.TemporalConvolution(5, 2, 3), { 2, 4, 5 } },
         { nn.TemporalMaxPooling(2), { 2, 4, 5 } },
         { nn.VolumetricBatchNormalization(3), { 2, 3, 2, 4, 5 } },
         { nn.SpatialCrossMapLRN(3), { 2, 3, 4, 5 } },
         { nn.SpatialLPPooling(3, 2, 2, 2), { 2, 3, 4, 5 } },
         { nn.SpatialConvolutionLocal(3, 2, 5, 4, 3, 3), { 2, 3, 4, 5 } },
         { nn.SpatialSubtractiveNormalization(3, torch.ones(3, 3)), { 2, 3, 4, 5 } },
         { nn.SpatialFractionalMaxPooling(2, 2, 3, 3), { 2, 3, 4, 5 } },
      }
      for _, e in ipairs(list) do
         local m, x = e[1], rand((table.unpack or unpack)(e[2]))
         if torch.type(m) == 'nn.SpatialFractionalMaxPooling' then m:forward(x); m:fixPoolingRegions() end
         -- testIO refills x with random values
         local fo, bo = nn.Jacobian.testIO(m, x)
         assert(fo < 1e-12 and bo < 1e-12, torch.type(m) .. ': differs after a MemoryFile round trip')
         local y64 = m:forward(x):clone()
         m:float()
         local y = m:forward(x:float())
         assert.are.equal('torch.FloatTensor', y:type(), torch.type(m))
         util.assert_close(y, y64,
            { atol = 1e-5, rtol = 1e-4 }, torch.type(m))
         local g = m:backward(x:float(), y:clone():uniform())
         assert.are.equal('torch.FloatTensor', g:type(), torch.type(m))
         assert.are.same(T.sizes(x), T.sizes(g), torch.type(m))
      end
      local u = nn.SpatialMaxUnpooling(pool:float()):float()
      assert.are.equal('torch.FloatTensor', u:forward(pool:forward(rand(2, 3, 5, 4):float())):type())
   end)
end)
