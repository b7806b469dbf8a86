-- nn pooling helpers: the pieces the max-pooling family (fractional, adaptive, unpooling and the
-- C-backed Temporal/Spatial/Volumetric max pooling) would otherwise each carry a copy of. Plain
-- functions: every module stays a direct nn.Module subclass with its Torch7 fields and messages;
-- `name` is the module's error prefix.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local P = {}

-- t itself when it already lives on like's device, else a copy there (index tensors are built
-- on the CPU, but gather/index/indexAdd want them beside the data)
function P.on(t, like)
   if t:device() == like:device() then return t end
   return T.empty_tensor(t:dtype(), like:device()):resize(T.sizes(t)):copy(t)
end

-- Fractional max pooling's 0-based window starts (Graham; Torch7's rule), as a Lua array: window
-- i of outSize starts at floor((i + u) * a) - floor(u * a), a = (inSize - pool) / (outSize - 1),
-- the last at inSize - pool.
function P.intervals(u, inSize, outSize, pool)
   local seq = {}
   local alpha = outSize > 1 and (inSize - pool) / (outSize - 1) or 0
   for i = 0, outSize - 2 do seq[i + 1] = math.floor((i + u) * alpha) - math.floor(u * alpha) end
   seq[outSize] = inSize - pool
   return seq
end

-- The maximum over windows of x (n x plane, flat): corner (n x L, 1-based flat position of each
-- window's first element) plus every offset sum_k o_k * strides[k], 0 <= o_k < sizes[k], taken in
-- row-major order with the first size outermost. Returns the maxima and their flat positions
-- (both n x L); ties keep the earliest offset, as Torch7 does.
function P.running_max(x, corner, strides, sizes)
   local best, bestIdx
   local function visit(k, off)
      if k > #sizes then
         local idx = corner + off
         local v = x:gather(2, idx)
         if not best then
            best, bestIdx = v, idx
         else
            local gt = v:gt(best):typeAs(idx)
            bestIdx = bestIdx + gt:cmul(idx - bestIdx)
            best = best:cmax(v)
         end
         return
      end
      for o = 0, sizes[k] - 1 do visit(k + 1, off + o * strides[k]) end
   end
   visit(1, 0)
   return best, bestIdx
end

-- Max over windows given per output row and column (the C op mt_nn_window_maxpool2d): hs, he
-- (P x oH) and ws, we (P x oW) are 0-based [start, end) bounds as LongTensors, P = 1 or one row
-- per plane of the input. Sets self.output (the input's leading sizes, oH x oW) and
-- self.indices (flat 1-based positions in the whole input, for indexBackward).
function P.window_max(self, input, hs, he, ws, we)
   local out = utils.result(self, 'output', input)
   if not torch.isTensor(self.indices) or self.indices:device() ~= input:device() then
      self.indices = T.empty_tensor(T.LONG, input:device())
   end
   hs, he, ws, we = P.on(hs, input), P.on(he, input), P.on(ws, input), P.on(we, input)
   T.check(T.clib.mt_nn_window_maxpool2d(out.h, self.indices.h, input.h, hs.h, he.h, ws.h, we.h))
   return out
end

-- The fractional max poolings' methods, set on class Pool: fixPoolingRegions, updateOutput,
-- updateGradInput and clearState. axes names the D pooled trailing dimensions, outermost first
-- ({ 'H', 'W' } or { 'T', 'H', 'W' }), through Torch7's fields poolSize<a> and out<a> or ratio<a>;
-- cols[k] is the column of self.randomSamples (N x C x D, drawn anew each forward unless kept)
-- that drives axis k. Methods built here, not wrappers, keep the modules' error levels.
function P.fractionalMethods(Pool, name, axes, cols)
   local D = #axes
   Pool.fixPoolingRegions = P.fixPoolingRegions
   Pool.updateGradInput = P.indexBackward(name, 2, true)
   Pool.clearState = P.clearFractional

   -- N, C, the pooled input sizes and the output sizes (tables, outermost first)
   local function shapes(self, input)
      T.expect_tensor(input, name, 'input', 4)
      local d = input:dim()
      if d ~= D + 1 and d ~= D + 2 then
         error(('%s: expected a %d-d or %d-d input, got %d-d'):format(name, D + 1, D + 2, d), 4)
      end
      local sizes, outs, pools, bad = {}, {}, {}, false
      for k, a in ipairs(axes) do
         sizes[k], pools[k] = input:size(d - D + k), self['poolSize' .. a]
         outs[k] = self['ratio' .. a] and math.floor(sizes[k] * self['ratio' .. a]) or self['out' .. a]
         bad = bad or outs[k] < 1 or outs[k] + pools[k] - 1 > sizes[k]
      end
      if bad then
         error(('%s: input %s cannot give a %s output with %s windows'):format(name, table.concat(sizes, 'x'),
            table.concat(outs, 'x'), table.concat(pools, 'x')), 4)
      end
      return d == D + 2 and input:size(1) or 1, input:size(d - D), sizes, outs, pools
   end

   function Pool:updateOutput(input)
      local N, C, sizes, outs, pools = shapes(self, input)
      local rs = self.randomSamples
      local fresh = not torch.isTensor(rs) or rs:dim() ~= 3 or rs:size(1) ~= N or rs:size(2) ~= C
      if fresh or not self.newRandomPool then
         self.randomSamples = input.new():resize(N, C, D):uniform()
      end
      -- the samples are read on the host (window starts are host arithmetic), whatever the device
      local u = self.randomSamples:cpu():double():view(N * C, D)
      local n, L, plane, strides = N * C, 1, 1, {}
      for k = D, 1, -1 do strides[k], plane, L = plane, plane * sizes[k], L * outs[k] end
      -- 1-based flat position in its plane of each window's first element: n x outs[1] x ... x outs[D]
      if D == 2 then
         -- window starts per plane for rows and columns, through the C window max
         -- (samples and starts through raw pointers: a tensor per plane would cost more than the pooling)
         local st, ud = {}, u:contiguous():data()
         for k = 1, 2 do
            local o, len, pool = outs[k], sizes[k], pools[k]
            local t = torch.LongTensor(n, o)
            local sd = t:data()
            local alpha = o > 1 and (len - pool) / (o - 1) or 0
            for p = 0, n - 1 do
               local sample = ud[p * D + cols[k] - 1]
               local first = math.floor(sample * alpha)
               for i = 0, o - 2 do sd[p * o + i] = math.floor((i + sample) * alpha) - first end
               sd[p * o + o - 1] = len - pool
            end
            st[k] = t
         end
         P.window_max(self, input, st[1], st[1] + pools[1], st[2], st[2] + pools[2])
         return self.output
      end
      local shape, corner = { n, table.unpack(outs) }, nil
      for k = 1, D do
         local starts = {}
         for p = 1, n do
            local seq = P.intervals(u[p][cols[k]], sizes[k], outs[k], pools[k])
            for i = 1, outs[k] do starts[#starts + 1] = seq[i] * strides[k] end
         end
         local vshape = { n }
         for j = 1, D do vshape[j + 1] = j == k and outs[k] or 1 end
         local t = torch.LongTensor(starts):view(table.unpack(vshape)):expand(table.unpack(shape))
         corner = corner and corner + t or t + 1
      end
      corner = P.on(corner:contiguous():view(n, L), input)
      local x = input:contiguous():view(n, plane)
      local best, bestIdx = P.running_max(x, corner, strides, pools)
      -- from positions in a plane to positions in the whole input, for indexBackward
      local base = P.on(torch.range(0, n - 1):long():mul(plane), input)
      self.indices = bestIdx:add(base:view(n, 1):expand(n, L))
      local sz = T.sizes(input)
      for k = 1, D do sz[#sz - D + k] = outs[k] end
      self.output = best:view(torch.LongStorage(sz))
      return self.output
   end
end

-- updateGradInput for a pooling that saved self.indices as flat 1-based positions in the whole
-- input: gradOutput scattered back by one indexAdd (any device). Returned as the method itself
-- so the error levels (`level` for the tensor check) count from the same frames as a hand-written
-- one; checkForward adds the 'call forward before backward' error.
function P.indexBackward(name, level, checkForward)
   return function(self, input, gradOutput)
      if checkForward and not torch.isTensor(self.indices) then
         error(('%s: call forward before backward'):format(name), 2)
      end
      T.expect_tensor(gradOutput, name, 'gradOutput', level)
      if gradOutput:nElement() ~= self.indices:nElement() then
         error(('%s: gradOutput has %d elements, expected %d'):format(name, gradOutput:nElement(),
            self.indices:nElement()), 2)
      end
      local gi = utils.result(self, 'gradInput', input)
      gi:resizeAs(input):zero()
      gi:view(input:nElement()):indexAdd(1, self.indices:view(self.indices:nElement()),
         gradOutput:contiguous():view(gradOutput:nElement()))
      return self.gradInput
   end
end

-- Fractional pooling: keep the current pooling regions (val true or nil) or draw new ones each
-- forward pass (false). Torch7's method, on Torch7's field newRandomPool.
function P.fixPoolingRegions(self, val)
   if val == nil then val = true end
   self.newRandomPool = val
   return self
end

-- Fractional pooling's clearState: the indices and the samples are redrawn by the next forward.
function P.clearFractional(self)
   self.indices, self.randomSamples = nil, nil
   return nn.Module.clearState(self)
end

-- clearState of the C-backed max poolings: empty self.indices in place (the tensor object stays,
-- as in Torch7, so saved modules keep the field).
function P.clearIndices(self)
   if self.indices then self.indices:set() end
   return nn.Module.clearState(self)
end

-- Max unpooling's updateOutput and updateGradInput, set on class U (which provides setParams and
-- _positions, the flat 1-based output position of each input element, and their total). The
-- output's trailing sizes are the fields named in sizeFields (the pooling's input sizes); `level`
-- is for the tensor checks. Methods built here, not wrappers, keep the modules' error levels.
function P.unpoolMethods(U, name, level, sizeFields)
   function U:updateOutput(input)
      T.expect_tensor(input, name, 'input', level)
      self:setParams()
      local pos, total = self:_positions(input)
      local sz = T.sizes(input)
      for k = 1, #sizeFields do sz[#sz - #sizeFields + k] = self[sizeFields[k]] end
      local out = input.new():resize(total):zero()
      out:indexCopy(1, pos, input:contiguous():view(input:nElement()))
      self.output = out:view(torch.LongStorage(sz))
      return self.output
   end

   function U:updateGradInput(input, gradOutput)
      T.expect_tensor(gradOutput, name, 'gradOutput', level)
      self:setParams()
      local pos, total = self:_positions(input)
      if gradOutput:nElement() ~= total then
         error(('%s: gradOutput has %d elements, expected %d'):format(name, gradOutput:nElement(), total), 2)
      end
      self.gradInput = gradOutput:contiguous():view(total):index(1, pos):view(T.sizes(input))
      return self.gradInput
   end
end

return P
