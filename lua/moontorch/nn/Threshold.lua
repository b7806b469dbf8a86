-- nn.Threshold([th = 1e-6] [, v = 0] [, inplace]): x where x > th, else v. In place the input
-- is overwritten, which needs v <= th so that backward can still tell which inputs passed.
local torch = require 'moontorch'
require 'moontorch.nn'
local P = require 'moontorch.nn.transfer_common'

local Threshold, parent = torch.class('nn.Threshold', 'nn.Module')

function Threshold:__init(th, v, ip)
   parent.__init(self)
   if (th ~= nil and type(th) ~= 'number') or (v ~= nil and type(v) ~= 'number') then
      error(('nn.Threshold(threshold, value): expected numbers, got %s and %s'):format(type(th), type(v)), 2)
   end
   self.threshold = th or 1e-6
   self.val = v or 0
   self.inplace = P.checkInplace('nn.Threshold', ip)
   self:validateParameters(3)
end

function Threshold:validateParameters(level)
   self.inplace = self.inplace or false   -- modules saved before the flag existed
   if self.inplace and self.val > self.threshold then
      error(('%s: in place needs value (%g) <= threshold (%g)'):format(torch.type(self), self.val, self.threshold),
         level or 3)
   end
end

function Threshold:updateOutput(input)
   self:validateParameters(4)
   P.checkInput(self, input)
   local below = input:le(self.threshold)   -- taken before an in-place write
   return P.output(self, input, self.inplace):maskedFill(below, self.val)
end

-- In place the input now holds the output, whose values <= threshold are exactly the replaced ones.
function Threshold:updateGradInput(input, gradOutput)
   self:validateParameters(4)
   gradOutput = P.checkGradOutput(self, input, gradOutput)
   return P.gradInput(self, gradOutput, self.inplace):maskedFill(input:le(self.threshold), 0)
end
