-- nn criterions of criterion.md beyond NLL/CE/MSE: forward against PyTorch's functional losses
-- (one python3 run for the whole file) or float64 Lua references where PyTorch has no such loss;
-- gradients against central differences of the criterion's own forward; sizeAverage on and off,
-- batch and single-sample forms, table inputs. Class targets are 1-based here, 0-based in PyTorch.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local loss_diff = require('spec.nn.peer').loss_diff

local PY = util.PY
local fwd_tol = { atol = 1e-10, rtol = 1e-9 }
local grad_tol = { atol = 1e-6, rtol = 1e-5 }

local function D(...) return torch.DoubleTensor(...) end
local function uniform(shape, lo, hi) return (util.rand_tensor(shape, 'torch.DoubleTensor', lo, hi)) end
local function signs(shape) -- random +-1 labels
   return uniform(shape, 0, 1):gt(0.5):double():mul(2):add(-1)
end
local function classes(n, C)
   local t = torch.LongTensor(n)
   for i = 1, n do t[i] = math.random(1, C) end
   return t
end

-- PyTorch references: cases are registered while the describe block is built, computed by one
-- python3 process on first use.
local py = { lines = {}, n = 0 }
local function pylist(t) return '[' .. table.concat(util.flat(t), ',') .. ']' end
local function pytensor(t)
   local dt = torch.type(t) == 'torch.LongTensor' and 'torch.int64' or 'torch.float64'
   return ('torch.tensor(%s, dtype=%s).view(%s)'):format(pylist(t:contiguous()), dt,
      table.concat(t:size():totable(), ','))
end
-- key -> PyTorch value of expr, with the named tensors bound (class tensors shifted to 0-based
-- by the expression itself)
local function pycase(key, expr, tensors)
   local binds = {}
   for name, t in pairs(tensors) do binds[#binds + 1] = ('%s=%s'):format(name, pytensor(t)) end
   py.lines[#py.lines + 1] = ('def f_%d():\n    %s\n    return %s\nprint(%q, repr(float(f_%d())))')
      :format(#py.lines + 1, #binds > 0 and table.concat(binds, '\n    ') or 'pass', expr, key, #py.lines + 1)
end
-- start python3 on every registered case; it runs while the gradient checks do
local function pystart()
   py.path = os.tmpname()
   local f = assert(io.open(py.path, 'w'))
   f:write('import torch\nimport torch.nn.functional as F\nimport warnings\nwarnings.simplefilter("ignore")\n',
      table.concat(py.lines, '\n'), '\n')
   f:close()
   py.pipe = io.popen(PY .. ' ' .. py.path .. ' 2>&1')
end
-- the PyTorch value of a case, or nil when there is no python3 with torch
local function pyref(key)
   if py.values == nil then
      local out = py.pipe:read('*a')
      py.pipe:close()
      os.remove(py.path)
      py.values = {}
      for k, v in out:gmatch('(%S+) (%S+)\n') do py.values[k] = tonumber(v) end
      if not next(py.values) then
         assert(out:find("No module named 'torch'", 1, true) or out:find('not found', 1, true),
            'python3 gave no values:\n' .. out)
         py.values = false
      end
   end
   if py.values == false then return nil end
   return assert(py.values[key], 'no PyTorch value for ' .. key)
end

-- every tensor in a (nested) input, in a fixed order
local function leaves(x, out)
   out = out or {}
   if torch.isTensor(x) then out[#out + 1] = x else for _, v in ipairs(x) do leaves(v, out) end end
   return out
end

-- backward against central differences of forward, perturbing each input element in turn
local function gradcheck(crit, input, target, what)
   crit:forward(input, target)
   local analytic = leaves(crit:backward(input, target))
   local xs = leaves(input)
   assert(#analytic == #xs, what .. ': gradInput has ' .. #analytic .. ' tensors for ' .. #xs .. ' inputs')
   local h = 1e-6
   for k, x in ipairs(xs) do
      local g = analytic[k]:clone()
      assert(g:isSameSizeAs(x), what .. ': gradInput ' .. k .. ' is not shaped as its input')
      local num = loss_diff(crit, input, target, x, h)
      util.assert_close(g, num, grad_tol, what .. ' gradInput ' .. k)
   end
end

-- one checked case: forward against PyTorch's expression (pyexpr) or a Lua reference number,
-- then gradients
local cases = {}
local function pyexpr(expr, tensors) return { s = expr, tensors = tensors } end
local function case(name, make, input, target, ref)
   local c = { name = name, make = make, input = input, target = target, key = name:gsub('%W', '_') .. '_' .. #cases }
   if type(ref) == 'table' then
      pycase(c.key, ref.s, ref.tensors)
      c.py = true
   else
      c.ref = ref
   end
   cases[#cases + 1] = c
end

local function R(sa) return sa and "'mean'" or "'sum'" end

-- elementwise losses: batch (N x C) and single-sample (C) forms, sizeAverage on and off
for _, shape in ipairs { { 3, 5 }, { 7 } } do
   for _, sa in ipairs { true, false } do
      local tag = ('%s %s'):format(table.concat(shape, 'x'), sa and 'mean' or 'sum')
      local x, t = uniform(shape, -2, 2), uniform(shape, -2, 2)
      case('AbsCriterion ' .. tag, function() return nn.AbsCriterion(sa) end, x, t,
         pyexpr('F.l1_loss(x, t, reduction=' .. R(sa) .. ')', { x = x, t = t }))
      case('SmoothL1Criterion ' .. tag, function() return nn.SmoothL1Criterion(sa) end, x, t,
         pyexpr('F.smooth_l1_loss(x, t, reduction=' .. R(sa) .. ')', { x = x, t = t }))
      case('MSECriterion ' .. tag, function() return nn.MSECriterion(sa) end, x, t,
         pyexpr('F.mse_loss(x, t, reduction=' .. R(sa) .. ')', { x = x, t = t }))
      -- target distribution with some exact zeros (0 log 0 = 0)
      local p = uniform(shape, 0, 1):cmul(uniform(shape, 0, 1):gt(0.3):double())
      case('DistKLDivCriterion ' .. tag, function() local c = nn.DistKLDivCriterion(sa) return c end, x, p,
         pyexpr('F.kl_div(x, p, reduction=' .. R(sa) .. ')', { x = x, p = p }))
      local y = signs(shape)
      case('SoftMarginCriterion ' .. tag, function() local c = nn.SoftMarginCriterion() c.sizeAverage = sa return c end,
         x, y, pyexpr('F.soft_margin_loss(x, y, reduction=' .. R(sa) .. ')', { x = x, y = y }))
      case('HingeEmbeddingCriterion ' .. tag,
         function() local c = nn.HingeEmbeddingCriterion(0.7) c.sizeAverage = sa return c end, x, y,
         pyexpr('F.hinge_embedding_loss(x, y, margin=0.7, reduction=' .. R(sa) .. ')', { x = x, y = y }))
      local mref = 0
      for i, v in ipairs(util.flat(x)) do mref = mref + math.max(0, 0.6 - v * util.flat(y)[i]) end
      case('MarginCriterion ' .. tag, function() local c = nn.MarginCriterion(0.6) c.sizeAverage = sa return c end,
         x, y, sa and mref / x:nElement() or mref)
      local prob, bt = uniform(shape, 0.05, 0.95), uniform(shape, 0, 1)
      local w = uniform({ shape[#shape] }, 0.2, 2)
      case('BCECriterion ' .. tag, function() return nn.BCECriterion(nil, sa) end, prob, bt,
         pyexpr('F.binary_cross_entropy(x, t, reduction=' .. R(sa) .. ')', { x = prob, t = bt }))
      case('BCECriterion weights ' .. tag, function() return nn.BCECriterion(w, sa) end, prob, bt,
         pyexpr('F.binary_cross_entropy(x, t, weight=w.expand_as(x), reduction=' .. R(sa) .. ')',
            { x = prob, t = bt, w = w }))
      local lab = uniform(shape, 0, 1):gt(0.5):double()
      -- PyTorch means over classes per sample; Torch7's sum is the plain sum over elements
      local scale = sa and '' or (' * %d'):format(shape[#shape])
      case('MultiLabelSoftMarginCriterion weights ' .. tag,
         function() return nn.MultiLabelSoftMarginCriterion(w, sa) end, x, lab,
         pyexpr('F.multilabel_soft_margin_loss(x.view(-1, w.numel()), t.view(-1, w.numel()), weight=w, reduction='
            .. R(sa) .. ')' .. scale, { x = x, t = lab, w = w }))
   end
end

-- class-target losses
for _, N in ipairs { 4, 1 } do
   local C = 5
   for _, sa in ipairs { true, false } do
      local tag = ('%s %s'):format(N == 1 and 'single' or 'batch', sa and 'mean' or 'sum')
      local x = N == 1 and uniform({ C }, -1, 1) or uniform({ N, C }, -1, 1)
      local t = classes(N, C)
      local tgt = N == 1 and t[1] or t
      local w = uniform({ C }, 0.2, 2)
      for _, p in ipairs { 1, 2 } do
         case(('MultiMarginCriterion p=%d weights %s'):format(p, tag), function()
            local c = nn.MultiMarginCriterion(p, w, 0.8) c.sizeAverage = sa return c
         end, x, tgt, pyexpr(('F.multi_margin_loss(x.view(-1, %d), t - 1, p=%d, margin=0.8, weight=w, reduction=%s)')
            :format(C, p, R(sa)), { x = x, t = t, w = w }))
      end
      case('MultiMarginCriterion default ' .. tag, function()
         local c = nn.MultiMarginCriterion() c.sizeAverage = sa return c
      end, x, tgt, pyexpr(('F.multi_margin_loss(x.view(-1, %d), t - 1, reduction=%s)'):format(C, R(sa)),
         { x = x, t = t }))
      -- each row: a few distinct classes, then 0, then leftovers the criterion must not read
      local ml = torch.LongTensor(N, C):zero()
      for i = 1, N do
         local perm = torch.randperm(C)
         local k = math.random(1, C - 1)
         for j = 1, k do ml[i][j] = perm[j] end
         for j = k + 2, C do ml[i][j] = math.random(1, C) end
      end
      local mlt = N == 1 and ml:view(C) or ml
      case('MultiLabelMarginCriterion ' .. tag, function()
         local c = nn.MultiLabelMarginCriterion() c.sizeAverage = sa return c
      end, x, mlt, pyexpr(('F.multilabel_margin_loss(x.view(-1, %d), t.view(-1, %d) - 1, reduction=%s)')
         :format(C, C, R(sa)), { x = x, t = ml }))
      -- ClassNLLCriterion's Torch7 options: weights, sizeAverage, ignoreIndex
      local lp = x:clone():exp()
      lp = lp:cdiv(lp:sum(x:dim()):expandAs(lp)):log()
      case('ClassNLLCriterion weights ' .. tag, function() return nn.ClassNLLCriterion(w, sa) end, lp, tgt,
         pyexpr(('F.nll_loss(x.view(-1, %d), t - 1, weight=w, reduction=%s)'):format(C, R(sa)),
            { x = lp, t = t, w = w }))
      case('CrossEntropyCriterion weights ' .. tag, function() return nn.CrossEntropyCriterion(w, sa) end, x, tgt,
         pyexpr(('F.cross_entropy(x.view(-1, %d), t - 1, weight=w, reduction=%s)'):format(C, R(sa)),
            { x = x, t = t, w = w }))
      if N > 1 then
         local ti = t:clone()
         ti[2] = 0
         case('ClassNLLCriterion ignoreIndex=0 ' .. tag, function() return nn.ClassNLLCriterion(w, sa, 0) end, lp, ti,
            pyexpr(('F.nll_loss(x, t - 1, weight=w, ignore_index=-1, reduction=%s)'):format(R(sa)),
               { x = lp, t = ti, w = w }))
         local td = t:clone()
         td[1], td[N] = -100, -100
         case('ClassNLLCriterion ignoreIndex default ' .. tag, function() return nn.ClassNLLCriterion(nil, sa) end,
            lp, td, pyexpr(('F.nll_loss(x, t - 1, ignore_index=-101, reduction=%s)'):format(R(sa)), { x = lp, t = td }))
      end
   end
end

-- pair (table) inputs
for _, N in ipairs { 4, 1 } do
   for _, sa in ipairs { true, false } do
      local tag = ('%s %s'):format(N == 1 and 'single' or 'batch', sa and 'mean' or 'sum')
      local Dm = 5
      local a = N == 1 and uniform({ Dm }, -1, 1) or uniform({ N, Dm }, -1, 1)
      local b = a:clone():add(uniform(a:size():totable(), -0.8, 0.8))
      local y = signs({ N })
      local yin = N == 1 and y[1] or y
      case('CosineEmbeddingCriterion ' .. tag, function()
         local c = nn.CosineEmbeddingCriterion(0.1) c.sizeAverage = sa return c
      end, { a, b }, yin, pyexpr(
         ('F.cosine_embedding_loss(a.view(-1, %d), b.view(-1, %d), y, margin=0.1, reduction=%s)')
         :format(Dm, Dm, R(sa)), { a = a, b = b, y = y }))
      local s1, s2 = uniform({ N }, -1, 1), uniform({ N }, -1, 1)
      case('MarginRankingCriterion ' .. tag, function()
         local c = nn.MarginRankingCriterion(0.3) c.sizeAverage = sa return c
      end, { s1, s2 }, N == 1 and y[1] or y, pyexpr(('F.margin_ranking_loss(a, b, y, margin=0.3, reduction=%s)')
         :format(N == 1 and "'sum'" or R(sa)), { a = s1, b = s2, y = y }))
   end
end
do -- a number label applies to every element
   local x = uniform({ 2, 3 }, -1, 2)
   case('HingeEmbeddingCriterion number label', function() return nn.HingeEmbeddingCriterion(1.5) end, x, -1,
      pyexpr('F.hinge_embedding_loss(x, -torch.ones_like(x), margin=1.5)', { x = x }))
end
for _, yl in ipairs { 1, -1 } do
   local a, b = uniform({ 2, 3 }, -1, 1), uniform({ 2, 3 }, -1, 1)
   local d = 0
   for i, v in ipairs(util.flat(a)) do d = d + math.abs(v - util.flat(b)[i]) end
   local margin = yl == 1 and 1 or d + 0.5 -- y = -1: inside the margin, so the gradient is live
   case('L1HingeEmbeddingCriterion y=' .. yl, function() return nn.L1HingeEmbeddingCriterion(margin) end, { a, b }, yl,
      yl == 1 and d or math.max(0, margin - d))
end

-- compositions, with a nested table input
do
   local x, t = uniform({ 3, 4 }, -1, 1), uniform({ 3, 4 }, -1, 1)
   local a, b = uniform({ 3, 5 }, -1, 1), uniform({ 3, 5 }, -1, 1)
   local y = signs({ 3 })
   case('ParallelCriterion nested', function()
      return nn.ParallelCriterion():add(nn.MSECriterion(), 0.5):add(nn.CosineEmbeddingCriterion(0.2), 2)
   end, { x, { a, b } }, { t, y }, pyexpr('0.5 * F.mse_loss(x, t) + 2 * F.cosine_embedding_loss(a, b, y, margin=0.2)',
      { x = x, t = t, a = a, b = b, y = y }))
   local x2 = uniform({ 3, 4 }, -1, 1)
   case('ParallelCriterion repeatTarget', function()
      return nn.ParallelCriterion(true):add(nn.AbsCriterion(), 0.3):add(nn.SmoothL1Criterion(false))
   end, { x, x2 }, t, pyexpr('0.3 * F.l1_loss(x, t) + F.smooth_l1_loss(x2, t, reduction="sum")',
      { x = x, x2 = x2, t = t }))
   case('MultiCriterion', function()
      return nn.MultiCriterion():add(nn.MSECriterion(), 0.5):add(nn.AbsCriterion(false), 1.5)
   end, x, t, pyexpr('0.5 * F.mse_loss(x, t) + 1.5 * F.l1_loss(x, t, reduction="sum")', { x = x, t = t }))
end

describe('nn criterions (criterion.md)', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   pystart()
   for _, c in ipairs(cases) do
      it(c.name .. ': gradient matches finite differences of forward', function()
         gradcheck(c.make(), c.input, c.target, c.name)
      end)
   end
   for _, c in ipairs(cases) do
      it(c.name .. ': forward matches ' .. (c.py and 'PyTorch' or 'a Lua reference'), function()
         local out = c.make():forward(c.input, c.target)
         assert(type(out) == 'number', c.name .. ': forward gave ' .. type(out))
         local ref = c.ref
         if c.py then
            ref = pyref(c.key)
            if ref == nil then
               pending('no python3 with torch')
               return
            end
         end
         util.assert_close({ out }, { ref }, fwd_tol, c.name .. ' loss')
      end)
   end

   it('every case also runs on FloatTensor inputs (double weights converted) close to float64', function()
      local function float(x)
         if type(x) == 'table' then
            local out = {}
            for k, v in pairs(x) do out[k] = float(v) end
            return out
         end
         return torch.type(x) == 'torch.DoubleTensor' and x:float() or x
      end
      for _, c in ipairs(cases) do
         local crit = c.make()
         local ref = crit:forward(c.input, c.target)
         local out = crit:forward(float(c.input), float(c.target))
         util.assert_close({ out }, { ref }, { atol = 1e-4, rtol = 1e-4 }, c.name .. ' float loss')
         local g = leaves(crit:backward(float(c.input), float(c.target)))
         local dcrit = c.make()
         dcrit:forward(c.input, c.target)
         local gref = leaves(dcrit:backward(c.input, c.target))
         for k = 1, #g do
            assert(torch.type(g[k]) == 'torch.FloatTensor', c.name .. ': float gradInput is ' .. torch.type(g[k]))
            util.assert_close(g[k], gref[k], { atol = 1e-4, rtol = 1e-4 }, c.name .. ' float gradInput')
         end
      end
   end)

   it('ClassNLLCriterion gives loss 0 and a zero gradient when every target is ignored', function()
      local c = nn.ClassNLLCriterion(nil, true, 2)
      local x = uniform({ 3, 4 }, -2, -0.1)
      assert.are.equal(0, c:forward(x, torch.LongTensor { 2, 2, 2 }))
      util.assert_close(c:backward(x, torch.LongTensor { 2, 2, 2 }), torch.zeros(12), { atol = 0, rtol = 0 }, 'grad')
      assert.are.equal(-100, nn.ClassNLLCriterion().ignoreIndex)
   end)

   it('CrossEntropyCriterion takes Torch7 (weights, sizeAverage) and a label smoothing number', function()
      assert.is_false(nn.CrossEntropyCriterion(nil, false).sizeAverage)
      assert.is_true(nn.CrossEntropyCriterion(D(3):fill(1)).sizeAverage)
      assert.are.equal(0.1, nn.CrossEntropyCriterion(0.1).labelSmoothing)
   end)

   it('MultiCriterion keeps its weights in a DoubleStorage; ParallelCriterion in a table', function()
      local m = nn.MultiCriterion():add(nn.MSECriterion()):add(nn.AbsCriterion(), 3)
      assert.are.equal('torch.DoubleStorage', torch.type(m.weights))
      assert.are.same({ 1, 3 }, { m.weights[1], m.weights[2] })
      local p = nn.ParallelCriterion(true):add(nn.MSECriterion(), 2)
      assert.are.same({ 2 }, p.weights)
      assert.is_true(p.repeatTarget)
   end)

   it('rejects bad inputs with errors that name the criterion', function()
      local x = uniform({ 3, 4 }, -1, 1)
      util.assert_error(function() nn.AbsCriterion():forward(x, uniform({ 5 }, -1, 1)) end,
         'nn.AbsCriterion', '12', '5')
      util.assert_error(function() nn.BCECriterion(D(3):fill(1)):forward(x:clone():abs(), uniform({ 3, 4 }, 0, 1)) end,
         'nn.BCECriterion', 'weights')
      util.assert_error(function() nn.MultiMarginCriterion():forward(x, torch.LongTensor { 1, 5, 2 }) end,
         'nn.MultiMarginCriterion', 'out of range')
      util.assert_error(function() nn.MultiMarginCriterion(3) end, 'nn.MultiMarginCriterion', 'p = 1')
      util.assert_error(function() nn.MultiLabelMarginCriterion():forward(x, torch.LongTensor(3, 4):fill(7)) end,
         'nn.MultiLabelMarginCriterion', 'out of range')
      util.assert_error(function() nn.CosineEmbeddingCriterion():forward({ x, uniform({ 3, 5 }) }, 1) end,
         'nn.CosineEmbeddingCriterion', 'same size')
      util.assert_error(function() nn.MarginRankingCriterion():forward({ x, x }, 1) end,
         'nn.MarginRankingCriterion', 'number target')
      util.assert_error(function() nn.L1HingeEmbeddingCriterion():forward({ x, x }, 0) end,
         'nn.L1HingeEmbeddingCriterion', 'label')
      util.assert_error(function() nn.ParallelCriterion():add(nn.MSECriterion()):forward({ x }, x) end,
         'nn.ParallelCriterion', 'targets')
   end)
end)
