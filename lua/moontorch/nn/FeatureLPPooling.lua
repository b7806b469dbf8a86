-- nn.FeatureLPPooling(width, stride, power, [batch_mode=false]) as in Torch7: Lp pooling across
-- the feature dimension, out[k] = (sum of x[(k-1)*stride + i]^power, i = 0..width-1)^(1/power),
-- with no absolute value (as THNN computes it). Input: [batch x] features [x d1 [x d2]], 1 to 3
-- dimensions after the optional batch one; features shrink to (features - width) / stride + 1.
-- Composed from tensor ops on a batch x features x rest view: the windows are unfold's.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local FLP, parent = torch.class('nn.FeatureLPPooling', 'nn.Module')

local NAME = 'nn.FeatureLPPooling'

local function isint(v, lo, hi) return type(v) == 'number' and v == math.floor(v) and v >= lo and v <= hi end

function FLP:__init(width, stride, power, batch_mode)
   parent.__init(self)
   if not isint(width, 2, 16) then
      error(('%s: width must be an integer within 2 to 16, got %s'):format(NAME, tostring(width)), 2)
   end
   if not isint(stride, 1, 4) then
      error(('%s: stride must be an integer within 1 to 4, got %s'):format(NAME, tostring(stride)), 2)
   end
   if type(power) ~= 'number' or power == 0 then
      error(('%s: power must be a non-zero number, got %s'):format(NAME, tostring(power)), 2)
   end
   self.width, self.stride, self.power = width, stride, power
   self.batch_mode = batch_mode and true or false
end

-- t viewed batch x features x rest (contiguous first)
local function as3d(self, t, what)
   T.expect_tensor(t, NAME, what, 4)
   local d, lo, hi = t:dim(), 1, 3
   if self.batch_mode then lo, hi = 2, 4 end
   if d < lo or d > hi then
      error(('%s: expected a %d- to %d-d %s (batch_mode %s), got size %s'):format(NAME, lo, hi, what,
         tostring(self.batch_mode), table.concat(T.sizes(t), 'x')), 4)
   end
   local c = t:isContiguous() and t or t:contiguous()
   local f = self.batch_mode and 2 or 1
   local B = self.batch_mode and t:size(1) or 1
   return c:view(B, t:size(f), c:nElement() / (B * t:size(f))), f
end

function FLP:updateOutput(input)
   local x, f = as3d(self, input, 'input')
   local F = x:size(2)
   if F < self.width then
      error(('%s: the input has %d features, fewer than width %d'):format(NAME, F, self.width), 2)
   end
   -- B x Fo x R x width windows (a view of the input: raised to the power into a new tensor)
   local s = torch.pow(x:unfold(2, self.width, self.stride), self.power):sum(4):pow(1 / self.power)
   local size = T.sizes(input)
   size[f] = s:size(2)
   self.output = s:view(size)
   return self.output
end

function FLP:updateGradInput(input, gradOutput)
   local x = as3d(self, input, 'input')
   local out = self.output
   local n = out:nElement()
   if not torch.isTensor(gradOutput) or gradOutput:nElement() ~= n then
      error(('%s: gradOutput must be a tensor of the output size %s'):format(NAME,
         table.concat(T.sizes(out), 'x')), 2)
   end
   local B, Fo, R = x:size(1), n / (x:size(1) * x:size(3)), x:size(3)
   local y = out:contiguous():view(B, Fo, R)
   local g = gradOutput:contiguous():view(B, Fo, R)
   -- where an output is 0 Torch7 adds nothing
   local gy = g:clone():maskedFill(y:eq(0), 0)
   local yy = y:clone():maskedFill(y:eq(0), 1)
   local gi = x.new():resizeAs(x):zero()
   local windows = x:unfold(2, self.width, self.stride)
   local giw = gi:unfold(2, self.width, self.stride)
   for i = 1, self.width do
      -- gradOutput * (x / y)^(power - 1) into each window's i-th feature
      local r = windows:select(4, i):clone():cdiv(yy):pow(self.power - 1):cmul(gy)
      giw:select(4, i):add(r)
   end
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function FLP:__tostring__()
   return ('%s(w%d s%d power %s batch %d)'):format(torch.type(self), self.width, self.stride, tostring(self.power),
      self.batch_mode and 1 or 0)
end
