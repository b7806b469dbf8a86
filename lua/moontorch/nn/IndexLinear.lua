-- nn.IndexLinear(inputSize, outputSize [, doGradInput, keysOffset, weight, bias, normalize]):
-- Torch7's linear layer for sparse (key, value) inputs (simple.md), with the weight laid out
-- inputSize x outputSize (the transpose of Linear's) so that a key reads one row. An input is
--   {keys, values}                           one sample: two 1-d tensors of the same length
--   {{keys1, keys2, ...}, {values1, ...}}    a batch as tables of them
--   {keys, values, sizes}                    a batch flattened: sizes[i] pairs for sample i
-- Key k reads weight row k + keysOffset (as Torch7's code does: its doc says k - keysOffset);
-- the default offset 0 takes keys in 1..inputSize. The weight is zero until reset() (as Torch7).
-- Gradients are kept per key, not as a dense gradWeight: accGradParameters records the keys,
-- values and gradOutput of each call, updateParameters(lr) applies all of them since the last
-- zeroGradParameters (and the bias step; nothing when none), one key occurrence after another:
-- with weightDecay, row k is first scaled by 1 - weightDecay, then moved against its gradient.
-- accUpdateGradParameters does the same at once. normalize (CPU only) keeps 4 more columns in
-- front of each row: the largest |value| seen in training, its inverse, a step scale (1) and a
-- per-key bias b; the value used is then value / max + b (sign(value) + b above the max when
-- evaluating), and b is trained too. parameters() gives {weight, bias}, {running, gradBias} as
-- Torch7's does: there is no dense gradWeight to flatten.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local IL, parent = torch.class('nn.IndexLinear', 'nn.Module')

local NAME = 'nn.IndexLinear'
local NORM = 4 -- the columns normalize adds in front of each row
-- key occurrences gathered at once: bounds the nnz x outputSize buffers of a large input
local CHUNK = 2 ^ 20

function IL:__init(inputSize, outputSize, doGradInput, keysOffset, weight, bias, normalize)
   parent.__init(self)
   self.normalize = normalize and NORM or 0
   if weight ~= nil then
      if not torch.isTensor(weight) or weight:dim() ~= 2 or weight:size(2) <= self.normalize then
         error(NAME .. ': weight must be an inputSize x (outputSize' .. (normalize and ' + 4' or '') .. ') tensor', 2)
      end
   elseif type(inputSize) ~= 'number' or type(outputSize) ~= 'number' or inputSize < 1 or outputSize < 1 then
      error(('%s: expected positive inputSize and outputSize, got %s and %s'):format(NAME, tostring(inputSize),
         tostring(outputSize)), 2)
   end
   self.weight = weight or torch.Tensor(inputSize, outputSize + self.normalize):zero()
   self.inputSize = self.weight:size(1)
   self.outputSize = self.weight:size(2) - self.normalize
   self.bias = bias or torch.Tensor(self.outputSize):zero()
   if not torch.isTensor(self.bias) or self.bias:dim() ~= 1 or self.bias:size(1) ~= self.outputSize then
      error(('%s: bias must be a tensor of %d elements'):format(NAME, self.outputSize), 2)
   end
   self.gradWeight = torch.Tensor()
   self.gradBias = torch.Tensor(self.outputSize):zero()
   self.running = { counter = 1, parts = {} }
   self.weightDecay = 0
   self.doGradInput = doGradInput or false
   self.offset = keysOffset and keysOffset - 1 or -1 -- Torch7's field: row = key + offset + 1
end

function IL:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(2)) end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv):mul(0.000001)
   if self.normalize > 0 then self.weight:narrow(2, 1, self.normalize):zero() end
   return self
end

-- the weight columns that multiply values (normalize's four columns left out)
local function W(self) return self.weight:narrow(2, self.normalize + 1, self.outputSize) end

-- a LongTensor of indices on the weight's device (the index ops want them beside the data)
local function on_device(self, idx)
   local dev = self.weight:device()
   if idx:dtype() == T.LONG and idx:device() == dev then return idx:contiguous() end
   return T.empty_tensor(T.LONG, dev):resize(idx:nElement()):copy(idx)
end

local function is_list(x) return type(x) == 'table' and not torch.isTensor(x) end

local function check_1d(t, what, i)
   if not torch.isTensor(t) or (t:nElement() > 0 and t:dim() ~= 1) then
      error(('%s: %s%s must be a 1-d tensor, got %s'):format(NAME, what, i and ' ' .. i or '',
         torch.isTensor(t) and 'size ' .. table.concat(T.sizes(t), 'x') or type(t)), 4)
   end
end

-- the input as key occurrences: weight rows and batch rows (LongTensors), values (the weight's
-- type), the batch size; and the form (noBatch, isFlat, the sample lengths for gradInput)
local function parse(self, input)
   if not is_list(input) or (#input ~= 2 and #input ~= 3) then
      error(NAME .. ': expected {keys, values}, {{keys...}, {values...}} or {keys, values, sizes}', 3)
   end
   local keys, vals, sizes
   local form = {}
   if #input == 3 then
      keys, vals = input[1], input[2]
      check_1d(keys, 'keys')
      check_1d(vals, 'values')
      sizes = torch.isTensor(input[3]) and input[3]:type('torch.LongTensor'):view(-1) or torch.LongTensor { input[3] }
      if sizes:sum() ~= keys:nElement() then
         error(('%s: the sizes add up to %d but there are %d keys'):format(NAME, sizes:sum(), keys:nElement()), 3)
      end
      form.isFlat = true
   elseif torch.isTensor(input[1]) and torch.isTensor(input[2]) then
      keys, vals = input[1], input[2]
      check_1d(keys, 'keys')
      check_1d(vals, 'values')
      sizes = torch.LongTensor { keys:nElement() }
      form.noBatch = true
   elseif is_list(input[1]) and is_list(input[2]) and #input[1] == #input[2] then
      local n = #input[1]
      sizes = torch.LongTensor(math.max(n, 1)):zero():narrow(1, 1, n)
      for i = 1, n do
         check_1d(input[1][i], 'keys', i)
         check_1d(input[2][i], 'values', i)
         sizes[i] = input[1][i]:nElement()
      end
      local kz, vz = {}, {} -- cat takes no empty tensors
      for i = 1, n do
         if sizes[i] > 0 then kz[#kz + 1], vz[#vz + 1] = input[1][i], input[2][i] end
      end
      keys = #kz > 0 and torch.cat(kz, 1) or torch.LongTensor()
      vals = #vz > 0 and torch.cat(vz, 1) or self.weight.new()
   else
      error(NAME .. ': expected {keys, values}, {{keys...}, {values...}} or {keys, values, sizes}', 3)
   end
   if keys:nElement() ~= vals:nElement() then
      error(('%s: %d keys but %d values'):format(NAME, keys:nElement(), vals:nElement()), 3)
   end
   local n = sizes:nElement()
   local c = { n = n, sizes = sizes, rows = torch.LongTensor(), keys = torch.LongTensor(), vals = self.weight.new() }
   if keys:nElement() > 0 then
      local k = keys:type('torch.LongTensor'):view(-1) + (self.offset + 1)
      if k:min() < 1 or k:max() > self.inputSize then
         error(('%s: keys must lie in %d..%d, got one in [%d, %d]'):format(NAME, -self.offset, self.inputSize -
            self.offset - 1, k:min() - self.offset - 1, k:max() - self.offset - 1), 3)
      end
      local rows = torch.LongTensor(k:nElement())
      local at = 1
      for i = 1, n do
         local s = sizes[i]
         if s > 0 then rows:narrow(1, at, s):fill(i) end
         at = at + s
      end
      c.keys, c.rows = on_device(self, k), on_device(self, rows)
      c.vals = vals:view(-1):typeAs(self.weight):contiguous()
   end
   return c, form
end

-- calls fn(keys, rows, vals) on successive slices of at most CHUNK / outputSize occurrences
local function chunks(self, c, vals, fn)
   local nnz = c.keys:nElement()
   local step = math.max(1, math.floor(CHUNK / self.outputSize))
   for a = 1, nnz, step do
      local k = math.min(step, nnz - a + 1)
      fn(c.keys:narrow(1, a, k), c.rows:narrow(1, a, k), vals:narrow(1, a, k))
   end
end

local function cpu_contiguous(self, what)
   if self.weight:device() >= 0 or not self.weight:isContiguous() then
      error(NAME .. ': ' .. what .. ' needs a contiguous CPU weight', 4)
   end
end

-- normalize: each occurrence's value scaled by its key's max |value| plus the key's bias; in
-- training the max grows first (so the value lies within it) and the step scale is set to 1
local function normalized(self, c)
   cpu_contiguous(self, 'normalize')
   local nnz = c.keys:nElement()
   local out = self.weight.new(nnz)
   if nnz == 0 then return out end
   local w, stride = self.weight:data(), self.weight:stride(1)
   local k, v, y = c.keys:data(), c.vals:data(), out:data()
   local train = self.train ~= false
   for i = 0, nnz - 1 do
      local base = (tonumber(k[i]) - 1) * stride
      local x = v[i]
      local a = math.abs(x)
      if train then
         if a > w[base] then w[base], w[base + 1] = a, 1 / a end
         w[base + 2] = 1
      end
      local s = a > w[base] and (x > 0 and 1 or (x < 0 and -1 or 0)) or x * w[base + 1]
      y[i] = s + w[base + 3]
   end
   return out
end

function IL:updateOutput(input)
   local c, form = parse(self, input)
   local vals = self.normalize > 0 and normalized(self, c) or c.vals
   self.normalizedValues = self.normalize > 0 and vals or nil
   local nout = self.outputSize
   local out = self.output:resize(c.n, nout)
   out:copy(self.bias:view(1, nout):expand(c.n, nout))
   local w = W(self)
   chunks(self, c, vals, function(keys, rows, v)
      local g = w:index(1, keys)
      g:cmul(v:view(-1, 1):expandAs(g))
      out:indexAdd(1, rows, g)
   end)
   if form.noBatch then self.output:resize(nout) end
   return self.output
end

local function grad2d(self, gradOutput, n)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local nout = self.outputSize
   if gradOutput:nElement() ~= n * nout or gradOutput:size(gradOutput:dim()) ~= nout then
      error(('%s: gradOutput has size %s, expected %s'):format(NAME, table.concat(T.sizes(gradOutput), 'x'),
         n == 1 and nout .. ' or 1x' .. nout or n .. 'x' .. nout), 3)
   end
   return gradOutput:contiguous():view(n, nout)
end

-- the dense gradient with respect to every key's value, as keys and values like the input's
function IL:updateGradInput(input, gradOutput)
   self.gradInput = {}
   if not self.doGradInput then return self.gradInput end
   if self.normalize > 0 then error(NAME .. ': updateGradInput is not implemented in normalize mode', 2) end
   local c, form = parse(self, input)
   local go = grad2d(self, gradOutput, c.n)
   local nin = self.inputSize
   local gi = torch.mm(go, W(self):t())
   local keys = T.empty_tensor(T.LONG, self.weight:device()):resize(nin)
   keys:copy(torch.range(1, nin):long():add(-(self.offset + 1)))
   if form.noBatch then
      self.gradInput = { keys, gi:view(nin) }
   elseif form.isFlat then
      self.gradInput = { keys:view(1, nin):expand(c.n, nin):clone(), gi }
   else
      self.gradInput = { {}, {} }
      for i = 1, c.n do
         self.gradInput[1][i] = keys:clone()
         self.gradInput[2][i] = gi[i]:clone()
      end
   end
   return self.gradInput
end

-- the running record (a Torch7 file's has keys/gradWeight lists instead: they are dropped)
local function running(self)
   local r = self.running
   if type(r) ~= 'table' or type(r.parts) ~= 'table' then
      r = { counter = 1, parts = {} }
      self.running = r
   end
   return r
end

function IL:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local c = parse(self, input)
   local go = grad2d(self, gradOutput, c.n)
   local vals = self.normalize > 0 and (self.normalizedValues or normalized(self, c)) or c.vals
   local r = running(self)
   r.parts[r.counter] = { keys = c.keys, rows = c.rows, vals = vals:clone():mul(scale), go = go:clone(),
      scale = scale }
   r.counter = r.counter + 1
   self.gradBias:add(scale, go:sum(1):view(-1))
end

-- moves the rows of the key occurrences of parts against their gradients, times lr: for each
-- occurrence, in order, row *= 1 - weightDecay, then row -= lr * value * gradOutput[its sample]
local function step(self, parts, lr)
   local wd = self.weightDecay or 0
   if self.normalize > 0 then return self:_normalizedStep(parts, lr, wd) end
   local w = W(self)
   for _, p in ipairs(parts) do
      if wd ~= 0 and p.keys:nElement() > 0 then
         -- occurrence m of c of a key: its step is decayed c - m more times; the row c times
         local count, rank = {}, torch.DoubleTensor(p.keys:nElement())
         local kt = p.keys:type('torch.LongTensor')
         for i = 1, kt:nElement() do
            local key = kt[i]
            count[key] = (count[key] or 0) + 1
            rank[i] = count[key]
         end
         local total = torch.DoubleTensor(kt:nElement())
         for i = 1, kt:nElement() do total[i] = count[kt[i]] end
         local decay = 1 - wd
         local rows_scale = total:clone():apply(function(n) return decay ^ n end)
         local step_scale = (total - rank):apply(function(n) return decay ^ n end)
         -- every occurrence of a key writes the same scaled row, so the copy order does not matter
         w:indexCopy(1, p.keys, w:index(1, p.keys):cmul(rows_scale:typeAs(w):view(-1, 1):expandAs(
            w:index(1, p.keys))))
         p = { keys = p.keys, rows = p.rows, go = p.go, vals = p.vals:clone():cmul(step_scale:typeAs(p.vals)) }
      end
      chunks(self, p, p.vals, function(keys, rows, v)
         local g = p.go:index(1, rows)
         g:cmul(v:view(-1, 1):expandAs(g))
         w:indexAdd(1, keys, g, -lr)
      end)
   end
end

-- normalize's step, one occurrence after another: with s the key's step scale, its bias b moves
-- by -lr * s * <gradOutput, row> (the row before this step), the row decays by weightDecay * s
-- and moves by -lr * s * value * gradOutput
function IL:_normalizedStep(parts, lr, wd)
   cpu_contiguous(self, 'normalize')
   local w, stride, nout = self.weight:data(), self.weight:stride(1), self.outputSize
   for _, p in ipairs(parts) do
      local nnz = p.keys:nElement()
      if nnz > 0 then
         local go = p.go:typeAs(self.weight):contiguous()
         local k, r, v, g = p.keys:data(), p.rows:data(), p.vals:data(), go:data()
         local gscale = p.scale or 1
         for i = 0, nnz - 1 do
            local base = (tonumber(k[i]) - 1) * stride
            local grow = (tonumber(r[i]) - 1) * nout
            local s = w[base + 2]
            local lrs = lr * s
            local dot = 0
            for o = 0, nout - 1 do dot = dot + g[grow + o] * w[base + NORM + o] end
            w[base + 3] = w[base + 3] - lrs * gscale * dot
            local keep = 1 - wd * s
            for o = 0, nout - 1 do
               local at = base + NORM + o
               w[at] = w[at] * keep - lrs * v[i] * g[grow + o]
            end
         end
      end
   end
end

function IL:updateParameters(lr)
   if type(lr) ~= 'number' then error(NAME .. ': updateParameters needs a learning rate', 2) end
   local r = running(self)
   if r.counter <= 1 then return end
   self.bias:add(-lr, self.gradBias)
   local parts = {}
   for i = 1, r.counter - 1 do parts[i] = r.parts[i] end
   step(self, parts, lr)
end

function IL:accUpdateGradParameters(input, gradOutput, lr)
   local c = parse(self, input)
   local go = grad2d(self, gradOutput, c.n)
   local vals = self.normalize > 0 and (self.normalizedValues or normalized(self, c)) or c.vals
   self.bias:add(-lr, go:sum(1):view(-1))
   step(self, { { keys = c.keys, rows = c.rows, vals = vals, go = go, scale = 1 } }, lr)
end

function IL:zeroGradParameters()
   self.gradBias:zero()
   local r = running(self)
   r.counter, r.parts = 1, {}
end

function IL:parameters()
   return { self.weight, self.bias }, { running(self), self.gradBias }
end

function IL:getParameters()
   error(NAME .. ': its gradients are kept per key, not as a dense gradWeight that getParameters could flatten; '
      .. 'train it with updateParameters or accUpdateGradParameters', 2)
end

function IL:clearState()
   self.running = { counter = 1, parts = {} }
   self.normalizedValues = nil
   self.gradInput = {}
   return parent.clearState(self)
end

function IL:__tostring__()
   return torch.type(self) .. ('(%d -> %d)'):format(self.inputSize, self.outputSize) ..
      (self.normalize > 0 and ' normalized' or '')
end

return IL
