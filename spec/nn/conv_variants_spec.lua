-- conv_variants_spec.lua: depth-wise convolution, dilated max pooling, sub-sampling, row
-- convolution, connection-table convolution and weight normalization. Forward passes against
-- PyTorch 1.13 through /usr/bin/python3 (one process for the whole file; Torch7's layouts mapped to
-- PyTorch's) or float64 Lua loops, gradients with nn.Jacobian, on fresh random inputs of small
-- odd sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local TOL, dtol, rand, py, jac = peer.TOL, peer.dtol, peer.rand, peer.py, peer.jac
local case, check_case = peer.cases()

local function errs(fn, ...) return util.assert_error(fn, ...) end

describe('nn misc convolution', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   setup(function()
      torch.setdefaulttensortype('torch.DoubleTensor')
      -- depth-wise: weight nOut x (nIn*kH*kW) is nOut x nIn x kH x kW; output plane (i-1)*nOut + o
      local dw = nn.SpatialDepthWiseConvolution(3, 2, 3, 2, 2, 1, 1, 0)
      local x = rand(2, 3, 5, 6)
      local wexpr = ('%s.reshape(2,3,2,3).transpose(0,1).reshape(6,1,2,3)'):format(py(dw.weight))
      case('dw_batch', dw:forward(x), ('F.conv2d(%s, %s, %s.t().reshape(-1), stride=(1,2), padding=(0,1), ' ..
         'groups=3)'):format(py(x), wexpr, py(dw.bias)))
      case('dw_single', dw:forward(x[2]), ('F.conv2d(%s[1:2], %s, %s.t().reshape(-1), stride=(1,2), ' ..
         'padding=(0,1), groups=3)[0]'):format(py(x), wexpr, py(dw.bias)))
      -- dilated max pooling: Torch7 (kW, kH, dW, dH, padW, padH, dilW, dilH), PyTorch (H, W)
      local xm = rand(2, 3, 9, 8)
      local mp = nn.SpatialDilatedMaxPooling(3, 2, 2, 1, 1, 1, 2, 3)
      case('dmax', mp:forward(xm), ('F.max_pool2d(%s, (2,3), (1,2), (1,1), (3,2))'):format(py(xm)))
      case('dmax_idx', mp.indices:double(), ('F.max_pool2d(%s, (2,3), (1,2), (1,1), (3,2), return_indices=True)[1]')
         :format(py(xm)))
      local mc = nn.SpatialDilatedMaxPooling(3, 3, 2, 2, 1, 1, 2, 2):ceil()
      local xc = rand(3, 8, 10)
      case('dmax_ceil', mc:forward(xc), ('F.max_pool2d(%s.unsqueeze(0), 3, 2, 1, 2, ceil_mode=True)[0]')
         :format(py(xc)))
      -- sub-sampling: the window sum times the plane's weight, plus its bias
      local ss = nn.SpatialSubSampling(3, 3, 2, 2, 1)
      local xs = rand(2, 3, 5, 7)
      case('subsample', ss:forward(xs), ('F.avg_pool2d(%s, (2,3), (1,2)) * 6 * %s.view(1,3,1,1) + %s.view(1,3,1,1)')
         :format(py(xs), py(ss.weight), py(ss.bias)))
      local ts = nn.TemporalSubSampling(4, 3, 2)
      local xt = rand(9, 4)
      case('tsubsample', ts:forward(xt), ('(F.avg_pool1d(%s.t().unsqueeze(0), 3, 2)[0] * 3 * %s.view(4,1) + ' ..
         '%s.view(4,1)).t()'):format(py(xt), py(ts.weight), py(ts.bias)))
      -- row convolution: a depth-wise conv1d over time
      local rc = nn.TemporalRowConvolution(4, 3, 2)
      local xr = rand(2, 9, 4)
      case('rowconv', rc:forward(xr), ('F.conv1d(%s.transpose(1,2), %s, %s, stride=2, groups=4).transpose(1,2)')
         :format(py(xr), py(rc.weight), py(rc.bias)))
      local rf = nn.TemporalRowConvolution(3, 2, 1, true)
      local xf = rand(3, 6)
      case('rowconv_ff', rf:forward(xf), ('F.conv1d(%s.unsqueeze(0), %s, %s, groups=3)[0]'):format(py(xf),
         py(rf.weight), py(rf.bias)))
      -- connection tables: the dense kernel built here by a plain loop
      local function dense(m)
         local w = torch.Tensor(m.nOutputPlane, m.nInputPlane, m.kH, m.kW):zero()
         for k = 1, m.connTable:size(1) do
            w[m.connTable[k][2]][m.connTable[k][1]]:add(m.weight[k])
         end
         return w
      end
      -- (nInputPlane is the largest input plane in the table, as in Torch7: a random table may not
      -- reach nin)
      local cm = nn.SpatialConvolutionMap(nn.tables.random(4, 3, 2), 3, 2, 1, 2)
      local xcm = rand(2, cm.nInputPlane, 7, 6)
      case('convmap', cm:forward(xcm), ('F.conv2d(%s, %s, %s, stride=(2,1))'):format(py(xcm), py(dense(cm)),
         py(cm.bias)))
      local ct = torch.Tensor { { 1, 2 }, { 3, 1 }, { 2, 2 }, { 1, 2 } }   -- a repeated pair adds up
      local cm2 = nn.SpatialConvolutionMap(ct, 2, 2)
      local xcm2 = rand(3, 4, 5)
      case('convmap_single', cm2:forward(xcm2), ('F.conv2d(%s.unsqueeze(0), %s, %s)[0]'):format(py(xcm2),
         py(dense(cm2)), py(cm2.bias)))
      -- UpSampling: with a scale both modes give size*scale (Torch7's code), linear aligns corners
      local xu = rand(2, 3, 3, 4)
      case('up_nearest', nn.UpSampling(3):forward(xu), ('F.interpolate(%s, scale_factor=3, mode="nearest")')
         :format(py(xu)))
      case('up_linear', nn.UpSampling(2, 'linear'):forward(xu), ('F.interpolate(%s, size=(6,8), mode="bilinear", ' ..
         'align_corners=True)'):format(py(xu)))
      local xu5 = rand(1, 2, 3, 2, 4)
      case('up_nearest5', nn.UpSampling(2):forward(xu5), ('F.interpolate(%s, scale_factor=2, mode="nearest")')
         :format(py(xu5)))
      case('up_trilinear', nn.UpSampling({ odepth = 5, oheight = 1, owidth = 7 }, 'trilinear'):forward(xu5),
         ('F.interpolate(%s, size=(5,1,7), mode="trilinear", align_corners=True)'):format(py(xu5)))
      -- weight normalisation: w = g * v / sqrt(||v||^2 + 1e-4) per output unit
      local wl = nn.WeightNorm(nn.Linear(5, 3))
      wl.bias:uniform(-1, 1)
      local xw = rand(4, 5)
      case('wn_linear', wl:forward(xw), ('F.linear(%s, %s.view(-1,1) * %s / ((%s**2).sum(1, keepdim=True) + 1e-4)' ..
         '.sqrt(), %s)'):format(py(xw), py(wl.g), py(wl.v), py(wl.v), py(wl.bias)))
      -- SpatialFullConvolution's weight is nIn x nOut x kH x kW: its output dimension is 2
      local wf = nn.WeightNorm(nn.SpatialFullConvolution(2, 3, 3, 2), 2)
      local xwf = rand(2, 2, 3, 4)
      case('wn_full', wf:forward(xwf), ('F.conv_transpose2d(%s, (%s.view(-1,1) * %s / ((%s**2).sum(1, ' ..
         'keepdim=True) + 1e-4).sqrt()).reshape(3,2,2,3).transpose(0,1), %s)'):format(py(xwf), py(wf.g), py(wf.v),
         py(wf.v), py(wf.bias)))
      local lw = nn.LinearWeightNorm(4, 3)
      lw.g:uniform(0.5, 2)
      local xlw = rand(2, 4)
      case('lwn', lw:forward(xlw), ('F.linear(%s, torch._weight_norm(%s, %s, 0), %s)'):format(py(xlw), py(lw.v),
         py(lw.g), py(lw.bias)))
      -- PartialLinear: a Linear layer restricted to some outputs
      local pl = nn.PartialLinear(5, 6)
      pl.bias:uniform(-1, 1)
      local xpl = rand(3, 5)
      local part = torch.Tensor { 4, 1, 6 }
      case('partial_all', pl:forward(xpl), ('F.linear(%s, %s, %s[0])'):format(py(xpl), py(pl:parameters()[1]),
         py(pl.bias)))
      pl:setPartition(part)
      case('partial', pl:forward(xpl), ('F.linear(%s, %s[[3,0,5]], %s[0][[3,0,5]])'):format(py(xpl),
         py(pl:parameters()[1]), py(pl.bias)))
      torch.setdefaulttensortype('torch.FloatTensor')
   end)

   describe('SpatialDepthWiseConvolution', function()
      it('matches a grouped conv2d with the Torch7 weight layout (batch and single)', function()
         check_case('dw_batch')
         check_case('dw_single')
      end)

      it('has correct input, weight and bias gradients', function()
         jac(nn.SpatialDepthWiseConvolution(2, 3, 2, 3, 1, 2, 1, 1), rand(2, 2, 5, 4), 'padded')
         jac(nn.SpatialDepthWiseConvolution(3, 2, 3, 3), rand(3, 4, 5), 'single')
         local m = nn.SpatialDepthWiseConvolution(2, 2, 2, 2):noBias()
         assert.is_nil(m.bias)
         jac(m, rand(1, 2, 3, 3), 'noBias')
      end)

      it('takes a 4-d weight (as Torch7 leaves it after a pass) and rejects bad input', function()
         local m = nn.SpatialDepthWiseConvolution(2, 3, 3, 3)
         local x = rand(2, 5, 5)
         local y = m:forward(x):clone()
         m.weight = m.weight:view(3, 2, 3, 3)
         util.assert_close(m:forward(x), util.flat(y), dtol, '4-d weight')
         errs(function() m:forward(rand(3, 5, 5)) end, 'nn.SpatialDepthWiseConvolution: input has 3 planes, ' ..
            'expected nInputPlane 2')
         errs(function() m:forward(rand(5, 5)) end, 'expected a 3-d or 4-d input')
         assert.are.equal('nn.SpatialDepthWiseConvolution(2 -> 3, 3x3)', tostring(m))
      end)
   end)

   describe('SpatialDilatedMaxPooling', function()
      it('matches max_pool2d with dilation (values and indices, floor and ceil)', function()
         check_case('dmax')
         check_case('dmax_idx')
         check_case('dmax_ceil')
      end)

      it('routes gradients to the maxima', function()
         -- distinct values keep the finite differences away from ties
         jac(nn.SpatialDilatedMaxPooling(2, 3, 1, 2, 1, 1, 3, 2), rand(2, 2, 9, 7), 'padded')
         jac(nn.SpatialDilatedMaxPooling(3, 3, 2, 2, 1, 1, 2, 2):ceil(), rand(2, 8, 10), 'ceil')
      end)

      it('gives the first maximum of a tie the gradient, and rejects bad arguments', function()
         local m = nn.SpatialDilatedMaxPooling(2, 2, 1, 1, 0, 0, 2, 2)
         local x = torch.Tensor(1, 3, 3):fill(0.5)
         m:forward(x)
         local g = m:backward(x, torch.Tensor(1, 1, 1):fill(2))
         util.assert_close(g, { 2, 0, 0, 0, 0, 0, 0, 0, 0 }, dtol, 'tie')
         errs(function() m:forward(rand(1, 2, 2)) end, 'nn.SpatialDilatedMaxPooling: input height 2 is too small')
         errs(function() nn.SpatialDilatedMaxPooling(2, 2, 1, 1, 0, 0, 0) end, 'dilationW must be a positive integer')
         errs(function() nn.SpatialDilatedMaxPooling(2, 2, 1, 1, 2, 0):forward(rand(1, 5, 5)) end,
            'padding 2,0 must be at most half the kernel 2x2')
         assert.are.equal('nn.SpatialDilatedMaxPooling(3x2, 2,1, 1,1, 2,3)',
            tostring(nn.SpatialDilatedMaxPooling(3, 2, 2, 1, 1, 1, 2, 3)))
      end)
   end)

   describe('SpatialSubSampling and TemporalSubSampling', function()
      it('match the window sums times a per-plane weight plus bias', function()
         check_case('subsample')
         check_case('tsubsample')
      end)

      it('have correct input, weight and bias gradients', function()
         jac(nn.SpatialSubSampling(2, 2, 3, 2, 1), rand(2, 2, 5, 6), 'spatial batch')
         jac(nn.SpatialSubSampling(3, 3, 3, 2, 2), rand(3, 7, 5), 'spatial single')
         jac(nn.TemporalSubSampling(3, 2, 3), rand(8, 3), 'temporal')
         jac(nn.TemporalSubSampling(2, 3), rand(2, 5, 2), 'temporal batch')
      end)

      it('reject bad input clearly', function()
         errs(function() nn.SpatialSubSampling(2, 3, 3):forward(rand(3, 5, 5)) end,
            'nn.SpatialSubSampling: input has 3 planes, expected nInputPlane 2')
         errs(function() nn.SpatialSubSampling(2, 3, 3):forward(rand(2, 2, 5)) end, 'smaller than the kernel')
         errs(function() nn.TemporalSubSampling(4, 3):forward(rand(5, 3)) end,
            'nn.TemporalSubSampling: input frames have 3 features, expected inputFrameSize 4')
         errs(function() nn.TemporalSubSampling(4, 3):forward(rand(2, 4)) end, 'fewer than kW 3')
      end)
   end)

   describe('TemporalRowConvolution', function()
      it('matches a depth-wise conv1d (frames first and features first)', function()
         check_case('rowconv')
         check_case('rowconv_ff')
      end)

      it('has correct input, weight and bias gradients', function()
         jac(nn.TemporalRowConvolution(3, 2, 2), rand(2, 7, 3), 'batch')
         jac(nn.TemporalRowConvolution(4, 3, 1, true), rand(4, 6), 'featFirst')
         local m = nn.TemporalRowConvolution(2, 3):noBias()
         jac(m, rand(5, 2), 'noBias')
         assert.are.equal('nn.TemporalRowConvolution(2, 3) without bias', tostring(m))
         errs(function() m:forward(rand(5, 3)) end, 'nn.TemporalRowConvolution: input has 3 features')
      end)
   end)

   describe('SpatialConvolutionMap', function()
      it('matches conv2d with the dense kernel of its connection table', function()
         check_case('convmap')
         check_case('convmap_single')
      end)

      it('has correct input, weight and bias gradients', function()
         local mr = nn.SpatialConvolutionMap(nn.tables.random(3, 4, 2), 2, 3, 2, 1)
         jac(mr, rand(2, mr.nInputPlane, 5, 6), 'random')
         jac(nn.SpatialConvolutionMap(torch.Tensor { { 2, 1 }, { 1, 2 }, { 2, 1 } }, 3, 2), rand(2, 4, 5), 'repeated')
         jac(nn.SpatialConvolutionMap(nn.tables.oneToOne(3), 2, 2), rand(3, 4, 3), 'oneToOne')
      end)

      it('builds connection tables as Torch7 does', function()
         assert.are.same({ { 1, 1 }, { 2, 1 }, { 1, 2 }, { 2, 2 }, { 1, 3 }, { 2, 3 } }, nn.tables.full(2, 3):totable())
         assert.are.same({ { 1, 1 }, { 2, 2 }, { 3, 3 } }, nn.tables.oneToOne(3):totable())
         local t = nn.tables.random(5, 4, 3)
         assert.are.same({ 12, 2 }, T.sizes(t))
         for o = 1, 4 do
            local seen = {}
            for k = 1, 3 do
               local r = t[(o - 1) * 3 + k]
               assert.are.equal(o, r[2])
               assert(r[1] >= 1 and r[1] <= 5 and not seen[r[1]], 'inputs of an output plane are distinct')
               seen[r[1]] = true
            end
         end
         local m = nn.SpatialConvolutionMap(nn.tables.full(2, 3), 3, 3)
         assert.are.equal(2, m.nInputPlane)
         assert.are.equal(3, m.nOutputPlane)
         assert.are.same({ 6, 3, 3 }, T.sizes(m.weight))
         errs(function() m:forward(rand(3, 5, 5)) end, 'nn.SpatialConvolutionMap: input has 3 planes, expected ' ..
            'nInputPlane 2')
         errs(function() nn.SpatialConvolutionMap(torch.Tensor(3, 3), 2, 2) end, 'connTable must be a K x 2 tensor')
      end)
   end)

   describe('UpSampling', function()
      it('matches interpolate (nearest, bilinear and trilinear with aligned corners)', function()
         check_case('up_nearest')
         check_case('up_linear')
         check_case('up_nearest5')
         check_case('up_trilinear')
      end)

      it('has correct input gradients', function()
         jac(nn.UpSampling(2), rand(2, 2, 3, 3), 'nearest')
         jac(nn.UpSampling(3, 'linear'), rand(1, 2, 3, 2), 'bilinear')
         jac(nn.UpSampling({ oheight = 5, owidth = 2 }, 'bilinear'), rand(2, 1, 3, 4), 'bilinear size')
         jac(nn.UpSampling({ odepth = 3, oheight = 4, owidth = 3 }, 'linear'), rand(1, 2, 2, 3, 2), 'trilinear')
         jac(nn.UpSampling(2), rand(1, 1, 2, 3, 2), 'nearest 5-d')
      end)

      it('rejects bad arguments and inputs clearly', function()
         errs(function() nn.UpSampling({ oheight = 3, owidth = 3 }) end, 'nn.UpSampling: nearest neighbour ' ..
            'up-sampling requires a scale_factor')
         errs(function() nn.UpSampling(1.5) end, 'nn.UpSampling: scale_factor must be a positive integer, got 1.5')
         errs(function() nn.UpSampling(2):forward(rand(3, 4, 4)) end, 'expected a 4-d or 5-d input')
         errs(function() nn.UpSampling({ oheight = 3, owidth = 3 }, 'linear'):forward(rand(1, 1, 2, 2, 2)) end,
            'needs an output depth')
         assert.are.equal('nn.UpSampling(2x, linear)', tostring(nn.UpSampling(2, 'linear')))
         assert.are.equal('nn.UpSampling(4x5, linear)', tostring(nn.UpSampling({ oheight = 4, owidth = 5 }, 'linear')))
      end)
   end)

   describe('WeightNorm and LinearWeightNorm', function()
      -- v, g and bias are the parameters; the weight follows from them
      local function jacwn(m, x, what)
         local e = nn.Jacobian.testJacobian(m, x)
         assert(e < TOL, ('%s: input jacobian error %g'):format(what, e))
         for _, p in ipairs { { m.v, m.gradV, 'v' }, { m.g, m.gradG, 'g' }, { m.bias, m.gradBias, 'bias' } } do
            if p[1] then
               e = nn.Jacobian.testJacobianParameters(m, x, p[1], p[2])
               assert(e < TOL, ('%s: %s jacobian error %g'):format(what, p[3], e))
            end
         end
      end

      it('match w = g * v / ||v|| (Linear, a transposed convolution with outputDim 2, weight_norm)', function()
         check_case('wn_linear')
         check_case('wn_full')
         check_case('lwn')
      end)

      it('have correct input, v, g and bias gradients', function()
         local m = nn.WeightNorm(nn.Linear(4, 3))
         m.bias:uniform(-1, 1)
         jacwn(m, rand(3, 4), 'Linear')
         jacwn(nn.WeightNorm(nn.SpatialConvolution(2, 3, 2, 2)), rand(2, 2, 3, 4), 'conv')
         jacwn(nn.WeightNorm(nn.SpatialFullConvolution(3, 2, 2, 3), 2), rand(1, 3, 2, 3), 'outputDim 2')
         jacwn(nn.LinearWeightNorm(5, 3), rand(2, 5), 'LinearWeightNorm')
         jacwn(nn.LinearWeightNorm(3, 4, false), rand(3), 'LinearWeightNorm 1-d')
      end)

      it('accumulate gradients over calls and step v and g directly', function()
         for _, mk in ipairs { function() return nn.WeightNorm(nn.Linear(4, 3)) end,
            function() return nn.LinearWeightNorm(4, 3) end } do
            local m = mk()
            local x, gy = rand(2, 4), rand(2, 3)
            m:zeroGradParameters()
            m:forward(x); m:backward(x, gy)
            local gv, gg = m.gradV:clone(), m.gradG:clone()
            m:forward(x); m:backward(x, gy, 0.5)
            util.assert_close(m.gradV, util.flat(gv:mul(1.5)), dtol, 'gradV accumulates')
            util.assert_close(m.gradG, util.flat(gg:mul(1.5)), dtol, 'gradG accumulates')
            local ref = m:clone()
            ref:zeroGradParameters(); ref:forward(x); ref:backward(x, gy); ref:updateParameters(0.1)
            m:forward(x); m:accUpdateGradParameters(x, gy, 0.1)
            util.assert_close(m.v, util.flat(ref.v), dtol, 'accUpdate v')
            util.assert_close(m.g, util.flat(ref.g), dtol, 'accUpdate g')
            util.assert_close(m.bias, util.flat(ref.bias), dtol, 'accUpdate bias')
         end
      end)

      it('convert to and from Linear, and describe themselves', function()
         local lin = nn.Linear(4, 3)
         local m = nn.LinearWeightNorm.fromLinear(lin)
         local x = rand(2, 4)
         util.assert_close(m:forward(x), util.flat(lin:forward(x)), dtol, 'fromLinear')
         util.assert_close(m:toLinear():forward(x), util.flat(lin:forward(x)), dtol, 'toLinear')
         assert.are.equal('nn.LinearWeightNorm(4 -> 3)', tostring(m))
         assert.are.equal('nn.WeightNorm @ nn.Linear(4 -> 3)', tostring(nn.WeightNorm(nn.Linear(4, 3))))
         local w = nn.WeightNorm(nn.Linear(4, 3)):parameters()
         assert.are.equal(3, #w)
         assert.are.same({ 3, 4 }, T.sizes(w[1]))
         -- Torch7 writes WeightNorm without weight and gradWeight; loading rebuilds them
         local wn = nn.WeightNorm(nn.SpatialConvolution(2, 3, 2, 2))
         wn.bias:uniform(-1, 1)
         local xc = rand(2, 4, 3)
         local y = wn:forward(xc):clone()
         wn.weight, wn.gradWeight, wn.modules[1].weight, wn.modules[1].gradWeight = nil, nil, nil, nil
         local back = torch.deserialize(torch.serialize(wn))
         assert(torch.isTensor(back.weight) and back.weight:isSetTo(back.modules[1].weight))
         back.train = false   -- so forward does not recompute the weight itself
         util.assert_close(back:forward(xc), util.flat(y), dtol, 'loaded without weight')
         errs(function() nn.WeightNorm(nn.Tanh()) end, 'nn.WeightNorm: expected a module with a weight to wrap')
         errs(function() nn.WeightNorm(nn.Linear(2, 2), 3) end, 'outputDim 3 is not a dimension of the 2-d weight')
      end)
   end)

   describe('PartialLinear', function()
      it('matches Linear on its partition of the outputs', function()
         check_case('partial_all')
         check_case('partial')
      end)

      it('has correct input, weight and bias gradients, only in the partition', function()
         local m = nn.PartialLinear(4, 5)
         m.bias:uniform(-1, 1)
         jac(m, rand(3, 4), 'all')
         m:setPartition(torch.LongTensor { 5, 2 })
         local w, gw = m:parameters()
         assert(nn.Jacobian.testJacobian(m, rand(2, 4)) < TOL)
         assert(nn.Jacobian.testJacobianParameters(m, rand(2, 4), w[1], gw[1]) < TOL)
         assert(nn.Jacobian.testJacobianParameters(m, rand(2, 4), w[2], gw[2]) < TOL)
         m:zeroGradParameters()
         local x = rand(2, 4)
         m:forward(x); m:backward(x, rand(2, 2))
         for _, r in ipairs { 1, 3, 4 } do
            assert.are.equal(0, gw[1][r]:abs():max())
            assert.are.equal(0, gw[2][1][r])
         end
         assert(gw[1][5]:abs():max() > 0 and gw[2][1][2] ~= 0)
         m:resetPartition()
         assert.are.same({ 2, 5 }, T.sizes(m:forward(x)))
      end)

      it('rejects bad input and partitions clearly', function()
         local m = nn.PartialLinear(4, 3, false)
         assert.is_nil(m.bias)
         assert.are.equal('nn.PartialLinear(4 -> 3) without bias', tostring(m))
         errs(function() m:forward(rand(2, 5)) end, 'nn.PartialLinear: expected an N x 4 input, got size 2x5')
         errs(function() m:setPartition(torch.Tensor { 1, 4 }) end, 'partition indices must lie in 1..3')
         m:setPartition(torch.Tensor { 3, 1 })
         local x = rand(2, 4)
         m:forward(x)
         errs(function() m:backward(x, rand(2, 3)) end, 'nn.PartialLinear: gradOutput has size 2x3, expected 2 x 2')
      end)
   end)
end)
