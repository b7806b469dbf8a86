-- nn.PixelShuffle(upscaleFactor): rearranges a [N x] C*r^2 x H x W input into [N x] C x H*r x W*r
-- (sub-pixel convolution, Shi et al. 2016): out[c][h*r + i][w*r + j] = in[c*r^2 + i*r + j][h][w]
-- (0-based), r = upscaleFactor.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local PixelShuffle, parent = torch.class('nn.PixelShuffle', 'nn.Module')

function PixelShuffle:__init(upscaleFactor)
   if not T.is_int(upscaleFactor) or upscaleFactor < 1 then
      error('nn.PixelShuffle: expected a positive integer upscaleFactor, got ' .. tostring(upscaleFactor), 2)
   end
   parent.__init(self)
   self.upscaleFactor = upscaleFactor
   self.upscaleFactorSquared = upscaleFactor * upscaleFactor
end

-- batch size, channels out, height and width in
local function dims(self, input)
   T.expect_tensor(input, 'nn.PixelShuffle', 'input', 3)
   local d = input:dim()
   if (d == 3 or d == 4) and input:size(d - 2) % self.upscaleFactorSquared == 0 then
      return d == 4 and input:size(1) or 1, input:size(d - 2) / self.upscaleFactorSquared, input:size(d - 1),
         input:size(d)
   end
   error(('nn.PixelShuffle: expected a [N x] C*%d x H x W input, got size %s'):format(self.upscaleFactorSquared,
      table.concat(T.sizes(input), 'x')), 3)
end

function PixelShuffle:updateOutput(input)
   local n, c, h, w = dims(self, input)
   local r = self.upscaleFactor
   local v = input:contiguous():view(n, c, r, r, h, w):permute(1, 2, 5, 3, 6, 4)
   if not self._shuffleOut or self._shuffleOut:type() ~= input:type() then self._shuffleOut = input.new() end
   self._shuffleOut:resize(n, c, h, r, w, r):copy(v)
   if input:dim() == 4 then
      self.output = self._shuffleOut:view(n, c, h * r, w * r)
   else
      self.output = self._shuffleOut:view(c, h * r, w * r)
   end
   return self.output
end

function PixelShuffle:updateGradInput(input, gradOutput)
   local n, c, h, w = dims(self, input)
   local r = self.upscaleFactor
   if gradOutput:nElement() ~= input:nElement() then
      error(('nn.PixelShuffle: gradOutput of size %s does not match the output'):format(
         table.concat(T.sizes(gradOutput), 'x')), 2)
   end
   local v = gradOutput:contiguous():view(n, c, h, r, w, r):permute(1, 2, 4, 6, 3, 5)
   if not self._shuffleIn or self._shuffleIn:type() ~= input:type() then self._shuffleIn = input.new() end
   self._shuffleIn:resize(n, c, r, r, h, w):copy(v)
   self.gradInput = self._shuffleIn:view(T.sizes(input))
   return self.gradInput
end

function PixelShuffle:clearState()
   self:_clearFields('_shuffleIn', '_shuffleOut')
   return parent.clearState(self)
end
