-- nn transfer functions (Torch7's transfer.md): Threshold, HardTanh, ReLU6, HardShrink, SoftShrink,
-- SoftMin, SoftPlus, SoftSign, LogSigmoid, PReLU, RReLU, ELU, SpatialSoftMax, GatedLinearUnit, and
-- the Torch7 constructor forms of ReLU and LeakyReLU. Forward against float64 Lua references and
-- PyTorch (torch.nn.functional through /usr/bin/python3), gradients with nn.Jacobian on inputs
-- kept away from the kinks, in-place semantics, RReLU's slope statistics at a fixed seed.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local TOL = 1e-6
local huge = math.huge

-- a fresh float64 tensor, uniform in [lo, hi], no element within 0.02 of a kink
local function away(sizes, lo, hi, kinks)
   local x = torch.DoubleTensor(unpack(sizes)):uniform(lo, hi)
   local f = x:view(x:nElement())
   for i = 1, f:nElement() do
      local v = f[i]
      for _, k in ipairs(kinks or {}) do
         if math.abs(v - k) < 0.02 then v = k + (v < k and -0.05 or 0.05) end
      end
      f[i] = v
   end
   return x
end

local function map(t, fn)
   local out = {}
   for i, v in ipairs(util.flat(t)) do out[i] = fn(v) end
   return out
end

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
-- log(1 + v) without the cancellation of 1 + v for small v (Goldberg's correction)
local function log1p(v)
   local w = 1 + v
   if w == 1 then return v end
   return math.log(w) * v / (w - 1)
end

-- name, constructor, float64 reference, kinks (for the gradient checks), input range
local pointwise = {
   { 'Threshold', function() return nn.Threshold(0.3, -2) end, function(v) return v > 0.3 and v or -2 end, { 0.3 } },
   { 'HardTanh', function() return nn.HardTanh() end, function(v) return math.min(math.max(v, -1), 1) end, { -1, 1 } },
   { 'HardTanh(-0.5, 2)', function() return nn.HardTanh(-0.5, 2) end,
      function(v) return math.min(math.max(v, -0.5), 2) end, { -0.5, 2 } },
   { 'ReLU6', function() return nn.ReLU6() end, function(v) return math.min(math.max(v, 0), 6) end, { 0, 6 }, 8 },
   { 'HardShrink', function() return nn.HardShrink() end,
      function(v) return math.abs(v) > 0.5 and v or 0 end, { -0.5, 0.5 } },
   { 'HardShrink(0.85)', function() return nn.HardShrink(0.85) end,
      function(v) return math.abs(v) > 0.85 and v or 0 end, { -0.85, 0.85 } },
   { 'SoftShrink', function() return nn.SoftShrink() end,
      function(v) return v > 0.5 and v - 0.5 or (v < -0.5 and v + 0.5 or 0) end, { -0.5, 0.5 } },
   { 'SoftShrink(1.2)', function() return nn.SoftShrink(1.2) end,
      function(v) return v > 1.2 and v - 1.2 or (v < -1.2 and v + 1.2 or 0) end, { -1.2, 1.2 } },
   { 'SoftPlus', function() return nn.SoftPlus() end, function(v) return log1p(math.exp(v)) end, {}, 6 },
   -- beta = 3: inputs past 20/3 take the linear branch
   { 'SoftPlus(3)', function() return nn.SoftPlus(3) end,
      function(v) return 3 * v > 20 and v or log1p(math.exp(3 * v)) / 3 end, { 20 / 3 }, 9 },
   { 'SoftSign', function() return nn.SoftSign() end, function(v) return v / (1 + math.abs(v)) end, { 0 } },
   { 'LogSigmoid', function() return nn.LogSigmoid() end, function(v) return math.log(sigmoid(v)) end, {}, 8 },
   { 'ELU', function() return nn.ELU() end, function(v) return v > 0 and v or math.exp(v) - 1 end, { 0 } },
   { 'ELU(0.3)', function() return nn.ELU(0.3) end,
      function(v) return v > 0 and v or 0.3 * (math.exp(v) - 1) end, { 0 } },
   { 'PReLU', function() return nn.PReLU() end, function(v) return v > 0 and v or 0.25 * v end, { 0 } },
   { 'RReLU evaluate', function() local m = nn.RReLU(0.1, 0.3); m:evaluate(); return m end,
      function(v) return v > 0 and v or 0.2 * v end, { 0 } },
   { 'ReLU', function() return nn.ReLU() end, function(v) return math.max(v, 0) end, { 0 } },
}

describe('nn transfer functions', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('compute their float64 definitions, with gradients that agree with nn.Jacobian', function()
      for _, c in ipairs(pointwise) do
         local name, make, ref, kinks, range = c[1], c[2], c[3], c[4], c[5] or 3
         for _, sizes in ipairs { { 7 }, { 3, 5 }, { 2, 3, 5 } } do
            local m = make()
            local x = away(sizes, -range, range, kinks)
            local y = m:forward(x)
            assert.are.same(sizes, T.sizes(y), name)
            util.assert_close(y, map(x, ref), { atol = 1e-13, rtol = 1e-12 }, name .. ' forward')
            local err = nn.Jacobian.testJacobian(m, x)
            assert(err < TOL, ('%s: jacobian error %g'):format(name, err))
         end
      end
   end)

   it('give the same forward as PyTorch (torch.nn.functional)', function()
      local x = away({ 4, 6 }, -4, 4, { -1, 1, 0 })
      local xs = table.concat(map(x, function(v) return ('%.17g'):format(v) end), ' ')
      local py = ([[
try:
    import torch, torch.nn.functional as F
except ImportError:
    print("no torch"); raise SystemExit
x = torch.tensor([float(v) for v in "%s".split()], dtype=torch.float64).view(4, 6)
w = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], dtype=torch.float64)
outs = [F.threshold(x, 0.5, -3.0), F.hardtanh(x, -0.7, 1.5), F.relu6(x * 2), F.hardshrink(x, 0.6),
        F.softshrink(x, 0.6), F.softmin(x, dim=1), F.softplus(x, beta=2, threshold=3), F.softsign(x),
        F.logsigmoid(x * 10), F.prelu(x, w), F.elu(x, alpha=1.7), F.glu(x, dim=1), F.glu(x, dim=0)]
for o in outs:
    print(" ".join(repr(v) for v in o.flatten().tolist()))
]]):format(xs)
      local lines = util.python_lines(py)
      if lines[1] == 'no torch' or #lines == 0 then return pending('no /usr/bin/python3 with torch') end
      local prelu = nn.PReLU(6)
      prelu.weight:copy(torch.Tensor { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 })
      local sp = nn.SoftPlus(2)
      sp.threshold = 3
      local ours = {
         nn.Threshold(0.5, -3):forward(x), nn.HardTanh(-0.7, 1.5):forward(x), nn.ReLU6():forward(x * 2),
         nn.HardShrink(0.6):forward(x), nn.SoftShrink(0.6):forward(x), nn.SoftMin():forward(x), sp:forward(x),
         nn.SoftSign():forward(x), nn.LogSigmoid():forward(x * 10), prelu:forward(x), nn.ELU(1.7):forward(x),
         nn.GatedLinearUnit():forward(x), nn.GatedLinearUnit(1):forward(x),
      }
      assert.are.equal(#ours, #lines)
      for i, y in ipairs(ours) do
         local want = {}
         for v in lines[i]:gmatch('%S+') do want[#want + 1] = tonumber(v) end
         util.assert_close(y, want, { atol = 1e-12, rtol = 1e-12 }, 'PyTorch output ' .. i)
      end
   end)

   it('in place overwrite the input with the output and gradOutput with the gradient, as Torch7', function()
      local cases = {
         { 'Threshold', function(ip) return nn.Threshold(0.2, -1, ip) end, { 0.2 } },
         { 'HardTanh', function(ip) return nn.HardTanh(-0.5, 0.8, ip) end, { -0.5, 0.8 } },
         { 'ReLU6', function(ip) return nn.ReLU6(ip) end, { 0, 6 } },
         { 'ELU', function(ip) return nn.ELU(0.7, ip) end, { 0 } },
         { 'RReLU evaluate', function(ip) local m = nn.RReLU(0.2, 0.4, ip); m:evaluate(); return m end, { 0 } },
         { 'ReLU', function(ip) return nn.ReLU(ip) end, { 0 } },
         { 'LeakyReLU', function(ip) return nn.LeakyReLU(0.3, ip) end, { 0 } },
      }
      for _, c in ipairs(cases) do
         local name, make, kinks = c[1], c[2], c[3]
         local x = away({ 3, 7 }, -8, 8, kinks)
         local go = torch.randn(3, 7)
         local plain = make(false)
         local x0, go0 = x:clone(), go:clone()
         local y = plain:forward(x):clone()
         local gi = plain:backward(x, go):clone()
         assert(plain.output ~= x and plain.gradInput ~= go, name .. ': in place unasked')
         util.assert_close(x, x0, { atol = 0, rtol = 0 }, name .. ' leaves its input')
         util.assert_close(go, go0, { atol = 0, rtol = 0 }, name .. ' leaves gradOutput')
         local m = make(true)
         assert.is_true(m.inplace, name)
         local xi, goi = x:clone(), go:clone()
         local out = m:forward(xi)
         assert(out == xi and m.output == xi, name .. ': the output is not the input tensor')
         util.assert_close(xi, y, nil, name .. ' input overwritten with the output')
         local g = m:backward(xi, goi)
         assert(g == goi and m.gradInput == goi, name .. ': gradInput is not gradOutput')
         util.assert_close(goi, gi, nil, name .. ' gradOutput overwritten with the gradient')
      end
      -- RReLU in training: the noise drawn in place is the noise used by backward
      torch.manualSeed(11)
      local m = nn.RReLU(0.1, 0.5, true)
      local x = away({ 5, 9 }, -2, 2, { 0 })
      local xi = x:clone()
      m:forward(xi)
      util.assert_close(xi, torch.cmul(x, m.noise), nil, 'RReLU in place')
      local go = torch.randn(5, 9)
      local goi = go:clone()
      assert(m:backward(xi, goi) == goi)
      util.assert_close(goi, torch.cmul(go, m.noise), nil, 'RReLU in place backward')
   end)

   it('refuse in place where backward could not recover (Threshold value above the threshold)', function()
      util.assert_error(function() nn.Threshold(0, 1, true) end, 'nn.Threshold', 'in place')
      local m = nn.Threshold(0, -1, true)
      m.val = 2
      util.assert_error(function() m:forward(torch.randn(3)) end, 'nn.Threshold', 'in place')
      util.assert_error(function() nn.HardTanh(-1, 1, 1) end, 'nn.HardTanh', 'boolean')
   end)

   it('ReLU is a Threshold(0, 0) and ReLU, LeakyReLU take Torch7 constructor arguments', function()
      local r = nn.ReLU(true)
      assert.is_true(torch.isTypeOf(r, 'nn.Threshold'))
      assert.are.same({ 0, 0, true }, { r.threshold, r.val, r.inplace })
      assert.is_false(nn.ReLU().inplace)
      -- a ReLU whose threshold was changed (as Torch7 code may do) acts as that Threshold
      local x = away({ 11 }, -2, 2, { 0, 0.5 })
      local t = nn.ReLU()
      t.threshold, t.val = 0.5, 0.1
      util.assert_close(t:forward(x), nn.Threshold(0.5, 0.1):forward(x), nil, 'ReLU with a threshold')
      local l = nn.LeakyReLU(0.3, true)
      assert.are.same({ 0.3, true }, { l.negval, l.inplace })
      l = nn.LeakyReLU(true)
      assert.are.same({ 0.01, true }, { l.negval, l.inplace })
      -- Torch7 keeps a separate output for a negative slope rather than refusing
      l = nn.LeakyReLU(-0.5, true)
      assert.is_false(l.inplace)
      local xi = x:clone()
      l:forward(xi)
      util.assert_close(xi, x, nil, 'LeakyReLU(-0.5, true) leaves its input')
      assert.are.equal('nn.ELU (alpha:1.000000)', tostring(nn.ELU()))
      assert.are.equal('nn.RReLU (l:0.125000, u:0.333333)', tostring(nn.RReLU()))
   end)

   it('SoftMin and SpatialSoftMax normalise over the feature dimension of 1-d to 4-d inputs', function()
      -- sizes and the dimension normalised over, as Torch7's SoftMax: last of 1-d/2-d, first
      -- of 3-d, second of 4-d
      -- (2 x 3 x 17 x 19: 323 positions, more than one block of 256 columns in the C loop)
      for _, c in ipairs { { { 7 }, 1 }, { { 3, 5 }, 2 }, { { 5, 3, 3 }, 1 }, { { 2, 5, 3, 2 }, 2 },
         { { 2, 3, 17, 19 }, 2 } } do
         local sizes, dim = c[1], c[2]
         local x = away(sizes, -3, 3)
         for _, k in ipairs { { 'SoftMin', nn.SoftMin(), -1 }, { 'SpatialSoftMax', nn.SpatialSoftMax(), 1 } } do
            local name, m, sign = k[1], k[2], k[3]
            local y = m:forward(x)
            -- reference: exp(sign * x) normalised over the slices along dim, in float64
            local e = x:clone():mul(sign):exp()
            local want = e:clone():cdiv(e:sum(dim))
            util.assert_close(y, want, { atol = 1e-14, rtol = 1e-12 }, name .. ' ' .. #sizes .. '-d')
            local s = y:sum(dim)
            util.assert_close(s, map(s, function() return 1 end), { atol = 1e-14, rtol = 0 }, name .. ' sums')
            local err = nn.Jacobian.testJacobian(m, x)
            assert(err < TOL, ('%s %d-d: jacobian error %g'):format(name, #sizes, err))
         end
      end
   end)

   -- the bulk exp runs a vector of values at once (four doubles; eight floats for float32,
   -- half and bfloat16): a vector whose results are all normal takes a fast lane, any other
   -- (a far tail, inf, NaN in one lane) the general loop. A value must get the same bits either
   -- way. LogSoftMax's backward exps its saved output y (gi = go - exp(y) sum(go)), so rows of
   -- one vector that differ only in the last lane send the others down the two paths. Returns
   -- the rows (fast, slow), the fast rows' gradient, and grad(y, lane) with go one-hot at lane.
   local function exp_two_paths(Tensor, lanes, lo, hi, tails)
      local n, k = 3000, lanes - 1
      local fast, slow = Tensor(n, lanes), Tensor(n, lanes)
      fast:narrow(2, 1, k):uniform(lo, hi)
      for i = 1, n, 7 do fast[i][1] = (math.random() * 2 - 1) * 1e-3 end -- near 0 as well
      slow:narrow(2, 1, k):copy(fast:narrow(2, 1, k))
      fast:narrow(2, lanes, 1):uniform(-5, 0)
      for i = 1, n do slow[i][lanes] = tails[(i - 1) % #tails + 1] end
      local function grad(y, lane)
         local go = Tensor(n, lanes):zero()
         go:narrow(2, lane, 1):fill(1) -- sum(go) = 1 per row: gi = -exp(y) off that lane
         local m = nn.LogSoftMax():type(torch.type(y))
         m.output = y
         return m:updateGradInput(y, go):clone()
      end
      local a, b = grad(fast, lanes), grad(slow, lanes)
      for i = 1, n do
         for j = 1, k do
            local ga, gb = a[i][j], b[i][j]
            assert(ga == gb and ga == ga, ('%s exp(%.17g): %.17g in the fast lane, %.17g in the general loop'):format(
               torch.type(fast), fast[i][j], -ga, -gb))
         end
      end
      return fast, slow, a:narrow(2, 1, k), grad
   end

   it('the bulk exp gives a value the same bits in the fast lane and the general loop', function()
      local fast, _, a = exp_two_paths(torch.DoubleTensor, 4, -707, 5, { -1000, -745.5, 709.9, huge, -huge, 0 / 0 })
      -- and within an ulp or so of libm
      util.assert_close(a, fast:narrow(2, 1, 3):clone():exp():neg(), { rtol = 3e-16, atol = 0 }, 'fast lane vs exp')
   end)

   it('the float bulk exp: same bits in the fast lane and the general loop, within an ulp', function()
      local tails = { -1000, -100, -87.5, 88.5, 89, huge, -huge, 0 / 0 }
      local fast, slow, a, grad = exp_two_paths(torch.FloatTensor, 8, -86.5, 5, tails)
      -- |error| <= 1.01 ulp <= 1.01 * 2^-23 |exp(x)|, against exp of the float value in double
      local ref = fast:double():exp():neg():narrow(2, 1, 7)
      util.assert_close(a, ref, { rtol = 1.01 * 2 ^ -23, atol = 0 }, 'float fast lane vs exp')
      -- the tails themselves: subnormal (-100) and zero (-1000) results, overflow to inf, inf
      -- and NaN carried (go one-hot in lane 1 now: lane 8 is -exp(y))
      local c = grad(slow, 1)
      for k = 1, #tails - 1 do
         local got, e = -c[k][8], math.exp(tails[k])
         if e > 0x1.fffffep127 then e = huge end -- past float's largest: inf
         assert(got == e or math.abs(got - e) <= math.max(1.01 * 2 ^ -23 * e, 2 ^ -149),
            ('expf(%g) = %.9g, exact %.9g'):format(tails[k], got, e))
      end
      assert(c[#tails][8] ~= c[#tails][8], 'expf(NaN) is NaN')
   end)

   it('SoftMax and LogSoftMax match libm exp on long rows, tiny exps, and carry NaN', function()
      -- the C loops exp four values to a vector (within about an ulp of libm's) and reduce rows
      -- in 1024-value chunks: rows across chunk edges, float64, against Lua's math.exp
      local function ref(row)
         local mx = -huge
         for _, v in ipairs(row) do mx = math.max(mx, v) end
         local e, s = {}, 0
         for i, v in ipairs(row) do e[i] = math.exp(v - mx); s = s + e[i] end
         local sm, lsm = {}, {}
         for i, v in ipairs(row) do sm[i] = e[i] / s; lsm[i] = v - mx - math.log(s) end
         return sm, lsm
      end
      local rows = {}
      for _, n in ipairs { 1, 2, 5, 1023, 1024, 1025, 3001 } do
         local r = {}
         for i = 1, n do r[i] = (math.random() * 2 - 1) * 50 end
         rows[#rows + 1] = r
      end
      -- exps that underflow to subnormals and to zero, and one past double's range
      rows[#rows + 1] = { 0, -700.25, -720.5, -740.75, -745.1, -746, -1000, 3.5, -708.4 }
      rows[#rows + 1] = { 700, 709.5, 650, -10 }
      for k, row in ipairs(rows) do
         local x = torch.DoubleTensor(row)
         local sm, lsm = ref(row)
         local what = ('row %d (%d values)'):format(k, #row)
         util.assert_close(nn.SoftMax():forward(x), sm, { atol = 1e-320, rtol = 1e-13 }, 'SoftMax ' .. what)
         util.assert_close(nn.LogSoftMax():forward(x), lsm, { atol = 1e-12, rtol = 1e-14 }, 'LogSoftMax ' .. what)
         -- the backward: gi = go - exp(y) sum(go), from the module's own output
         local m = nn.LogSoftMax()
         local y = m:forward(x)
         local go = torch.DoubleTensor(#row):uniform(-1, 1)
         local gi, s = m:backward(x, go), go:sum()
         local want = {}
         for i = 1, #row do want[i] = go[i] - math.exp(y[i]) * s end
         util.assert_close(gi, want, { atol = 1e-14, rtol = 1e-13 }, 'LogSoftMax backward ' .. what)
      end
      -- over dim 2 of a 4-d input (columns in blocks of 512 to 2048 by the sizes and the thread
      -- count: 1500 columns in 2 or 3 blocks, 2500 in a full block of 2048 and a tail) the same
      -- numbers as the row path on the permuted copy, forward and backward, soft and log
      for _, size in ipairs { { 2, 7, 5, 300 }, { 4, 3, 5, 500 } } do
         local x4 = torch.DoubleTensor(unpack(size)):uniform(-20, 20)
         local g4 = torch.DoubleTensor(unpack(size)):uniform(-1, 1)
         local C = size[2]
         local function to_rows(t) return t:permute(1, 3, 4, 2):contiguous():view(-1, C) end
         for _, mk in ipairs { function() return nn.SpatialSoftMax() end,
            function() return nn.SpatialLogSoftMax() end } do
            local m = mk()
            local y = m:forward(x4)
            local rm = torch.type(m) == 'nn.SpatialSoftMax' and nn.SoftMax() or nn.LogSoftMax()
            local yr = rm:forward(to_rows(x4))
            local what = ('%s %s'):format(torch.type(m), table.concat(size, 'x'))
            util.assert_close(to_rows(y), yr, { atol = 1e-14, rtol = 1e-14 }, what .. ' blocked forward')
            util.assert_close(to_rows(m:backward(x4, g4)), rm:backward(to_rows(x4), to_rows(g4)),
               { atol = 1e-14, rtol = 1e-13 }, what .. ' blocked backward')
         end
      end
      -- a NaN anywhere in a row makes the whole row NaN, in every chunk
      local x = torch.DoubleTensor(2, 2500):uniform(-5, 5)
      x[1][2400] = 0 / 0
      for _, m in ipairs { nn.SoftMax(), nn.LogSoftMax() } do
         local y = m:forward(x)
         for j = 1, 2500 do
            assert(y[1][j] ~= y[1][j], ('%s: element %d of the NaN row is %g'):format(torch.type(m), j, y[1][j]))
            assert(y[2][j] == y[2][j], ('%s: element %d of the clean row is NaN'):format(torch.type(m), j))
         end
      end
   end)

   it('PReLU: one shared slope or one per plane (dim 1 of a vector, dim 2 of batches), learnt', function()
      local function ref(x, w, pd)
         local out = x:clone()
         local n = x:nElement()
         local f, o = util.flat(x), out:view(n)
         -- plane index of flat element i (row-major): (i-1) / stride(pd) mod size(pd)
         local st = pd and x:stride(pd) or 1
         for i = 1, n do
            local j = pd and (math.floor((i - 1) / st) % x:size(pd)) + 1 or 1
            o[i] = f[i] > 0 and f[i] or w[j] * f[i]
         end
         return out
      end
      for _, c in ipairs { { { 5 }, 1 }, { { 3, 5 }, 2 }, { { 2, 5, 3 }, 2 }, { { 2, 5, 3, 3 }, 2 } } do
         local sizes, pd = c[1], c[2]
         for _, shared in ipairs { true, false } do
            local m = shared and nn.PReLU() or nn.PReLU(5)
            m.weight:uniform(-0.5, 1)
            local x = away(sizes, -2, 2, { 0 })
            local what = ('PReLU%s %d-d'):format(shared and '' or '(5)', #sizes)
            util.assert_close(m:forward(x), ref(x, util.flat(m.weight), not shared and pd or nil), nil, what)
            local err = nn.Jacobian.testJacobian(m, x)
            assert(err < TOL, ('%s: jacobian error %g'):format(what, err))
            err = nn.Jacobian.testJacobianParameters(m, x, m.weight, m.gradWeight)
            assert(err < TOL, ('%s: weight jacobian error %g'):format(what, err))
            err = nn.Jacobian.testJacobianUpdateParameters(m, x, m.weight)
            assert(err < TOL, ('%s: weight update error %g'):format(what, err))
         end
      end
      -- accGradParameters accumulates scale * d/dw
      local m = nn.PReLU(5)
      local x, go = away({ 4, 5 }, -2, 2, { 0 }), torch.randn(4, 5)
      m:zeroGradParameters()
      m:backward(x, go, 0.5)
      local want = {}
      for j = 1, 5 do
         local s = 0
         for i = 1, 4 do if x[i][j] <= 0 then s = s + x[i][j] * go[i][j] end end
         want[j] = 0.5 * s
      end
      util.assert_close(m.gradWeight, want, nil, 'PReLU gradWeight')
      assert.are.same({ 0, 0.25 }, { nn.PReLU().nOutputPlane, nn.PReLU().weight[1] })
      util.assert_error(function() nn.PReLU(5):forward(torch.randn(3, 4)) end, 'nn.PReLU', '5 input planes', '3x4')
      util.assert_error(function() nn.PReLU(0) end, 'nn.PReLU', 'nOutputPlane')
   end)

   it('PReLU in one C pass: float32 and float64 against a float64 reference, odd sizes, non-contiguous', function()
      -- N x C x H x W with odd sizes, large enough for the threaded loops; read through a transpose
      local function ref(x, go, w, C)
         local xf, gf = util.flat(x), util.flat(go)
         local inner = #xf / (x:size(1) * C)
         local y, gi, gw = {}, {}, {}
         for c = 1, C do gw[c] = 0 end
         for i = 1, #xf do
            local c = C == 1 and 1 or math.floor((i - 1) / inner) % C + 1
            local v, g = xf[i], gf[i]
            y[i], gi[i] = v > 0 and v or w[c] * v, v > 0 and g or w[c] * g
            if v <= 0 then gw[c] = gw[c] + v * g end
         end
         return y, gi, gw
      end
      for _, C in ipairs { 7, 1 } do
         local x = torch.randn(5, 7, 11, 9):transpose(3, 4)
         local go = torch.randn(5, 7, 9, 11)
         local w = torch.Tensor(C):uniform(-0.5, 1)
         local y, gi, gw = ref(x, go, util.flat(w), C)
         for _, tp in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
            local tol = tp == 'torch.DoubleTensor' and { atol = 1e-12, rtol = 1e-12 } or { atol = 1e-6, rtol = 1e-6 }
            local m = (C > 1 and nn.PReLU(C) or nn.PReLU()):type(tp)
            m.weight:copy(w)
            local what = ('PReLU(%d) %s'):format(C, tp)
            local xt, got = x:type(tp), go:type(tp)
            util.assert_close(m:forward(xt), y, tol, what .. ' forward')
            m:zeroGradParameters()
            util.assert_close(m:backward(xt, got, 0.5), gi, tol, what .. ' gradInput')
            m:backward(xt, got, 0.5)   -- accumulates: twice half the gradient
            util.assert_close(m.gradWeight, gw, tp == 'torch.DoubleTensor' and { atol = 1e-10, rtol = 1e-12 }
               or { atol = 1e-3, rtol = 1e-5 }, what .. ' gradWeight')
         end
      end
      util.assert_error(function() nn.PReLU(7):forward(torch.randn(2, 6, 3)) end, 'nn.PReLU', '7 input planes')
   end)

   it('RReLU in training: one C pass, the draws of uniform() at the same seed, any thread count', function()
      local l, u = 0.15, 0.45
      for _, tp in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor' } do
         local x = torch.randn(3, 5, 37, 41):type(tp)   -- odd sizes, about 23k elements
         local m = nn.RReLU(l, u):type(tp)
         local seed = 1000 + math.random(1000)
         torch.manualSeed(seed)
         local ref = torch.Tensor():type(tp):resizeAs(x):uniform(l, u)   -- what t:uniform draws there
         local after = torch.uniform()                                 -- the stream moves by numel
         local nth = torch.getnumthreads()
         local ys, ns = {}, {}
         for k, th in ipairs { 1, 2 } do
            torch.setnumthreads(th)
            torch.manualSeed(seed)
            ys[k], ns[k] = m:forward(x):clone(), m.noise:clone()
            assert(torch.uniform() == after, tp .. ': the generator moved by the number of elements')
         end
         torch.setnumthreads(nth)
         util.assert_close(ys[2], ys[1], { atol = 0, rtol = 0 }, tp .. ' RReLU output, 1 vs 2 threads')
         util.assert_close(ns[2], ns[1], { atol = 0, rtol = 0 }, tp .. ' RReLU noise, 1 vs 2 threads')
         local xf, nf, rf, yf = util.flat(x), util.flat(ns[1]), util.flat(ref), util.flat(ys[1])
         local neg = 0
         for i = 1, #xf do
            if xf[i] > 0 then
               assert(nf[i] == 1 and yf[i] == xf[i], 'positive input changed')
            else
               neg = neg + 1
               assert(nf[i] == rf[i] and nf[i] >= l and nf[i] < u,
                  ('%s: slope %g, uniform drew %g'):format(tp, nf[i], rf[i]))
            end
         end
         assert(neg > 0.4 * #xf and neg < 0.6 * #xf)
         util.assert_close(ys[1], torch.cmul(x, ns[1]), { atol = 0, rtol = 0 }, tp .. ' RReLU output = x noise')
         local go = torch.randn(3, 5, 37, 41):type(tp)
         util.assert_close(m:backward(x, go), torch.cmul(go, m.noise), { atol = 0, rtol = 0 }, tp .. ' RReLU backward')
         -- evaluate: the mean slope, forward and backward, against float64
         m:evaluate()
         local xd, gd = x:double(), go:double()
         local yw, gw, xdf = {}, {}, util.flat(xd)
         for i, g in ipairs(util.flat(gd)) do
            local v = xdf[i]
            yw[i], gw[i] = v > 0 and v or v * (l + u) / 2, v > 0 and g or g * (l + u) / 2
         end
         local tol = tp == 'torch.DoubleTensor' and { atol = 1e-14, rtol = 1e-14 } or { atol = 1e-6, rtol = 1e-6 }
         util.assert_close(m:forward(x), yw, tol, tp .. ' RReLU evaluate')
         util.assert_close(m:backward(x, go), gw, tol, tp .. ' RReLU evaluate backward')
      end
   end)

   it('RReLU draws slopes from U(l, u) at a fixed seed, and uses their mean in evaluate()', function()
      local l, u, n = 0.1, 0.4, 6000
      local x = torch.Tensor(n):uniform(-2, -0.1)
      x:narrow(1, 1, 100):uniform(0.1, 2)   -- a few positive inputs pass unchanged
      local m = nn.RReLU(l, u)
      torch.manualSeed(1234)
      local y = m:forward(x):clone()
      local xf, yf, nf = util.flat(x), util.flat(y), util.flat(m.noise)
      local sum, sum2, bins = 0, 0, { 0, 0, 0, 0 }
      for i = 1, n do
         if xf[i] > 0 then
            assert(yf[i] == xf[i] and nf[i] == 1, 'positive input changed')
         else
            local a = yf[i] / xf[i]
            assert(a >= l and a <= u, ('slope %g outside [%g, %g]'):format(a, l, u))
            assert(math.abs(a - nf[i]) < 1e-12)
            sum, sum2 = sum + a, sum2 + a * a
            local b = math.min(4, math.floor((a - l) / (u - l) * 4) + 1)
            bins[b] = bins[b] + 1
         end
      end
      local k = n - 100
      local mean, var = sum / k, sum2 / k - (sum / k) ^ 2
      -- mean within 5 standard errors, variance (u - l)^2 / 12 within 10 %, each quarter near k/4
      assert(math.abs(mean - (l + u) / 2) < 5 * (u - l) / math.sqrt(12 * k), 'mean slope ' .. mean)
      assert(math.abs(var / ((u - l) ^ 2 / 12) - 1) < 0.1, 'slope variance ' .. var)
      for b = 1, 4 do
         assert(math.abs(bins[b] - k / 4) < 5 * math.sqrt(k * 3 / 16), 'quarter ' .. b .. ': ' .. bins[b])
      end
      -- the same seed draws the same slopes; backward multiplies by them
      torch.manualSeed(1234)
      util.assert_close(nn.RReLU(l, u):forward(x), y, { atol = 0, rtol = 0 }, 'RReLU at the same seed')
      torch.seed()   -- later inputs fresh again
      local go = torch.randn(n)
      util.assert_close(m:backward(x, go), torch.cmul(go, m.noise), nil, 'RReLU backward in training')
      -- evaluate(): slope (l + u) / 2, also in backward
      m:evaluate()
      local xs = away({ 9 }, -2, 2, { 0 })
      util.assert_close(m:forward(xs), map(xs, function(v) return v > 0 and v or 0.25 * v end), nil, 'RReLU evaluate')
      assert(nn.Jacobian.testJacobian(m, xs) < TOL)
      -- l == u behaves as LeakyReLU in training too
      local lk = nn.RReLU(0.2, 0.2)
      util.assert_close(lk:forward(xs), map(xs, function(v) return v > 0 and v or 0.2 * v end), nil, 'RReLU(l == u)')
      assert(nn.Jacobian.testJacobian(lk, xs) < TOL)
      util.assert_error(function() nn.RReLU(0.5, 0.2) end, 'nn.RReLU', 'l <= u')
   end)

   it('GatedLinearUnit halves the last dimension (or dim) into a .* sigmoid(b)', function()
      for _, c in ipairs { { { 6 }, nil }, { { 3, 4 }, nil }, { { 4, 3 }, 1 }, { { 3, 2, 5 }, 2 },
         { { 2, 3, 4 }, nil } } do
         local sizes, dim = c[1], c[2]
         local m = nn.GatedLinearUnit(dim)
         local x = away(sizes, -3, 3)
         local d = dim or #sizes
         local h = sizes[d] / 2
         local a, b = x:narrow(d, 1, h), x:narrow(d, h + 1, h)
         local fa, fb = util.flat(a), util.flat(b)
         local want = {}
         for i = 1, #fa do want[i] = fa[i] * sigmoid(fb[i]) end
         local y = m:forward(x)
         assert.are.same(T.sizes(a), T.sizes(y))
         util.assert_close(y, want, { atol = 1e-14, rtol = 1e-12 }, 'GatedLinearUnit ' .. #sizes .. '-d')
         local err = nn.Jacobian.testJacobian(m, x)
         assert(err < TOL, ('GatedLinearUnit %d-d: jacobian error %g'):format(#sizes, err))
      end
      util.assert_error(function() nn.GatedLinearUnit():forward(torch.randn(3, 5)) end, 'nn.GatedLinearUnit', 'even',
         '3x5')
      util.assert_error(function() nn.GatedLinearUnit(3):forward(torch.randn(3, 4)) end, 'nn.GatedLinearUnit', 'dim 3')
   end)

   it('SoftPlus takes the linear branch past its threshold and stays finite for large inputs', function()
      local m = nn.SoftPlus(2)
      local x = torch.Tensor { -800, -30, 9.9, 10.1, 400, 1e5 }
      local y = m:forward(x)
      util.assert_close(y, { 0, log1p(math.exp(-60)) / 2, log1p(math.exp(19.8)) / 2, 10.1, 400, 1e5 },
         { atol = 1e-300, rtol = 1e-12 }, 'SoftPlus(2) extremes')
      local g = m:backward(x, torch.ones(6))
      util.assert_close(g, { 0, sigmoid(-60), sigmoid(19.8), 1, 1, 1 }, { atol = 1e-300, rtol = 1e-9 },
         'SoftPlus slopes')
      util.assert_close(nn.LogSigmoid():forward(torch.Tensor { -800, 800, -40 }), { -800, 0, -40 - math.exp(-40) },
         { atol = 1e-300, rtol = 1e-14 }, 'LogSigmoid extremes')
   end)

   it('ELU in float32 (its own branch-free exp) stays within 3e-7 (2.5 float ulps) of float64 '
      .. 'and passes NaN on', function()
      local x = torch.randn(20000):mul(6)
      x[1], x[2], x[3], x[4], x[5] = -1e-30, -1e-6, -100, 0, -0.3466
      -- the float64 reference sees the same float32-rounded input, so only the kernel's error counts
      x = x:float():double()
      for _, a in ipairs { 1, 0.3 } do
         local yd = nn.ELU(a):forward(x)
         local mf = nn.ELU(a):float()
         local yf = mf:forward(x:float()):double()
         local rel = (yf - yd):abs():cdiv(torch.abs(yd):add(1e-300)):max()
         assert.is_true(rel < 3e-7, ('ELU(%g) float32 relative error %g'):format(a, rel))
         local gd = nn.ELU(a)
         gd:forward(x)
         local dy = torch.randn(20000)
         local gf = mf:backward(x:float(), dy:float()):double()
         util.assert_close(gf, gd:backward(x, dy), { atol = 1e-6, rtol = 1e-6 }, 'ELU float32 gradient')
      end
      local m = nn.ELU():float()
      local y = m:forward(torch.FloatTensor { 0 / 0, 1, -1 })
      assert.is_true(y[1] ~= y[1], 'a NaN input gives a NaN output')
      local g = m:backward(torch.FloatTensor { 0 / 0, 1, -1 }, torch.FloatTensor { 1, 1, 1 })
      assert.is_true(g[1] ~= g[1], 'and a NaN gradient')
   end)

   it('name the module and the problem on bad input', function()
      local mods = { nn.Threshold(), nn.HardTanh(), nn.ReLU6(), nn.HardShrink(), nn.SoftShrink(), nn.SoftPlus(),
         nn.SoftSign(), nn.LogSigmoid(), nn.PReLU(), nn.RReLU(), nn.ELU(), nn.SoftMin(), nn.GatedLinearUnit() }
      for _, m in ipairs(mods) do
         local name = torch.type(m)
         util.assert_error(function() m:forward('x') end, name, 'input')
         if name ~= 'nn.SoftMin' then
            m:forward(torch.randn(3, 4))
            util.assert_error(function() m:backward(torch.randn(3, 4), torch.randn(5)) end, name, 'gradOutput', '5')
         end
      end
      util.assert_error(function() nn.HardTanh(1, -1) end, 'nn.HardTanh', 'max_value')
      util.assert_error(function() nn.SoftShrink(-1) end, 'nn.SoftShrink', 'lambda')
      util.assert_error(function() nn.SoftPlus(0) end, 'nn.SoftPlus', 'beta')
      util.assert_error(function() nn.Threshold('a') end, 'nn.Threshold')
   end)

   it('run in float32 like in float64, and clearState empties their buffers', function()
      for _, c in ipairs(pointwise) do
         local m = c[2]()
         local x = away({ 3, 5 }, -3, 3, c[4])
         local want = m:forward(x):clone()
         m:float()
         local y = m:forward(x:float())
         assert.are.equal('torch.FloatTensor', y:type(), c[1])
         util.assert_close(y, want, { atol = 1e-6, rtol = 1e-5 }, c[1] .. ' in float32')
         m:backward(x:float(), torch.FloatTensor(3, 5):fill(1))
         m:clearState()
         assert.are.equal(0, m.output:nElement(), c[1])
      end
   end)
end)
