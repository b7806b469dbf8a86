-- nn.DotProduct: {x, y} -> the dot product of x and y (vectors of size n: output of size 1),
-- or of each row pair (b x n matrices: output of size b).
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local DotProduct, parent = torch.class('nn.DotProduct', 'nn.Module')

function DotProduct:__init()
   parent.__init(self)
   self.gradInput = { torch.Tensor(), torch.Tensor() }
end


function DotProduct:updateOutput(input)
   local a, b = utils.rowPairs('nn.DotProduct', input)
   if not self.buffer or self.buffer:type() ~= a:type() then self.buffer = a.new() end
   if self.output:type() ~= a:type() then self.output = a.new() end
   self.buffer:cmul(a, b)
   torch.sum(self.output, self.buffer, 2)
   self.output = self.output:view(a:size(1))
   return self.output
end

-- d/dx = gradOutput[row] * y, d/dy = gradOutput[row] * x
function DotProduct:updateGradInput(input, gradOutput)
   local a, b = utils.rowPairs('nn.DotProduct', input)
   local go = gradOutput:contiguous():view(a:size(1), 1):expandAs(a)
   for i, other in ipairs({ b, a }) do
      local g = self.gradInput[i]
      if not g or g:type() ~= a:type() then g = a.new() end
      g:resizeAs(other):copy(other):cmul(go)
      self.gradInput[i] = g:view(input[i]:size())
   end
   return self.gradInput
end

function DotProduct:clearState()
   self:_clearFields('buffer')
   return parent.clearState(self)
end
