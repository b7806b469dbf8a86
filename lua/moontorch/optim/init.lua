-- moontorch.optim: Torch7's optim API. Each method is `x, {f} = optim.METHOD(feval, x, config, state)`
-- where x is the flat parameter vector (model:getParameters()) and feval(x) returns f, df/dx.
-- The update itself is one fused C pass over x (csrc/nn/optim*.c).
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local optim = {}
package.loaded['moontorch.optim'] = optim
torch.class.namespace('optim', optim) -- torch.class('optim.Logger') lands in this table

-- shared helpers for the method files --------------------------------------------------------
local util = {}
optim._util = util

-- Torch7's defaults for the (config, state) arguments (state lives in config when not given),
-- and the learning rate and its decay, read before feval runs.
function util.options(config, state)
   config = config or {}
   return config, state or config, config.learningRate or 1e-3, config.learningRateDecay or 0
end

function util.handle(t, name, what)
   if not torch.isTensor(t) then error(('%s: %s must be a tensor, got %s'):format(name, what, type(t)), 3) end
   return t.h
end

-- Evaluate feval and check that it gave a gradient matching x.
function util.eval(opfunc, x, name)
   if type(opfunc) ~= 'function' then error(name .. ': expected feval function as argument 1', 3) end
   if not torch.isTensor(x) then error(name .. ': expected the flat parameter tensor as argument 2', 3) end
   local fx, dfdx = opfunc(x)
   if not torch.isTensor(dfdx) then
      error(name .. ': feval must return f and the gradient tensor, got ' .. type(dfdx) .. ' as gradient', 3)
   end
   return fx, dfdx
end

util.is_tensor = torch.isTensor

-- Check that a tensor the method uses elementwise with x (gradient, learningRates) matches x.
function util.same_size(t, x, name, what)
   what = what or 'gradient'
   if not torch.isTensor(t) then error(('%s: %s must be a tensor, got %s'):format(name, what, type(t)), 3) end
   if t:nElement() ~= x:nElement() then
      error(('%s: %s has %d elements but the parameters have %d'):format(name, what, t:nElement(), x:nElement()), 3)
   end
end

-- A zero-filled state tensor like x, made again if x changed size/type since the last step (or
-- the key holds a config number: rprop's state.stepsize shares its name with config.stepsize).
function util.zero_state(state, key, x)
   local s = state[key]
   if not torch.isTensor(s) or s:nElement() ~= x:nElement() or s:dtype() ~= x:dtype() or s:device() ~= x:device() then
      s = torch.zerosLike(x)
      state[key] = s
      return s, true
   end
   return s, false
end

-- Mixed precision ------------------------------------------------------------------------------
-- Parameters x of a half dtype (float16, bfloat16) are the model's compute copy: the method
-- keeps an fp32 master copy in state.master (taken from x at the first step) and its state
-- (momentum, moments) in fp32 beside it, updates the master and rounds it back into x in the
-- same fused pass. config.master = true asks for the same with float32 parameters (a float64
-- master), false turns it off. Returns the tensor the step updates and the copy (or nil).
-- Once a step has run, state.master is the truth: to change the parameters afterwards, change
-- both or set state.master = nil (it is then taken from x again).
local HALVES = { [T.HALF] = true, [T.BFLOAT16] = true }
function util.master(config, state, x)
   local want = config.master
   if want == nil then want = HALVES[x:dtype()] or false end
   if not want then
      state.master = nil
      return x, nil
   end
   local mdt = x:dtype() == T.FLOAT and T.DOUBLE or T.FLOAT
   local m = state.master
   if m == nil or m:nElement() ~= x:nElement() or m:device() ~= x:device() or m:dtype() ~= mdt then
      m = x:type(T.typename(mdt, x:device()))
      if not m:isContiguous() then m = m:contiguous() end
      state.master = m
   end
   return m, x
end

-- config.gradScale: the factor the fused pass applies to the gradient as it reads it (set by
-- optim.GradScaler to 1/scale, times a clipping factor); 1 when absent
function util.gscale(config, name)
   local s = config.gradScale
   if s == nil then return 1 end
   if type(s) ~= 'number' or not (s > 0) or s == math.huge then -- luacheck: ignore 581 (rejects NaN)
      error(('%s: config.gradScale must be a finite number > 0, got %s'):format(name, tostring(s)), 3)
   end
   return s
end

-- Segments for the layer-wise methods (LARS, LAMB) --------------------------------------------
-- config.layers: list of {offset, length} (1-based offsets into x, like narrow); default: one
-- segment for all of x. config.lars_exclude (or config.exclude): list of {offset, length}
-- ranges, or a ByteTensor mask over x (non-zero = excluded). Excluded parts become their own
-- segments with trust ratio 1 and no weight decay.
local function mask_ranges(mask, n, name)
   if mask:nElement() ~= n then
      error(('%s: exclusion mask has %d elements but the parameters have %d'):format(name, mask:nElement(), n), 4)
   end
   local m = mask:contiguous()
   if m:dtype() ~= T.BYTE and m:dtype() ~= T.BOOL then m = m:type('torch.ByteTensor') end
   m = m:cpu()
   local p = ffi.cast('const uint8_t *', C.mt_tensor_data(m.h))
   local ranges, start = {}, nil
   for i = 0, n - 1 do
      local on = p[i] ~= 0
      if on and not start then start = i
      elseif not on and start then ranges[#ranges + 1] = { start, i } start = nil end
   end
   if start then ranges[#ranges + 1] = { start, n } end
   return ranges
end

local function list_ranges(list, n, name, what)
   local r = {}
   for i, seg in ipairs(list) do
      local off, len = seg[1] or seg.offset, seg[2] or seg.length
      if type(off) ~= 'number' or type(len) ~= 'number' or off < 1 or len < 0 or off + len - 1 > n then
         error(('%s: %s entry %d {%s, %s} is not a range {offset, length} inside the %d parameters'):format(
            name, what, i, tostring(off), tostring(len), n), 4)
      end
      r[#r + 1] = { off - 1, off - 1 + len }
   end
   table.sort(r, function(a, b) return a[1] < b[1] end)
   return r
end

-- Build the C arrays (0-based offsets, lengths, exclude flags); cached in state per config.
function util.segments(config, state, x, name)
   local n = x:nElement()
   local layers, excl = config.layers, config.lars_exclude or config.exclude
   local c = state._segments
   if c and c.n == n and c.layers == layers and c.excl == excl then return c end
   local lr = layers and list_ranges(layers, n, name, 'layers') or { { 0, n } }
   local ex = {}
   if torch.isTensor(excl) then ex = mask_ranges(excl, n, name)
   elseif type(excl) == 'table' then ex = list_ranges(excl, n, name, 'exclusion') end
   local segs = {}
   local function push(a, b, e) if b > a then segs[#segs + 1] = { a, b, e } end end
   for _, L in ipairs(lr) do
      local b, cur = L[2], L[1]
      for _, E in ipairs(ex) do -- sorted by start; overlaps are absorbed by `cur`
         local s, e = math.max(E[1], cur), math.min(E[2], b)
         if e > s then
            push(cur, s, false)
            push(s, e, true)
            cur = e
         end
      end
      push(cur, b, false)
   end
   local k = #segs
   c = { n = n, layers = layers, excl = excl, count = k, list = segs,
      off = ffi.new('int64_t[?]', math.max(k, 1)), len = ffi.new('int64_t[?]', math.max(k, 1)),
      ex = ffi.new('uint8_t[?]', math.max(k, 1)), trust = ffi.new('double[?]', math.max(k, 1)) }
   for i, s in ipairs(segs) do
      c.off[i - 1], c.len[i - 1], c.ex[i - 1] = s[1], s[2] - s[1], s[3] and 1 or 0
   end
   state._segments = c
   return c
end

function util.trust_table(c)
   local t = {}
   for i = 1, c.count do t[i] = c.trust[i - 1] end
   return t
end

-- Segments of a model's parameters inside its flat vector x (from model:getParameters()):
-- returns layers, exclude: one {offset, length} per parameter tensor, and the ranges of the
-- one-dimensional ones (biases and batch-norm weights), which LARS/LAMB leave unadapted.
function optim.layerSegments(model, x)
   local params = model
   if type(model) == 'table' and model.parameters then params = model:parameters() end
   if type(params) ~= 'table' then error('optim.layerSegments: expected a module or a list of parameter tensors', 2) end
   local base = 1
   if x then
      base = x:storageOffset()
      local key = C.mt_tensor_storage_key(x.h)
      for i, p in ipairs(params) do
         if C.mt_tensor_storage_key(p.h) ~= key then
            error(('optim.layerSegments: parameter %d is not a view of the flat vector (call getParameters() first)')
               :format(i), 2)
         end
      end
   end
   local layers, exclude = {}, {}
   for _, p in ipairs(params) do
      local seg = { p:storageOffset() - base + 1, p:nElement() }
      layers[#layers + 1] = seg
      if p:dim() <= 1 then exclude[#exclude + 1] = seg end
   end
   table.sort(layers, function(a, b) return a[1] < b[1] end)
   return layers, exclude
end

-- Optimizer state as checkpoint material: its tensors by name (prefix .. key) and its plain
-- values (numbers, strings, booleans) for the metadata. Keys starting with '_' are caches.
--   local ts, vals = optim.stateToCheckpoint(state, 'optim.')
--   ... checkpoint.save(path, ts + model tensors, {optim = vals}) ...
--   state = optim.stateFromCheckpoint(tensors, meta.optim, 'optim.')
function optim.stateToCheckpoint(state, prefix)
   if type(state) ~= 'table' then error('optim.stateToCheckpoint: expected a state table', 2) end
   prefix = prefix or 'optim.'
   local tensors, values = {}, {}
   for k, v in pairs(state) do
      if type(k) == 'string' and k:sub(1, 1) ~= '_' then
         if torch.isTensor(v) then tensors[prefix .. k] = v
         elseif type(v) == 'number' or type(v) == 'string' or type(v) == 'boolean' then values[k] = v end
      end
   end
   return tensors, values
end

function optim.stateFromCheckpoint(tensors, values, prefix)
   if type(tensors) ~= 'table' then error('optim.stateFromCheckpoint: expected a table of tensors', 2) end
   prefix = prefix or 'optim.'
   local state = {}
   for k, v in pairs(values or {}) do state[k] = v end
   for name, t in pairs(tensors) do
      if name:sub(1, #prefix) == prefix then state[name:sub(#prefix + 1)] = t end
   end
   return state
end

optim.sgd = require 'moontorch.optim.sgd'
local adam_variant = require 'moontorch.optim.adam'
optim.adam = adam_variant('optim.adam', 0, 0)
optim.adamw = adam_variant('optim.adamw', 1e-2, 1)
optim.lars = require 'moontorch.optim.lars'
optim.lamb = require 'moontorch.optim.lamb'
optim.schedule = require 'moontorch.optim.schedule'
optim.GradScaler = require 'moontorch.optim.GradScaler'
-- Torch7's other methods, pure Lua over tensor ops (no fused C pass)
for _, m in ipairs { 'adamax', 'adagrad', 'adadelta', 'rmsprop', 'nag', 'asgd', 'rprop', 'lbfgs', 'cg',
   'lswolfe', 'polyinterp' } do
   optim[m] = require('moontorch.optim.' .. m)
end
require 'moontorch.optim.Logger' -- torch.class registers optim.Logger
require 'moontorch.optim.ConfusionMatrix'

return optim
