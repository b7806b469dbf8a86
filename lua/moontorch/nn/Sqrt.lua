-- nn.Sqrt([eps = 0]): sqrt(x + eps) elementwise. The gradient 0.5 gradOutput / output is
-- taken as 0 where the output is 0 (Torch7's rule), so a zero input gives no inf or NaN.
local torch = require 'moontorch'
local E = require 'moontorch.nn.simple_common'
local utils = require 'moontorch.nn.utils'

local Sqrt, parent = torch.class('nn.Sqrt', 'nn.Module')

function Sqrt:__init(eps)
   parent.__init(self)
   if eps ~= nil and type(eps) ~= 'number' then
      error('nn.Sqrt: eps must be a number, got ' .. torch.type(eps), 2)
   end
   self.eps = eps or 0
end

function Sqrt:updateOutput(input)
   local out = E.output(self, input)
   if (self.eps or 0) ~= 0 then
      return torch.add(out, input, self.eps):sqrt()
   end
   return torch.sqrt(out, input)
end

function Sqrt:updateGradInput(input, gradOutput)
   local gi = E.gradInput(self, input, gradOutput)
   if not self.output:isSameSizeAs(input) then
      error(('nn.Sqrt: backward needs the output of a forward on this input (output has size %s, input %s)')
         :format(E.shape(self.output), E.shape(input)), 2)
   end
   -- divide by output where it is nonzero and by 1 elsewhere (the numerator there is scaled to 0)
   local zero = torch.eq(self.output, 0)
   local den = utils.result(self, '_den', input):resizeAs(input):copy(self.output):maskedFill(zero, 1)
   torch.cdiv(gi, gradOutput, den):mul(0.5)
   return gi:maskedFill(zero, 0)
end

function Sqrt:clearState()
   self._den = nil
   return parent.clearState(self)
end
