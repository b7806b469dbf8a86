-- nn.JoinTable(dimension [, nInputDims]): concatenates a table of tensors along dimension; with
-- nInputDims, inputs with one more dimension are a batch and the dimension shifts by one.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local JoinTable, parent = torch.class('nn.JoinTable', 'nn.Module')

function JoinTable:__init(dimension, nInputDims)
   parent.__init(self)
   if type(dimension) ~= 'number' then error('nn.JoinTable: expected a dimension, got ' .. tostring(dimension), 2) end
   self.dimension = dimension
   self.nInputDims = nInputDims
   self.gradInput = {}
end

function JoinTable:_getPositiveDimension(input)
   local d = self.dimension
   if d < 0 then
      d = input[1]:dim() + d + 1
   elseif self.nInputDims and input[1]:dim() == self.nInputDims + 1 then
      d = d + 1
   end
   return d
end

function JoinTable:updateOutput(input)
   if type(input) ~= 'table' or #input == 0 then error('nn.JoinTable: expected a table of tensors', 2) end
   local dim = self:_getPositiveDimension(input)
   local size = T.sizes(input[1])
   if dim < 1 or dim > #size then
      error(('nn.JoinTable: dimension %d out of range for inputs of size %s'):format(dim, table.concat(size, 'x')), 2)
   end
   for i = 2, #input do
      local s = T.sizes(input[i])
      local ok = #s == #size
      for d = 1, #size do if ok and d ~= dim and s[d] ~= size[d] then ok = false end end
      if not ok then
         error(('nn.JoinTable: input %d has size %s, which does not match %s outside dimension %d'):format(i,
            table.concat(s, 'x'), table.concat(T.sizes(input[1]), 'x'), dim), 2)
      end
      size[dim] = size[dim] + s[dim]
   end
   if self.output:type() ~= input[1]:type() then self.output = T.empty_tensor(input[1]:dtype(), input[1]:device()) end
   self.output:resize(size)
   local offset = 1
   for i = 1, #input do
      local n = input[i]:size(dim)
      self.output:narrow(dim, offset, n):copy(input[i])
      offset = offset + n
   end
   return self.output
end

function JoinTable:updateGradInput(input, gradOutput)
   local dim = self:_getPositiveDimension(input)
   local offset = 1
   for i = 1, #input do
      local g = self.gradInput[i]
      if not g or g:type() ~= input[i]:type() then g = T.empty_tensor(input[i]:dtype(), input[i]:device()) end
      local n = input[i]:size(dim)
      g:resizeAs(input[i]):copy(gradOutput:narrow(dim, offset, n))
      self.gradInput[i] = g
      offset = offset + n
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end
