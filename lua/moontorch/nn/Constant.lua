-- nn.Constant(value[, nInputDim]): outputs value (a number or a tensor) whatever the input. With
-- nInputDim, an input of more dimensions is a batch: the output is value repeated once per row of
-- it. The gradient with respect to the input is zero. With nn.ConcatTable it adds a constant input.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Constant, parent = torch.class('nn.Constant', 'nn.Module')

function Constant:__init(value, nInputDim)
   parent.__init(self)
   if type(value) == 'number' then value = torch.Tensor { value } end
   if not torch.isTensor(value) then
      error('nn.Constant: value must be a number or a tensor, got ' .. torch.type(value), 3)
   end
   if nInputDim ~= nil and type(nInputDim) ~= 'number' then
      error('nn.Constant: nInputDim must be a number, got ' .. torch.type(nInputDim), 3)
   end
   self.value = value
   self.nInputDim = nInputDim
end

function Constant:updateOutput(input)
   local value = self.value
   if self.output:type() ~= value:type() then self.output = value.new() end
   if self.nInputDim and torch.isTensor(input) and input:dim() > self.nInputDim then
      local sizes, one = value:size():totable(), value:size():totable()
      table.insert(sizes, 1, input:size(1))
      table.insert(one, 1, 1)
      sizes, one = torch.LongStorage(sizes), torch.LongStorage(one)
      self.output:resize(sizes):copy(value:view(one):expand(sizes))
   else
      self.output:resizeAs(value):copy(value)
   end
   return self.output
end

function Constant:updateGradInput(input, gradOutput)
   self.gradInput = nn.utils.zeroLike(self.gradInput, input)
   return self.gradInput
end
