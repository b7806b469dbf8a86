-- all_modules_spec.lua: every nn module and criterion through the same checks, from the
-- case table in spec/nn/cases.lua (one line per class): the :float() module against the float64
-- one (output, gradInput, parameter gradients) from the same float32-representable inputs and
-- parameters; the :cuda() module against the CPU one (pending without a GPU); clone(),
-- clearState() and MemoryFile writeObject/readObject round trips keep the results; inputs with a
-- stride-2 last dimension give the contiguous results; tostring works; and every class
-- registered in the nn table has a case (or is listed as exempt).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local spec_cases = require 'spec.nn.cases'
local cases, exempt = spec_cases.cases, spec_cases.exempt

local function is_float(t) return t:dtype() <= T.BFLOAT16 end

-- the floating tensors of a (nested) table or a number, in order, as { what, value } pairs
local function leaves(x, what, out)
   out = out or {}
   if type(x) == 'number' then out[#out + 1] = { what, x }
   elseif torch.isTensor(x) then
      if is_float(x) then out[#out + 1] = { what, x } end
   elseif type(x) == 'table' then
      for i, v in ipairs(x) do leaves(v, what .. '[' .. i .. ']', out) end
   end
   return out
end

-- floating tensors converted to typename (others moved by conv_int), numbers kept, tables walked
local function convert(x, typename, conv_int)
   if torch.isTensor(x) then
      if is_float(x) then return x:type(typename) end
      return conv_int and conv_int(x) or x
   end
   if type(x) ~= 'table' then return x end
   local r = {}
   for i, v in ipairs(x) do r[i] = convert(v, typename, conv_int) end
   return r
end

-- the same values in a tensor whose last dimension has stride 2 (floating tensors only)
local function strided(x)
   if torch.isTensor(x) then
      if not is_float(x) or x:dim() == 0 then return x end
      local sz = T.sizes(x)
      sz[#sz + 1] = 2
      local y = torch.DoubleTensor(torch.LongStorage(sz)):select(#sz, 1):copy(x)
      assert(not y:isContiguous(), 'strided: a contiguous copy')
      return y
   end
   if type(x) ~= 'table' then return x end
   local r = {}
   for i, v in ipairs(x) do r[i] = strided(v) end
   return r
end

local function rand_like(x)
   if torch.isTensor(x) then return (util.rand_tensor(T.sizes(x), 'torch.DoubleTensor', -1, 1)) end
   if type(x) == 'number' then return math.random() + 0.5 end -- a module whose output is a number
   local r = {}
   for i, v in ipairs(x) do r[i] = rand_like(v) end
   return r
end

local function same(a, b, tol, what)
   local la, lb = leaves(a, what), leaves(b, what)
   assert(#la == #lb, ('%s: %d floating results, expected %d'):format(what, #la, #lb))
   for i = 1, #lb do
      local x, y = la[i][2], lb[i][2]
      if torch.isTensor(y) then
         assert(torch.isTensor(x), lb[i][1] .. ': expected a tensor')
         assert.are.same(T.sizes(y), T.sizes(x), lb[i][1] .. ' sizes')
         y, x = util.flat(y), util.flat(x)
      else
         y, x = { y }, { x }
      end
      util.assert_close(x, y, tol, lb[i][1])
   end
end

-- results are copied: a module may reuse its output and gradInput buffers
local function copy(x)
   if torch.isTensor(x) then return x:clone() end
   if type(x) ~= 'table' then return x end
   local r = {}
   for i, v in ipairs(x) do r[i] = copy(v) end
   return r
end

local function is_criterion(m) return torch.isTypeOf(m, 'nn.Criterion') end

-- a copy with the same layout (strides, offset) in a storage of its own, so that in-place
-- modules cannot change the case's input or gradOutput (GPU tensors: a contiguous clone)
local function fresh(x)
   if torch.isTensor(x) then
      if x:device() >= 0 then return x:clone() end
      local s = x:storage()
      if s == nil then return x.new() end
      local c = torch[torch.type(s):match('%.(%w+)$')](#s)
      c:copy(s)
      return x.new():set(c, x:storageOffset(), x:size(), x:stride())
   end
   if type(x) ~= 'table' then return x end
   local r = {}
   for i, v in ipairs(x) do r[i] = fresh(v) end
   return r
end

-- forward and backward of a module or criterion: the results (copied) and the parameter
-- gradients (seed: reseed first, so modules that draw random numbers draw the same ones each run)
local function run(m, x, t, go, seed)
   x, t, go = fresh(x), fresh(t), fresh(go)
   if seed then torch.manualSeed(seed) end
   if is_criterion(m) then
      local loss = m:forward(x, t)
      return { loss = loss, gradInput = copy(m:backward(x, t)) }
   end
   local y = copy(m:forward(x))
   m:zeroGradParameters()
   local gi = copy(m:backward(x, go))
   local _, gp = m:parameters()
   return { output = y, gradInput = gi, gradParams = copy(gp or {}) }
end

-- paths of the float64 tensors left in a converted module (fields, nested tables and modules)
local function doubles_in(v, path, out, seen)
   out, seen = out or {}, seen or {}
   if torch.isTensor(v) then
      if torch.type(v) == 'torch.DoubleTensor' then out[#out + 1] = path end
   elseif type(v) == 'table' and not seen[v] then
      seen[v] = true
      for k, x in pairs(v) do doubles_in(x, path .. '.' .. tostring(k), out, seen) end
   end
   return out
end

local function compare(got, want, tol, what)
   assert(#leaves(want.loss or want.output, what) > 0, what .. ': no floating output to compare')
   for _, k in ipairs { 'loss', 'output', 'gradInput', 'gradParams' } do
      if want[k] ~= nil then same(got[k], want[k], tol, what .. ' ' .. k) end
   end
end

-- the class a case is for: 'ReLU#inplace' is a second case of nn.ReLU
local function class_of(name) return name:match('^[^#]+') end

-- a case built in float64 with float32-representable inputs, parameters and state, so that the
-- float32 module and the float64 reference start from the same numbers
local function build(name)
   local m, x, t, opts = cases[name]()
   assert(torch.type(m) == 'nn.' .. class_of(name),
      ('spec/nn/cases.lua: the case %s builds a %s'):format(name, torch.type(m)))
   opts = opts or {}
   if opts.setup then opts.setup(m, x, t) end
   if opts.evaluate then m:evaluate() end
   m:float():double()
   local function round(v) return convert(convert(v, 'torch.FloatTensor'), 'torch.DoubleTensor') end
   x, t = round(x), round(t)
   local go
   if not is_criterion(m) then go = round(rand_like(m:clone():forward(x))) end
   if opts.seed then opts.seed = math.random(1, 2 ^ 30) end
   return m, x, t, go, opts
end

local names = {}
for name in pairs(cases) do names[#names + 1] = name end
table.sort(names)

local function float_tol(opts)
   local k = opts.tol or 1
   return { atol = 3e-5 * k, rtol = 3e-4 * k }
end

describe('every nn module and criterion', function()
   local saved
   before_each(function()
      saved = torch.getdefaulttensortype()
      torch.setdefaulttensortype('torch.DoubleTensor')
   end)
   after_each(function() torch.setdefaulttensortype(saved) end)

   it('has a case in spec/nn/cases.lua for each registered class', function()
      local missing, covered = {}, {}
      for name in pairs(cases) do covered[class_of(name)] = true end
      for k, v in pairs(nn) do
         if type(v) == 'table' and type(k) == 'string' and v.__typename == 'nn.' .. k
            and not covered[k] and not exempt[k] then
            missing[#missing + 1] = k
         end
      end
      table.sort(missing)
      assert(#missing == 0, 'nn classes without a case in spec/nn/cases.lua: ' .. table.concat(missing, ', '))
      for name in pairs(covered) do assert(nn[name], 'spec/nn/cases.lua: no class nn.' .. name) end
   end)

   for _, name in ipairs(names) do
      it(name .. ':float() gives the float64 results within float32 tolerance', function()
         local m, x, t, go, opts = build(name)
         local want = run(m:clone(), x, t, go, opts.seed)
         local mf = m:clone():float()
         local conv = function(v) return convert(v, 'torch.FloatTensor') end
         local got = run(mf, conv(x), conv(t), conv(go), opts.seed)
         for _, l in ipairs(leaves(got.output or {}, name)) do
            if type(l[2]) ~= 'number' then -- a loss (CriterionTable) is a number
               assert.are.equal('torch.FloatTensor', torch.type(l[2]), name .. ' output type after :float()')
            end
         end
         compare(got, want, float_tol(opts), 'nn.' .. name .. ':float()')
         local left = doubles_in(mf, name)
         assert(#left == 0, 'nn.' .. name .. ':float() left float64 tensors: ' .. table.concat(left, ', '))
      end)

      it(name .. ': clone(), clearState(), writeObject/readObject keep the results; tostring', function()
         local dtol = { atol = 1e-12, rtol = 1e-10 }
         local m, x, t, go, opts = build(name)
         local want = run(m, x, t, go, opts.seed)
         local c = m:clone()
         compare(run(c, x, t, go, opts.seed), want, dtol, 'nn.' .. name .. ':clone()')
         -- the clone owns its parameters: changing them leaves the original's results (below) alone
         for _, p in ipairs(not is_criterion(c) and c:parameters() or {}) do p:add(1) end
         m:clearState()
         for _, k in ipairs { 'output', 'gradInput' } do
            for _, l in ipairs(leaves(type(m[k]) ~= 'number' and m[k] or {}, name .. '.' .. k)) do
               assert.are.equal(0, l[2]:nElement(), 'nn.' .. name .. ':clearState() kept ' .. l[1])
            end
         end
         local after = run(m, x, t, go, opts.seed)
         if opts.redraws then -- new random state: only the sizes must stay
            assert.are.same(T.sizes(want.output), T.sizes(after.output), name .. ' output sizes after clearState()')
            want = after
         else
            compare(after, want, dtol, 'nn.' .. name .. ' after clearState()')
         end
         for _, mode in ipairs { 'binary', 'ascii' } do
            local f = torch.MemoryFile('rw')
            f[mode](f)
            f:writeObject(m)
            f:seek(1)
            local r = f:readObject()
            f:close()
            assert.are.equal(torch.type(m), torch.type(r), name .. ' read back')
            compare(run(r, x, t, go, opts.seed), want, dtol, 'nn.' .. name .. ' read back (' .. mode .. ')')
         end
         local s = tostring(m)
         assert(type(s) == 'string' and s:find(class_of(name), 1, true), ('nn.%s: tostring gave %q'):format(name, s))
      end)

      it(name .. ': non-contiguous inputs give the results of contiguous ones', function()
         local m, x, t, go, opts = build(name)
         local want = run(m:clone(), x, t, go, opts.seed)
         local got = run(m:clone(), strided(x), strided(t), strided(go), opts.seed)
         compare(got, want, { atol = 1e-12, rtol = 1e-10 }, 'nn.' .. name .. ' on strided inputs')
      end)

      util.gpu_it(name .. ':cuda() gives the CPU float32 results', function()
         local m, x, t, go, opts = build(name)
         local conv = function(v) return convert(v, 'torch.FloatTensor') end
         local cuda_int = function(v) return v:cuda() end
         local cx = function(v) return convert(conv(v), 'torch.CudaTensor', cuda_int) end
         if opts.seed then -- the GPU draws other random numbers: compare the evaluation-mode output
            m:evaluate()
            local want = m:clone():float():forward(conv(x))
            same(m:clone():cuda():forward(cx(x)), want, float_tol(opts), 'nn.' .. name .. ':cuda() output')
            return
         end
         local want = run(m:clone():float(), conv(x), conv(t), conv(go))
         local got = run(m:clone():cuda(), cx(x), cx(t), cx(go))
         local tol = float_tol(opts)
         compare(got, want, { atol = tol.atol * 10, rtol = tol.rtol * 10 }, 'nn.' .. name .. ':cuda()')
      end)
   end
end)
