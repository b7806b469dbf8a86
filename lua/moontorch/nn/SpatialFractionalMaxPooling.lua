-- nn.SpatialFractionalMaxPooling(poolSizeW, poolSizeH, outW, outH) or (poolSizeW, poolSizeH, ratioW,
-- ratioH) as in Torch7 (Graham's fractional max pooling): the maximum over poolSizeW x poolSizeH
-- windows whose starts are pseudo-random increasing sequences, drawn per sample and plane from
-- self.randomSamples (batch x plane x 2: [1] for the width, [2] for the height). Window i of n
-- over an input of size `in` starts at floor((i + u) * a) - floor(u * a), a = (in - pool) / (n - 1),
-- the last at in - pool. New samples are drawn every forward pass unless :fixPoolingRegions().
-- Composed from gather (one per window offset, a running max) and indexAdd for the gradient.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'

local Pool, parent = torch.class('nn.SpatialFractionalMaxPooling', 'nn.Module')

local NAME = 'nn.SpatialFractionalMaxPooling'

function Pool:__init(poolSizeW, poolSizeH, arg1, arg2)
   parent.__init(self)
   for _, v in ipairs { { poolSizeW, 'poolSizeW' }, { poolSizeH, 'poolSizeH' } } do
      if type(v[1]) ~= 'number' or v[1] < 2 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be an integer >= 2, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.poolSizeW, self.poolSizeH = poolSizeW, poolSizeH
   self.newRandomPool = false -- Torch7's name: true keeps the samples (see fixPoolingRegions)
   if type(arg1) ~= 'number' or type(arg2) ~= 'number' then
      error(('%s: expected an output size or ratios, got %s, %s'):format(NAME, tostring(arg1), tostring(arg2)), 2)
   end
   if arg1 >= 1 and arg2 >= 1 then
      if arg1 ~= math.floor(arg1) or arg2 ~= math.floor(arg2) then
         error(('%s: output sizes must be integers, got %s, %s'):format(NAME, arg1, arg2), 2)
      end
      self.outW, self.outH = arg1, arg2
   else
      if not (arg1 > 0 and arg1 < 1 and arg2 > 0 and arg2 < 1) then
         error(('%s: ratios must lie in (0, 1), got %s, %s'):format(NAME, arg1, arg2), 2)
      end
      self.ratioW, self.ratioH = arg1, arg2
   end
end

Pool.fixPoolingRegions = P.fixPoolingRegions

function Pool:_sizes(input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then error(('%s: expected a 3-d or 4-d input, got %d-d'):format(NAME, d), 4) end
   local H, W = input:size(d - 1), input:size(d)
   local oW, oH = self.outW, self.outH
   if self.ratioW then oW, oH = math.floor(W * self.ratioW), math.floor(H * self.ratioH) end
   if oW < 1 or oH < 1 or oW + self.poolSizeW - 1 > W or oH + self.poolSizeH - 1 > H then
      error(('%s: input %dx%d cannot give a %dx%d output with %dx%d windows'):format(NAME, H, W, oH, oW,
         self.poolSizeH, self.poolSizeW), 4)
   end
   local N = d == 4 and input:size(1) or 1
   return N, input:size(d - 2), H, W, oH, oW
end

local intervals, on = P.intervals, P.on

function Pool:updateOutput(input)
   local N, C, H, W, oH, oW = self:_sizes(input)
   local rs = self.randomSamples
   local fresh = not torch.isTensor(rs) or rs:dim() ~= 3 or rs:size(1) ~= N or rs:size(2) ~= C
   if fresh or not self.newRandomPool then
      self.randomSamples = input.new():resize(N, C, 2):uniform()
   end
   local u = self.randomSamples:double():view(N * C, 2)
   local n, L = N * C, oH * oW
   -- 1-based flat position in its plane of each window's top-left corner: n x oH x oW
   local rows, cols = {}, {}
   for p = 1, n do
      local sw = intervals(u[p][1], W, oW, self.poolSizeW)
      local sh = intervals(u[p][2], H, oH, self.poolSizeH)
      for i = 1, oH do rows[#rows + 1] = sh[i] * W + 1 end
      for j = 1, oW do cols[#cols + 1] = sw[j] end
   end
   local corner = torch.LongTensor(rows):view(n, oH, 1):expand(n, oH, oW)
      + torch.LongTensor(cols):view(n, 1, oW):expand(n, oH, oW)
   corner = on(corner:contiguous():view(n, L), input)
   local x = input:contiguous():view(n, H * W)
   -- a running maximum over the window offsets, row by row; ties keep the first, as Torch7 does
   local best, bestIdx = P.running_max(x, corner, { W, 1 }, { self.poolSizeH, self.poolSizeW })
   -- flat 1-based positions in the whole input, for the gradient
   local base = on(torch.range(0, n - 1):long():mul(H * W), input)
   self.indices = bestIdx:add(base:view(n, 1):expand(n, L))
   local sz = T.sizes(input)
   sz[#sz - 1], sz[#sz] = oH, oW
   self.output = best:view(torch.LongStorage(sz))
   return self.output
end

Pool.updateGradInput = P.indexBackward(NAME, 2, true)

Pool.clearState = P.clearFractional

function Pool:__tostring__()
   return ('%s(%sx%s, %d,%d)'):format(torch.type(self), tostring(self.outW or self.ratioW),
      tostring(self.outH or self.ratioH), self.poolSizeW, self.poolSizeH)
end

return Pool
