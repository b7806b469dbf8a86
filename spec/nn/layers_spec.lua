-- nn layers: Linear, BatchNormalization/SpatialBatchNormalization, ReLU, LeakyReLU, Sigmoid,
-- Tanh, Dropout, SoftMax, LogSoftMax. Forward against plain-Lua float64 references per dtype,
-- backward against central finite differences in float64 (inputs and parameters), and both
-- against PyTorch fixtures (spec/fixtures/gen_layers.py).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local function rand(shape, lo, hi) return (util.rand_tensor(shape, 'torch.DoubleTensor', lo, hi)) end
local function randn_like(t) return rand(T.sizes(t)) end

-- sum(module(x) .* go) as a Lua number
local function objective(module, x, go)
   local y = util.flat(module:forward(x))
   local g = util.flat(go)
   local s = 0
   for i = 1, #y do s = s + y[i] * g[i] end
   return s
end

-- finite differences of objective over the elements of t (a contiguous tensor, perturbed in place)
local function numeric_grad(module, x, go, t)
   local flat = t:view(t:nElement())
   local h, out = 1e-6, {}
   for i = 1, flat:nElement() do
      local v = flat[i]
      flat[i] = v + h
      local fp = objective(module, x, go)
      flat[i] = v - h
      local fm = objective(module, x, go)
      flat[i] = v
      out[i] = (fp - fm) / (2 * h)
   end
   return out
end

-- analytical gradients (input and every parameter) against finite differences, float64
local function gradcheck(module, x, what)
   module:double()
   local y = module:forward(x)
   local go = randn_like(y)
   module:zeroGradParameters()
   local gx = module:backward(x, go):clone()
   local params, grads = module:parameters()
   local gp = {}
   for i = 1, #(grads or {}) do gp[i] = grads[i]:clone() end
   local xc = x:isContiguous() and x or x:contiguous()
   util.assert_close(gx, numeric_grad(module, xc, go, xc), { atol = 1e-6, rtol = 1e-5 }, what .. ' gradInput')
   for i = 1, #(params or {}) do
      util.assert_close(gp[i], numeric_grad(module, x, go, params[i]), { atol = 1e-6, rtol = 1e-5 },
         what .. ' gradient of parameter ' .. i)
   end
end

-- fixtures: name -> DoubleTensor
local function load_fixture(file)
   local f = assert(io.open('spec/fixtures/' .. file))
   local out = {}
   while true do
      local header = f:read('*l')
      if not header then break end
      local words = {}
      for w in header:gmatch('%S+') do words[#words + 1] = w end
      local shape = {}
      for i = 3, 2 + tonumber(words[2]) do shape[#shape + 1] = tonumber(words[i]) end
      local vals = {}
      for v in f:read('*l'):gmatch('%S+') do vals[#vals + 1] = tonumber(v) end
      if #shape == 0 then shape = { 1 } end
      out[words[1]] = T.from_flat(vals, shape, T.DOUBLE, T.CPU_DEVICE)
   end
   f:close()
   return out
end

local float_types = { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' }

describe('nn.Linear', function()
   it('forward matches W x + b for vectors and batches, each float dtype', function()
      for _, ty in ipairs(float_types) do
         for _, dims in ipairs { { 5, 3, 4 }, { 1, 1, 1 }, { 7, 2, 9 } } do
            local nin, nout, n = dims[1], dims[2], dims[3]
            local m = nn.Linear(nin, nout):type(ty)
            local x, xf = util.rand_tensor({ n, nin }, ty)
            local W, b = util.flat(m.weight), util.flat(m.bias)
            local ref = {}
            for r = 1, n do
               for o = 1, nout do
                  local s = b[o]
                  for i = 1, nin do s = s + W[(o - 1) * nin + i] * xf[(r - 1) * nin + i] end
                  ref[#ref + 1] = s
               end
            end
            util.assert_close(m:forward(x), ref, util.tol[ty], 'Linear ' .. ty)
            local v, vf = util.rand_tensor({ nin }, ty)
            local refv = {}
            for o = 1, nout do
               local s = b[o]
               for i = 1, nin do s = s + W[(o - 1) * nin + i] * vf[i] end
               refv[o] = s
            end
            util.assert_close(m:forward(v), refv, util.tol[ty], 'Linear vector ' .. ty)
         end
      end
   end)

   it('initialises uniformly within 1/sqrt(inputSize)', function()
      local m = nn.Linear(50, 40)
      local bound = 1 / math.sqrt(50)
      local w = util.flat(m.weight)
      local lo, hi = math.huge, -math.huge
      for _, v in ipairs(w) do lo, hi = math.min(lo, v), math.max(hi, v) end
      assert.is_true(lo >= -bound and hi <= bound)
      assert.is_true(hi - lo > bound) -- spread over the range, not a constant
   end)

   it('backward matches finite differences (batch, vector, no bias, non-contiguous input)', function()
      gradcheck(nn.Linear(4, 3), rand { 5, 4 }, 'Linear batch')
      gradcheck(nn.Linear(3, 5), rand { 3 }, 'Linear vector')
      gradcheck(nn.Linear(3, 2, false), rand { 4, 3 }, 'Linear no bias')
      gradcheck(nn.Linear(3, 2), rand({ 3, 6 }):t(), 'Linear transposed input')
   end)

   it('accumulates scaled gradients over backward calls', function()
      local m = nn.Linear(3, 2):double()
      local x, go = rand { 4, 3 }, rand { 4, 2 }
      m:zeroGradParameters()
      m:backward(x, go)
      local g1 = m.gradWeight:clone()
      m:backward(x, go, 0.5)
      util.assert_close(m.gradWeight, util.flat(g1:mul(1.5)), util.tol['torch.DoubleTensor'], 'accumulated')
   end)

   it('matches PyTorch', function()
      local f = load_fixture('layers_linear.txt')
      local m = nn.Linear(5, 3):double()
      m.weight:copy(f.w)
      m.bias:copy(f.b)
      m:zeroGradParameters()
      util.assert_close(m:forward(f.x), f.y, util.tol['torch.DoubleTensor'], 'y')
      util.assert_close(m:backward(f.x, f.go), f.gx, util.tol['torch.DoubleTensor'], 'gx')
      util.assert_close(m.gradWeight, f.gw, util.tol['torch.DoubleTensor'], 'gw')
      util.assert_close(m.gradBias, f.gb, util.tol['torch.DoubleTensor'], 'gb')
      m:zeroGradParameters()
      util.assert_close(m:forward(f.v), f.yv, util.tol['torch.DoubleTensor'], 'yv')
      util.assert_close(m:backward(f.v, f.gov), f.gv, util.tol['torch.DoubleTensor'], 'gv')
      util.assert_close(m.gradWeight, f.gwv, util.tol['torch.DoubleTensor'], 'gwv')
      util.assert_close(m.gradBias, f.gbv, util.tol['torch.DoubleTensor'], 'gbv')
   end)

   it('rejects bad inputs naming the sizes', function()
      local m = nn.Linear(4, 3)
      util.assert_error(function() m:forward(torch.randn(2, 5)) end, 'nn.Linear', '2x5', '4')
      util.assert_error(function() m:forward(torch.randn(2, 3, 4)) end, 'nn.Linear', '2x3x4')
      util.assert_error(function() m:forward(torch.randn(2, 4):double()) end, 'torch.DoubleTensor')
      util.assert_error(function() nn.Linear(0, 3) end, 'nn.Linear')
   end)
end)

---------------------------------------------------------------------------------------------
-- batch norm reference: per channel over N and the spatial dims
local function bn_reference(xf, shape, w, b, rm, rv, train, momentum, eps)
   local N, Cn = shape[1], shape[2]
   local S = 1
   for i = 3, #shape do S = S * shape[i] end
   local y, nrm, nrv = {}, {}, {}
   for c = 1, Cn do
      local mean, var
      if train then
         local s = 0
         for n = 0, N - 1 do for k = 1, S do s = s + xf[(n * Cn + c - 1) * S + k] end end
         mean = s / (N * S)
         local q = 0
         for n = 0, N - 1 do for k = 1, S do q = q + (xf[(n * Cn + c - 1) * S + k] - mean) ^ 2 end end
         var = q / (N * S)
         nrm[c] = (1 - momentum) * rm[c] + momentum * mean
         nrv[c] = (1 - momentum) * rv[c] + momentum * q / (N * S - 1)
      else
         mean, var = rm[c], rv[c]
      end
      for n = 0, N - 1 do
         for k = 1, S do
            local i = (n * Cn + c - 1) * S + k
            y[i] = (xf[i] - mean) / math.sqrt(var + eps) * (w and w[c] or 1) + (b and b[c] or 0)
         end
      end
   end
   return y, nrm, nrv
end

describe('nn.BatchNormalization', function()
   it('training and evaluation forward match the reference, each float dtype, with running stats', function()
      for _, ty in ipairs(float_types) do
         for _, case in ipairs { { nn.BatchNormalization, { 7, 3 } }, { nn.SpatialBatchNormalization, { 3, 5, 3, 4 } },
            { nn.SpatialBatchNormalization, { 2, 1, 1, 3 } } } do
            local cls, shape = case[1], case[2]
            local Cn = shape[2]
            local m = cls(Cn, 1e-5, 0.3):type(ty)
            m.weight:copy(rand({ Cn }, 0.5, 1.5))
            m.bias:copy(rand { Cn })
            m.running_mean:copy(rand({ Cn }, -0.2, 0.2))
            m.running_var:copy(rand({ Cn }, 0.5, 1.5))
            local w, b = util.flat(m.weight), util.flat(m.bias)
            local rm, rv = util.flat(m.running_mean), util.flat(m.running_var)
            local x, xf = util.rand_tensor(shape, ty, -2, 3)
            local y, nrm, nrv = bn_reference(xf, shape, w, b, rm, rv, true, 0.3, 1e-5)
            local tol = ty == 'torch.FloatTensor' and { atol = 1e-4, rtol = 1e-4 } or util.tol[ty]
            util.assert_close(m:forward(x), y, tol, 'BN train ' .. ty)
            util.assert_close(m.running_mean, nrm, tol, 'running_mean ' .. ty)
            util.assert_close(m.running_var, nrv, tol, 'running_var ' .. ty)
            m:evaluate()
            local ye = bn_reference(xf, shape, w, b, util.flat(m.running_mean), util.flat(m.running_var), false, 0,
               1e-5)
            util.assert_close(m:forward(x), ye, tol, 'BN eval ' .. ty)
         end
      end
   end)

   it('default momentum 0.1 and eps 1e-5, non-affine, non-contiguous input', function()
      local m = nn.BatchNormalization(4, nil, nil, false):double()
      assert.are.equal(0.1, m.momentum)
      assert.are.equal(1e-5, m.eps)
      assert.is_nil(m.weight)
      local x = rand({ 4, 6 }, -1, 2):t()
      local y, nrm, nrv = bn_reference(util.flat(x), { 6, 4 }, nil, nil, { 0, 0, 0, 0 }, { 1, 1, 1, 1 }, true, 0.1,
         1e-5)
      util.assert_close(m:forward(x), y, util.tol['torch.DoubleTensor'], 'non-affine')
      util.assert_close(m.running_mean, nrm, util.tol['torch.DoubleTensor'], 'running_mean')
      util.assert_close(m.running_var, nrv, util.tol['torch.DoubleTensor'], 'running_var')
   end)

   it('backward matches finite differences in training and evaluation', function()
      for _, mode in ipairs { 'train', 'eval' } do
         local cases = {
            { nn.BatchNormalization(3), rand({ 5, 3 }, -1, 2) },
            { nn.BatchNormalization(2, 1e-3, 0.1, false), rand({ 4, 2 }, -1, 2) },
            { nn.SpatialBatchNormalization(3), rand({ 2, 3, 3, 2 }, -1, 2) },
            { nn.SpatialBatchNormalization(2), rand({ 3, 2, 1, 3 }, -2, 1) },
            { nn.BatchNormalization(3), rand({ 3, 7 }, -1, 2):t() },
         }
         for i, case in ipairs(cases) do
            local m, x = case[1], case[2]
            m:double()
            if m.weight then
               m.weight:copy(rand({ m.weight:nElement() }, 0.5, 1.5))
               m.bias:copy(rand { m.bias:nElement() })
            end
            m.running_mean:copy(rand { m.running_mean:nElement() })
            m.running_var:copy(rand({ m.running_var:nElement() }, 0.5, 1.5))
            if mode == 'eval' then m:evaluate() end
            gradcheck(m, x, ('BN %s case %d'):format(mode, i))
         end
      end
   end)

   it('matches PyTorch in training and evaluation (2-d and spatial)', function()
      local f = load_fixture('layers_bn.txt')
      local tol = { atol = 1e-10, rtol = 1e-8 }
      for _, tag in ipairs { 'bn2', 'bn4' } do
         local x = f[tag .. '_x']
         local m = (x:dim() == 2 and nn.BatchNormalization or nn.SpatialBatchNormalization)(x:size(2)):double()
         m.weight:copy(f[tag .. '_w'])
         m.bias:copy(f[tag .. '_b'])
         m.running_mean:copy(f[tag .. '_rm0'])
         m.running_var:copy(f[tag .. '_rv0'])
         m:zeroGradParameters()
         util.assert_close(m:forward(x), f[tag .. '_y'], tol, tag .. ' y')
         util.assert_close(m:backward(x, f[tag .. '_go']), f[tag .. '_gx'], tol, tag .. ' gx')
         util.assert_close(m.gradWeight, f[tag .. '_gw'], tol, tag .. ' gw')
         util.assert_close(m.gradBias, f[tag .. '_gb'], tol, tag .. ' gb')
         util.assert_close(m.running_mean, f[tag .. '_rm'], tol, tag .. ' running_mean')
         util.assert_close(m.running_var, f[tag .. '_rv'], tol, tag .. ' running_var')
         m.running_mean:copy(f[tag .. '_rm0'])
         m.running_var:copy(f[tag .. '_rv0'])
         m:evaluate()
         m:zeroGradParameters()
         util.assert_close(m:forward(x), f[tag .. '_ye'], tol, tag .. ' eval y')
         util.assert_close(m:backward(x, f[tag .. '_go']), f[tag .. '_gxe'], tol, tag .. ' eval gx')
         util.assert_close(m.gradWeight, f[tag .. '_gwe'], tol, tag .. ' eval gw')
         util.assert_close(m.gradBias, f[tag .. '_gbe'], tol, tag .. ' eval gb')
      end
   end)

   it('rejects bad inputs naming the sizes', function()
      local m = nn.BatchNormalization(3)
      util.assert_error(function() m:forward(torch.randn(4, 5)) end, 'nn.BatchNormalization', '5', '3')
      util.assert_error(function() m:forward(torch.randn(4, 3, 2)) end, 'nn.BatchNormalization', '4x3x2')
      util.assert_error(function() nn.SpatialBatchNormalization(3):forward(torch.randn(4, 3)) end,
         'nn.SpatialBatchNormalization', '4x3')
      -- a training batch of one value per channel uses the running statistics (torch7_fixes_spec)
      util.assert_error(function() nn.BatchNormalization(0) end, 'nn.BatchNormalization')
   end)
end)

---------------------------------------------------------------------------------------------
local activations = {
   { 'ReLU', function() return nn.ReLU() end, function(x) return math.max(x, 0) end },
   { 'ReLU in place', function() return nn.ReLU(true) end, function(x) return math.max(x, 0) end },
   { 'LeakyReLU', function() return nn.LeakyReLU(0.2) end, function(x) return x > 0 and x or 0.2 * x end },
   { 'LeakyReLU negative slope', function() return nn.LeakyReLU(-0.5) end,
      function(x) return x > 0 and x or -0.5 * x end },
   { 'LeakyReLU default', function() return nn.LeakyReLU() end, function(x) return x > 0 and x or 0.01 * x end },
   { 'LeakyReLU in place', function() return nn.LeakyReLU(0.3, true) end,
      function(x) return x > 0 and x or 0.3 * x end },
   { 'Sigmoid', function() return nn.Sigmoid() end, function(x) return 1 / (1 + math.exp(-x)) end },
   { 'Tanh', function() return nn.Tanh() end,
      function(x) return (math.exp(x) - math.exp(-x)) / (math.exp(x) + math.exp(-x)) end },
}

describe('activations', function()
   it('forward matches the reference for each float dtype and layout', function()
      for _, a in ipairs(activations) do
         for _, ty in ipairs(float_types) do
            for _, shape in ipairs { { 7 }, { 3, 5 }, { 2, 3, 4, 5 } } do
               local m = a[2]():type(ty)
               local x, xf = util.rand_tensor(shape, ty, -3, 3)
               local ref = {}
               for i, v in ipairs(xf) do ref[i] = a[3](v) end
               local y = m:forward(x)
               util.assert_close(y, ref, util.tol[ty], a[1] .. ' ' .. ty)
               if m.inplace then assert.is_true(y == x) end
            end
         end
         -- transposed (non-contiguous) input
         local m = a[2]():double()
         local x = rand({ 4, 3 }, -2, 2):t()
         local xf = util.flat(x)
         local ref = {}
         for i, v in ipairs(xf) do ref[i] = a[3](v) end
         util.assert_close(m:forward(x), ref, util.tol['torch.DoubleTensor'], a[1] .. ' transposed')
      end
   end)

   it('backward matches finite differences', function()
      for _, a in ipairs(activations) do
         for _, shape in ipairs { { 6 }, { 3, 5 }, { 2, 3, 2, 3 } } do
            local m = a[2]()
            local x = rand(shape, -2, 2)
            -- keep away from the kink of ReLU where finite differences are meaningless
            x:apply(function(v) if math.abs(v) < 1e-3 then return 0.5 end end)
            if m.inplace then
               -- in place: check the gradient of a fresh copy each forward
               local plain = a[2]()
               plain.inplace = false
               gradcheck(plain, x, a[1] .. ' (as out of place)')
               m:double()
               local xi = x:clone()
               local y = m:forward(xi)
               local go = randn_like(y)
               local ref = util.flat(plain:backward(x, go:clone()))
               util.assert_close(m:backward(xi, go), ref, util.tol['torch.DoubleTensor'], a[1] .. ' in-place backward')
            else
               gradcheck(m, x, a[1] .. ' ' .. #shape .. '-d')
            end
         end
      end
   end)

   it('report dtype errors', function()
      util.assert_error(function() nn.ReLU():forward(torch.LongTensor(3):fill(1)) end, 'ReLU', 'int64')
      util.assert_error(function() nn.Tanh():forward(7) end, 'Tanh', 'number')
   end)
end)

---------------------------------------------------------------------------------------------
describe('nn.Dropout', function()
   it('zeroes about p of the elements and scales the rest by 1/(1-p) in training', function()
      for _, p in ipairs { 0.2, 0.5, 0.75 } do
         local m = nn.Dropout(p):double()
         local x = rand({ 200, 50 }, 0.5, 1.5)
         local y = util.flat(m:forward(x))
         local xf = util.flat(x)
         local zeros = 0
         for i = 1, #y do
            if y[i] == 0 then
               zeros = zeros + 1
            else
               assert(math.abs(y[i] - xf[i] / (1 - p)) < 1e-12, 'kept value not scaled by 1/(1-p)')
            end
         end
         assert(math.abs(zeros / #y - p) < 0.03, ('dropped fraction %.3f for p = %g'):format(zeros / #y, p))
         -- backward uses the same mask
         local go = rand({ 200, 50 })
         local gi, gf, mask = util.flat(m:backward(x, go)), util.flat(go), util.flat(m.noise)
         for i = 1, #gi do assert(math.abs(gi[i] - gf[i] * mask[i]) < 1e-12) end
      end
   end)

   it('is the identity in evaluation', function()
      local m = nn.Dropout(0.4):double()
      m:evaluate()
      local x = rand { 5, 7 }
      util.assert_close(m:forward(x), util.flat(x), util.tol['torch.DoubleTensor'], 'eval forward')
      local go = rand { 5, 7 }
      util.assert_close(m:backward(x, go), util.flat(go), util.tol['torch.DoubleTensor'], 'eval backward')
   end)

   it('backward matches finite differences with a fixed mask (training) and in evaluation', function()
      local m = nn.Dropout(0.3):double()
      local x = rand { 4, 9 }
      m:forward(x)
      m.fixedNoise = true
      gradcheck(m, x, 'Dropout train')
      local e = nn.Dropout(0.3):double()
      e:evaluate()
      gradcheck(e, rand { 3, 5 }, 'Dropout eval')
   end)

   it('follows the torch RNG seed', function()
      local x = torch.ones(50)
      torch.manualSeed(util.seed + 1)
      local a = util.flat(nn.Dropout(0.5):forward(x))
      torch.manualSeed(util.seed + 1)
      local b = util.flat(nn.Dropout(0.5):forward(x))
      assert.are.same(a, b)
   end)

   it('rejects p outside [0, 1)', function()
      util.assert_error(function() nn.Dropout(1) end, 'nn.Dropout', '1')
      util.assert_error(function() nn.Dropout(-0.1) end, 'nn.Dropout')
   end)
end)

---------------------------------------------------------------------------------------------
-- (log-)softmax reference along dimension dim (1-based) of a row-major shape
local function softmax_ref(xf, shape, dim, log)
   local outer, D, inner = 1, shape[dim], 1
   for i = 1, dim - 1 do outer = outer * shape[i] end
   for i = dim + 1, #shape do inner = inner * shape[i] end
   local y = {}
   for o = 0, outer - 1 do
      for k = 1, inner do
         local mx = -math.huge
         for d = 0, D - 1 do mx = math.max(mx, xf[(o * D + d) * inner + k]) end
         local s = 0
         for d = 0, D - 1 do s = s + math.exp(xf[(o * D + d) * inner + k] - mx) end
         for d = 0, D - 1 do
            local i = (o * D + d) * inner + k
            y[i] = log and (xf[i] - mx - math.log(s)) or math.exp(xf[i] - mx) / s
         end
      end
   end
   return y
end

describe('nn.SoftMax and nn.LogSoftMax', function()
   local cases = { { { 6 }, 1 }, { { 4, 7 }, 2 }, { { 3, 4, 2 }, 1 }, { { 2, 3, 2, 3 }, 2 }, { { 5, 1 }, 2 } }
   for _, log in ipairs { false, true } do
      local name = log and 'LogSoftMax' or 'SoftMax'
      it(name .. ' forward matches the reference for each float dtype', function()
         for _, ty in ipairs(float_types) do
            for _, c in ipairs(cases) do
               local m = nn[name]():type(ty)
               local x, xf = util.rand_tensor(c[1], ty, -4, 4)
               util.assert_close(m:forward(x), softmax_ref(xf, c[1], c[2], log), util.tol[ty], name .. ' ' .. ty)
            end
         end
         -- large scores stay finite
         local x = torch.DoubleTensor({ { 1000, 1001, 999 } })
         util.assert_close(nn[name]():double():forward(x), softmax_ref({ 1000, 1001, 999 }, { 1, 3 }, 2, log),
            util.tol['torch.DoubleTensor'], name .. ' large')
      end)

      it(name .. ' backward matches finite differences', function()
         for _, c in ipairs(cases) do gradcheck(nn[name](), rand(c[1], -2, 2), name) end
         gradcheck(nn[name](), rand({ 5, 3 }, -2, 2):t(), name .. ' transposed')
      end)
   end

   it('match PyTorch', function()
      local f = load_fixture('layers_softmax.txt')
      for _, tag in ipairs { 's2', 's4' } do
         local sm, lsm = nn.SoftMax():double(), nn.LogSoftMax():double()
         local x, go = f[tag .. '_x'], f[tag .. '_go']
         util.assert_close(sm:forward(x), f[tag .. '_y'], util.tol['torch.DoubleTensor'], tag .. ' softmax')
         util.assert_close(sm:backward(x, go), f[tag .. '_gx'], util.tol['torch.DoubleTensor'], tag .. ' softmax grad')
         util.assert_close(lsm:forward(x), f[tag .. '_ly'], util.tol['torch.DoubleTensor'], tag .. ' logsoftmax')
         util.assert_close(lsm:backward(x, go), f[tag .. '_lgx'], util.tol['torch.DoubleTensor'],
            tag .. ' logsoftmax grad')
      end
   end)

   it('reject bad inputs', function()
      util.assert_error(function() nn.SoftMax():forward(torch.randn(2, 2, 2, 2, 2)) end, 'nn.SoftMax', '2x2x2x2x2')
      util.assert_error(function() nn.LogSoftMax():forward(torch.IntTensor(3):fill(1)) end, 'nn.LogSoftMax', 'int32')
   end)
end)

