-- nn criterions: ClassNLLCriterion, CrossEntropyCriterion (label smoothing), MSECriterion.
-- Loss against plain-Lua float64 references, gradients against finite differences, both
-- against PyTorch fixtures; class targets are 1..C.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local loss_diff = require('spec.nn.peer').loss_diff
local T = require 'moontorch.internal'

local function rand(shape, lo, hi) return (util.rand_tensor(shape, 'torch.DoubleTensor', lo, hi)) end
local dtol = { atol = 1e-10, rtol = 1e-9 }

local function rand_targets(n, C, ty)
   local t = {}
   for i = 1, n do t[i] = math.random(1, C) end
   return T.from_flat(t, { n }, T.parse_typename(ty or 'torch.LongTensor'), T.CPU_DEVICE), t
end

local function numeric_grad(crit, x, target) return loss_diff(crit, x, target, x, 1e-6) end

local function gradcheck(crit, x, target, what)
   crit:forward(x, target)
   local g = crit:backward(x, target):clone()
   -- non-contiguous x: analytical on x itself, finite differences on a contiguous copy
   local xc = x:isContiguous() and x or x:contiguous()
   util.assert_close(g, numeric_grad(crit, xc, target), { atol = 1e-6, rtol = 1e-5 }, what)
end

-- reference: rows of log-probabilities lp (flat N x C), targets t (1-based), weights w (or nil)
local function nll_ref(lp, N, C, t, w, sizeAverage, eps)
   eps = eps or 0
   local nll, smooth, tw = 0, 0, 0
   for i = 1, N do
      local wt = w and w[t[i]] or 1
      nll = nll - wt * lp[(i - 1) * C + t[i]]
      tw = tw + wt
      for c = 1, C do smooth = smooth - (w and w[c] or 1) * lp[(i - 1) * C + c] end
   end
   local l = (1 - eps) * nll + eps / C * smooth
   if sizeAverage then l = l / tw end
   return l
end

local function log_softmax_rows(xf, N, C)
   local out = {}
   for i = 0, N - 1 do
      local mx = -math.huge
      for c = 1, C do mx = math.max(mx, xf[i * C + c]) end
      local s = 0
      for c = 1, C do s = s + math.exp(xf[i * C + c] - mx) end
      for c = 1, C do out[i * C + c] = xf[i * C + c] - mx - math.log(s) end
   end
   return out
end

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
      out[words[1]] = T.from_flat(vals, #shape == 0 and { 1 } or shape, T.DOUBLE, T.CPU_DEVICE)
   end
   f:close()
   return out
end

describe('nn.ClassNLLCriterion', function()
   it('loss matches the reference (weights, sizeAverage, target dtypes, float dtypes)', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
         for _, case in ipairs { { 5, 4 }, { 1, 3 }, { 9, 11 } } do
            local N, C = case[1], case[2]
            local x, xf = util.rand_tensor({ N, C }, ty, -3, 0)
            for _, tty in ipairs { 'torch.LongTensor', 'torch.IntTensor', 'torch.DoubleTensor', 'torch.FloatTensor' } do
               local t, tf = rand_targets(N, C, tty)
               for _, weighted in ipairs { false, true } do
                  local w, wf
                  if weighted then w, wf = util.rand_tensor({ C }, ty, 0.2, 2) end
                  for _, sa in ipairs { true, false } do
                     local crit = nn.ClassNLLCriterion(w, sa)
                     local l = crit:forward(x, t)
                     local tol = ty == 'torch.DoubleTensor' and dtol or { atol = 1e-5, rtol = 1e-5 }
                     util.assert_close({ l }, { nll_ref(xf, N, C, tf, wf, sa) }, tol, 'nll ' .. ty)
                  end
               end
            end
         end
      end
   end)

   it('takes a 1-d input with a number target', function()
      local x, xf = util.rand_tensor({ 6 }, 'torch.DoubleTensor', -3, 0)
      local crit = nn.ClassNLLCriterion()
      util.assert_close({ crit:forward(x, 4) }, { -xf[4] }, dtol, 'nll 1-d')
      local g = util.flat(crit:backward(x, 4))
      for i = 1, 6 do assert.are.equal(i == 4 and -1 or 0, g[i]) end
   end)

   it('gradient matches finite differences', function()
      for _, case in ipairs { { 4, 3 }, { 1, 5 }, { 7, 2 } } do
         local N, C = case[1], case[2]
         local t = rand_targets(N, C)
         gradcheck(nn.ClassNLLCriterion(), rand({ N, C }, -3, 0), t, 'nll')
         gradcheck(nn.ClassNLLCriterion(rand({ C }, 0.2, 2)), rand({ N, C }, -3, 0), t, 'nll weighted')
         gradcheck(nn.ClassNLLCriterion(nil, false), rand({ N, C }, -3, 0), t, 'nll sum')
         gradcheck(nn.ClassNLLCriterion(), rand({ C, N }, -3, 0):t(), t, 'nll transposed')
      end
   end)

   it('matches PyTorch', function()
      local f = load_fixture('layers_criterion.txt')
      local t = f.target:long()
      for _, c in ipairs { { 'nll', nil, true }, { 'nll_w', f.weights, true }, { 'nll_sum', nil, false },
         { 'nll_w_sum', f.weights, false } } do
         local crit = nn.ClassNLLCriterion(c[2], c[3])
         util.assert_close({ crit:forward(f.logp, t) }, f[c[1]], dtol, c[1])
         util.assert_close(crit:backward(f.logp, t), f[c[1] .. '_g'], dtol, c[1] .. ' grad')
      end
   end)

   it('rejects targets out of range naming the value', function()
      local crit = nn.ClassNLLCriterion()
      local x = torch.randn(3, 4):double()
      util.assert_error(function() crit:forward(x, torch.LongTensor({ 1, 5, 2 })) end, 'ClassNLLCriterion', 'target 5',
         '1..4')
      util.assert_error(function() crit:forward(x, torch.LongTensor({ 0, 1, 2 })) end, 'target 0', '1..4')
      util.assert_error(function() crit:forward(x, torch.DoubleTensor({ 1.5, 1, 2 })) end, 'target 1.5')
      util.assert_error(function() crit:forward(x, torch.LongTensor({ 1, 2 })) end, 'ClassNLLCriterion', '3x4')
      util.assert_error(function() crit:forward(x, 'a') end, 'ClassNLLCriterion', 'string')
      util.assert_error(function()
         nn.ClassNLLCriterion(torch.randn(3):double()):forward(x, torch.LongTensor({ 1, 1, 1 }))
      end, 'weights', '4 classes')
   end)
end)

describe('nn.CrossEntropyCriterion', function()
   it('equals LogSoftMax + NLL with PyTorch-style label smoothing', function()
      for _, eps in ipairs { 0, 0.1, 0.35 } do
         for _, case in ipairs { { 5, 4 }, { 1, 6 }, { 8, 3 } } do
            local N, C = case[1], case[2]
            local x, xf = util.rand_tensor({ N, C }, 'torch.DoubleTensor', -4, 4)
            local t, tf = rand_targets(N, C)
            local lp = log_softmax_rows(xf, N, C)
            for _, weighted in ipairs { false, true } do
               local w, wf
               if weighted then w, wf = util.rand_tensor({ C }, 'torch.DoubleTensor', 0.2, 2) end
               local crit = nn.CrossEntropyCriterion(w, eps)
               util.assert_close({ crit:forward(x, t) }, { nll_ref(lp, N, C, tf, wf, true, eps) }, dtol, 'ce')
               crit.sizeAverage = false
               util.assert_close({ crit:forward(x, t) }, { nll_ref(lp, N, C, tf, wf, false, eps) }, dtol, 'ce sum')
            end
         end
      end
   end)

   it('gradient matches finite differences (with and without smoothing and weights)', function()
      for _, eps in ipairs { 0, 0.2 } do
         local t = rand_targets(4, 5)
         gradcheck(nn.CrossEntropyCriterion(nil, eps), rand({ 4, 5 }, -2, 2), t, 'ce')
         gradcheck(nn.CrossEntropyCriterion(rand({ 5 }, 0.2, 2), eps), rand({ 4, 5 }, -2, 2), t, 'ce weighted')
         gradcheck(nn.CrossEntropyCriterion(nil, eps), rand({ 5 }, -2, 2), 3, 'ce 1-d')
      end
   end)

   it('matches PyTorch (incl. label smoothing)', function()
      local f = load_fixture('layers_criterion.txt')
      local t = f.target:long()
      for _, c in ipairs { { 'ce', nil, 0, true }, { 'ce_ls', nil, 0.1, true }, { 'ce_w_ls', f.weights, 0.2, true },
         { 'ce_ls_sum', nil, 0.3, false } } do
         local crit = nn.CrossEntropyCriterion(c[2], c[3])
         crit.sizeAverage = c[4]
         util.assert_close({ crit:forward(f.logits, t) }, f[c[1]], dtol, c[1])
         util.assert_close(crit:backward(f.logits, t), f[c[1] .. '_g'], dtol, c[1] .. ' grad')
      end
   end)

   -- The fused op must give the composition's bits (the recipes train with this loss): every
   -- value equal, zeros with their sign, on random inputs of several shapes and options.
   local function same_bits(a, b, what)
      local fa = type(a) == 'number' and { a } or util.flat(a)
      local fb = type(b) == 'number' and { b } or util.flat(b)
      assert.are.equal(#fb, #fa, what)
      for i = 1, #fa do
         local x, y = fa[i], fb[i]
         if not (x == y and (x ~= 0 or 1 / x == 1 / y)) then
            error(('%s: element %d is %.17g, the composition gives %.17g'):format(what, i, x, y))
         end
      end
   end

   it('is bit-identical to LogSoftMax + ClassNLLCriterion (float32, float64, half)', function()
      for _, ty in ipairs { 'torch.FloatTensor', 'torch.DoubleTensor', 'torch.HalfTensor' } do
         -- (3 x 2051: rows longer than the C loops' 1024-value chunks)
         for _, case in ipairs { { 0, 7 }, { 1, 9 }, { 6, 13 }, { 33, 100 }, { 20, 1000 }, { 3, 2051 } } do
            local N, Cn = case[1], case[2]
            for _, opt in ipairs { { eps = 0 }, { eps = 0.1, w = true }, { eps = 0, w = true, sum = true },
               { eps = 0.3, ignore = true }, { eps = 0, ignore = true, sum = true } } do
               local what = ('%s %dx%d eps=%g w=%s sum=%s ignore=%s'):format(ty, N, Cn, opt.eps, tostring(opt.w),
                  tostring(opt.sum), tostring(opt.ignore))
               local x = N == 0 and util.rand_tensor({ Cn }, ty, -6, 6) or util.rand_tensor({ N, Cn }, ty, -6, 6)
               local t = N == 0 and math.random(1, Cn) or rand_targets(N, Cn)
               if opt.ignore then
                  if N == 0 then t = 2 else t[1] = 2; if N > 2 then t[N] = 2 end end
               end
               local w = opt.w and util.rand_tensor({ Cn }, ty, 0.2, 2) or nil
               local ce = nn.CrossEntropyCriterion(w and w:clone(), opt.eps)
               local lsm, nll = nn.LogSoftMax():type(ty), nn.ClassNLLCriterion(w and w:clone(), not opt.sum,
                  opt.ignore and 2 or nil)
               nll.smoothing = opt.eps
               ce.sizeAverage = not opt.sum
               if opt.ignore then ce.ignoreIndex = 2 end
               local l = ce:forward(x, t)
               local lr = nll:forward(lsm:forward(x), t)
               same_bits(l, lr, what .. ' loss')
               local g = ce:backward(x, t)
               local gr = lsm:backward(x, nll:backward(lsm.output, t))
               same_bits(g, gr, what .. ' gradInput')
            end
         end
      end
   end)

   it('rejects bad smoothing and targets', function()
      util.assert_error(function() nn.CrossEntropyCriterion(nil, 1.5) end, 'label smoothing', '1.5')
      util.assert_error(function()
         nn.CrossEntropyCriterion():forward(torch.randn(2, 3), torch.LongTensor({ 4, 1 }))
      end, 'target 4', '1..3')
   end)
end)

describe('nn.MSECriterion', function()
   it('loss and gradient match the reference for each float dtype and layout', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         for _, shape in ipairs { { 7 }, { 3, 5 }, { 2, 3, 4 } } do
            local x, xf = util.rand_tensor(shape, ty)
            local y, yf = util.rand_tensor(shape, ty)
            for _, sa in ipairs { true, false } do
               local crit = nn.MSECriterion(sa)
               local s = 0
               for i = 1, #xf do s = s + (xf[i] - yf[i]) ^ 2 end
               local n = sa and #xf or 1
               local tol = ty == 'torch.DoubleTensor' and dtol or { atol = 1e-4, rtol = 1e-4 }
               util.assert_close({ crit:forward(x, y) }, { s / n }, tol, 'mse ' .. ty)
               local g = {}
               for i = 1, #xf do g[i] = 2 * (xf[i] - yf[i]) / n end
               util.assert_close(crit:backward(x, y), g, util.tol[ty], 'mse grad ' .. ty)
            end
         end
      end
   end)

   it('gradient matches finite differences, non-contiguous input', function()
      gradcheck(nn.MSECriterion(), rand { 3, 4 }, rand { 3, 4 }, 'mse')
      gradcheck(nn.MSECriterion(false), rand({ 4, 3 }):t(), rand { 3, 4 }, 'mse sum transposed')
   end)

   it('matches PyTorch', function()
      local f = load_fixture('layers_criterion.txt')
      for _, c in ipairs { { 'mse', true }, { 'mse_sum', false } } do
         local crit = nn.MSECriterion(c[2])
         util.assert_close({ crit:forward(f.mse_x, f.mse_t) }, f[c[1]], dtol, c[1])
         util.assert_close(crit:backward(f.mse_x, f.mse_t), f[c[1] .. '_g'], dtol, c[1] .. ' grad')
      end
   end)

   -- MSE and SmoothL1 sum in fixed blocks of double lanes: a long input (several blocks and a
   -- tail) against a plain float64 sum, the float dtypes against it, a transposed target
   it('MSE and SmoothL1: long inputs in every float dtype against a float64 reference', function()
      local huber = function(d) d = math.abs(d) return d < 1 and 0.5 * d * d or d - 0.5 end
      local clamp = function(d) return math.max(-1, math.min(1, d)) end
      for _, kind in ipairs { { nn.MSECriterion, function(d) return d * d end, function(d) return 2 * d end },
         { nn.SmoothL1Criterion, huber, clamp } } do
         for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor' } do
            local x, xf = util.rand_tensor({ 3, 3001 }, ty, -3, 3)
            local y = util.rand_tensor({ 3001, 3 }, ty, -3, 3):t()
            local yf = util.flat(y)
            for _, sa in ipairs { true, false } do
               local n = sa and #xf or 1
               local s, g = 0, {}
               for i = 1, #xf do
                  s = s + kind[2](xf[i] - yf[i])
                  g[i] = kind[3](xf[i] - yf[i]) / n
               end
               local crit = kind[1](sa)
               local what = ('%s %s sizeAverage=%s'):format(torch.type(crit), ty, tostring(sa))
               local tol = ty == 'torch.DoubleTensor' and { atol = 1e-12, rtol = 1e-12 } or { atol = 1e-9, rtol = 1e-9 }
               util.assert_close({ crit:forward(x, y) }, { s / n }, tol, what)
               util.assert_close(crit:backward(x, y), g, util.tol[ty], what .. ' grad')
            end
         end
      end
      gradcheck(nn.SmoothL1Criterion(), rand({ 3, 4 }, -3, 3), rand({ 12 }, -3, 3), 'smoothl1 target of another shape')
      util.assert_error(function() nn.SmoothL1Criterion():forward(torch.randn(3), torch.randn(3):double()) end,
         'SmoothL1Criterion', 'float64')
   end)

   it('rejects mismatched sizes and dtypes', function()
      util.assert_error(function() nn.MSECriterion():forward(torch.randn(3, 4), torch.randn(4, 4)) end, 'MSECriterion',
         '3x4', '4x4')
      util.assert_error(function() nn.MSECriterion():forward(torch.randn(3), torch.randn(3):double()) end,
         'MSECriterion', 'float64')
   end)
end)
