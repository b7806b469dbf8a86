-- nn.SpatialCrossMapLRN(size, [alpha=1e-4], [beta=0.75], [k=1]) as in Torch7: local response
-- normalization across channels, y = x * (k + alpha/size * sum of x^2 over the `size` channels
-- centred on x's)^-beta, for C x H x W or N x C x H x W inputs. The window sums are differences of
-- a cumulative sum over the channels (index tensors, so any device); an even size puts the extra
-- channel after, as PyTorch's local_response_norm does.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local LRN, parent = torch.class('nn.SpatialCrossMapLRN', 'nn.Module')

local NAME = 'nn.SpatialCrossMapLRN'

function LRN:__init(size, alpha, beta, k)
   parent.__init(self)
   if type(size) ~= 'number' or size < 1 or size ~= math.floor(size) then
      error(('%s: size must be a positive integer, got %s'):format(NAME, tostring(size)), 2)
   end
   self.size = size
   self.alpha = alpha or 0.0001
   self.beta = beta or 0.75
   self.k = k or 1
end

local function long_on(t, like)
   if like:device() == t:device() then return t end
   return T.empty_tensor(t:dtype(), like:device()):resize(T.sizes(t)):copy(t)
end

-- sum of t over channels c-before .. c+after (clipped to 1..C) for every channel c
local function window_sum(t, before, after)
   local C = t:size(2)
   local sz = T.sizes(t)
   sz[2] = C + 1
   local cs = t.new():resize(torch.LongStorage(sz)):zero()
   cs:narrow(2, 2, C):copy(t:cumsum(2))
   -- cs[j] (1-based) is the sum of channels < j
   local hi, lo = {}, {}
   for c = 1, C do
      hi[c] = math.min(c + after, C) + 1
      lo[c] = math.max(c - before, 1)
   end
   return cs:index(2, long_on(torch.LongTensor(hi), t)):add(-1, cs:index(2, long_on(torch.LongTensor(lo), t)))
end

local function as4d(t, what)
   T.expect_tensor(t, NAME, what, 4)
   local d = t:dim()
   if d ~= 3 and d ~= 4 then error(('%s: expected a 3-d or 4-d %s, got %d-d'):format(NAME, what, d), 4) end
   local x = t:isContiguous() and t or t:contiguous()
   if d == 3 then return x:view(1, x:size(1), x:size(2), x:size(3)) end
   return x
end

function LRN:_offsets() local b = math.floor(self.size / 2) return b, self.size - 1 - b end

function LRN:updateOutput(input)
   local x = as4d(input, 'input')
   local before, after = self:_offsets()
   -- Torch7's field: the denominator before the power, kept for the backward pass, and its
   -- power: the only pow of a forward-backward pair (a float pow costs more than the rest)
   self.scale = window_sum(torch.cmul(x, x), before, after):mul(self.alpha / self.size):add(self.k)
   self._scalePow = torch.pow(self._scalePow or x.new(), self.scale, -self.beta)
   self.output = torch.cmul(self.output, self._scalePow, x):view(T.sizes(input))
   return self.output
end

function LRN:updateGradInput(input, gradOutput)
   local x = as4d(input, 'input')
   local g = as4d(gradOutput, 'gradOutput')
   if not self._scalePow or self._scalePow:nElement() ~= x:nElement() then
      error(('%s: updateGradInput needs the forward pass on this input first'):format(NAME), 2)
   end
   local before, after = self:_offsets()
   -- d/dx_j of x_c * S_c^-beta: the direct term, plus x_j's share in every S_c whose window holds j
   -- (S^(-beta-1) as S^-beta / S)
   local inner = torch.cmul(self._scalePow, g):cmul(x):cdiv(self.scale)
   local back = window_sum(inner, after, before):cmul(x):mul(-2 * self.beta * self.alpha / self.size)
   self.gradInput = torch.cmul(self.gradInput, self._scalePow, g):add(back):view(T.sizes(input))
   return self.gradInput
end

function LRN:clearState()
   self.scale, self._scalePow = nil, nil
   return parent.clearState(self)
end

function LRN:__tostring__()
   return ('%s(%d, %g, %g, %g)'):format(torch.type(self), self.size, self.alpha, self.beta, self.k)
end

return LRN
