-- nn.SpatialUpSamplingNearest(scale) as in Torch7: each pixel of the last two dimensions of a 3-d
-- or 4-d input becomes a scale x scale block: index along the columns, then along the rows; the
-- gradient adds up each block, its rows and then its columns, as slices in order (any device).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'
local P = require 'moontorch.nn.pooling_common'

local Up, parent = torch.class('nn.SpatialUpSamplingNearest', 'nn.Module')

function Up:__init(scale)
   parent.__init(self)
   if type(scale) ~= 'number' or scale ~= math.floor(scale) or scale < 1 then
      error(('nn.SpatialUpSamplingNearest: scale must be a positive integer, got %s'):format(tostring(scale)), 2)
   end
   self.scale_factor = scale
end

local function planes(self, t, what)
   T.expect_tensor(t, 'nn.SpatialUpSamplingNearest', what, 4)
   local d = t:dim()
   if d ~= 3 and d ~= 4 then
      error(('nn.SpatialUpSamplingNearest: expected a 3-d or 4-d %s, got %d-d'):format(what, d), 3)
   end
   local n = t:nElement() / (t:size(d - 1) * t:size(d))
   return n, t:size(d - 1), t:size(d)
end

-- the repeat indices 1,1,..,2,2,.. (each `s` times) for n positions, cached per size and
-- device; the copies are an index along one dimension at a time (an expand with stride-0
-- dims copied elementwise cost several times more)
local function repeats(self, n, like)
   local c = self._rep or {}
   self._rep = c
   local key = n .. 'x' .. self.scale_factor .. ':' .. like:device()
   if not c[key] then
      local t = torch.LongTensor(n * self.scale_factor)
      for i = 1, n * self.scale_factor do t[i] = math.floor((i - 1) / self.scale_factor) + 1 end
      c[key] = P.on(t, like)
   end
   return c[key]
end

-- r (a x b) = sum over k of v[{{}, k, {}}] for v of a x s x b, the terms added in order k = 1..s
local function blocksum(r, v, a, b, s)
   r:resize(a, b)
   if s == 1 then return r:copy(v:select(2, 1)) end
   torch.add(r, v:select(2, 1), v:select(2, 2)) -- the first two in one pass
   for k = 3, s do r:add(v:select(2, k)) end
   return r
end

function Up:updateOutput(input)
   local n, H, W = planes(self, input, 'input')
   local s = self.scale_factor
   local sz = T.sizes(input)
   sz[#sz - 1], sz[#sz] = H * s, W * s
   local x = input:isContiguous() and input or input:contiguous()
   local wide = torch.index(utils.result(self, '_wide', x), x:view(n * H, W), 2, repeats(self, W, x))
   local out = torch.index(utils.result(self, '_out', x), wide:view(n, H, W * s), 2, repeats(self, H, x))
   self.output = out:view(torch.LongStorage(sz))
   return self.output
end

function Up:updateGradInput(input, gradOutput)
   local n, H, W = planes(self, input, 'input')
   local s = self.scale_factor
   if gradOutput:nElement() ~= n * H * s * W * s then
      error(('nn.SpatialUpSamplingNearest: gradOutput has %d elements, expected %d'):format(gradOutput:nElement(),
         n * H * s * W * s), 2)
   end
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   -- the s output rows of each input row added in order, then the s columns: one pass over a
   -- slice per term (an indexAdd along the last dim scatters element by element, about twice
   -- the time)
   local rows = blocksum(utils.result(self, '_wide', g), g:view(n * H, s, W * s), n * H, W * s, s)
   local gi = blocksum(utils.result(self, '_gi', g), rows:view(n * H * W, s, 1), n * H * W, 1, s)
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function Up:clearState()
   self._rep, self._wide, self._out, self._gi = nil, nil, nil, nil
   return parent.clearState(self)
end

function Up:__tostring__() return ('%s(%d)'):format(torch.type(self), self.scale_factor) end

return Up
