-- perf/profile.lua: what one worker's step is made of, per layer: forward and backward seconds,
-- the sizes of the gradients the layer owns, and the order in which backward finishes them.
--   local p = profile.measure(model, {64, 3, 224, 224}, { device = 'cpu', precision = 'fp32', reps = 5 })
--   local p = profile.fromLayers(perf.models.layers('resnet50'), 165)  -- 165 ms, spread by FLOPs
--   profile.save(p, 'resnet50.json'); p = profile.load('resnet50.json')
-- A profile = { name, batchSize, device, precision, elementBytes, update (seconds of the
-- optimizer step), layers = { {name, forward, backward, grads = {elements, ...}}, ... } in forward
-- (getParameters) order, order = layer indices in the order backward finishes them }.
local torch = require 'moontorch'
local progress = require 'moontorch.util.progress'
local json = require('moontorch.checkpoint').json
local models = require 'moontorch.perf.models'

local profile = {}
local now = progress.now

local function fail(fmt, ...) error('perf.profile: ' .. fmt:format(...), 0) end

-- the median of a list of numbers (the list is left as it was)
local function median(xs)
   local s = {}
   for i, v in ipairs(xs) do s[i] = v end
   table.sort(s)
   local n = #s
   if n == 0 then return 0 end
   return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

local PRECISION = { fp32 = 'torch.FloatTensor', fp16 = 'torch.HalfTensor', bf16 = 'torch.BFloat16Tensor' }
local ELEMENT = { fp32 = 4, fp16 = 2, bf16 = 2 }

profile.median = median

-- measure(model, inputShape, opts): times every leaf module; a leaf without parameters (ReLU,
-- pooling, a residual addition) counts towards the parameter-owning layer before it in
-- listModules order (the first ones towards the first layer). opts: device ('cpu' | 'cuda'),
-- precision ('fp32' | 'fp16' | 'bf16'), reps (5, after one warm-up; the median per layer), name,
-- criterion and target (then the loss's forward counts towards the last layer's forward and its
-- backward towards the last layer's backward, as a training step runs them).
-- The model is put in training mode; its parameters' values are left as they were.
function profile.measure(model, inputShape, opts)
   opts = opts or {}
   if not torch.isTypeOf(model, 'nn.Module') then fail('expected an nn.Module, got %s', torch.type(model)) end
   if type(inputShape) ~= 'table' or #inputShape < 1 then
      fail('inputShape must be a list of sizes, e.g. {64, 3, 224, 224}, got %s', tostring(inputShape))
   end
   local device, precision, reps = opts.device or 'cpu', opts.precision or 'fp32', opts.reps or 5
   if device ~= 'cpu' and device ~= 'cuda' then fail("device must be 'cpu' or 'cuda', got '%s'", tostring(device)) end
   if not PRECISION[precision] then fail("precision must be fp32, fp16 or bf16, got '%s'", tostring(precision)) end
   if type(reps) ~= 'number' or reps < 1 then fail('reps must be >= 1, got %s', tostring(reps)) end
   local sync = function() end
   if device == 'cuda' then
      model:cuda()
      sync = function() torch.cuda.synchronize() end
   end
   if precision ~= 'fp32' then model:type(PRECISION[precision]) end
   model:training()
   local leaves = {}
   for _, m in ipairs(model:listModules()) do
      if not m.modules then leaves[#leaves + 1] = m end
   end
   local layers, owner, k = {}, {}, 0
   for i, m in ipairs(leaves) do
      local ps = m:parameters()
      if ps and #ps > 0 then
         k = k + 1
         local grads = {}
         for j, p in ipairs(ps) do grads[j] = p:nElement() end
         layers[k] = { name = torch.type(m):gsub('^nn%.', ''), grads = grads, fwd = {}, bwd = {}, f = 0, b = 0 }
      end
      owner[i] = math.max(k, 1)
   end
   if k == 0 then fail('the model has no parameters: nothing to exchange') end
   local finished = {}
   local saved = {}
   -- m[pass] adds its (synchronized) time to L[field]; andThen(self) runs after it
   local function timed(m, pass, L, field, andThen)
      local f = m[pass]
      m[pass] = function(self, ...)
         sync()
         local t0 = now()
         local r = f(self, ...)
         sync()
         L[field] = L[field] + now() - t0
         if andThen then andThen(self) end
         return r
      end
   end
   for i, m in ipairs(leaves) do
      local L = layers[owner[i]]
      saved[i] = { rawget(m, 'updateOutput'), rawget(m, 'updateGradInput'), rawget(m, 'accGradParameters') }
      timed(m, 'updateOutput', L, 'f')
      timed(m, 'updateGradInput', L, 'b')
      timed(m, 'accGradParameters', L, 'b', function(self)
         if self:parameters() then finished[#finished + 1] = owner[i] end
      end)
   end
   local x = torch.Tensor(torch.LongStorage(inputShape)):normal()
   if device == 'cuda' then x = x:cuda() end
   if precision ~= 'fp32' then x = x:type(PRECISION[precision]) end
   local order
   local okRun, err = pcall(function()
      for r = 0, reps do
         for _, L in ipairs(layers) do L.f, L.b = 0, 0 end
         finished = {}
         local out = model:forward(x)
         local gout
         if opts.criterion then
            local last = layers[k]
            sync()
            local t0 = now()
            opts.criterion:forward(out, opts.target)
            sync()
            local t1 = now()
            gout = opts.criterion:backward(out, opts.target)
            sync()
            last.f, last.b = last.f + t1 - t0, last.b + now() - t1
         else
            gout = out:clone():normal():mul(1 / math.sqrt(out:nElement()))
         end
         model:zeroGradParameters()
         model:backward(x, gout)
         if r > 0 then
            for _, L in ipairs(layers) do
               L.fwd[#L.fwd + 1], L.bwd[#L.bwd + 1] = L.f, L.b
            end
         end
         order = finished
      end
   end)
   for i, m in ipairs(leaves) do
      m.updateOutput, m.updateGradInput, m.accGradParameters = saved[i][1], saved[i][2], saved[i][3]
   end
   if not okRun then fail('running the model on input %s failed: %s', table.concat(inputShape, 'x'), tostring(err)) end
   -- the backward order: each layer where its last gradient became final
   local last, seq = {}, {}
   for pos, li in ipairs(order) do last[li] = pos end
   for li = 1, k do seq[#seq + 1] = li end
   table.sort(seq, function(a, b) return (last[a] or 0) < (last[b] or 0) end)
   local out = { name = opts.name or torch.type(model), batchSize = inputShape[1], device = device,
      precision = precision, elementBytes = ELEMENT[precision], layers = {}, order = seq }
   for li, L in ipairs(layers) do
      out.layers[li] = { name = L.name, forward = median(L.fwd), backward = median(L.bwd), grads = L.grads }
   end
   -- the optimizer step: momentum SGD over the flat parameters (what a Trainer step adds)
   local p, g = model:getParameters()
   local buf = g:clone():normal()
   local vel = g:clone():zero()
   local ts = {}
   for _ = 1, reps do
      sync()
      local t0 = now()
      vel:mul(0.9):add(buf)
      p:add(0, vel)
      sync()
      ts[#ts + 1] = now() - t0
   end
   out.update = median(ts)
   return out
end

-- fromLayers(layers, stepComputeMs, forwardShare): a profile from a layer list (perf/models.lua
-- or the same shape): the one-worker step (forward + backward, ms) spread over the layers by
-- their FLOPs, the forward taking forwardShare of it (1/3: backward twice the forward, as
-- bench/dp_step.lua models it)
function profile.fromLayers(layers, stepComputeMs, forwardShare, name)
   if type(stepComputeMs) ~= 'number' or not (stepComputeMs >= 0) then -- luacheck: ignore 581 (rejects NaN)
      fail('stepComputeMs must be a number >= 0, got %s', tostring(stepComputeMs))
   end
   forwardShare = forwardShare or 1 / 3
   local _, flops = models.summary(layers)
   local out = { name = name or 'layers', elementBytes = 4, update = 0, layers = {} }
   local step = stepComputeMs / 1000
   for i, l in ipairs(layers) do
      local share = flops > 0 and l.flops / flops or 1 / #layers
      local grads = { models.numel(l.weight) }
      if l.bias then grads[2] = models.numel(l.bias) end
      out.layers[i] = { name = l.name, forward = share * step * forwardShare,
         backward = share * step * (1 - forwardShare), grads = grads }
   end
   return out
end

-- fromReady(units, ready, forwardTime): the profile DataParallel measures for itself: one layer
-- per unit of its flat gradient (units last first, as dist/buckets.units gives them; ready[i]:
-- seconds from backward's start until unit i was final), the forward time on the first layer
function profile.fromReady(units, ready, forwardTime)
   local layers, order = {}, {}
   for i = #units, 1, -1 do -- flat order
      local u = units[i]
      layers[#layers + 1] = { name = 'unit' .. i, forward = 0, backward = 0, grads = { u.hi - u.lo },
         ready = ready[i] or 0 }
   end
   for li in ipairs(layers) do order[li] = li end
   table.sort(order, function(a, b)
      if layers[a].ready ~= layers[b].ready then return layers[a].ready < layers[b].ready end
      return a > b
   end)
   local t = 0
   for _, li in ipairs(order) do
      layers[li].backward = math.max(0, layers[li].ready - t)
      t = t + layers[li].backward
      layers[li].ready = nil
   end
   if #layers > 0 then layers[1].forward = forwardTime or 0 end
   return { name = 'DataParallel', elementBytes = 4, update = 0, layers = layers, order = order }
end

-- the one-worker step of a profile (forward + backward + update), seconds
function profile.compute(p)
   local s = p.update or 0
   for _, l in ipairs(p.layers) do s = s + (l.forward or 0) + (l.backward or 0) end
   return s
end

local function check(p, where)
   if type(p) ~= 'table' or type(p.layers) ~= 'table' or #p.layers == 0 then
      fail('%s: not a profile (no layers)', where)
   end
   for i, l in ipairs(p.layers) do
      if type(l.forward) ~= 'number' or type(l.backward) ~= 'number' or type(l.grads) ~= 'table' then
         fail('%s: layer %d lacks forward, backward or grads', where, i)
      end
   end
   return p
end
profile.check = check

function profile.save(p, path)
   check(p, 'save')
   local plot = require 'moontorch.util.plot'
   local ok, _, err = plot.save(path, json.encode(p, 'profile') .. '\n')
   if not ok then fail('cannot write %s: %s', tostring(path), tostring(err)) end
end

function profile.load(path)
   local f, err = io.open(path, 'r')
   if not f then fail('cannot open %s: %s', tostring(path), tostring(err)) end
   local text = f:read('*a')
   f:close()
   local ok, p = pcall(json.decode, text)
   if not ok then fail('%s: %s', path, tostring(p)) end
   return check(p, path)
end

return profile
