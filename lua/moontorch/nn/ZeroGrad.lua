-- nn.ZeroGrad(): the identity forward; backward gives zeros the shape of the input (a tensor or
-- nested table), so nothing flows back along this path.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local ZeroGrad = torch.class('nn.ZeroGrad', 'nn.Module')

function ZeroGrad:updateOutput(input)
   self.output = input
   return self.output
end

function ZeroGrad:updateGradInput(input)
   self.gradInput = nn.utils.zeroLike(self.gradInput, input)
   return self.gradInput
end

-- the output is the input itself: drop it rather than empty it
function ZeroGrad:clearState()
   self.output = torch.Tensor()
   nn.utils.clear(self, 'gradInput')
   return self
end
