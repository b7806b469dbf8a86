-- channels_last_spec.lua: channels-last (NHWC-strided) 4-d tensors through the layers of a CNN, as
-- PyTorch's memory format: each op given a channels-last input returns channels-last results
-- whose values equal (bit for bit, float64, fresh random inputs) those of the same op on the
-- NCHW tensor, which the other nn specs check against references. Then Module:channelsLast and
-- the same comparisons on the GPU against the CPU (pending without a GPU).
local ffi = require 'ffi'
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local T = require 'moontorch.internal'

local EXACT = { atol = 0, rtol = 0 }
local function rand(shape, ty) return util.rand_tensor(shape, ty or 'torch.DoubleTensor', -1, 1) end
local function strides(t) return { t:stride(1), t:stride(2), t:stride(3), t:stride(4) } end

describe('channels-last tensors', function()
   it('t:channelsLast() keeps sizes and values in NHWC strides on the CPU; contiguous() gives NCHW', function()
      local x = rand({ 2, 3, 4, 5 })
      local y = x:channelsLast()
      assert.are.same({ 60, 1, 15, 3 }, strides(y))
      assert.is_true(y:isChannelsLast())
      assert.is_false(x:isChannelsLast())
      assert.is_false(y:isContiguous())
      util.assert_close(y, x, EXACT, 'channelsLast values')
      assert.are.equal(y, y:channelsLast(), 'already channels-last: itself')
      local z = y:contiguous()
      assert.are.same({ 60, 20, 5, 1 }, strides(z))
      util.assert_close(z, x, EXACT, 'contiguous values')
      -- one channel: both layouts at once; the strides channelsLast gives still say which
      local g = rand({ 2, 1, 3, 3 }):channelsLast()
      assert.is_true(g:isChannelsLast())
      assert.is_false(rand({ 2, 1, 3, 3 }):isChannelsLast())
      util.assert_error(function() torch.zeros(3, 4):channelsLast() end, 'channelsLast', '4-d')
      assert.is_true(torch.cuda.isChannelsLast(torch.cuda.channelsLast(x)), 'the torch.cuda names')
   end)

   it('a fresh pointwise result takes a channels-last operand\'s layout; a given one keeps its own', function()
      local a, b = rand({ 2, 3, 4, 5 }), rand({ 2, 3, 4, 5 })
      local acl, bcl = a:channelsLast(), b:channelsLast()
      local w13 = rand({ 1, 3, 1, 1 })
      local cases = {
         { 'exp', function(x) return torch.exp(x) end },
         { 'mul scalar', function(x) return torch.mul(x, 1.7) end },
         { 'add', function(x, y) return torch.add(x, y) end },
         { 'cmul broadcast', function(x) return torch.cmul(x, w13) end },
         { 'addcmul', function(x, y) return torch.addcmul(x, 0.5, y, y) end },
      }
      for _, c in ipairs(cases) do
         local want, got = c[2](a, b), c[2](acl, bcl)
         assert.is_true(got:isChannelsLast(), c[1] .. ' layout')
         util.assert_close(got, want, EXACT, c[1])
      end
      assert.is_false(torch.add(a, bcl):isChannelsLast(), 'an NCHW first operand decides')
      local r = torch.DoubleTensor(2, 3, 4, 5)
      torch.add(r, acl, bcl)
      assert.is_true(r:isContiguous(), 'a result of the right size keeps its strides')
      util.assert_close(r, torch.add(a, b), EXACT, 'add into a given result')
   end)
end)

-- m's output and gradInput for x (NCHW) and x:channelsLast(), the same gradOutput values
local function both(m, x, dy_layout)
   local o1 = m:forward(x):clone()
   local g = rand(T.sizes(o1))
   local g1 = m:backward(x, g):clone()
   local xcl = x:channelsLast()
   local o2 = m:forward(xcl)
   local g2 = m:backward(xcl, dy_layout == 'nchw' and g or g:channelsLast())
   return o1, o2, g1, g2
end

local function check_module(name, m, x, dy_layout)
   local o1, o2, g1, g2 = both(m, x, dy_layout)
   assert.is_true(o2:isChannelsLast(), name .. ': output channels-last')
   assert.is_true(g2:isChannelsLast(), name .. ': gradInput channels-last')
   util.assert_close(o2, o1, EXACT, name .. ' output')
   util.assert_close(g2, g1, EXACT, name .. ' gradInput')
   -- and back: an NCHW input after a channels-last one gives NCHW results again
   local o3 = m:forward(x)
   assert.is_false(o3:isChannelsLast(), name .. ': output follows the input back to NCHW')
   util.assert_close(o3, o1, EXACT, name .. ' output again')
end

describe('layers on channels-last input', function()
   it('activations (in place too) keep the layout', function()
      local x = rand({ 2, 4, 5, 3 })
      for _, c in ipairs { { 'ReLU', nn.ReLU() }, { 'Sigmoid', nn.Sigmoid() }, { 'Tanh', nn.Tanh() },
         { 'LeakyReLU', nn.LeakyReLU(0.1) } } do
         check_module(c[1], c[2]:double(), x)
      end
      local r = nn.ReLU(true):double()
      local xcl = x:clone():channelsLast()
      local y = r:forward(xcl)
      assert.are.equal(xcl, y, 'in place')
      assert.is_true(y:isChannelsLast())
      util.assert_close(y, torch.cmax(x, 0), EXACT, 'in-place ReLU')
      local g = rand({ 2, 4, 5, 3 })
      local gi = r:backward(xcl, g:clone())
      util.assert_close(gi, torch.cmul(g, torch.gt(x, 0):double()), EXACT, 'in-place ReLU gradInput, NCHW gradOutput')
   end)

   it('CAddTable and Dropout keep the layout; the dropout mask does not depend on it', function()
      local a, b = rand({ 2, 3, 4, 4 }), rand({ 2, 3, 4, 4 })
      local m = nn.CAddTable()
      local y = m:forward({ a:channelsLast(), b:channelsLast() })
      assert.is_true(y:isChannelsLast())
      util.assert_close(y, torch.add(a, b), EXACT, 'CAddTable')
      local g = rand({ 2, 3, 4, 4 })
      local gi = m:backward({ a:channelsLast(), b:channelsLast() }, g)
      assert.is_true(gi[1]:isChannelsLast() and gi[2]:isChannelsLast())
      util.assert_close(gi[2], g, EXACT, 'CAddTable gradInput')
      local d = nn.Dropout(0.4):double()
      torch.manualSeed(11)
      local o1, o2, g1, g2
      o1 = d:forward(a):clone()
      g1 = d:backward(a, g):clone()
      torch.manualSeed(11)
      o2 = d:forward(a:channelsLast())
      g2 = d:backward(a:channelsLast(), g:channelsLast())
      assert.is_true(o2:isChannelsLast() and g2:isChannelsLast())
      assert.is_true(o1:eq(0):sum() > 0, 'some elements dropped')
      util.assert_close(o2, o1, EXACT, 'Dropout output')
      util.assert_close(g2, g1, EXACT, 'Dropout gradInput')
   end)

   it('max, average and adaptive average pooling read channels-last input without a copy', function()
      local x = rand({ 2, 5, 7, 6 })
      check_module('max 2x2', nn.SpatialMaxPooling(2, 2, 2, 2):double(), x)
      check_module('max 3x3 pad 1 ceil', nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1):ceil():double(), x)
      check_module('avg 3x2 pad', nn.SpatialAveragePooling(3, 2, 2, 1, 1, 1):double(), x)
      local ex = nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1):ceil():double()
      ex.count_include_pad = false
      check_module('avg ceil, padding excluded', ex, x)
      check_module('adaptive avg 3x4', nn.SpatialAdaptiveAveragePooling(4, 3):double(), x)
      check_module('max, NCHW gradOutput', nn.SpatialMaxPooling(2, 2, 2, 2):double(), x, 'nchw')
      -- a global pooling gives N x C x 1 x 1, which is both layouts: values and a following view
      local gp = nn.SpatialAveragePooling(6, 7):double()
      local y = gp:forward(x:channelsLast())
      util.assert_close(y, gp:forward(x), EXACT, 'global average')
      -- NaN propagates in the channels-last max too
      local xn = x:clone()
      xn[2][3][4][5] = 0 / 0
      local yn = nn.SpatialMaxPooling(2, 2, 2, 2):double():forward(xn:channelsLast())
      assert.is_true(yn[2][3][2][3] ~= yn[2][3][2][3], 'NaN wins')
   end)

   it('the CPU convolution takes channels-last input and gives channels-last output and gradInput', function()
      local x = rand({ 2, 3, 6, 5 })
      for _, c in ipairs { { '3x3 pad 1', nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1) },
         { '1x1', nn.SpatialConvolution(3, 4, 1, 1) }, { 'stride 2', nn.SpatialConvolution(3, 4, 3, 3, 2, 2) } } do
         local m = c[2]:double()
         m:zeroGradParameters()
         check_module(c[1], m, x)
      end
      local m1 = nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1):double()
      local m2 = m1:clone()
      local g = rand({ 2, 4, 6, 5 })
      m1:zeroGradParameters(); m2:zeroGradParameters()
      m1:forward(x); m1:backward(x, g)
      m2:forward(x:channelsLast()); m2:backward(x:channelsLast(), g:channelsLast())
      util.assert_close(m2.gradWeight, m1.gradWeight, EXACT, 'gradWeight')
      util.assert_close(m2.gradBias, m1.gradBias, EXACT, 'gradBias')
   end)

   it('nn.View and nn.Reshape of a channels-last tensor give NCHW-ordered results', function()
      local x = rand({ 2, 3, 4, 5 })
      for _, m in ipairs { nn.View(60):setNumInputDims(3), nn.Reshape(60) } do
         local y = m:forward(x:channelsLast())
         util.assert_close(y, x:view(2, 60), EXACT, torch.type(m))
         local g = rand({ 2, 60 })
         util.assert_close(m:backward(x:channelsLast(), g), g:view(2, 3, 4, 5), EXACT, torch.type(m) .. ' gradInput')
      end
   end)
end)

describe('nn.Module:channelsLast', function()
   it('restrides convolution weights in place, keeping values, sharing and flat parameters', function()
      torch.manualSeed(5)
      local net = nn.Sequential():add(nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.ReLU())
         :add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(nn.SpatialConvolution(4, 4, 3, 3, 1, 1, 1, 1)):add(nn.ReLU())
      local shared = nn.SpatialConvolution(4, 4, 3, 3, 1, 1, 1, 1)
      shared:share(net:get(4), 'weight', 'bias', 'gradWeight', 'gradBias')
      net:add(shared)
      net = net:double()
      local params = net:getParameters()
      local before = params:clone()
      local w4 = net:get(4).weight:clone()
      local x = rand({ 2, 3, 8, 8 })
      local ref = net:forward(x):clone()
      net:channelsLast()
      for _, i in ipairs { 1, 4, 6 } do
         local m = net:get(i)
         assert.is_true(m.weight:isChannelsLast(), 'weight ' .. i)
         assert.is_true(m.gradWeight:isChannelsLast(), 'gradWeight ' .. i)
      end
      util.assert_close(net:get(4).weight, w4, EXACT, 'values kept')
      util.assert_close(net:get(6).weight, w4, EXACT, 'the sharing module sees the same values')
      local function skey(t) return tonumber(ffi.cast('intptr_t', T.clib.mt_tensor_storage_key(t.h))) end
      assert.are.equal(skey(params), skey(net:get(4).weight), 'in the flat vector')
      assert.are.equal(params:nElement(), before:nElement())
      util.assert_close(params:clone():sort(), before:clone():sort(), EXACT, 'the same numbers, permuted per weight')
      net:get(4).weight:add(1)
      util.assert_close(net:get(6).weight, w4 + 1, EXACT, 'sharing survives')
      net:get(4).weight:add(-1)
      local y = net:forward(x:channelsLast())
      util.assert_close(y, ref, EXACT, 'same output')
      local p2 = net:getParameters()
      assert.are.equal(p2:nElement(), params:nElement())
      assert.is_true(net:get(1).weight:isChannelsLast(), 'a second getParameters keeps the strides')
   end)
end)

-- the same layers on the GPU, channels-last there, against the CPU's NCHW results
describe('channels-last layers on CUDA against the CPU', function()
   local function gpu_vs_cpu(name, m, x, scale)
      local ty = x:type()
      local o = m:forward(x):clone()
      local g = rand(T.sizes(o), ty)
      local gi = m:backward(x, g):clone()
      local mg = m:clone():cuda()
      local og = mg:forward(x:cuda():channelsLast())
      local gig = mg:backward(x:cuda():channelsLast(), g:cuda():channelsLast())
      assert.is_true(og:isChannelsLast(), name .. ': GPU output channels-last')
      assert.is_true(gig:isChannelsLast(), name .. ': GPU gradInput channels-last')
      cu.same(o, og, ty, name .. ' output', scale)
      cu.same(gi, gig, ty, name .. ' gradInput', scale)
   end
   for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
      cu.gpu_it('pooling and activations, ' .. ty, function()
         local x = rand({ 3, 6, 9, 7 }, ty)
         gpu_vs_cpu('max', nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1):type(ty), x)
         gpu_vs_cpu('avg ceil', nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1):ceil():type(ty), x)
         gpu_vs_cpu('adaptive', nn.SpatialAdaptiveAveragePooling(3, 4):type(ty), x)
         gpu_vs_cpu('ReLU', nn.ReLU():type(ty), x)
         gpu_vs_cpu('Sigmoid', nn.Sigmoid():type(ty), x)
         gpu_vs_cpu('Tanh', nn.Tanh():type(ty), x)
         gpu_vs_cpu('LeakyReLU', nn.LeakyReLU(0.2):type(ty), x)
      end)
   end
   cu.gpu_it('pointwise results and a channels-last model step', function()
      local x = rand({ 2, 3, 8, 8 }, 'torch.FloatTensor')
      local y = torch.add(x:cuda():channelsLast(), 2)
      assert.is_true(y:isChannelsLast())
      cu.same(torch.add(x, 2), y, 'torch.FloatTensor', 'add')
      torch.manualSeed(4)
      local net = nn.Sequential():add(nn.SpatialConvolution(3, 8, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))
         :add(nn.SpatialMaxPooling(2, 2, 2, 2)):add(nn.SpatialConvolution(8, 4, 3, 3)):float()
      local o = net:forward(x):clone()
      local ng = net:clone():cuda():channelsLast()
      local og = ng:forward(x:cuda():channelsLast())
      assert.is_true(og:isChannelsLast())
      cu.same(o, og, 'torch.FloatTensor', 'model output', 4)
   end)
end)
