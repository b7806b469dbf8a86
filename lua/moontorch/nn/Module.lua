-- nn.Module: the base of every layer, with Torch7's semantics (forward/backward, parameters,
-- getParameters, type conversion, module traversal, clearState, tostring).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C = T.clib
local ffi = require 'ffi'

-- a storage's identity as a table key (cdata pointers are distinct objects per call)
local function skey(t) return tonumber(ffi.cast('intptr_t', C.mt_tensor_storage_key(t.h))) end

local Module = torch.class('nn.Module')

function Module:__init()
   self.gradInput = torch.Tensor()
   self.output = torch.Tensor()
   self._type = self.output:type()
   self.train = true
end

function Module:parameters()
   if self.weight and self.bias then
      return { self.weight, self.bias }, { self.gradWeight, self.gradBias }
   elseif self.weight then
      return { self.weight }, { self.gradWeight }
   elseif self.bias then
      return { self.bias }, { self.gradBias }
   end
end

function Module:updateOutput(input) return self.output end

function Module:forward(input) return self:updateOutput(input) end

function Module:backward(input, gradOutput, scale)
   scale = scale or 1
   self:updateGradInput(input, gradOutput)
   self:accGradParameters(input, gradOutput, scale)
   return self.gradInput
end

function Module:backwardUpdate(input, gradOutput, lr)
   self:updateGradInput(input, gradOutput)
   self:accUpdateGradParameters(input, gradOutput, lr)
   return self.gradInput
end

function Module:updateGradInput(input, gradOutput) return self.gradInput end

function Module:accGradParameters(input, gradOutput, scale) end

-- w -= lr * dL/dw directly: accumulate into the weights themselves with scale -lr.
function Module:accUpdateGradParameters(input, gradOutput, lr)
   local gw, gb = self.gradWeight, self.gradBias
   self.gradWeight, self.gradBias = self.weight, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   self.gradWeight, self.gradBias = gw, gb
end

function Module:sharedAccUpdateGradParameters(input, gradOutput, lr)
   if self:parameters() then
      self:zeroGradParameters()
      self:accGradParameters(input, gradOutput, 1)
      self:updateParameters(lr)
   end
end

function Module:zeroGradParameters()
   local _, grads = self:parameters()
   if grads then
      for i = 1, #grads do grads[i]:zero() end
   end
end

function Module:updateParameters(lr)
   local params, grads = self:parameters()
   if params then
      for i = 1, #params do params[i]:add(-lr, grads[i]) end
   end
end

function Module:training() self.train = true end
function Module:evaluate() self.train = false end
function Module:reset() end

function Module:__call__(input, gradOutput)
   self:forward(input)
   if gradOutput then
      self:backward(input, gradOutput)
      return self.output, self.gradInput
   end
   return self.output
end

function Module:__tostring__() return torch.type(self) end

---------------------------------------------------------------------------------------------
-- Copying tensors while keeping storage sharing: views of one storage stay views of one
-- (converted) storage, so getParameters' flat vectors survive type() and clone().
local function storage_view(t)
   local s = t:storage()
   return s._t
end

local function remap(t, cache, convert)
   local key = skey(t)
   local entry = cache[key]
   if entry == nil then
      local full = convert(storage_view(t))
      entry = full:storage()
      cache[key] = entry
   end
   local sizes, strides = T.sizes(t), T.strides(t)
   return T.empty_tensor(entry._t:dtype(), entry._t:device()):set(entry, t:storageOffset(), sizes, strides)
end

local function is_float_dtype(d) return d <= T.BFLOAT16 end

-- type(name): floating tensors become that type; integer tensors (indices) keep their dtype
-- and only move to the target device. Nested modules, criterions and plain tables (like a
-- container's modules list) are converted too, each object once.
function Module:type(typename, tensorCache)
   if not typename then return self._type end
   local dtype, device = T.parse_typename(typename)
   if not dtype then error("nn.Module:type: unknown tensor type '" .. tostring(typename) .. "'", 2) end
   if device >= 0 then device = torch.cuda and torch.cuda.getDevice and (torch.cuda.getDevice() - 1) or 0 end
   tensorCache = tensorCache or {}
   local seen = tensorCache.__seen or {}
   tensorCache.__seen = seen
   -- one tensor object held in two places stays one object (Torch7's recursiveType memo)
   local objects = tensorCache.__objects or {}
   tensorCache.__objects = objects
   local function convert(t)
      local d = t:dtype()
      if is_float_dtype(d) then d = dtype end
      if d == t:dtype() and t:device() == device then return t end
      if not objects[t] then
         objects[t] = remap(t, tensorCache, function(full) return T.convert(full, d, device) end)
      end
      return objects[t]
   end
   local walk
   local function fields(v)
      for k, x in pairs(v) do
         if torch.isTensor(x) or type(x) == 'table' then rawset(v, k, walk(x)) end
      end
   end
   walk = function(v)
      if torch.isTensor(v) then return convert(v) end
      if type(v) ~= 'table' or seen[v] then return v end
      if torch.isTypeOf(v, 'nn.Module') or torch.isTypeOf(v, 'nn.Criterion') then
         v:type(typename, tensorCache)   -- marks itself seen
         return v
      end
      seen[v] = true
      fields(v)
      return v
   end
   seen[self] = true
   fields(self)
   self._type = typename
   return self
end

function Module:float(...) return self:type('torch.FloatTensor', ...) end
function Module:double(...) return self:type('torch.DoubleTensor', ...) end
function Module:half(...) return self:type('torch.HalfTensor', ...) end
function Module:bfloat16(...) return self:type('torch.BFloat16Tensor', ...) end
function Module:cuda(...) return self:type('torch.CudaTensor', ...) end

-- A deep copy (tensors copied, storage sharing and table sharing kept); names given share
-- those fields with the original, like Torch7's clone('weight', 'bias').
local function deepcopy(x, seen, cache)
   if torch.isTensor(x) then
      return remap(x, cache, function(full) return full:clone() end)
   end
   if type(x) ~= 'table' then return x end
   if seen[x] then return seen[x] end
   local y = {}
   seen[x] = y
   for k, v in pairs(x) do y[deepcopy(k, seen, cache)] = deepcopy(v, seen, cache) end
   return setmetatable(y, getmetatable(x))
end
Module._deepcopy = function(x) return deepcopy(x, {}, {}) end

function Module:clone(...)
   local c = deepcopy(self, {}, {})
   if select('#', ...) > 0 then c:share(self, ...) end
   return c
end

-- A clone that shares the parameters (and, by default, their gradients) with self: dpnn's
-- sharedClone, which Torch7 code uses for recurrent and siamese nets. Buffers (output,
-- gradInput, running statistics) are the clone's own.
function Module:sharedClone(shareParams, shareGradParams)
   local names = {}
   if shareParams ~= false then names[#names + 1] = 'weight'; names[#names + 1] = 'bias' end
   if shareGradParams ~= false then names[#names + 1] = 'gradWeight'; names[#names + 1] = 'gradBias' end
   return self:clone(table.unpack(names))
end

function Module:share(mlp, ...)
   for _, name in ipairs({ ... }) do
      if self[name] ~= nil then
         self[name]:set(mlp[name])
         self.accUpdateGradParameters = self.sharedAccUpdateGradParameters
         mlp.accUpdateGradParameters = mlp.sharedAccUpdateGradParameters
      end
   end
   return self
end

---------------------------------------------------------------------------------------------
-- getParameters: one flat tensor for all parameters and one for all gradients; each module
-- tensor becomes a view into it. Tensors sharing a storage (shared weights, or an earlier
-- getParameters) keep sharing: each storage's used span is packed once into the flat vector.
local function flatten(tensors, what)
   if not tensors or #tensors == 0 then return torch.Tensor() end
   local dtype, device = tensors[1]:dtype(), tensors[1]:device()
   local groups, order = {}, {}
   for i, t in ipairs(tensors) do
      if not torch.isTensor(t) then error(('getParameters: %s %d is not a tensor'):format(what, i), 3) end
      if t:dtype() ~= dtype or t:device() ~= device then
         error(('getParameters: %s %d is a %s but %s 1 is a %s'):format(what, i, t:type(), what, tensors[1]:type()), 3)
      end
      local key = skey(t)
      local g = groups[key]
      if not g then
         g = { numel = tonumber(C.mt_tensor_storage_numel(t.h)), spans = {} }
         groups[key] = g
         order[#order + 1] = key
      end
      if t:nElement() > 0 then
         local lo = t:storageOffset() - 1
         local hi = lo
         for d = 1, t:dim() do hi = hi + (t:size(d) - 1) * t:stride(d) end
         g.spans[#g.spans + 1] = { lo, hi }
      end
   end
   -- merge overlapping spans per storage; assign flat positions
   local total = 0
   for _, key in ipairs(order) do
      local g = groups[key]
      table.sort(g.spans, function(a, b) return a[1] < b[1] end)
      local merged = {}
      for _, s in ipairs(g.spans) do
         local last = merged[#merged]
         if last and s[1] <= last[2] + 1 then   -- overlapping or adjacent
            if s[2] > last[2] then last[2] = s[2] end
         else
            merged[#merged + 1] = { s[1], s[2] }
         end
      end
      for _, m in ipairs(merged) do m.base = total; total = total + (m[2] - m[1] + 1) end
      g.merged = merged
   end
   -- already flat (a second call): one storage covered exactly, nothing to move
   if #order == 1 then
      local g = groups[order[1]]
      if #g.merged == 1 and g.merged[1][1] == 0 and g.merged[1][2] == g.numel - 1 then
         return T.empty_tensor(dtype, device):set(tensors[1]:storage(), 1, { g.numel })
      end
   end
   local flat = T.new_tensor(dtype, device, { total }):zero()
   local fs = flat:storage()
   for _, t in ipairs(tensors) do
      if t:nElement() > 0 then
         local g = groups[skey(t)]
         local off = t:storageOffset() - 1
         local pos
         for _, m in ipairs(g.merged) do
            if off >= m[1] and off <= m[2] then pos = m.base + (off - m[1]); break end
         end
         local sizes, strides = T.sizes(t), T.strides(t)
         T.empty_tensor(dtype, device):set(fs, pos + 1, sizes, strides):copy(t)
         t:set(fs, pos + 1, sizes, strides)
      else
         t:set(fs, 1, { 0 })
      end
   end
   return flat
end

function Module:getParameters()
   local params, grads = self:parameters()
   local p = flatten(params, 'parameter')
   local g = flatten(grads, 'gradient')
   if p:nElement() ~= g:nElement() then
      error(('getParameters: %d parameters but %d gradients (parameters and gradients must have the same layout)')
         :format(p:nElement(), g:nElement()), 2)
   end
   return p, g
end

---------------------------------------------------------------------------------------------
-- traversal
-- channelsLast(): stores the 4-d weights (and gradWeight) of every convolution in the module
-- channels-last (NHWC strides over the elements they already cover), moving their values, so
-- a channels-last input meets filters in its own layout (cuDNN then runs NHWC without
-- converting the filter on each call; the CPU convolution copies them to NCHW, which costs
-- little). Sizes, values, storage sharing between modules and getParameters' flat vectors
-- are kept: a tensor seen again (same storage and offset) is only restrided. Call it before
-- the optimizer keeps per-parameter state, whose order would no longer match. Returns self.
function Module:channelsLast()
   local moved = {}
   local function convert(t)
      if not torch.isTensor(t) or t:dim() ~= 4 or t:isChannelsLast() or t:nElement() == 0 then return end
      if not t:isContiguous() then error('nn.Module:channelsLast: a convolution weight is neither NCHW nor NHWC', 3) end
      local key = skey(t) .. ':' .. t:storageOffset()
      local values = not moved[key] and t:clone() or nil
      moved[key] = true
      local s = T.sizes(t)
      t:set(t:storage(), t:storageOffset(), s, T.channels_last_strides(s))
      if values then t:copy(values) end
   end
   for _, m in ipairs(self:listModules()) do
      if torch.isTypeOf(m, 'nn.SpatialConvolution') then
         convert(m.weight)
         convert(m.gradWeight)
      end
   end
   return self
end

function Module:apply(callback)
   callback(self)
   if self.modules then
      for _, m in ipairs(self.modules) do m:apply(callback) end
   end
end

function Module:listModules()
   local list = { self }
   if self.modules then
      for _, child in ipairs(self.modules) do
         for _, m in ipairs(child:listModules()) do list[#list + 1] = m end
      end
   end
   return list
end

-- All modules of a type (and the container holding each), depth first.
function Module:findModules(typename, container)
   container = container or self
   local nodes, containers = {}, {}
   if torch.type(self) == typename then
      nodes[1] = self
      containers[1] = container
   end
   if self.modules then
      for _, child in ipairs(self.modules) do
         local n, c = child:findModules(typename, self)
         for i = 1, #n do
            nodes[#nodes + 1] = n[i]
            containers[#containers + 1] = c[i]
         end
      end
   end
   return nodes, containers
end

function Module:replace(callback)
   local out = callback(self)
   if self.modules then
      for i, m in ipairs(self.modules) do self.modules[i] = m:replace(callback) end
   end
   return out
end

-- Empty the named buffers (tensors are resized to 0, tables emptied) to save memory.
function Module:_clearFields(...)
   for _, name in ipairs({ ... }) do
      local v = self[name]
      if torch.isTensor(v) then
         v:set()
      elseif type(v) == 'table' then
         self[name] = {}
      end
   end
   return self
end

function Module:clearState() return self:_clearFields('output', 'gradInput') end


return Module
