-- simple_shape_spec.lua: Narrow, Select, Index, Replicate, Transpose, Squeeze, Unsqueeze, Padding,
-- Max, Min, Sum, Mean, Copy, Contiguous, GradientReversal, SpatialDropout, VolumetricDropout.
-- Forward against plain-Lua references built element by element from the input's values,
-- gradients with nn.Jacobian (float64, fresh random inputs), dropout masks by their statistics.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local TOL = 1e-6

local function rand(shape, lo, hi) return (util.rand_tensor(shape, 'torch.DoubleTensor', lo or -2, hi or 2)) end
local function sizes(t) return t:size():totable() end

-- x's element at a multi-index (x as a nested table from totable)
local function at(tab, idx)
   local v = tab
   for i = 1, #idx do v = v[idx[i]] end
   return v
end

-- the flat row-major list of f(idx) over every multi-index of `shape`
local function over(shape, f)
   local n, idx, out = 1, {}, {}
   for i = 1, #shape do n = n * shape[i]; idx[i] = 1 end
   for k = 1, n do
      out[k] = f(idx)
      for d = #shape, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= shape[d] then break end
         idx[d] = 1
      end
   end
   return out
end

-- out has `shape` and its element at idx is f(idx)
local function expect(out, shape, f, what)
   assert.are.same(shape, sizes(out), what .. ': size')
   util.assert_close(out, over(shape, f), nil, what)
end

local function jacobian(m, x, what)
   local e = nn.Jacobian.testJacobian(m, x)
   assert(e == e and e < TOL, ('%s: jacobian error %s'):format(what, tostring(e)))
end

local function copyIdx(idx) local c = {} for i = 1, #idx do c[i] = idx[i] end return c end

describe('nn simple modules (b)', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('Narrow: offsets and negative dimension, length and offset (Torch7 semantics)', function()
      local x = rand { 5, 9, 4 }
      local xt = x:totable()
      local function check(m, dim, first, len, what)
         local y = m:forward(x)
         local shape = sizes(x)
         shape[dim] = len
         expect(y, shape, function(i)
            local j = copyIdx(i); j[dim] = j[dim] + first - 1
            return at(xt, j)
         end, what)
         local go = rand(shape)
         local gi = m:backward(x, go)
         local got = go:totable()
         expect(gi, sizes(x), function(i)
            local k = i[dim] - first + 1
            if k < 1 or k > len then return 0 end
            local j = copyIdx(i); j[dim] = k
            return at(got, j)
         end, what .. ' gradInput')
      end
      check(nn.Narrow(2, 3, 4), 2, 3, 4, 'Narrow(2, 3, 4)')
      check(nn.Narrow(2, 3, -2), 2, 3, 6, 'Narrow(2, 3, -2)')  -- up to one before the end
      check(nn.Narrow(-1, 2, -1), 3, 2, 3, 'Narrow(-1, 2, -1)')
      check(nn.Narrow(1, 4), 1, 4, 1, 'Narrow(1, 4)')
      check(nn.Narrow(2, -1, 7), 2, 1, 2, 'Narrow(2, -1, 7)')  -- negative offset: all but the last 7
      jacobian(nn.Narrow(3, 2, 2), rand { 3, 2, 5 }, 'Narrow')
      jacobian(nn.Narrow(-2, 2, -2), rand { 3, 6, 2 }, 'Narrow negative')
      assert.has_error(function() nn.Narrow(2, 8, 3):forward(x) end,
         'nn.Narrow: offset 8, length 3 select [8, 10], outside dimension 2 of an input of size 5x9x4')
      assert.has_error(function() nn.Narrow(4, 1):forward(x) end,
         'nn.Narrow: dimension 4 is out of range for an input of size 5x9x4')
      assert.has_error(function() nn.Narrow(1) end)
   end)

   it('Select: negative dimension and index', function()
      local x = rand { 4, 5, 3 }
      local xt = x:totable()
      for _, c in ipairs { { 1, 3, 1, 3 }, { 2, -1, 2, 5 }, { -1, 2, 3, 2 }, { -3, -4, 1, 1 } } do
         local m = nn.Select(c[1], c[2])
         local y = m:forward(x)
         local shape = sizes(x)
         table.remove(shape, c[3])
         expect(y, shape, function(i)
            local j = copyIdx(i); table.insert(j, c[3], c[4])
            return at(xt, j)
         end, 'Select output')
         local go = rand(shape)
         local gt = go:totable()
         expect(m:backward(x, go), sizes(x), function(i)
            if i[c[3]] ~= c[4] then return 0 end
            local j = copyIdx(i); table.remove(j, c[3])
            return at(gt, j)
         end, 'Select gradInput')
      end
      jacobian(nn.Select(2, -2), rand { 3, 4, 2 }, 'Select')
      assert.has_error(function() nn.Select(2, 6):forward(x) end,
         'nn.Select: index 6 is out of range for dimension 2 of an input of size 4x5x3')
      assert.has_error(function() nn.Select(1, 1):forward(rand { 5 }) end,
         'nn.Select: expected an input of at least 2 dimensions, got size 5')
   end)

   it('Index: t:index(dim, indices), repeated indices accumulate their gradients', function()
      local x = rand { 4, 6 }
      local xt = x:totable()
      local idx = torch.LongTensor { 5, 2, 5, 1, 6 }
      local m = nn.Index(2)
      local y = m:forward { x, idx }
      expect(y, { 4, 5 }, function(i) return xt[i[1]][idx[i[2]]] end, 'Index output')
      local go = rand { 4, 5 }
      local gt = go:totable()
      local gi = m:backward({ x, idx }, go)
      expect(gi[1], { 4, 6 }, function(i)
         local s = 0
         for k = 1, 5 do if idx[k] == i[2] then s = s + gt[i[1]][k] end end
         return s
      end, 'Index gradInput')
      assert.are.same({ 5 }, sizes(gi[2]))
      util.assert_close(gi[2], { 0, 0, 0, 0, 0 }, nil, 'Index gradInput[2]')
      -- the jacobian with the indices held fixed
      local name = 'IndexSpecFixed' .. math.random(1e9)
      local Fixed = torch.class('nn.' .. name, 'nn.Module')
      function Fixed:updateOutput(t) self.output = m:forward { t, idx }; return self.output end
      function Fixed:updateGradInput(t, g)
         self.gradInput = m:updateGradInput({ t, idx }, g)[1]; return self.gradInput
      end
      jacobian(nn[name](), rand { 4, 6 }, 'Index')
      assert.has_error(function() m:forward { x, torch.Tensor { 1 } } end,
         'nn.Index: the indices must be a LongTensor, got a torch.DoubleTensor')
      assert.has_error(function() m:forward(x) end)
   end)

   it('Replicate: a zero-stride view, batch inputs with ndim, gradient summed', function()
      local x = rand { 5 }
      local m = nn.Replicate(3)
      local y = m:forward(x)
      local xt = x:totable()
      expect(y, { 3, 5 }, function(i) return xt[i[2]] end, 'Replicate output')
      assert.are.equal(0, y:stride(1))
      x:fill(13)                                   -- no copy: the output sees the input (doc)
      util.assert_close(y, over({ 3, 5 }, function() return 13 end), nil, 'Replicate view')
      -- dim 2 with ndim 2: a 3-d input is a batch, the new dimension is 3
      local b = rand { 2, 3, 4 }
      local bt = b:totable()
      local mb = nn.Replicate(4, 2, 2)
      expect(mb:forward(b), { 2, 3, 4, 4 }, function(i) return bt[i[1]][i[2]][i[4]] end, 'Replicate batch')
      local go = rand { 2, 3, 4, 4 }
      local gt = go:totable()
      expect(mb:backward(b, go), { 2, 3, 4 }, function(i)
         local s = 0
         for k = 1, 4 do s = s + gt[i[1]][i[2]][k][i[3]] end
         return s
      end, 'Replicate gradInput')
      expect(nn.Replicate(4, 2, 2):forward(b[1]), { 3, 4, 4 }, function(i) return bt[1][i[1]][i[3]] end,
         'Replicate sample')
      jacobian(nn.Replicate(3, 2), rand { 4, 2 }, 'Replicate')
      jacobian(nn.Replicate(2, 3), rand { 3, 2 }, 'Replicate at the end')
      assert.has_error(function() nn.Replicate(2, 4):forward(rand { 3, 2 }) end,
         'nn.Replicate: cannot replicate along dimension 4 of an input of size 3x2')
   end)

   it('Transpose: pairs in order, setNumInputDims for batches', function()
      local x = rand { 2, 3, 4, 5 }
      local xt = x:totable()
      local m = nn.Transpose({ 1, 4 }, { 2, 4 })  -- 2x3x4x5 -> 5x3x4x2 -> 5x2x4x3
      local y = m:forward(x)
      expect(y, { 5, 2, 4, 3 }, function(i) return xt[i[2]][i[4]][i[3]][i[1]] end, 'Transpose')
      assert(y:isContiguous())
      local mb = nn.Transpose({ 1, 3 }):setNumInputDims(3)
      expect(mb:forward(x), { 2, 5, 4, 3 }, function(i) return xt[i[1]][i[4]][i[3]][i[2]] end, 'Transpose batch')
      local go = rand { 5, 2, 4, 3 }
      local gt = go:totable()
      expect(m:backward(x, go), { 2, 3, 4, 5 }, function(i) return gt[i[4]][i[1]][i[3]][i[2]] end,
         'Transpose gradInput')
      jacobian(nn.Transpose({ 1, 2 }, { 2, 3 }), rand { 2, 3, 4 }, 'Transpose')
      assert.has_error(function() nn.Transpose({ 1, 5 }):forward(x) end,
         'nn.Transpose: cannot swap dimensions 1 and 5 of the input of size 2x3x4x5')
   end)

   it('Squeeze and Unsqueeze: views, dim and numInputDims', function()
      local x = rand { 3, 1, 4, 1 }
      local flat = util.flat(x)
      local y = nn.Squeeze():forward(x)
      assert.are.same({ 3, 4 }, sizes(y))
      util.assert_close(y, flat, nil, 'Squeeze')
      assert.are.same({ 3, 4, 1 }, sizes(nn.Squeeze(2):forward(x)))
      assert.are.same({ 3, 1, 4, 1 }, sizes(nn.Squeeze(1):forward(x)))   -- size 3: left alone
      -- batches: dim counts past the batch, a batch of one keeps its dimension
      assert.are.same({ 3, 4, 1 }, sizes(nn.Squeeze(1, 3):forward(x)))
      assert.are.same({ 1, 4 }, sizes(nn.Squeeze(nil, 2):forward(rand { 1, 1, 4 })))
      local m = nn.Squeeze()
      m:forward(x)
      local go = rand { 3, 4 }
      local gi = m:backward(x, go)
      assert.are.same(sizes(x), sizes(gi))
      util.assert_close(gi, util.flat(go), nil, 'Squeeze gradInput')
      jacobian(nn.Squeeze(), rand { 2, 1, 3 }, 'Squeeze')

      local u = rand { 2, 4, 3 }
      local uf = util.flat(u)
      for pos, shape in ipairs { { 1, 2, 4, 3 }, { 2, 1, 4, 3 }, { 2, 4, 1, 3 }, { 2, 4, 3, 1 } } do
         local out = nn.Unsqueeze(pos):forward(u)
         assert.are.same(shape, sizes(out))
         util.assert_close(out, uf, nil, 'Unsqueeze')
      end
      assert.are.same({ 3, 1, 5, 7 }, sizes(nn.Unsqueeze(2):forward(rand { 3, 5, 7 })))
      local b = rand { 5, 2, 4, 3 }
      assert.are.same({ 5, 2, 4, 3, 1 }, sizes(nn.Unsqueeze(4, 3):forward(b)))
      local mu = nn.Unsqueeze(2):setNumInputDims(3)
      assert.are.same({ 5, 2, 1, 4, 3 }, sizes(mu:forward(b)))
      assert.are.same({ 2, 1, 4, 3 }, sizes(mu:forward(u)))             -- one sample
      local gu = rand { 5, 2, 1, 4, 3 }
      local gui = mu:backward(b, gu)
      assert.are.same(sizes(b), sizes(gui))
      util.assert_close(gui, util.flat(gu), nil, 'Unsqueeze gradInput')
      assert.are.equal('nn.Unsqueeze(dim 2)', tostring(mu))
      jacobian(nn.Unsqueeze(3), rand { 2, 3 }, 'Unsqueeze')
      assert.has_error(function() nn.Unsqueeze(5):forward(u) end,
         'nn.Unsqueeze: position 5 is out of range for an input of size 2x4x3 (numInputDims 3)')
      assert.has_error(function() nn.Squeeze(4):forward(u) end,
         'nn.Squeeze: dimension 4 is out of range for an input of size 2x4x3')
   end)

   it('Padding: left, right, inside at index, value, batch with nInputDim', function()
      -- the reference: where the input's element k of dimension dim lands, padding before
      -- `before` input elements
      local function check(m, x, dim, before, pad, value, what)
         local xt = x:totable()
         local shape = sizes(x)
         local n = shape[dim]
         shape[dim] = n + pad
         local y = m:forward(x)
         expect(y, shape, function(i)
            local k = i[dim]
            if k > before and k <= before + pad then return value end
            local j = copyIdx(i); j[dim] = k > before and k - pad or k
            return at(xt, j)
         end, what)
         local go = rand(shape)
         local gt = go:totable()
         expect(m:backward(x, go), sizes(x), function(i)
            local j = copyIdx(i); if i[dim] > before then j[dim] = i[dim] + pad end
            return at(gt, j)
         end, what .. ' gradInput')
         jacobian(m, x:clone(), what)
      end
      check(nn.Padding(1, 2, 1, -1), rand { 3 }, 1, 3, 2, -1, 'pad right x2')               -- doc example 1
      check(nn.Padding(1, -2, 1, -1), rand { 2, 3 }, 2, 0, 2, -1, 'pad left x2 (batch)')    -- doc example 2
      check(nn.Padding(1, -2, 1, -1, 2), rand { 2, 3 }, 2, 1, 2, -1, 'pad left at index 2') -- doc example 3
      check(nn.Padding(2, 3, nil, 0.5, 2), rand { 3, 5, 2 }, 2, 4, 3, 0.5, 'pad right at index 2')
      check(nn.Padding(2, 1, nil, 0, 6), rand { 2, 5 }, 2, 0, 1, 0, 'pad right at index size + 1')
      check(nn.Padding(2, -1, 2), rand { 3, 4 }, 2, 0, 1, 0, 'no batch when dim() == nInputDim')
      assert.has_error(function() nn.Padding(3, 1):forward(rand { 2, 2 }) end,
         'nn.Padding: dimension 3 is out of range for an input of size 2x2')
      assert.has_error(function() nn.Padding(1, 1, nil, 0, 5):forward(rand { 3 }) end,
         'nn.Padding: index 5 is past dimension 1 of an input of size 3')
   end)

   it('Max and Min: values, gradient to the arg extremum, batch and negative dimensions', function()
      for _, case in ipairs { { nn.Max, math.max, 'Max' }, { nn.Min, math.min, 'Min' } } do
         local M, pick, name = case[1], case[2], case[3]
         local x = rand { 3, 5, 4 }
         local xt = x:totable()
         local function ref(dim)
            local shape = sizes(x)
            local n = table.remove(shape, dim)
            return shape, function(i)
               local best
               for k = 1, n do
                  local j = copyIdx(i); table.insert(j, dim, k)
                  best = best and pick(best, at(xt, j)) or at(xt, j)
               end
               return best
            end
         end
         for _, c in ipairs { { M(2), 2 }, { M(-1), 3 }, { M(1, 2), 2 }, { M(2, 3), 2 }, { M(), 1 } } do
            local shape, f = ref(c[2])
            local m = c[1]
            expect(m:forward(x), shape, f, name)
            local go = rand(shape)
            local gt = go:totable()
            expect(m:backward(x, go), sizes(x), function(i)
               local j = copyIdx(i); table.remove(j, c[2])
               return at(xt, i) == f(j) and at(gt, j) or 0
            end, name .. ' gradInput')
         end
         local v = rand { 7 }
         local vm = M(1)
         local vy = vm:forward(v)
         assert.are.same({ 1 }, sizes(vy))
         local vals = util.flat(v)
         assert.are.equal(pick(table.unpack(vals)), vy[1])
         jacobian(M(2), rand { 3, 5, 2 }, name)
         jacobian(M(1, 1), rand { 4, 3 }, name .. ' batch')
         jacobian(M(1), rand { 6 }, name .. ' vector')
         -- float32 after :float()
         local mf = M(2):float()
         local xf = x:float()
         util.assert_close(mf:forward(xf), util.flat(M(2):forward(x)), util.tol['torch.FloatTensor'], name .. ' float')
         assert.are.equal('torch.FloatTensor', mf.output:type())
         assert.has_error(function() M(4):forward(x) end,
            ('nn.%s: dimension 4 is out of range for an input of size 3x5x4'):format(name))
      end
   end)

   it('Sum and Mean: dimension, nInputDims, sizeAverage, squeeze', function()
      local x = rand { 3, 4, 5 }
      local xt = x:totable()
      local function ref(dim, avg, keep)
         local shape = sizes(x)
         local n = shape[dim]
         if keep then shape[dim] = 1 else table.remove(shape, dim) end
         return shape, function(i)
            local s = 0
            for k = 1, n do
               local j = copyIdx(i)
               if keep then j[dim] = k else table.insert(j, dim, k) end
               s = s + at(xt, j)
            end
            return avg and s / n or s
         end
      end
      local cases = {
         { nn.Sum(2), 2, false, false, 'Sum(2)' },
         { nn.Sum(), 1, false, false, 'Sum()' },
         { nn.Sum(-1), 3, false, false, 'Sum(-1)' },
         { nn.Sum(1, 2), 2, false, false, 'Sum(1, 2) on a batch' },
         { nn.Sum(2, 3), 2, false, false, 'Sum(2, 3) on one sample' },
         { nn.Sum(3, nil, true), 3, true, false, 'Sum sizeAverage' },
         { nn.Sum(2, nil, false, false), 2, false, true, 'Sum squeeze = false' },
         { nn.Mean(2), 2, true, false, 'Mean(2)' },
         { nn.Mean(2, 2), 3, true, false, 'Mean(2, 2) on a batch' },
      }
      for _, c in ipairs(cases) do
         local m, dim, avg, keep, what = c[1], c[2], c[3], c[4], c[5]
         local shape, f = ref(dim, avg, keep)
         expect(m:forward(x), shape, f, what)
         util.assert_close(m.output, over(shape, f), { atol = 1e-12, rtol = 1e-12 }, what)
         local go = rand(shape)
         local gt = go:totable()
         local n = x:size(dim)
         expect(m:backward(x, go), sizes(x), function(i)
            local j = copyIdx(i)
            if keep then j[dim] = 1 else table.remove(j, dim) end
            return at(gt, j) / (avg and n or 1)
         end, what .. ' gradInput')
         jacobian(m, x:clone(), what)
      end
      -- the same module on inputs of other shapes (the squeezed output buffer is reused)
      for _, mk in ipairs { function() return nn.Sum(2) end, function() return nn.Max(2) end,
         function() return nn.Sum(2, nil, false, false) end } do
         local m = mk()
         for _, shape in ipairs { { 3, 4, 5 }, { 2, 6 }, { 4, 3, 2 } } do
            local z = rand(shape)
            local want = torch.type(m) == 'nn.Max' and torch.max(z, 2) or torch.sum(z, 2)
            local got = m:forward(z)
            assert.are.equal(want:nElement(), got:nElement())
            util.assert_close(got, util.flat(want), nil, torch.type(m) .. ' reused')
         end
      end
      local v = nn.Sum(1):forward(rand { 6 })
      assert.are.same({ 1 }, sizes(v))
      -- a transposed (non-contiguous) gradOutput
      local m = nn.Sum(1)
      m:forward(rand { 2, 3, 4 })
      local go = rand { 4, 3 }:t()
      local gi = m:backward(rand { 2, 3, 4 }, go)
      local gt = go:totable()
      expect(gi, { 2, 3, 4 }, function(i) return gt[i[2]][i[3]] end, 'Sum with a transposed gradOutput')
      assert.has_error(function() nn.Sum(4):forward(x) end,
         'nn.Sum: dimension 4 is out of range for an input of size 3x4x5')
      assert.has_error(function() nn.Mean(0):forward(x) end,
         'nn.Mean: dimension 0 is out of range for an input of size 3x4x5')
      assert.has_error(function() nn.Sum(1, nil, false, 'no') end)
   end)

   it('Copy: type conversion, pass-through, forceCopy, dontCast', function()
      local x = rand { 3, 4 }
      local m = nn.Copy('torch.DoubleTensor', 'torch.FloatTensor')
      local y = m:forward(x)
      assert.are.equal('torch.FloatTensor', y:type())
      util.assert_close(y, util.flat(x), util.tol['torch.FloatTensor'], 'Copy output')
      local go = rand({ 3, 4 }):float()
      local gi = m:backward(x, go)
      assert.are.equal('torch.DoubleTensor', gi:type())
      util.assert_close(gi, util.flat(go), nil, 'Copy gradInput')
      -- the same types: the tensors pass through, unless forceCopy
      local p = nn.Copy('torch.DoubleTensor', 'torch.DoubleTensor')
      assert(p:forward(x) == x)
      assert(p:backward(x, x) == x)
      local fc = nn.Copy('torch.DoubleTensor', 'torch.DoubleTensor', true)
      local fy = fc:forward(x)
      assert(fy ~= x)
      util.assert_close(fy, util.flat(x), nil, 'Copy forceCopy')
      x:fill(2)
      assert(fy[1][1] ~= 2)
      p:clearState()                                 -- drops the neighbours' tensors, does not empty them
      assert.are.same({ 3, 4 }, sizes(x))
      -- defaults: the default tensor type both ways
      assert(nn.Copy():forward(x) == x)
      -- dontCast: :type() leaves it alone
      local dc = nn.Copy('torch.DoubleTensor', 'torch.FloatTensor', false, true)
      dc:type('torch.DoubleTensor')
      assert.are.equal('torch.FloatTensor', dc:forward(x):type())
      local c = nn.Copy('torch.DoubleTensor', 'torch.FloatTensor'):type('torch.DoubleTensor')
      assert.are.equal('torch.DoubleTensor', c:forward(x):type())
      assert.has_error(function() nn.Copy('torch.NoSuchTensor') end, 'nn.Copy: unknown input type torch.NoSuchTensor')
   end)

   it('Contiguous: passes contiguous tensors, copies the others', function()
      local m = nn.Contiguous()
      local x = rand { 3, 4 }
      -- Torch7: the module's own output tensor, set to the input's storage
      local out = m:forward(x)
      assert(out ~= x and out:isSetTo(x))
      local go = rand { 3, 4 }
      assert(m:backward(x, go):isSetTo(go))
      local xt = rand { 4, 5 }:t()
      local y = m:forward(xt)
      assert(y == out and y:isContiguous())
      util.assert_close(y, util.flat(xt), nil, 'Contiguous output')
      util.assert_close(x, util.flat(x:clone()), nil, 'Contiguous leaves the earlier input alone')
      local gt = rand { 4, 5 }:t()
      local gi = m:backward(xt, gt)
      assert(gi:isContiguous())
      util.assert_close(gi, util.flat(gt), nil, 'Contiguous gradInput')
      local before = util.flat(go)
      m:forward(rand { 6, 2 }:t())
      m:backward(xt, rand { 2, 6 }:t())
      util.assert_close(go, before, nil, 'Contiguous does not write into a passed-through gradOutput')
      jacobian(nn.Contiguous(), rand { 3, 2 }, 'Contiguous')
   end)

   it('GradientReversal: identity forward, -lambda * gradOutput backward', function()
      local m = nn.GradientReversal()
      local x = rand { 3, 5 }
      assert(m:forward(x) == x)
      local go = rand { 3, 5 }
      local g = util.flat(go)
      local neg = {}
      for i = 1, #g do neg[i] = -g[i] end
      util.assert_close(m:backward(x, go), neg, nil, 'GradientReversal lambda 1')
      m:setLambda(0.37)
      for i = 1, #g do neg[i] = -0.37 * g[i] end
      util.assert_close(m:backward(x, go), neg, nil, 'GradientReversal setLambda')
      for i = 1, #g do neg[i] = -2.5 * g[i] end
      util.assert_close(nn.GradientReversal(2.5):backward(x, go), neg, nil, 'GradientReversal(2.5)')
      util.assert_close(go, g, nil, 'gradOutput untouched')
      -- a Torch7 file from before lambda (its version 1) reads as lambda = 1
      local old = nn.GradientReversal()
      old.lambda = nil
      local back = torch.deserialize(torch.serialize(old))
      assert.are.equal(1, back.lambda)
      assert.has_error(function() m:setLambda('x') end, 'nn.GradientReversal: lambda must be a number, got x')
   end)

   it('after :float() the buffers follow the new type (a chain of the modules)', function()
      local function chain()
         return nn.Sequential():add(nn.Narrow(2, 2, 4)):add(nn.Padding(1, -1, 2, 0.25)):add(nn.Transpose({ 1, 2 }))
            :add(nn.Replicate(2, 1)):add(nn.Contiguous()):add(nn.Unsqueeze(1)):add(nn.Squeeze(1))
            :add(nn.Select(1, 2)):add(nn.Max(1)):add(nn.Sum(1, nil, false, false))
      end
      local x = rand { 3, 6 }
      local md, mf = chain(), chain():float()
      local yd = md:forward(x)
      local yf = mf:forward(x:float())
      assert.are.equal('torch.FloatTensor', yf:type())
      assert.are.same(sizes(yd), sizes(yf))
      util.assert_close(yf, util.flat(yd), util.tol['torch.FloatTensor'], 'float chain')
      local go = rand(sizes(yd))
      local gd = md:backward(x, go)
      local gf = mf:backward(x:float(), go:float())
      assert.are.equal('torch.FloatTensor', gf:type())
      util.assert_close(gf, util.flat(gd), util.tol['torch.FloatTensor'], 'float chain gradInput')
      jacobian(chain(), rand { 3, 6 }, 'chain')
   end)

   it('survive a write and read back (testIO)', function()
      local mods = { nn.Narrow(2, 2, -1), nn.Select(2, -1), nn.Replicate(2, 2), nn.Transpose({ 1, 2 }),
         nn.Squeeze(), nn.Unsqueeze(2), nn.Padding(2, -2, nil, 0.5, 2), nn.Max(2), nn.Min(1), nn.Sum(2, nil, true),
         nn.Mean(-1), nn.Copy('torch.DoubleTensor', 'torch.FloatTensor'), nn.Copy(), nn.Contiguous(),
         nn.GradientReversal(0.5) }
      for _, m in ipairs(mods) do
         local fo, bo = nn.Jacobian.testIO(m, rand { 3, 4 })
         assert(fo == 0 and bo == 0, ('%s: read back computes differently (%s, %s)'):format(tostring(m), fo, bo))
      end
   end)

   -- whole maps kept (equal to the input) or dropped (zero), about 1 - p kept; `mapsOf` lists
   -- each map's elements
   local function checkFeatureDropout(M, shape, mapSize, what)
      local p = 0.3
      local m = M(p)
      assert.are.equal(('%s(%f)'):format(torch.type(m), p), tostring(m))
      local x = rand(shape, 0.5, 1.5)                 -- never zero: a zero output means dropped
      torch.manualSeed(1234)
      local y = m:forward(x)
      local xf, yf = util.flat(x), util.flat(y)
      local maps, kept = #xf / mapSize, 0
      for k = 0, maps - 1 do
         local zeros, same = 0, 0
         for e = 1, mapSize do
            local i = k * mapSize + e
            if yf[i] == 0 then zeros = zeros + 1 elseif yf[i] == xf[i] then same = same + 1 end
         end
         assert(zeros == mapSize or same == mapSize, ('%s: map %d partly dropped'):format(what, k + 1))
         if same == mapSize then kept = kept + 1 end
      end
      local frac = kept / maps
      -- 1 - p within 5 standard deviations of a binomial fraction
      local sd = math.sqrt(p * (1 - p) / maps)
      assert(math.abs(frac - (1 - p)) < 5 * sd,
         ('%s: kept %.3f of %d maps, expected %.2f'):format(what, frac, maps, 1 - p))
      assert(kept > 0 and kept < maps)
      -- the same seed draws the same maps
      torch.manualSeed(1234)
      util.assert_close(m:forward(x), yf, nil, what .. ' same seed')
      -- backward masks the gradient with the same maps
      local go = rand(shape, 0.5, 1.5)
      local gf = util.flat(go)
      local gi = util.flat(m:backward(x, go))
      for i = 1, #gf do
         local want = yf[i] == 0 and 0 or gf[i]
         assert(gi[i] == want, ('%s: gradInput element %d is %s, expected %s'):format(what, i, gi[i], want))
      end
      -- evaluate: scaled by 1 - p, no backward
      m:evaluate()
      local ye = util.flat(m:forward(x))
      local want = {}
      for i = 1, #xf do want[i] = xf[i] * (1 - p) end
      util.assert_close(ye, want, nil, what .. ' evaluate')
      assert.has_error(function() m:backward(x, go) end,
         torch.type(m) .. ': backward is only defined in training mode (call :training())')
      -- stochasticInference: maps still dropped at evaluation, unscaled
      local s = M(p, true)
      s:evaluate()
      local ys = util.flat(s:forward(x))
      local dropped = 0
      for i = 1, #xf do
         assert(ys[i] == 0 or ys[i] == xf[i])
         if ys[i] == 0 then dropped = dropped + 1 end
      end
      assert(dropped > 0 and dropped < #xf)
      -- p = 0 keeps everything
      util.assert_close(M(0):forward(x), xf, nil, what .. ' p = 0')
      assert.has_error(function() M(1) end, torch.type(m) .. ': p must be in [0, 1), got 1')
   end

   it('SpatialDropout: whole feature maps, 3-d and 4-d inputs', function()
      checkFeatureDropout(nn.SpatialDropout, { 30, 40, 3, 2 }, 6, 'SpatialDropout 4-d')
      checkFeatureDropout(nn.SpatialDropout, { 900, 2, 3 }, 6, 'SpatialDropout 3-d')
      assert.has_error(function() nn.SpatialDropout():forward(rand { 3, 4 }) end,
         'nn.SpatialDropout: expected a 3-d (features x height x width) or 4-d (batch x features x height x width) '
            .. 'input, got size 3x4')
   end)

   it('VolumetricDropout: whole volumetric maps, 4-d and 5-d inputs', function()
      checkFeatureDropout(nn.VolumetricDropout, { 25, 36, 2, 1, 3 }, 6, 'VolumetricDropout 5-d')
      checkFeatureDropout(nn.VolumetricDropout, { 900, 2, 3, 1 }, 6, 'VolumetricDropout 4-d')
      assert.has_error(function() nn.VolumetricDropout():forward(rand { 3, 4, 2 }) end,
         'nn.VolumetricDropout: expected a 4-d (features x time x height x width) or 5-d '
            .. '(batch x features x time x height x width) input, got size 3x4x2')
   end)
end)
