-- ref.lua: what the optimizer specs share: direct Lua transcriptions of Torch7's optim and
-- of each method's paper (on Lua arrays, in float64), and the helpers that run a method on
-- fresh random data. Used by optim/fused_steps_spec.lua and optim/mixed_precision_spec.lua.
local optim = require 'moontorch.optim'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local R = {}

local function copy(a) local r = {} for i = 1, #a do r[i] = a[i] end return r end
local function rand(n, lo, hi) return util.rand_flat(n, lo or -1, hi or 1) end

-- Run `method` for #grads steps on x0 (flat values) with the given gradients; returns the final
-- values of x and the state. feval also checks that it sees the current x.
local function run(method, x0, grads, config, typename, shape)
   typename = typename or 'torch.DoubleTensor'
   local dtype = T.parse_typename(typename)
   local x = T.from_flat(x0, shape or { #x0 }, dtype, T.CPU_DEVICE)
   local state, step = {}, 0
   local fs = {}
   for s = 1, #grads do
      local g = T.from_flat(grads[s], shape or { #x0 }, dtype, T.CPU_DEVICE)
      local _, f = optim[method](function(xx)
         assert(xx == x)
         step = step + 1
         return step * 1.5, g
      end, x, config, state)
      fs[s] = f[1]
   end
   for s = 1, #grads do
      if fs[s] ~= s * 1.5 then
         error(('step %d returned f = %s, expected feval\'s %g'):format(s, tostring(fs[s]), s * 1.5), 2)
      end
   end
   return util.flat(x), state, x
end

-- values as stored in a dtype (the reference must start from the same rounded numbers)
local function rounded(vals, typename)
   return util.flat(T.from_flat(vals, { #vals }, T.parse_typename(typename), T.CPU_DEVICE))
end

---------------------------------------------------------------------------------------------
-- reference transcriptions

-- Torch7's optim/sgd.lua, line by line, on Lua arrays
local function ref_sgd(x, grads, config)
   x = copy(x)
   local lr, lrd = config.learningRate or 1e-3, config.learningRateDecay or 0
   local wd, mom = config.weightDecay or 0, config.momentum or 0
   local damp, nesterov = config.dampening or mom, config.nesterov or false
   local lrs, wds = config.learningRatesFlat, config.weightDecaysFlat
   local nevals, buf = 0, nil
   for _, g0 in ipairs(grads) do
      local g = copy(g0)
      if wd ~= 0 then for i = 1, #x do g[i] = g[i] + wd * x[i] end end
      if wds then for i = 1, #x do g[i] = g[i] + wds[i] * x[i] end end
      if mom ~= 0 then
         if not buf then buf = copy(g)
         else for i = 1, #x do buf[i] = mom * buf[i] + (1 - damp) * g[i] end end
         if nesterov then for i = 1, #x do g[i] = g[i] + mom * buf[i] end else g = copy(buf) end
      end
      local clr = lr / (1 + nevals * lrd)
      for i = 1, #x do x[i] = x[i] - clr * (lrs and lrs[i] or 1) * g[i] end
      nevals = nevals + 1
   end
   return x
end

-- Kingma & Ba, Algorithm 1 with the "efficient" step of section 2 (Torch7's form):
-- alpha_t = alpha*sqrt(1-b2^t)/(1-b1^t); theta -= alpha_t * m/(sqrt(v)+eps); L2 decay in g.
local function ref_adam(x, grads, c)
   x = copy(x)
   local a, b1, b2, eps, wd = c.learningRate or 1e-3, c.beta1 or 0.9, c.beta2 or 0.999, c.epsilon or 1e-8,
      c.weightDecay or 0
   local lrd = c.learningRateDecay or 0
   local m, v = {}, {}
   for i = 1, #x do m[i], v[i] = 0, 0 end
   for t, g0 in ipairs(grads) do
      local at = a / (1 + (t - 1) * lrd) * math.sqrt(1 - b2 ^ t) / (1 - b1 ^ t)
      for i = 1, #x do
         local g = g0[i] + wd * x[i]
         m[i] = b1 * m[i] + (1 - b1) * g
         v[i] = b2 * v[i] + (1 - b2) * g * g
         x[i] = x[i] - at * m[i] / (math.sqrt(v[i]) + eps)
      end
   end
   return x
end

-- Loshchilov & Hutter, Algorithm 2 (AdamW) with eta_t = 1, alpha = lr, lambda = lr*wd:
-- theta -= eta*(alpha*mhat/(sqrt(vhat)+eps) + lambda*theta)
local function ref_adamw(x, grads, c)
   x = copy(x)
   local a, b1, b2, eps, wd = c.learningRate or 1e-3, c.beta1 or 0.9, c.beta2 or 0.999, c.epsilon or 1e-8,
      c.weightDecay or 1e-2
   local m, v = {}, {}
   for i = 1, #x do m[i], v[i] = 0, 0 end
   for t, g in ipairs(grads) do
      for i = 1, #x do
         m[i] = b1 * m[i] + (1 - b1) * g[i]
         v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i]
         local mh, vh = m[i] / (1 - b1 ^ t), v[i] / (1 - b2 ^ t)
         x[i] = x[i] - (a * mh / (math.sqrt(vh) + eps) + a * wd * x[i])
      end
   end
   return x
end

local function norm(a, i0, i1)
   local s = 0
   for i = i0, i1 do s = s + a[i] * a[i] end
   return math.sqrt(s)
end

-- segments as {first, last, excluded} (1-based inclusive) for the references
-- You, Gitman & Ginsburg 2017, Algorithm 1 (LARS), per layer; excluded layers: plain SGD.
local function ref_lars(x, grads, c, segs)
   x = copy(x)
   local lr, mom, wd, eta, eps = c.learningRate, c.momentum or 0.9, c.weightDecay or 0, c.eta or 0.001, c.epsilon or 0
   local v = {}
   for i = 1, #x do v[i] = 0 end
   local trusts
   for _, g in ipairs(grads) do
      trusts = {}
      for k, s in ipairs(segs) do
         local a, b, excl = s[1], s[2], s[3]
         local beta = excl and 0 or wd
         local wn, gn = norm(x, a, b), norm(g, a, b)
         local local_lr = 1
         if not excl and wn > 0 and gn > 0 then local_lr = eta * wn / (gn + beta * wn + eps) end
         trusts[k] = local_lr
         for i = a, b do
            v[i] = mom * v[i] + lr * local_lr * (g[i] + beta * x[i])
            x[i] = x[i] - v[i]
         end
      end
   end
   return x, trusts
end

-- You et al. 2019, Algorithm 2 (LAMB) with bias correction, per layer; excluded layers: trust 1,
-- no decay; trust ratio ||w||/||u|| clipped at maxTrust.
local function ref_lamb(x, grads, c, segs)
   x = copy(x)
   local lr, b1, b2, eps, wd = c.learningRate, c.beta1 or 0.9, c.beta2 or 0.999, c.epsilon or 1e-6,
      c.weightDecay or 0.01
   local clip = c.maxTrust or 10
   local m, v = {}, {}
   for i = 1, #x do m[i], v[i] = 0, 0 end
   local trusts
   for t, g in ipairs(grads) do
      trusts = {}
      for k, s in ipairs(segs) do
         local a, b, excl = s[1], s[2], s[3]
         local lam = excl and 0 or wd
         local u = {}
         for i = a, b do
            m[i] = b1 * m[i] + (1 - b1) * g[i]
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i]
            local mh, vh = m[i] / (1 - b1 ^ t), v[i] / (1 - b2 ^ t)
            u[i] = mh / (math.sqrt(vh) + eps) + lam * x[i]
         end
         local wn, un = norm(x, a, b), norm(u, a, b)
         local r = 1
         if not excl and wn > 0 and un > 0 then r = wn / un if clip > 0 then r = math.min(r, clip) end end
         trusts[k] = r
         for i = a, b do x[i] = x[i] - lr * r * u[i] end
      end
   end
   return x, trusts
end

local SIZES = { 1, 7, 33, 1000, 40001 } -- the last crosses the OpenMP threshold
local F64 = { atol = 1e-12, rtol = 1e-10 }
local F32 = { atol = 1e-5, rtol = 1e-4 }

local function grads_for(n, steps, scale)
   local g = {}
   for s = 1, steps do g[s] = rand(n, -(scale or 1), scale or 1) end
   return g
end


-- random layer layout over n: list of {offset, length} (1-based) covering [1, n]
local function random_layers(n, k)
   local cuts = {}
   for i = 1, k - 1 do cuts[i] = math.random(1, n - 1) end
   table.sort(cuts)
   local layers, prev = {}, 0
   for _, c in ipairs(cuts) do
      if c > prev then layers[#layers + 1] = { prev + 1, c - prev } prev = c end
   end
   layers[#layers + 1] = { prev + 1, n - prev }
   return layers
end


-- a random layout over n with every other layer excluded: layers and exclusions as
-- {offset, length} lists for config, and {first, last, excluded} segments for the references
local function layout(n, k)
   local layers = random_layers(n, k)
   local excl, segs = {}, {}
   for i, l in ipairs(layers) do
      local ex = i % 2 == 0
      if ex then excl[#excl + 1] = l end
      segs[#segs + 1] = { l[1], l[1] + l[2] - 1, ex }
   end
   return layers, excl, segs
end

R.layout = layout
R.copy, R.rand, R.run, R.rounded, R.norm = copy, rand, run, rounded, norm
R.grads_for, R.random_layers = grads_for, random_layers
R.sgd, R.adam, R.adamw, R.lars, R.lamb = ref_sgd, ref_adam, ref_adamw, ref_lars, ref_lamb
R.SIZES, R.F64, R.F32 = SIZES, F64, F32
return R
