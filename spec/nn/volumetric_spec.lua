-- volumetric_spec.lua: the volumetric group (3-d convolution, pooling, unpooling, padding).
-- Forward passes against PyTorch 1.13's torch.nn.functional through /usr/bin/python3 (one process
-- for the whole file, Torch7's (T, W, H) argument orders mapped to PyTorch's (T, H, W)),
-- gradients with nn.Jacobian, all in float64 on fresh random inputs of small odd sizes.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local dtol, rand, py, jac = peer.dtol, peer.rand, peer.py, peer.jac
local case, check_case = peer.cases()

describe('nn volumetric group', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   -- every forward case is computed before the first comparison so that Python runs once
   setup(function()
      torch.setdefaulttensortype('torch.DoubleTensor')
      -- Torch7 (kT, kW, kH, dT, dW, dH, padT, padW, padH) -> PyTorch (kT, kH, kW) ...
      local c = nn.VolumetricConvolution(3, 2, 3, 2, 3, 2, 1, 2, 1, 0, 2)
      local x = rand(2, 3, 6, 5, 4)
      case('conv_batch', c:forward(x), ('F.conv3d(%s, %s, %s, stride=(2,2,1), padding=(1,2,0))'):format(py(x),
         py(c.weight), py(c.bias)))
      local x4 = rand(3, 5, 4, 6)
      case('conv_single', c:forward(x4), ('F.conv3d(%s.unsqueeze(0), %s, %s, stride=(2,2,1), padding=(1,2,0))[0]')
         :format(py(x4), py(c.weight), py(c.bias)))
      local dc = nn.VolumetricDilatedConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1, 1, 0, 2, 1, 2)
      local xd = rand(2, 2, 7, 5, 6)
      case('dilated_conv', dc:forward(xd), ('F.conv3d(%s, %s, %s, stride=(1,1,2), padding=(1,0,1), ' ..
         'dilation=(2,2,1))'):format(py(xd), py(dc.weight), py(dc.bias)))
      -- non-cubic kernel, a different stride and padding per dimension (vol2col + GEMM)
      local co = nn.VolumetricConvolution(3, 4, 2, 3, 1, 1, 2, 3, 1, 1, 0)
      local xo = rand(3, 3, 5, 7, 6)
      case('conv_odd', co:forward(xo), ('F.conv3d(%s, %s, %s, stride=(1,3,2), padding=(1,0,1))'):format(py(xo),
         py(co.weight), py(co.bias)))
      -- weight nIn x nOut x kT x kH x kW is conv_transpose3d's layout
      local f = nn.VolumetricFullConvolution(3, 2, 2, 3, 2, 2, 3, 1, 1, 0, 1, 1, 2, 0)
      local xf = rand(2, 3, 3, 4, 5)
      case('full_batch', f:forward(xf), ('F.conv_transpose3d(%s, %s, %s, stride=(2,1,3), padding=(1,1,0), ' ..
         'output_padding=(1,0,2))'):format(py(xf), py(f.weight), py(f.bias)))
      local xf4 = rand(3, 2, 3, 4)
      case('full_single', f:forward(xf4), ('F.conv_transpose3d(%s.unsqueeze(0), %s, %s, stride=(2,1,3), ' ..
         'padding=(1,1,0), output_padding=(1,0,2))[0]'):format(py(xf4), py(f.weight), py(f.bias)))
      -- max pooling: the values and the flat indices (PyTorch's return_indices are the same)
      local xm = rand(2, 3, 7, 6, 5)
      local mp = nn.VolumetricMaxPooling(3, 2, 3, 2, 2, 2, 1, 1, 0)
      case('max_floor', mp:forward(xm), ('F.max_pool3d(%s, (3,3,2), (2,2,2), (1,0,1))'):format(py(xm)))
      case('max_floor_idx', mp.indices:double(), ('F.max_pool3d(%s, (3,3,2), (2,2,2), (1,0,1), ' ..
         'return_indices=True)[1]'):format(py(xm)))
      mp:ceil()
      case('max_ceil', mp:forward(xm), ('F.max_pool3d(%s, (3,3,2), (2,2,2), (1,0,1), ceil_mode=True)')
         :format(py(xm)))
      case('max_ceil_idx', mp.indices:double(), ('F.max_pool3d(%s, (3,3,2), (2,2,2), (1,0,1), ceil_mode=True, ' ..
         'return_indices=True)[1]'):format(py(xm)))
      local mo = nn.VolumetricMaxPooling(2, 3, 1, 1, 2, 1, 1, 1, 0):ceil()
      local xmo = rand(2, 3, 6, 5, 8)
      case('max_odd', mo:forward(xmo), ('F.max_pool3d(%s, (2,1,3), (1,1,2), (1,0,1), ceil_mode=True)'):format(py(xmo)))
      case('max_odd_idx', mo.indices:double(), ('F.max_pool3d(%s, (2,1,3), (1,1,2), (1,0,1), ceil_mode=True, ' ..
         'return_indices=True)[1]'):format(py(xmo)))
      local xm4 = rand(3, 5, 4, 7)
      case('max_single', nn.VolumetricMaxPooling(2, 3, 2):forward(xm4),
         ('F.max_pool3d(%s.unsqueeze(0), (2,2,3))[0]'):format(py(xm4)))
      local dm = nn.VolumetricDilatedMaxPooling(2, 3, 2, 1, 2, 3, 1, 1, 0, 2, 1, 2):ceil()
      local xdm = rand(2, 2, 7, 8, 6)
      case('dilated_max', dm:forward(xdm), ('F.max_pool3d(%s, (2,2,3), (1,3,2), (1,0,1), dilation=(2,2,1), ' ..
         'ceil_mode=True)'):format(py(xdm)))
      case('dilated_max_idx', dm.indices:double(), ('F.max_pool3d(%s, (2,2,3), (1,3,2), (1,0,1), dilation=(2,2,1), ' ..
         'ceil_mode=True, return_indices=True)[1]'):format(py(xdm)))
      local xa = rand(2, 3, 7, 5, 6)
      case('avg_batch', nn.VolumetricAveragePooling(3, 2, 3, 2, 1, 2):forward(xa),
         ('F.avg_pool3d(%s, (3,3,2), (2,2,1))'):format(py(xa)))
      local xa4 = rand(2, 5, 4, 7)
      case('avg_single', nn.VolumetricAveragePooling(2, 3, 2):forward(xa4),
         ('F.avg_pool3d(%s.unsqueeze(0), (2,2,3))[0]'):format(py(xa4)))
      -- padding (counted, then not), ceil mode, a stride past the kernel (cells no window holds)
      local xap = rand(2, 3, 6, 7, 5)
      local ap = nn.VolumetricAveragePooling(3, 2, 3, 2, 1, 2, 1, 1, 0):ceil()
      case('avg_pad_ceil', ap:forward(xap), ('F.avg_pool3d(%s, (3,3,2), (2,2,1), (1,0,1), ceil_mode=True)')
         :format(py(xap)))
      ap:setCountExcludePad()
      case('avg_pad_excl', ap:forward(xap), ('F.avg_pool3d(%s, (3,3,2), (2,2,1), (1,0,1), ceil_mode=True, ' ..
         'count_include_pad=False)'):format(py(xap)))
      case('avg_gap', nn.VolumetricAveragePooling(2, 1, 2, 3, 2, 3):forward(xap),
         ('F.avg_pool3d(%s, (2,2,1), (3,3,2))'):format(py(xap)))
      -- unpooling: the pooling's indices put each maximum back (size 7x5x7 is not a multiple of 2)
      local xu = rand(2, 3, 7, 5, 7)
      local up = nn.VolumetricMaxPooling(2, 2, 2)
      local pooled = up:forward(xu)
      case('unpool', nn.VolumetricMaxUnpooling(up):forward(pooled), ('F.max_unpool3d(*F.max_pool3d(%s, 2, ' ..
         'return_indices=True), 2, output_size=(7,5,7))'):format(py(xu)))
      -- replication padding: F.pad takes (left, right, top, bottom, front, back), Torch7's order
      local xr = rand(2, 3, 3, 4, 5)
      case('replicate', nn.VolumetricReplicationPadding(2, 1, 0, 3, 1, 2):forward(xr),
         ('F.pad(%s, (2,1,0,3,1,2), mode="replicate")'):format(py(xr)))
      local xr4 = rand(2, 3, 2, 4)
      case('replicate_single', nn.VolumetricReplicationPadding(1, 3, 2):forward(xr4),
         ('F.pad(%s.unsqueeze(0), (1,3,2,1,1,1), mode="replicate")[0]'):format(py(xr4)))
   end)

   it('VolumetricConvolution matches conv3d (batch and single)', function()
      check_case('conv_batch'); check_case('conv_single')
      local m = nn.VolumetricConvolution(2, 3, 2, 3, 2, 2, 1, 2, 1, 1, 0)
      jac(m, rand(2, 2, 5, 3, 4), 'conv batch')
      jac(nn.VolumetricConvolution(2, 2, 3, 1, 2), rand(2, 4, 3, 3), 'conv single')
      -- accGradParameters scales what it adds
      local x, dy = rand(2, 2, 5, 3, 4), rand(2, 3, 3, 1, 4)
      m:zeroGradParameters(); m:accGradParameters(x, dy, 1)
      local gw, gb = m.gradWeight:clone(), m.gradBias:clone()
      m:accGradParameters(x, dy, -0.5)
      util.assert_close(m.gradWeight, gw:mul(0.5), dtol, 'scaled gradWeight')
      util.assert_close(m.gradBias, gb:mul(0.5), dtol, 'scaled gradBias')
      assert.has_error(function() m:forward(rand(3, 5, 3, 4)) end)
      assert.has_error(function() m:forward(rand(5, 3, 4)) end)
      local ok, err = pcall(function() m:backward(x, rand(2, 3, 2, 1, 4)) end)
      assert(not ok and err:find('gradOutput has size 2x3x2x1x4, expected 2x3x3x1x4', 1, true), err)
   end)

   -- the CPU weight gradient builds its columns a block of output rows at a time, threads taking
   -- (sample, block) items (csrc/cpu/nn_vol_grad.c): against whole-sample vol2col + GEMM
   it('VolumetricConvolution weight gradient in column blocks matches vol2col + GEMM (1 and 2 threads)', function()
      local threads = torch.getnumthreads()
      -- 108 column rows x 20 positions per output row: 6 blocks of 30 rows a sample in float32
      local m = nn.VolumetricConvolution(4, 3, 3, 3, 3, 1, 1, 1, 1, 0, 1)
      local x = rand(3, 4, 9, 20, 20)
      local dy = rand(unpack(T.sizes(m:forward(x))))
      local O, L = 3, dy:size(3) * dy:size(4) * dy:size(5)
      local want = torch.DoubleTensor(O, 4 * 27):zero()
      local col = torch.DoubleTensor()
      for n = 1, 3 do
         T.check(T.clib.mt_nn_vol2col(col.h, x[n].h, 3, 3, 3, 1, 1, 1, 1, 0, 1, 1, 1, 1))
         want:addmm(dy[n]:contiguous():view(O, L), col:t())
      end
      want = want:view(O, 4, 3, 3, 3)
      for _, nth in ipairs { 1, 2 } do
         torch.setnumthreads(nth)
         for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
            local mt = m:clone():type(ty)
            mt:zeroGradParameters()
            mt:accGradParameters(x:type(ty), dy:type(ty), 0.5)
            local tol = ty == 'torch.DoubleTensor' and dtol or { atol = 1e-3, rtol = 1e-4 }
            util.assert_close(mt.gradWeight:double(), want * 0.5, tol, ('%s, %d threads'):format(ty, nth))
         end
      end
      torch.setnumthreads(threads)
   end)

   it('VolumetricConvolution: odd geometry, float32 against float64', function()
      check_case('conv_odd')
      jac(nn.VolumetricConvolution(2, 3, 2, 3, 1, 1, 2, 3, 1, 1, 0), rand(2, 2, 4, 7, 5), 'conv odd')
      local m = nn.VolumetricConvolution(3, 4, 3, 2, 2, 2, 1, 1, 1, 0, 1)
      local x, dy = rand(2, 3, 6, 5, 7), rand(2, 4, 3, 6, 6)
      local y, gi = m:forward(x):clone(), m:backward(x, dy):clone()
      local gw = m.gradWeight:clone()
      local f = m:clone():float()
      f:zeroGradParameters()
      local yf, gif = f:forward(x:float()), f:backward(x:float(), dy:float())
      util.assert_close(yf:double(), y, { atol = 1e-5, rtol = 1e-5 }, 'float32 output')
      util.assert_close(gif:double(), gi, { atol = 1e-5, rtol = 1e-5 }, 'float32 gradInput')
      util.assert_close(f.gradWeight:double(), gw, { atol = 1e-4, rtol = 1e-4 }, 'float32 gradWeight')
      -- large enough for oneDNN (forward and gradInput; float64 takes vol2col)
      local b = nn.VolumetricConvolution(8, 8, 3, 3, 2, 1, 1, 2, 1, 1, 0)
      local xb, dyb = rand(2, 8, 7, 12, 11), rand(2, 8, 7, 6, 11)
      local yb, gib = b:forward(xb):clone(), b:updateGradInput(xb, dyb):clone()
      local bf, calls = b:clone():float(), nn.VolumetricConvolution._onednnCalls
      util.assert_close(bf:forward(xb:float()):double(), yb, { atol = 1e-5, rtol = 1e-5 }, 'float32 output, large')
      util.assert_close(bf:updateGradInput(xb:float(), dyb:float()):double(), gib, { atol = 1e-5, rtol = 1e-5 },
         'float32 gradInput, large')
      assert.are.equal(torch.hasOneDNN() and calls + 2 or calls, nn.VolumetricConvolution._onednnCalls)
      -- the C columns: vol2col of a too small volume is an error naming the op
      local ok, err = pcall(function() T.check(T.clib.mt_nn_vol2col(x.new().h, rand(2, 1, 1, 1).h, 3, 3, 3, 1, 1, 1,
         0, 0, 0, 1, 1, 1)) end)
      assert(not ok and err:find('vol2col: volume 1x1x1', 1, true), err)
   end)

   it('VolumetricDilatedConvolution matches conv3d with dilation', function()
      check_case('dilated_conv')
      jac(nn.VolumetricDilatedConvolution(2, 2, 2, 2, 2, 1, 2, 1, 1, 0, 1, 2, 1, 2), rand(2, 2, 5, 4, 3), 'dilated')
   end)

   it('VolumetricFullConvolution matches conv_transpose3d', function()
      check_case('full_batch'); check_case('full_single')
      local m = nn.VolumetricFullConvolution(2, 3, 2, 2, 3, 2, 2, 1, 1, 0, 1, 1, 1, 0)
      jac(m, rand(2, 2, 2, 2, 3), 'full batch')
      jac(nn.VolumetricFullConvolution(2, 2, 3, 1, 2), rand(2, 2, 3, 2), 'full single')
      -- {input, target}: adj follows the target's size
      local x, target = rand(2, 2, 3, 2, 3), rand(2, 3, 5, 2, 7)
      local y = m:forward({ x, target })
      assert.are.same({ 2, 3, 5, 2, 7 }, T.sizes(y))
      local gi = m:backward({ x, target }, rand(2, 3, 5, 2, 7))
      assert.are.same(T.sizes(x), T.sizes(gi[1]))
      assert.are.equal(0, gi[2]:abs():max())
      assert.has_error(function() nn.VolumetricFullConvolution(2, 2, 3, 3, 3, 2, 2, 2, 0, 0, 0, 2, 0, 0) end)
      -- an old Torch7 module: weight nOut x nIn x ..., padding pT/pW/pH, no adj fields
      local old = nn.VolumetricFullConvolution(2, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1)
      local ref = old:forward(x):clone()
      old.weight = old.weight:transpose(1, 2):contiguous()
      old.gradWeight = old.gradWeight:transpose(1, 2):contiguous()
      old.pT, old.pW, old.pH, old.padT, old.padW, old.padH = 1, 1, 1, nil, nil, nil
      old.adjT, old.adjW, old.adjH = nil, nil, nil
      util.assert_close(old:forward(x), ref, dtol, 'old layout')
      old:backward(x, ref)
   end)

   it('VolumetricMaxPooling matches max_pool3d (values, indices, ceil)', function()
      for _, n in ipairs { 'max_floor', 'max_floor_idx', 'max_ceil', 'max_ceil_idx', 'max_single' } do check_case(n) end
      jac(nn.VolumetricMaxPooling(2, 3, 2, 2, 2, 1, 1, 1, 0):ceil(), rand(2, 1, 5, 4, 5), 'max batch')
      jac(nn.VolumetricMaxPooling(3, 2, 2), rand(2, 5, 3, 4), 'max single')
      assert.has_error(function() nn.VolumetricMaxPooling(2, 2, 2, 2, 2, 2, 2) end)
      assert.has_error(function() nn.VolumetricMaxPooling(2, 2, 2):forward(rand(3, 4)) end)
   end)

   it('VolumetricMaxPooling: odd geometry, NaN, bad indices', function()
      check_case('max_odd'); check_case('max_odd_idx')
      jac(nn.VolumetricMaxPooling(2, 3, 1, 1, 2, 1, 1, 1, 0):ceil(), rand(2, 2, 5, 3, 6), 'max odd')
      -- a NaN wins its windows and only those
      local x = rand(1, 4, 4, 4)
      x[1][2][3][1] = 0 / 0
      local p = nn.VolumetricMaxPooling(2, 2, 2)
      local y = p:forward(x)
      assert(y[1][1][2][1] ~= y[1][1][2][1], 'NaN window')
      assert.are.equal(1, y:ne(y):sum())
      assert.are.equal(1 * 16 + 2 * 4 + 0, p.indices[1][1][2][1])
      -- an index outside the volume is an error, not a write out of bounds
      p.indices:fill(64)
      local ok, err = pcall(function() p:backward(x, y:clone():fill(1)) end)
      assert(not ok and err:find('index outside its 64-element volume', 1, true), err)
   end)

   -- the branch-free window loop against a Lua loop: small integers and -inf for ties (the first
   -- tap in (t, y, x) order wins, also when every tap is -inf), NaN (the first one wins), padding
   -- cells never chosen; value and the cell a unit gradient lands on, float32 and float64
   it('VolumetricMaxPooling keeps the first of equal maxima, the first NaN, and skips padding', function()
      for _, tname in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor' } do
         local x = torch.Tensor():type(tname):resize(2, 5, 4, 6):random(1, 3):add(-2)
         for _ = 1, 12 do x[math.random(2)][math.random(5)][math.random(4)][math.random(6)] = -math.huge end
         x[1]:narrow(1, 1, 2):narrow(2, 1, 2):narrow(3, 1, 2):fill(-math.huge) -- a window of only -inf
         for _ = 1, 4 do x[math.random(2)][math.random(5)][math.random(4)][math.random(6)] = 0 / 0 end
         local p = nn.VolumetricMaxPooling(2, 2, 2, 2, 2, 2, 1, 1, 1) -- kT kW kH dT dW dH padT padW padH
         local y = p:forward(x)
         local oT, oH, oW = y:size(2), y:size(3), y:size(4)
         for c = 1, 2 do
            for ot = 1, oT do
               for oy = 1, oH do
                  for ox = 1, oW do
                     local best, bt, by, bx
                     for kt = 0, 1 do
                        for ky = 0, 1 do
                           for kx = 0, 1 do
                              local it, iy, ix = (ot - 1) * 2 - 1 + kt, (oy - 1) * 2 - 1 + ky, (ox - 1) * 2 - 1 + kx
                              if it >= 0 and it < 5 and iy >= 0 and iy < 4 and ix >= 0 and ix < 6 then
                                 local v = x[c][it + 1][iy + 1][ix + 1]
                                 if not best or (best == best and (v > best or v ~= v)) then
                                    best, bt, by, bx = v, it + 1, iy + 1, ix + 1
                                 end
                              end
                           end
                        end
                     end
                     local got = y[c][ot][oy][ox]
                     assert(got == best or (got ~= got and best ~= best),
                        ('%s y[%d][%d][%d][%d] = %s, want %s'):format(tname, c, ot, oy, ox, tostring(got),
                           tostring(best)))
                     local g = y:clone():zero()
                     g[c][ot][oy][ox] = 1
                     local gi = p:updateGradInput(x, g)
                     assert.are.equal(1, gi[c][bt][by][bx], ('%s cell %d,%d,%d,%d'):format(tname, c, ot, oy, ox))
                  end
               end
            end
         end
      end
   end)

   it('VolumetricDilatedMaxPooling matches max_pool3d with dilation', function()
      check_case('dilated_max'); check_case('dilated_max_idx')
      jac(nn.VolumetricDilatedMaxPooling(2, 2, 3, 1, 2, 1, 1, 0, 1, 2, 2, 1), rand(2, 1, 5, 5, 4), 'dilated max')
   end)

   it('VolumetricAveragePooling matches avg_pool3d', function()
      check_case('avg_batch'); check_case('avg_single')
      jac(nn.VolumetricAveragePooling(2, 3, 2, 1, 2, 2), rand(2, 2, 5, 5, 6), 'avg batch')
      jac(nn.VolumetricAveragePooling(3, 2, 2), rand(2, 5, 4, 5), 'avg single')
      check_case('avg_pad_ceil'); check_case('avg_pad_excl'); check_case('avg_gap')
      local ap = nn.VolumetricAveragePooling(3, 2, 3, 2, 1, 2, 1, 1, 0):ceil()
      jac(ap, rand(2, 2, 6, 7, 5), 'avg padded ceil')
      jac(ap:setCountExcludePad(), rand(2, 2, 6, 7, 5), 'avg padded ceil, padding not counted')
      jac(nn.VolumetricAveragePooling(2, 1, 2, 3, 2, 3), rand(2, 2, 7, 8, 5), 'avg stride past kernel')
      jac(nn.VolumetricAveragePooling(3, 3, 3, 1, 1, 1, 1, 1, 1), rand(1, 2, 4, 5, 6), 'avg overlapping')
      assert.has_error(function() nn.VolumetricAveragePooling(2, 2, 2, 1, 1, 1, 2) end)
      -- a module as Torch7's older VolumetricAveragePooling saved it: no padding, ceil or count fields
      local old = nn.VolumetricAveragePooling(2, 3, 2, 1, 2, 2)
      old.padT, old.padW, old.padH, old.ceil_mode, old.count_include_pad = nil, nil, nil, nil, nil
      local xo = rand(2, 2, 5, 5, 6)
      util.assert_close(old:forward(xo), nn.VolumetricAveragePooling(2, 3, 2, 1, 2, 2):forward(xo), dtol,
         'a module without padding fields')
      local ok, err = pcall(function() nn.VolumetricAveragePooling(2, 2, 2):forward(rand(2, 2, 5)) end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('4-d or 5-d input', 1, true))
      assert.has_error(function() nn.VolumetricAveragePooling(3, 3, 3):forward(rand(2, 2, 2, 5, 5)) end)
   end)

   it('VolumetricMaxUnpooling matches max_unpool3d', function()
      check_case('unpool')
      local p = nn.VolumetricMaxPooling(2, 1, 2)
      local u = nn.VolumetricMaxUnpooling(p)
      local x = rand(3, 5, 4, 5)
      local y = p:forward(x)
      assert.are.same(T.sizes(x), T.sizes(u:forward(y)))
      -- input jacobian with the pooling's indices fixed (the module is linear in its input)
      jac(u, y:clone(), 'unpool single')
      p:forward(rand(2, 2, 5, 3, 5))
      jac(u, p.output:clone(), 'unpool batch')
      assert.has_error(function() nn.VolumetricMaxUnpooling(nn.VolumetricMaxPooling(3, 3, 3, 2, 2, 2)) end)
      assert.has_error(function() u:forward(rand(2, 2, 2, 2, 2)) end)
   end)

   it('VolumetricReplicationPadding matches F.pad replicate', function()
      check_case('replicate'); check_case('replicate_single')
      jac(nn.VolumetricReplicationPadding(2, 1, 0, 3, 1, 2), rand(2, 2, 3, 2, 3), 'replicate batch')
      jac(nn.VolumetricReplicationPadding(1, 0, 2, -1, 0, 1), rand(2, 3, 4, 3), 'replicate single, crop')
      local m = nn.VolumetricReplicationPadding(1)
      assert.has_error(function() m:forward(rand(3, 4, 5)) end)
      assert.has_error(function() m:backward(rand(2, 3, 4, 5), rand(2, 5, 6, 6)) end)
      assert.are.equal('nn.VolumetricReplicationPadding(left=1, right=1, top=1, bottom=1, front=1, back=1)',
         tostring(m))
   end)

   it('prints as Torch7 does', function()
      assert.are.equal('nn.VolumetricConvolution(2 -> 3, 3x1x2, 1,2,1, 1,0,1)',
         tostring(nn.VolumetricConvolution(2, 3, 3, 1, 2, 1, 2, 1, 1, 0, 1)))
      assert.are.equal('nn.VolumetricDilatedConvolution(2 -> 3, 3x3x3, 2,2,1)',
         tostring(nn.VolumetricDilatedConvolution(2, 3, 3, 3, 3, 1, 1, 1, 0, 0, 0, 2, 2, 1)))
      assert.are.equal('nn.VolumetricFullConvolution(2 -> 3, 3x3x3, 2,2,2, 1,0,1)',
         tostring(nn.VolumetricFullConvolution(2, 3, 3, 3, 3, 2, 2, 2, 0, 0, 0, 1, 0, 1)))
      assert.are.equal('nn.VolumetricMaxPooling(2x3x2, 2,3,2, 1,1,0)',
         tostring(nn.VolumetricMaxPooling(2, 3, 2, nil, nil, nil, 1, 1)))
      assert.are.equal('nn.VolumetricAveragePooling(2x2x2, 1,1,1)',
         tostring(nn.VolumetricAveragePooling(2, 2, 2, 1, 1, 1)))
      assert.are.equal('nn.VolumetricAveragePooling(3x3x3, 1,1,1, 1,0,1)',
         tostring(nn.VolumetricAveragePooling(3, 3, 3, 1, 1, 1, 1, 0, 1)))
   end)
end)
