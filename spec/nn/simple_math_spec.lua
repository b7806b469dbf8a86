-- nn simple layers (group a1): Abs, Square, Sqrt, Exp, Log, Power, Clamp, Add, Mul, CMul, CAdd,
-- Euclidean, WeightedEuclidean, LookupTable, Normalize, MM, MV. Forward against plain-Lua
-- float64 references on fresh random inputs, gradients (input and parameters) against
-- nn.Jacobian's central differences, batch against non-batch forms, Torch7's init ranges,
-- and the errors for bad input.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local TOL = 1e-6
local J = nn.Jacobian
local flat = util.flat
local close = util.assert_close
local dtol = { atol = 1e-12, rtol = 1e-10 }

local function randn(...) return torch.randn(...) end

-- every element of t lies in [-r, r] and they are not all equal (a real draw)
local function in_range(t, r, what)
   local v = flat(t)
   local lo, hi = math.huge, -math.huge
   for _, x in ipairs(v) do lo, hi = math.min(lo, x), math.max(hi, x) end
   assert(lo >= -r and hi <= r, ('%s: values in [%g, %g], expected within +-%g'):format(what, lo, hi, r))
   assert(hi > lo, what .. ': all values equal')
end

describe('nn simple layers (a1)', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   describe('elementwise', function()
      local cases = {
         { 'Abs', function() return nn.Abs() end, math.abs, -2, 2 },
         { 'Square', function() return nn.Square() end, function(x) return x * x end, -2, 2 },
         { 'Sqrt', function() return nn.Sqrt() end, math.sqrt, 0.1, 2 },
         { 'Exp', function() return nn.Exp() end, math.exp, -2, 2 },
         { 'Log', function() return nn.Log() end, math.log, 0.1, 2 },
         { 'Power', function() return nn.Power(2.5) end, function(x) return x ^ 2.5 end, 0.1, 2 },
         { 'Power(-1.5)', function() return nn.Power(-1.5) end, function(x) return x ^ -1.5 end, 0.3, 2 },
         { 'Clamp', function() return nn.Clamp(-0.4, 0.7) end, function(x) return math.min(0.7, math.max(-0.4, x)) end,
            -2, 2 },
      }
      for _, c in ipairs(cases) do
         local name, make, f, lo, hi = c[1], c[2], c[3], c[4], c[5]
         it(name .. ': forward against a Lua reference, gradient against differences', function()
            local m = make()
            local x = torch.Tensor(3, 5):uniform(lo, hi)
            local ref = {}
            for i, v in ipairs(flat(x)) do ref[i] = f(v) end
            close(m:forward(x), ref, dtol, name .. ' output')
            assert.are.same({ 3, 5 }, m.output:size():totable())
            -- a non-contiguous input gives the same values
            local xt = x:t():contiguous():t()
            close(m:forward(xt), ref, dtol, name .. ' output of a strided input')
            assert(J.testJacobian(m, torch.Tensor(2, 3, 4), lo, hi) < TOL, name .. ' jacobian')
            util.assert_error(function() m:backward(x, torch.Tensor(5, 3)) end, 'nn.' .. name:match('%a+'), '5x3',
               '3x5')
            util.assert_error(function() m:forward('x') end, 'nn.' .. name:match('%a+'), 'input')
         end)
      end

      it('Sqrt gives gradient 0 (not NaN) at 0, and adds eps', function()
         local m = nn.Sqrt()
         local x = torch.Tensor(6):uniform(0.5, 2)
         x[2], x[5] = 0, 0
         m:forward(x)
         local g = flat(m:backward(x, torch.Tensor(6):uniform(-1, 1)))
         assert.are.equal(0, g[2])
         assert.are.equal(0, g[5])
         assert(g[1] == g[1] and g[1] ~= 0)
         local e = nn.Sqrt(0.25)
         close(e:forward(x), (function()
            local r = {}
            for i, v in ipairs(flat(x)) do r[i] = math.sqrt(v + 0.25) end
            return r
         end)(), dtol, 'Sqrt(eps)')
      end)

      it('Clamp passes the gradient only strictly inside its bounds, keeps HardTanh fields', function()
         local m = nn.Clamp(-0.5, 0.5)
         assert.are.equal(-0.5, m.min_val)
         assert.are.equal(0.5, m.max_val)
         local x = torch.Tensor { -1, -0.5, 0.2, 0.5, 3 }
         local go = torch.Tensor(5):uniform(1, 2)
         m:forward(x)
         local g = flat(m:backward(x, go))
         close(g, { 0, 0, go[3], 0, 0 }, dtol, 'Clamp gradient')
         util.assert_error(function() nn.Clamp(1, 1) end, 'nn.Clamp', 'max_value')
         util.assert_error(function() nn.Power() end, 'nn.Power')
      end)
   end)

   describe('Add, Mul, CMul, CAdd', function()
      it('Add: vector, batch and scalar forms, Torch7 init, jacobians', function()
         local m = nn.Add(5)
         in_range(m.bias, 1 / math.sqrt(5), 'Add bias')
         m:reset(0.1)
         in_range(m.bias, 0.1 * math.sqrt(3), 'Add bias after reset(0.1)')
         m.bias:uniform(-1, 1)
         local x = randn(3, 5)
         local b, xv, ref = flat(m.bias), flat(x), {}
         for i = 1, 15 do ref[i] = xv[i] + b[(i - 1) % 5 + 1] end
         close(m:forward(x), ref, dtol, 'Add batch')
         close(m:forward(x[2]), { unpack(ref, 6, 10) }, dtol, 'Add vector')
         -- a batch of 2-D samples of 5 elements
         close(m:forward(x:view(3, 1, 5)), ref, dtol, 'Add 3x1x5')
         for _, shape in ipairs { { 5 }, { 4, 5 } } do
            local xi = torch.Tensor(torch.LongStorage(shape))
            assert(J.testJacobian(m, xi) < TOL)
            assert(J.testJacobianParameters(m, xi, m.bias, m.gradBias) < TOL)
            assert(J.testJacobianUpdateParameters(m, xi, m.bias) < TOL)
         end
         local s = nn.Add(7, true)
         assert.are.equal(1, s.bias:nElement())
         local xs = randn(3, 4)
         local sb = s.bias[1]
         local rs = {}
         for i, v in ipairs(flat(xs)) do rs[i] = v + sb end
         close(s:forward(xs), rs, dtol, 'Add scalar')
         assert(J.testJacobianParameters(s, xs, s.bias, s.gradBias) < TOL)
         util.assert_error(function() m:forward(randn(3, 4)) end, 'nn.Add', '3x4')
         util.assert_error(function() m:forward(torch.FloatTensor(5)) end, 'nn.Add', 'FloatTensor')
      end)

      it('Mul: one learned scale', function()
         local m = nn.Mul()
         local w1, w2 = m.weight[1], nn.Mul().weight[1]
         assert(math.abs(w1) <= 1 and math.abs(w2) <= 1 and w1 ~= w2, 'Mul weight: uniform in +-1')
         local x = randn(4, 3)
         local w = m.weight[1]
         local ref = {}
         for i, v in ipairs(flat(x)) do ref[i] = w * v end
         close(m:forward(x), ref, dtol, 'Mul')
         assert(J.testJacobian(m, x) < TOL)
         assert(J.testJacobianParameters(m, x, m.weight, m.gradWeight) < TOL)
         assert(J.testJacobianUpdateParameters(m, x, m.weight) < TOL)
      end)

      it('CMul: same size, expanded size-1 dimensions and batches', function()
         local m = nn.CMul(3, 1)
         assert.are.same({ 3, 1 }, m.weight:size():totable())
         in_range(m.weight, 1 / math.sqrt(3), 'CMul weight')
         assert.are.same({ 3, 1 }, nn.CMul(torch.LongStorage { 3, 1 }).weight:size():totable())
         local x = randn(3, 5)
         local w, xv, ref = flat(m.weight), flat(x), {}
         for i = 1, 15 do ref[i] = xv[i] * w[math.floor((i - 1) / 5) + 1] end
         close(m:forward(x), ref, dtol, 'CMul 3x1 on 3x5')
         assert(J.testJacobian(m, x) < TOL)
         assert(J.testJacobianParameters(m, x, m.weight, m.gradWeight) < TOL)
         local b = nn.CMul(2, 3)
         local xb = randn(4, 2, 3)
         local wb, xbv, rb = flat(b.weight), flat(xb), {}
         for i = 1, 24 do rb[i] = xbv[i] * wb[(i - 1) % 6 + 1] end
         close(b:forward(xb), rb, dtol, 'CMul batch')
         close(b:forward(xb[3]), { unpack(rb, 13, 18) }, dtol, 'CMul one sample')
         close(b:forward(xb:view(4, 6)), rb, dtol, 'CMul batch of flat samples')
         for _, xi in ipairs { xb, xb[1]:clone(), torch.Tensor(6) } do
            assert(J.testJacobian(b, xi) < TOL)
            assert(J.testJacobianParameters(b, xi, b.weight, b.gradWeight) < TOL)
            assert(J.testJacobianUpdateParameters(b, xi, b.weight) < TOL)
         end
         util.assert_error(function() b:forward(randn(4, 5)) end, 'nn.CMul', '4x5', '2x3')
         util.assert_error(function() nn.CMul(0) end, 'nn.CMul', 'size 1')
      end)

      it('CAdd: same size, expanded size-1 dimensions and batches', function()
         local m = nn.CAdd(1, 4)
         in_range(m.bias, 0.5, 'CAdd bias')
         local x = randn(3, 4)
         local b, xv, ref = flat(m.bias), flat(x), {}
         for i = 1, 12 do ref[i] = xv[i] + b[(i - 1) % 4 + 1] end
         close(m:forward(x), ref, dtol, 'CAdd 1x4 on 3x4')
         assert(J.testJacobian(m, x) < TOL)
         assert(J.testJacobianParameters(m, x, m.bias, m.gradBias) < TOL)
         local c = nn.CAdd(5)
         for _, xi in ipairs { torch.Tensor(5), torch.Tensor(3, 5) } do
            assert(J.testJacobian(c, xi) < TOL)
            assert(J.testJacobianParameters(c, xi, c.bias, c.gradBias) < TOL)
            assert(J.testJacobianUpdateParameters(c, xi, c.bias) < TOL)
         end
         util.assert_error(function() c:forward(randn(3, 4)) end, 'nn.CAdd', '3x4')
      end)
   end)

   describe('Euclidean and WeightedEuclidean', function()
      -- y[b][j] = sqrt(sum_i (c[i][j] (x[b][i] - w[i][j]))^2), c = nil for Euclidean
      local function ref(x, w, c)
         local X, W, Cv = x:totable(), w:totable(), c and c:totable()
         local out = {}
         for b = 1, #X do
            for j = 1, #W[1] do
               local s = 0
               for i = 1, #W do
                  local d = (X[b][i] - W[i][j]) * (Cv and Cv[i][j] or 1)
                  s = s + d * d
               end
               out[#out + 1] = math.sqrt(s)
            end
         end
         return out
      end

      it('Euclidean: distances, batch rows, jacobians, init, zero distance', function()
         local m = nn.Euclidean(5, 3)
         assert.are.same({ 5, 3 }, m.weight:size():totable())
         in_range(m.weight, 1 / math.sqrt(5), 'Euclidean weight')
         local x = randn(4, 5)
         local r = ref(x, m.weight)
         close(m:forward(x), r, dtol, 'Euclidean batch')
         close(m:forward(x[2]), { unpack(r, 4, 6) }, dtol, 'Euclidean vector')
         for _, xi in ipairs { torch.Tensor(5), torch.Tensor(4, 5) } do
            assert(J.testJacobian(m, xi) < TOL)
            assert(J.testJacobianParameters(m, xi, m.weight, m.gradWeight) < TOL)
            assert(J.testJacobianUpdateParameters(m, xi, m.weight) < TOL)
         end
         -- an input on a centre: gradient 0 there, never NaN
         local xc = m.weight:select(2, 2):clone()
         m:forward(xc)
         assert.are.equal(0, m.output[2])
         m:zeroGradParameters()
         local gi = m:backward(xc, torch.Tensor { 0, 1, 0 })
         close(gi, { 0, 0, 0, 0, 0 }, dtol, 'gradInput at a centre')
         close(m.gradWeight, torch.zeros(5, 3), dtol, 'gradWeight at a centre')
         util.assert_error(function() m:forward(randn(4, 6)) end, 'nn.Euclidean', '4x6')
         util.assert_error(function() m:forward(randn(2, 2, 5)) end, 'nn.Euclidean', '2x2x5')
      end)

      it('WeightedEuclidean: weighted distances, both parameters, init, update', function()
         local m = nn.WeightedEuclidean(4, 3)
         in_range(m.weight, 0.5, 'WeightedEuclidean weight')
         close(m.diagCov, torch.ones(4, 3), dtol, 'diagCov init')
         m.diagCov:uniform(0.5, 1.5)
         local x = randn(5, 4)
         local r = ref(x, m.weight, m.diagCov)
         close(m:forward(x), r, dtol, 'WeightedEuclidean batch')
         close(m:forward(x[5]), { unpack(r, 13, 15) }, dtol, 'WeightedEuclidean vector')
         local p, g = m:parameters()
         assert(p[1] == m.weight and p[2] == m.diagCov and g[2] == m.gradDiagCov)
         for _, xi in ipairs { torch.Tensor(4), torch.Tensor(5, 4) } do
            assert(J.testJacobian(m, xi) < TOL)
            assert(J.testJacobianParameters(m, xi, m.weight, m.gradWeight) < TOL)
            assert(J.testJacobianParameters(m, xi, m.diagCov, m.gradDiagCov) < TOL)
            -- the update moves both parameters: check them together (each restored per column)
            assert(J.testJacobianUpdateParameters(m, xi, { m.weight, m.diagCov }) < TOL)
         end
         -- accGradParameters honours scale for both parameters
         m:zeroGradParameters()
         m:forward(x)
         local go = randn(5, 3)
         m:backward(x, go, 1)
         local gw, gc = m.gradWeight:clone(), m.gradDiagCov:clone()
         m:zeroGradParameters()
         m:backward(x, go, 0.5)
         close(m.gradWeight, gw:mul(0.5), dtol, 'scaled gradWeight')
         close(m.gradDiagCov, gc:mul(0.5), dtol, 'scaled gradDiagCov')
      end)
   end)

   describe('LookupTable', function()
      local function rows_of(w, idx)
         local W, out = w:totable(), {}
         for _, i in ipairs(idx) do for _, v in ipairs(W[i]) do out[#out + 1] = v end end
         return out
      end

      it('looks up rows for vectors and batch matrices of any index type', function()
         local m = nn.LookupTable(7, 3)
         assert.are.same({ 7, 3 }, m.weight:size():totable())
         local idx = { 1, 7, 3, 3, 6 }
         close(m:forward(torch.LongTensor(idx)), rows_of(m.weight, idx), dtol, 'vector of indices')
         assert.are.same({ 5, 3 }, m.output:size():totable())
         local bi = { { 2, 5, 7 }, { 7, 1, 2 } }
         local out = m:forward(torch.Tensor(bi))   -- double indices, as Torch7 accepts
         assert.are.same({ 2, 3, 3 }, out:size():totable())
         close(out, rows_of(m.weight, { 2, 5, 7, 7, 1, 2 }), dtol, 'batch of indices')
         close(m:forward(torch.IntTensor(bi):t()), rows_of(m.weight, { 2, 7, 5, 1, 7, 2 }), dtol,
            'strided IntTensor indices')
         local gi = m:backward(torch.LongTensor(idx), randn(5, 3))
         assert.are.equal('torch.LongTensor', gi:type())
         assert.are.same({ 0, 0, 0, 0, 0 }, flat(gi))
         util.assert_error(function() m:forward(torch.LongTensor { 1, 8 }) end, 'nn.LookupTable', '1..7', '8')
         util.assert_error(function() m:forward(torch.LongTensor { 0 }) end, 'nn.LookupTable', '1..7')
         util.assert_error(function() m:forward(torch.Tensor { 1.5 }) end, 'nn.LookupTable', 'whole')
         util.assert_error(function() m:forward(torch.LongTensor(2, 2, 2):fill(1)) end, 'nn.LookupTable', '2x2x2')
      end)

      it('accumulates gradients on repeated rows (differences), skips padding, scales by frequency', function()
         local m = nn.LookupTable(6, 4)
         local x = torch.LongTensor { { 2, 5, 2 }, { 6, 2, 1 } }
         local jb = J.backward(m, x, m.weight, m.gradWeight)
         local jf = J.forward(m, x, m.weight)
         assert((jb - jf):abs():max() < TOL)
         assert(jb:abs():max() > 0.5)
         -- Torch7's checks: they redraw the indices (uniform on a LongTensor truncates) and weights
         local xr = torch.LongTensor(3, 5)
         assert(J.testJacobianParameters(m, xr, m.weight, m.gradWeight, 1, 6.999) < TOL)
         assert(J.testJacobianUpdateParameters(m, xr, m.weight, 1, 6.999) < TOL)
         -- by hand: gradWeight row k = scale * sum of gradOutput rows with index k
         local go = randn(2, 3, 4)
         local G = go:view(6, 4):totable()
         local function expect(pad, freq, scale)
            local xs, cnt, e = flat(x), {}, {}
            for _, k in ipairs(xs) do cnt[k] = (cnt[k] or 0) + 1 end
            for k = 1, 6 do for c = 1, 4 do e[(k - 1) * 4 + c] = 0 end end
            for r, k in ipairs(xs) do
               if k ~= pad then
                  for c = 1, 4 do
                     e[(k - 1) * 4 + c] = e[(k - 1) * 4 + c] + scale * G[r][c] / (freq and cnt[k] or 1)
                  end
               end
            end
            return e
         end
         m:zeroGradParameters()
         m:forward(x)
         m:backward(x, go, 0.5)
         close(m.gradWeight, expect(nil, false, 0.5), dtol, 'gradWeight')
         m:setPadding(2):zeroGradParameters()
         m:backward(x, go)
         close(m.gradWeight, expect(2, false, 1), dtol, 'gradWeight with padding 2')
         local p = nn.LookupTable(6, 4, 5):scaleGradByFreq()
         p:forward(x)
         p:backward(x, go, 2)
         close(p.gradWeight, expect(5, true, 2), dtol, 'gradWeight scaled by frequency')
         util.assert_error(function() m:backward(x, randn(6, 3)) end, 'nn.LookupTable', '6x3', '2x3x4')
      end)

      it('maxNorm renormalises the rows it reads (normType 2 and 1), init N(0, 1)', function()
         local m = nn.LookupTable(200, 5)
         local w = flat(m.weight)
         local s, s2 = 0, 0
         for _, v in ipairs(w) do s, s2 = s + v, s2 + v * v end
         local mean = s / #w
         local sd = math.sqrt(s2 / #w - mean * mean)
         assert(math.abs(mean) < 0.2 and sd > 0.8 and sd < 1.2, ('N(0,1) draw: mean %g sd %g'):format(mean, sd))
         for _, nt in ipairs { 2, 1 } do
            local lt = nn.LookupTable(6, 3, 0, 0.9, nt)
            lt.weight:uniform(-2, 2)
            lt.weight[4]:mul(0.1)   -- a row under the limit stays as it is
            local before = lt.weight:clone()
            local idx = torch.LongTensor { 1, 4, 1, 5 }
            local out = lt:forward(idx)
            for k = 1, 6 do
               local row = before[k]
               local n = row:norm(nt)
               local want = row:clone()
               if (k == 1 or k == 4 or k == 5) and n > 0.9 then want:mul(0.9 / (n + 1e-7)) end
               close(lt.weight[k], want, dtol, ('row %d, normType %d'):format(k, nt))
            end
            close(out, rows_of(lt.weight, { 1, 4, 1, 5 }), dtol, 'renormed output')
            assert(out[1]:norm(nt) <= 0.9 + 1e-9)
         end
      end)
   end)

   describe('Normalize', function()
      local function ref(x, p, eps)
         local out = {}
         for _, row in ipairs(x:totable()) do
            local n = 0
            if p == math.huge then
               for _, v in ipairs(row) do n = math.max(n, math.abs(v)) end
               n = n + eps
            else
               for _, v in ipairs(row) do n = n + math.abs(v) ^ p end
               n = (n + eps) ^ (1 / p)
            end
            for _, v in ipairs(row) do out[#out + 1] = v / n end
         end
         return out
      end

      for _, p in ipairs { 1, 1.5, 2, 3, math.huge } do
         it(('p = %g: unit norms, batch and vector, jacobian'):format(p), function()
            local m = nn.Normalize(p)
            local x = randn(3, 5)
            local r = ref(x, p, 1e-10)
            close(m:forward(x), r, dtol, 'Normalize batch')
            close(m:forward(x[3]), { unpack(r, 11, 15) }, dtol, 'Normalize vector')
            assert.are.same({ 5 }, m.output:size():totable())
            assert(math.abs(m.output:norm(p) - 1) < 1e-8)
            assert(J.testJacobian(m, torch.Tensor(4, 7)) < TOL)
            assert(J.testJacobian(m, torch.Tensor(7)) < TOL)
         end)
      end

      it('long rows (lane sums and a tail), float32 and half against float64, transposed input', function()
         for _, p in ipairs { 1, 2, 2.5, math.huge } do
            local x = randn(5, 37)
            local r = ref(x, p, 1e-10)
            close(nn.Normalize(p):forward(x), r, dtol, 'Normalize 5x37')
            close(nn.Normalize(p):forward(x:float()), r, { atol = 1e-6, rtol = 1e-6 }, 'Normalize float32')
            close(nn.Normalize(p):forward(x:half()), r, { atol = 2e-3, rtol = 2e-3 }, 'Normalize half')
            local xt = randn(19, 3):t()
            close(nn.Normalize(p):forward(xt), ref(xt:contiguous(), p, 1e-10), dtol, 'Normalize transposed')
            assert(J.testJacobian(nn.Normalize(p), torch.Tensor(3, 19)) < TOL, 'jacobian 3x19')
            -- float32 gradient against the float64 one
            local m64, m32 = nn.Normalize(p), nn.Normalize(p)
            local go = randn(5, 37)
            m64:forward(x)
            m32:forward(x:float())
            close(m32:backward(x:float(), go:float()), util.flat(m64:backward(x, go)), { atol = 1e-5, rtol = 1e-5 },
               'Normalize float32 gradient')
         end
         util.assert_error(function() nn.Normalize(2):backward(randn(2, 3), randn(3, 2)) end, 'nn.Normalize', '3x2')
      end)

      it('eps, printing and errors', function()
         local x = randn(2, 3)
         close(nn.Normalize(2, 0.5):forward(x), ref(x, 2, 0.5), dtol, 'Normalize eps')
         assert.are.equal('nn.Normalize(2)', tostring(nn.Normalize(2)))
         assert.are.equal('nn.Normalize(1.500000)', tostring(nn.Normalize(1.5)))
         util.assert_error(function() nn.Normalize(0) end, 'nn.Normalize', 'p')
         util.assert_error(function() nn.Normalize(2):forward(randn(2, 2, 2)) end, 'nn.Normalize', '2x2x2')
      end)
   end)

   describe('MM and MV', function()
      local function matmul(A, B)   -- Lua tables
         local C = {}
         for i = 1, #A do
            C[i] = {}
            for j = 1, #B[1] do
               local s = 0
               for k = 1, #B do s = s + A[i][k] * B[k][j] end
               C[i][j] = s
            end
         end
         return C
      end
      local function tr(A)
         local T = {}
         for i = 1, #A[1] do T[i] = {} for j = 1, #A do T[i][j] = A[j][i] end end
         return T
      end
      local function flatten(M, out)
         out = out or {}
         for _, row in ipairs(M) do for _, v in ipairs(row) do out[#out + 1] = v end end
         return out
      end

      for _, ta in ipairs { false, true } do
         for _, tb in ipairs { false, true } do
            it(('MM(%s, %s): matrices and batches'):format(tostring(ta), tostring(tb)), function()
               local m = nn.MM(ta, tb)
               local function sz(t, r, c) if t then return c, r end return r, c end
               local a, b = randn(sz(ta, 3, 4)), randn(sz(tb, 4, 2))
               local A, B = a:totable(), b:totable()
               local C = matmul(ta and tr(A) or A, tb and tr(B) or B)
               close(m:forward({ a, b }), flatten(C), dtol, 'MM 2-D')
               assert(J.testJacobian(m, { a, b }) < TOL)
               local ab, bb = randn(2, sz(ta, 3, 4)), randn(2, sz(tb, 4, 2))
               local want = {}
               for i = 1, 2 do
                  local Ai, Bi = ab[i]:totable(), bb[i]:totable()
                  flatten(matmul(ta and tr(Ai) or Ai, tb and tr(Bi) or Bi), want)
               end
               close(m:forward({ ab, bb }), want, dtol, 'MM batch')
               assert.are.same({ 2, 3, 2 }, m.output:size():totable())
               assert(J.testJacobian(m, { ab, bb }) < TOL)
            end)
         end
      end

      it('MM errors', function()
         util.assert_error(function() nn.MM():forward({ randn(3, 4), randn(3, 4) }) end, 'nn.MM', '3x4')
         util.assert_error(function() nn.MM():forward({ randn(2, 3, 4), randn(3, 4, 2) }) end, 'nn.MM', 'batches')
         util.assert_error(function() nn.MM():forward(randn(3, 3)) end, 'nn.MM', 'table')
      end)

      for _, t in ipairs { false, true } do
         it(('MV(%s): matrix-vector and batches'):format(tostring(t)), function()
            local m = nn.MV(t)
            local M = t and randn(4, 3) or randn(3, 4)
            local v = randn(4)
            local Mt = M:totable()
            local want = flatten(matmul(t and tr(Mt) or Mt, tr({ flat(v) })))
            close(m:forward({ M, v }), want, dtol, 'MV')
            assert.are.same({ 3 }, m.output:size():totable())
            assert(J.testJacobian(m, { M, v }) < TOL)
            local Mb = t and randn(2, 4, 3) or randn(2, 3, 4)
            local vb = randn(2, 4)
            local wb = {}
            for i = 1, 2 do
               local Mi = Mb[i]:totable()
               flatten(matmul(t and tr(Mi) or Mi, tr({ flat(vb[i]) })), wb)
            end
            close(m:forward({ Mb, vb }), wb, dtol, 'MV batch')
            assert.are.same({ 2, 3 }, m.output:size():totable())
            assert(J.testJacobian(m, { Mb, vb }) < TOL)
            util.assert_error(function() m:forward({ Mb, randn(2, 5) }) end, 'nn.MV', 'vector of 5')
            util.assert_error(function() nn.MV('yes') end, 'nn.MV', 'boolean')
         end)
      end
   end)

   it('modules convert with :float() and keep working', function()
      local m = nn.Sequential():add(nn.CMul(4)):add(nn.Add(4)):add(nn.Euclidean(4, 2)):float()
      local x = torch.FloatTensor(3, 4):uniform(-1, 1)
      local y = m:forward(x)
      assert.are.equal('torch.FloatTensor', y:type())
      local md = m:clone():double()
      close(y, md:forward(x:double()), { atol = 1e-5, rtol = 1e-5 }, 'float against double')
      local lt = nn.LookupTable(5, 2):float()
      assert.are.equal('torch.FloatTensor', lt:forward(torch.LongTensor { 1, 5 }):type())
      for _, mod in ipairs { nn.CMul(4), nn.Euclidean(4, 3), nn.WeightedEuclidean(4, 3) } do
         local fo, bo = J.testIO(mod, torch.Tensor(2, 4))
         assert.are.equal(0, fo)
         assert.are.equal(0, bo)
      end
   end)
end)
