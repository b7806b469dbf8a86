-- nn.GatedLinearUnit([dim]): the input halved along dim (the last by default) into a and b gives
-- a .* sigmoid(b). d/da = sigmoid(b), d/db = a .* sigmoid(b) .* (1 - sigmoid(b)).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.transfer_common'

local GatedLinearUnit, parent = torch.class('nn.GatedLinearUnit', 'nn.Module')

function GatedLinearUnit:__init(dim)
   parent.__init(self)
   if dim ~= nil and not (T.is_int(dim) and dim >= 1) then
      error('nn.GatedLinearUnit: dim must be a positive integer, got ' .. tostring(dim), 2)
   end
   self.dim = dim
end

-- the two halves of t along the module's dimension, checked against input
local function halves(self, input, t)
   local dim = self.dim or input:dim()
   if dim > input:dim() then
      error(('nn.GatedLinearUnit: dim %d is out of range for a %d-d input'):format(dim, input:dim()), 4)
   end
   local n = input:size(dim)
   if n % 2 ~= 0 then
      error(('nn.GatedLinearUnit: dimension %d must have an even size to be halved, got input of size %s'):format(dim,
         table.concat(T.sizes(input), 'x')), 4)
   end
   return t:narrow(dim, 1, n / 2), t:narrow(dim, n / 2 + 1, n / 2)
end

function GatedLinearUnit:updateOutput(input)
   P.checkInput(self, input)
   local a, b = halves(self, input, input)
   local out = P.buffer(self, 'output', a)
   return out:sigmoid(b):cmul(a)
end

function GatedLinearUnit:updateGradInput(input, gradOutput)
   P.checkInput(self, input)
   local a, b = halves(self, input, input)
   gradOutput = P.checkGradOutput(self, a, gradOutput)
   local gi = P.buffer(self, 'gradInput', input)
   local ga, gb = halves(self, input, gi)
   local s = b:clone():sigmoid()
   ga:cmul(s, gradOutput)
   -- s * (1 - s) * a * gradOutput
   gb:fill(1):csub(s):cmul(s):cmul(a):cmul(gradOutput)
   return gi
end
