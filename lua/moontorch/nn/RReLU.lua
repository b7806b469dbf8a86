-- nn.RReLU([l = 1/8, u = 1/3] [, inplace]): x where x > 0, a * x otherwise. In training each
-- non-positive element draws its slope a from U(l, u) (torch's generator, so torch.manualSeed
-- repeats it); self.noise keeps the slopes (1 for positive inputs) for backward. In evaluate()
-- the slope is the mean (l + u) / 2, as LeakyReLU.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.pointwise'

local RReLU, parent = torch.class('nn.RReLU', 'nn.Module')

function RReLU:__init(l, u, ip)
   parent.__init(self)
   self.lower = l or 1 / 8
   self.upper = u or 1 / 3
   if type(self.lower) ~= 'number' or type(self.upper) ~= 'number' or self.lower < 0 or self.lower > self.upper then
      error(('nn.RReLU: expected 0 <= l <= u, got l = %s, u = %s'):format(tostring(self.lower), tostring(self.upper)), 2)
   end
   self.noise = torch.Tensor()
   self.train = true
   self.inplace = P.checkInplace('nn.RReLU', ip)
end

-- slope where x <= 0, 1 elsewhere; each product with x is exact
local function slopes(input, slope)
   return P.mask(input, 'le', 0):mul(slope):add(P.mask(input, 'gt', 0))
end

function RReLU:updateOutput(input)
   P.checkInput(self, input)
   local factor
   if self.train then
      factor = P.buffer(self, 'noise', input):uniform(self.lower, self.upper):maskedFill(input:gt(0), 1)
   else
      factor = slopes(input, (self.lower + self.upper) / 2)
   end
   return P.output(self, input, self.inplace):cmul(factor)
end

-- In place the input holds the output, whose sign is the input's (slopes are >= 0).
function RReLU:updateGradInput(input, gradOutput)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   local factor
   if self.train and self.upper - self.lower > 1e-6 then
      if not self.noise:isSameSizeAs(input) then
         error('nn.RReLU: backward needs the noise of a forward in training on an input of this size', 3)
      end
      factor = self.noise
   else
      factor = slopes(input, (self.lower + self.upper) / 2)
   end
   return P.gradInput(self, gradOutput, self.inplace):cmul(factor)
end

function RReLU:__tostring__() return ('%s (l:%f, u:%f)'):format(torch.type(self), self.lower, self.upper) end

function RReLU:clearState()
   if self.noise then self.noise:set() end
   return parent.clearState(self)
end
