-- index_linear_spec.lua: nn.IndexLinear against a float64 nn.Linear on the densified input (its
-- three input forms, keysOffset, repeated keys), its parameter steps against finite differences
-- of <gradOutput, output>, Torch7's occurrence-by-occurrence weight decay, and normalize mode
-- against the formula of Torch7's code.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local TOL = 1e-10

local function maxdiff(a, b) return (a - b):abs():max() end

-- k distinct keys in 1..n shifted by off, and nonzero values of both signs
local function sample(n, k, off)
   local keys = torch.randperm(n):narrow(1, 1, k):long():add(off or 0)
   local vals = torch.Tensor(k):uniform(0.5, 1.5):cmul(torch.Tensor(k):bernoulli(0.5):mul(2):add(-1))
   return keys, vals
end

local function densify(keys, vals, n, off)
   local d = torch.zeros(n)
   for i = 1, keys:nElement() do
      local r = keys[i] - (off or 0)
      d[r] = d[r] + vals[i]
   end
   return d
end

local function pair(nin, nout, off)
   local m = nn.IndexLinear(nin, nout, true, off):reset()
   m.bias:uniform(-1, 1)
   local ref = nn.Linear(nin, nout)
   ref.weight:copy(m.weight:t())
   ref.bias:copy(m.bias)
   ref:zeroGradParameters()
   return m, ref
end

-- <go, m(x)> as a function of the parameter tensor p, by central differences
local function fd_grad(m, x, go, p)
   local g = p:clone():zero()
   local v, gv = p:view(-1), g:view(-1)
   for i = 1, v:nElement() do
      local orig = v[i]
      v[i] = orig + 1e-6
      local plus = m:forward(x):clone():cmul(go):sum()
      v[i] = orig - 1e-6
      local minus = m:forward(x):clone():cmul(go):sum()
      v[i] = orig
      gv[i] = (plus - minus) / 2e-6
   end
   return g
end

describe('nn.IndexLinear', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('is Linear on the densified input in its three forms, with keysOffset and repeated keys', function()
      -- keysOffset 1: keys 0..nin-1 read rows 1..nin (Torch7's code: row = key + keysOffset)
      local nin, nout, b, off = 12, 3, 3, -1
      local m, ref = pair(nin, nout, -off)
      local ks, vs, d = {}, {}, torch.Tensor(b, nin)
      for i = 1, b do
         ks[i], vs[i] = sample(nin, i + 2, off)
         d[i]:copy(densify(ks[i], vs[i], nin, off))
      end
      -- a repeated key adds up
      ks[1] = torch.cat(ks[1], ks[1]:narrow(1, 1, 1), 1)
      vs[1] = torch.cat(vs[1], torch.Tensor { 0.25 }, 1)
      d[1]:copy(densify(ks[1], vs[1], nin, off))
      local go = torch.Tensor(b, nout):uniform(-1, 1)
      local want = ref:forward(d)
      local wgi = ref:backward(d, go)
      local sizes = torch.LongTensor(b)
      for i = 1, b do sizes[i] = ks[i]:nElement() end
      local flat = { torch.cat(ks, 1), torch.cat(vs, 1), sizes }
      for _, x in ipairs { { ks, vs }, flat } do
         assert(maxdiff(m:forward(x), want) < TOL)
         local gi = m:backward(x, go)
         for i = 1, b do
            local keys, vals = gi[1][i], gi[2][i]
            assert(maxdiff(keys:double(), torch.range(1 + off, nin + off)) == 0)
            assert(maxdiff(vals, wgi[i]) < TOL)
         end
      end
      local y = m:forward({ ks[2], vs[2] })
      assert.are.same({ nout }, y:size():totable())
      assert(maxdiff(y, want[2]) < TOL)
      local gi = m:backward({ ks[2], vs[2] }, go[2])
      assert(maxdiff(gi[2], wgi[2]) < TOL)
   end)

   it('steps weight and bias against the finite-difference gradient, once per accumulation', function()
      local nin, nout = 9, 4
      local m = nn.IndexLinear(nin, nout):reset()
      local k1, v1 = sample(nin, 4)
      local k2, v2 = sample(nin, 3)
      local x = { { k1, k2 }, { v1, v2 } }
      local go = torch.Tensor(2, nout):uniform(-1, 1)
      local gw, gb = fd_grad(m, x, go, m.weight), fd_grad(m, x, go, m.bias)
      local w0, b0 = m.weight:clone(), m.bias:clone()
      m:updateParameters(0.3) -- nothing accumulated: nothing moves (Torch7's code)
      assert.are.equal(0, maxdiff(m.weight, w0))
      assert.are.equal(0, maxdiff(m.bias, b0))
      m:forward(x)
      m:zeroGradParameters()
      m:backward(x, go)
      m:updateParameters(0.3)
      assert(maxdiff(m.weight, w0 - gw * 0.3) < 1e-7)
      assert(maxdiff(m.bias, b0 - gb * 0.3) < 1e-7)
      -- two accumulations step twice; accUpdateGradParameters is one step straight away
      m.weight:copy(w0)
      m.bias:copy(b0)
      m:zeroGradParameters()
      m:backward(x, go)
      m:backward(x, go, 0.5)
      m:updateParameters(0.3)
      assert(maxdiff(m.weight, w0 - gw * 0.45) < 1e-7)
      assert(maxdiff(m.bias, b0 - gb * 0.45) < 1e-7)
      m.weight:copy(w0)
      m.bias:copy(b0)
      m:accUpdateGradParameters(x, go, 0.3)
      assert(maxdiff(m.weight, w0 - gw * 0.3) < 1e-7)
      assert(maxdiff(m.bias, b0 - gb * 0.3) < 1e-7)
   end)

   it('decays a row before each of its occurrences\' steps (weightDecay, repeated keys)', function()
      local nin, nout, wd, lr = 6, 2, 0.1, 0.2
      local m = nn.IndexLinear(nin, nout):reset()
      m.weightDecay = wd
      local keys = torch.LongTensor { 2, 5, 2, 2 }
      local vals = torch.Tensor(4):uniform(-1, 1)
      local go = torch.Tensor(nout):uniform(-1, 1)
      local want = m.weight:clone()
      for i = 1, 4 do -- the reference, plain numbers
         for o = 1, nout do
            local w = want[keys[i]][o]
            want[keys[i]][o] = w - wd * w - lr * vals[i] * go[o]
         end
      end
      local w0 = m.weight:clone()
      m:forward({ keys, vals })
      m:zeroGradParameters()
      m:backward({ keys, vals }, go)
      m:updateParameters(lr)
      assert(maxdiff(m.weight, want) < TOL)
      m.weight:copy(w0)
      m:accUpdateGradParameters({ keys, vals }, go, lr)
      assert(maxdiff(m.weight, want) < TOL)
   end)

   it('normalize: value / max + per-key bias, max grown in training, both trained', function()
      local nin, nout = 7, 3
      local m = nn.IndexLinear(nin, nout, false, 0, nil, nil, true):reset()
      assert.are.same({ nin, nout + 4 }, m.weight:size():totable())
      assert.are.equal(0, m.weight:narrow(2, 1, 4):abs():max())
      m.weight:select(2, 4):uniform(-0.5, 0.5) -- per-key biases
      local keys, vals = sample(nin, 4)
      local x = { keys, vals }
      local W = m.weight:narrow(2, 5, nout)
      local function reference(max_of, clamp)
         local y = m.bias:clone()
         for i = 1, 4 do
            local k, v = keys[i], vals[i]
            local mx = max_of(k, v)
            local n = (clamp and math.abs(v) > mx) and (v > 0 and 1 or -1) or v / mx
            y:add(n + m.weight[k][4], W[k])
         end
         return y
      end
      local y = m:forward(x)
      assert(maxdiff(y, reference(function(_, v) return math.abs(v) end)) < TOL)
      for i = 1, 4 do
         assert(math.abs(m.weight[keys[i]][1] - math.abs(vals[i])) < TOL)
         assert(math.abs(m.weight[keys[i]][2] - 1 / math.abs(vals[i])) < TOL)
         assert.are.equal(1, m.weight[keys[i]][3])
      end
      -- evaluating: the max stays, a larger value is clamped to its sign
      m:evaluate()
      local big = vals:clone():mul(3)
      local maxes = m.weight:select(2, 1):clone()
      local yb = m:forward({ keys, big })
      assert.are.equal(0, maxdiff(m.weight:select(2, 1), maxes))
      vals = big
      assert(maxdiff(yb, reference(function(k) return maxes[k] end, true)) < TOL)
      -- the step on W and on the per-key biases is the finite-difference gradient (values within the max)
      vals:div(4)
      x = { keys, vals }
      local go = torch.Tensor(nout):uniform(-1, 1)
      local g = fd_grad(m, x, go, m.weight)
      local w0 = m.weight:clone()
      m:forward(x)
      m:zeroGradParameters()
      m:backward(x, go)
      m:updateParameters(0.1)
      local moved = m.weight - w0
      assert(maxdiff(moved:narrow(2, 4, nout + 1), g:narrow(2, 4, nout + 1) * -0.1) < 1e-7)
      assert.are.equal(0, moved:narrow(2, 1, 3):abs():max())
      m.doGradInput = true
      assert.has_error(function() m:backward(x, go) end,
         'nn.IndexLinear: updateGradInput is not implemented in normalize mode')
   end)

   it('refuses bad keys and inputs with a clear error', function()
      local m = nn.IndexLinear(5, 2)
      local function err_of(fn)
         local ok, e = pcall(fn)
         assert(not ok)
         return tostring(e)
      end
      assert.matches('keys must lie in 1..5', err_of(function()
         m:forward({ torch.LongTensor { 6 }, torch.Tensor { 1 } })
      end))
      assert.matches('keys must lie in 0..4', err_of(function()
         nn.IndexLinear(5, 2, false, 1):forward({ torch.LongTensor { 5 }, torch.Tensor { 1 } })
      end))
      assert.matches('2 keys but 1 values', err_of(function()
         m:forward({ torch.LongTensor { 1, 2 }, torch.Tensor { 1 } })
      end))
      assert.matches('sizes add up to 3', err_of(function()
         m:forward({ torch.LongTensor { 1, 2 }, torch.Tensor { 1, 2 }, torch.LongTensor { 1, 2 } })
      end))
      assert.matches('expected {keys, values}', err_of(function() m:forward(torch.Tensor(3)) end))
      assert.matches('not as a dense gradWeight', err_of(function() m:getParameters() end))
      assert.matches('gradOutput has size 3', err_of(function()
         local x = { torch.LongTensor { 1 }, torch.Tensor { 1 } }
         m:forward(x)
         m:backward(x, torch.Tensor(3))
      end))
   end)
end)
