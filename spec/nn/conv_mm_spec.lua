-- conv_mm_spec.lua: nn.SpatialConvolutionMM (the 2-d weight of Torch7's unfold + GEMM) and
-- nn.SpatialFullConvolutionMap (a transposed convolution over a connection table): forward
-- passes against float64 loops written from THNN's definitions, gradients with nn.Jacobian, on
-- fresh random inputs of small odd sizes; SpatialConvolutionMM read from a Torch7 file assembled
-- byte by byte (the legacy `padding` field, THNN's unfold buffers) and through torch.save/load.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local peer = require 'spec.nn.peer'
local t7 = require 'spec.nn.t7_bytes'
local rand, jac = peer.rand, peer.jac
local TOL = { atol = 1e-12, rtol = 1e-10 }

-- out[n][o][y][x] = b[o] + sum over i, ky, kx of the zero-padded input at ((y-1)*dH+ky, (x-1)*dW+kx)
-- times W[o][(i-1)*kH*kW + (ky-1)*kW + kx]: the 2-d weight's column order
local function ref_conv(x, w2, b, kW, kH, dW, dH, padW, padH)
   local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
   local O = w2:size(1)
   local oH, oW = math.floor((H + 2 * padH - kH) / dH) + 1, math.floor((W + 2 * padW - kW) / dW) + 1
   local xf, wf, bf = util.flat(x), util.flat(w2), b and util.flat(b)
   local out = {}
   for n = 1, N do
      for o = 1, O do
         for y = 1, oH do
            for xx = 1, oW do
               local s = bf and bf[o] or 0
               for i = 1, C do
                  for ky = 1, kH do
                     for kx = 1, kW do
                        local iy, ix = (y - 1) * dH + ky - padH, (xx - 1) * dW + kx - padW
                        if iy >= 1 and iy <= H and ix >= 1 and ix <= W then
                           s = s + xf[(((n - 1) * C + i - 1) * H + iy - 1) * W + ix]
                              * wf[(o - 1) * C * kH * kW + (i - 1) * kH * kW + (ky - 1) * kW + kx]
                        end
                     end
                  end
               end
               out[#out + 1] = s
            end
         end
      end
   end
   return out, { N, O, oH, oW }
end

-- out[o][(y-1)*dH+ky][(x-1)*dW+kx] += in[i][y][x] * w[k][ky][kx] for each row k = {i, o}, + bias[o]
local function ref_full_map(x, ct, w, b, dW, dH)
   local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
   local K, kH, kW = w:size(1), w:size(2), w:size(3)
   local O = b:size(1)
   local oH, oW = (H - 1) * dH + kH, (W - 1) * dW + kW
   local xf, wf, bf = util.flat(x), util.flat(w), util.flat(b)
   local out = {}
   for n = 1, N do
      for o = 1, O do
         for p = 1, oH * oW do out[((n - 1) * O + o - 1) * oH * oW + p] = bf[o] end
      end
      for k = 1, K do
         local i, o = ct[k][1], ct[k][2]
         for y = 1, H do
            for xx = 1, W do
               local v = xf[(((n - 1) * C + i - 1) * H + y - 1) * W + xx]
               for ky = 1, kH do
                  for kx = 1, kW do
                     local at = ((n - 1) * O + o - 1) * oH * oW + ((y - 1) * dH + ky - 1) * oW + (xx - 1) * dW + kx
                     out[at] = out[at] + v * wf[((k - 1) * kH + ky - 1) * kW + kx]
                  end
               end
            end
         end
      end
   end
   return out, { N, O, oH, oW }
end

local function check_against(got, want, sizes, what)
   assert.are.same(sizes, T.sizes(got), what .. ': size')
   util.assert_close(util.flat(got), want, TOL, what)
end

describe('nn.SpatialConvolutionMM', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('computes the convolution of its nOut x (nIn*kH*kW) weight, batched and not, with stride and padding', function()
      local m = nn.SpatialConvolutionMM(3, 4, 3, 2, 2, 1, 1, 2)
      assert.are.same({ 4, 3 * 2 * 3 }, T.sizes(m.weight))
      assert.are.same({ 4, 18 }, T.sizes(m.gradWeight))
      local x = rand(2, 3, 5, 7)
      local want, sizes = ref_conv(x, m.weight, m.bias, 3, 2, 2, 1, 1, 2)
      check_against(m:forward(x), want, sizes, 'batch')
      local w1, s1 = ref_conv(x[2]:view(1, 3, 5, 7), m.weight, m.bias, 3, 2, 2, 1, 1, 2)
      table.remove(s1, 1)
      check_against(m:forward(x[2]), w1, s1, 'single')
      -- padH defaults to padW; without bias
      local m2 = nn.SpatialConvolutionMM(2, 3, 3, 3, 1, 2, 1):noBias()
      assert.are.equal(1, m2.padH)
      local x2 = rand(3, 2, 6, 5)
      local w2, s2 = ref_conv(x2, m2.weight, nil, 3, 3, 1, 2, 1, 1)
      check_against(m2:forward(x2), w2, s2, 'no bias')
      assert.is_truthy(tostring(m2):find('without bias', 1, true))
   end)

   it('gives nn.SpatialConvolution\'s results for the same weights', function()
      local m = nn.SpatialConvolutionMM(3, 2, 3, 3, 2, 2, 1, 1)
      local c = nn.SpatialConvolution(3, 2, 3, 3, 2, 2, 1, 1)
      c.weight:copy(m.weight:view(2, 3, 3, 3))
      c.bias:copy(m.bias)
      local x = rand(2, 3, 7, 6)
      local go = rand(2, 2, 4, 3)
      util.assert_close(util.flat(m:forward(x)), util.flat(c:forward(x)), TOL, 'output')
      util.assert_close(util.flat(m:backward(x, go)), util.flat(c:backward(x, go)), TOL, 'gradInput')
      util.assert_close(util.flat(m.gradWeight), util.flat(c.gradWeight), TOL, 'gradWeight')
      util.assert_close(util.flat(m.gradBias), util.flat(c.gradBias), TOL, 'gradBias')
   end)

   it('has the input, weight and bias jacobians of its forward', function()
      jac(nn.SpatialConvolutionMM(2, 3, 3, 2, 1, 2, 1, 0), rand(2, 2, 5, 6), 'batch')
      jac(nn.SpatialConvolutionMM(3, 2, 2, 3, 2, 1, 0, 1), rand(3, 4, 5), 'single')
   end)

   it('works on the flat vectors of getParameters and on a 4-d weight', function()
      local m = nn.SpatialConvolutionMM(2, 3, 3, 3, 1, 1, 1, 1)
      local p, g = m:getParameters()
      p:uniform(-1, 1)
      local x = rand(2, 2, 5, 4)
      local want, sizes = ref_conv(x, m.weight, m.bias, 3, 3, 1, 1, 1, 1)
      check_against(m:forward(x), want, sizes, 'flat parameters')
      g:zero()
      m:backward(x, rand(2, 3, 5, 4))
      assert.is_true(g:abs():sum() > 0, 'the flat gradient holds the gradients')
      assert.are.equal(g:narrow(1, 1, m.gradWeight:nElement()):abs():sum(), m.gradWeight:abs():sum())
      -- a 4-d weight (as files converted from nn.SpatialConvolution hold) is used as it is
      local w2 = m.weight:clone()
      m.weight = w2:view(3, 2, 3, 3)
      check_against(m:forward(x), want, sizes, '4-d weight')
   end)

   it('reads a Torch7 file with the legacy padding field and THNN buffers, and round-trips through torch.save',
      function()
         local w, b = rand(2, 3 * 2 * 2), rand(2)
         local bytes = t7.encode(t7.object('nn.SpatialConvolutionMM', t7.fields {
            { 'weight', t7.dtensor(w) }, { 'bias', t7.dtensor(b) },
            { 'gradWeight', t7.dtensor(w:clone():zero()) }, { 'gradBias', t7.dtensor(b:clone():zero()) },
            { 'finput', t7.dtensor() }, { 'fgradInput', t7.dtensor() },
            { 'output', t7.dtensor() }, { 'gradInput', t7.dtensor() },
            { 'nInputPlane', t7.number(3) }, { 'nOutputPlane', t7.number(2) },
            { 'kW', t7.number(2) }, { 'kH', t7.number(2) }, { 'dW', t7.number(1) },
            { 'dH', t7.number(2) }, { 'padding', t7.number(1) }, { 'train', t7.boolean(true) },
         }))
         local m = torch.deserialize(bytes)
         assert.are.equal('nn.SpatialConvolutionMM', torch.type(m))
         local x = rand(2, 3, 4, 5)
         local want, sizes = ref_conv(x, w, b, 2, 2, 1, 2, 1, 1)
         check_against(m:forward(x), want, sizes, 'read from Torch7 bytes')
         assert.are.equal(1, m.padW)
         assert.are.equal(1, m.padH)
         assert.is_nil(m.padding)
         local path = os.tmpname()
         torch.save(path, m)
         local back = torch.load(path)
         os.remove(path)
         assert.are.equal('nn.SpatialConvolutionMM', torch.type(back))
         assert.are.same({ 2, 12 }, T.sizes(back.weight))
         check_against(back:forward(x), want, sizes, 'after torch.save/torch.load')
      end)

   it('names the module and what is wrong in its errors', function()
      assert.has_error(function() nn.SpatialConvolutionMM(0, 2, 3, 3) end,
         'nn.SpatialConvolutionMM: nInputPlane must be a positive integer, got 0')
      assert.has_error(function() nn.SpatialConvolutionMM(2, 2, 3, 3, 1, 1, -1) end,
         'nn.SpatialConvolutionMM: padding must not be negative, got -1,-1')
      local m = nn.SpatialConvolutionMM(3, 2, 3, 3)
      assert.has_error(function() m:forward(rand(2, 4, 5, 5)) end,
         'nn.SpatialConvolutionMM: input has 4 planes, expected nInputPlane 3')
      assert.has_error(function() m:forward(rand(5, 5)) end,
         'nn.SpatialConvolutionMM: expected a 3-d or 4-d input, got size 5x5')
      m.weight = rand(2, 26)
      local ok, err = pcall(m.forward, m, rand(3, 5, 5))
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find('weight has 52 elements, expected 2 x 27', 1, true), err)
   end)
end)

describe('nn.SpatialFullConvolutionMap', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('computes the full convolution of each connection, batched and not', function()
      local ct = nn.tables.random(3, 4, 2)
      local m = nn.SpatialFullConvolutionMap(ct, 3, 2, 2, 3)
      assert.are.same({ 8, 2, 3 }, T.sizes(m.weight))
      -- the planes are the largest numbers in the table (a random one may leave plane 3 out)
      local nIn = ct:select(2, 1):max()
      assert.are.equal(nIn, m.nInputPlane)
      assert.are.equal(4, m.nOutputPlane)
      local x = rand(2, nIn, 4, 5)
      local want, sizes = ref_full_map(x, ct, m.weight, m.bias, 2, 3)
      check_against(m:forward(x), want, sizes, 'batch')
      local w1, s1 = ref_full_map(x[1]:view(1, nIn, 4, 5), ct, m.weight, m.bias, 2, 3)
      table.remove(s1, 1)
      check_against(m:forward(x[1]), w1, s1, 'single')
   end)

   it('gives nn.SpatialFullConvolution\'s results on a full table', function()
      local m = nn.SpatialFullConvolutionMap(nn.tables.full(3, 2), 2, 3, 2, 1)
      local f = nn.SpatialFullConvolution(3, 2, 2, 3, 2, 1)
      local ct = m.connTable
      for k = 1, ct:size(1) do m.weight[k]:copy(f.weight[ct[k][1]][ct[k][2]]) end
      m.bias:copy(f.bias)
      local x = rand(3, 4, 5)
      local go = rand(2, 6, 10)
      util.assert_close(util.flat(m:forward(x)), util.flat(f:forward(x)), TOL, 'output')
      util.assert_close(util.flat(m:backward(x, go)), util.flat(f:backward(x, go)), TOL, 'gradInput')
      util.assert_close(util.flat(m.gradBias), util.flat(f.gradBias), TOL, 'gradBias')
   end)

   it('has the input, weight and bias jacobians of its forward', function()
      local m = nn.SpatialFullConvolutionMap(nn.tables.random(3, 2, 2), 2, 3, 2, 1)
      jac(m, rand(m.nInputPlane, 4, 3), 'single')
      jac(nn.SpatialFullConvolutionMap(nn.tables.oneToOne(2), 3, 2, 1, 2), rand(2, 2, 3, 4), 'batch')
   end)

   it('names the module and what is wrong in its errors', function()
      assert.has_error(function() nn.SpatialFullConvolutionMap(torch.Tensor(3, 3), 2, 2) end,
         'nn.SpatialFullConvolutionMap: connTable must be a K x 2 tensor of {input plane, output plane} rows')
      local m = nn.SpatialFullConvolutionMap(nn.tables.full(2, 3), 2, 2)
      assert.has_error(function() m:forward(rand(3, 4, 4)) end,
         'nn.SpatialFullConvolutionMap: expected a 3-d or 4-d input of 2 planes, got size 3x4x4')
      m:forward(rand(2, 4, 4))
      assert.has_error(function() m:backward(rand(2, 4, 4), rand(3, 4, 4)) end,
         'nn.SpatialFullConvolutionMap: gradOutput has size 3x4x4, expected 3 planes of 5x5')
   end)
end)
