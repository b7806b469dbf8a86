-- nn.SpatialUpSamplingNearest(scale) as in Torch7: each pixel of the last two dimensions of a 3-d
-- or 4-d input becomes a scale x scale block. The output is an expanded view made contiguous; the
-- gradient sums each block (views and sums, so any device).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

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

function Up:updateOutput(input)
   local n, H, W = planes(self, input, 'input')
   local s = self.scale_factor
   local sz = T.sizes(input)
   sz[#sz - 1], sz[#sz] = H * s, W * s
   local x = input:isContiguous() and input or input:contiguous()
   self.output = x:view(n, H, 1, W, 1):expand(n, H, s, W, s):contiguous():view(torch.LongStorage(sz))
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
   self.gradInput = g:view(n, H, s, W, s):sum(5):sum(3):view(T.sizes(input))
   return self.gradInput
end

function Up:__tostring__() return ('%s(%d)'):format(torch.type(self), self.scale_factor) end

return Up
