-- nn.Index(dimension): forward{t, indices} is t:index(dimension, indices) (indices a LongTensor).
-- gradInput is {dL/dt, zeros the size of indices}: indices get no gradient, repeated ones
-- accumulate theirs.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Index, parent = torch.class('nn.Index', 'nn.Module')
local result = nn.utils.result

function Index:__init(dimension)
   parent.__init(self)
   if not T.is_int(dimension) then
      error('nn.Index(dimension): expected an integer dimension, got ' .. tostring(dimension), 2)
   end
   self.dimension = dimension
   self.gradInput = { self.gradInput, self.gradInput.new() }
end

local function check(self, input, level)
   if type(input) ~= 'table' or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.Index: expected the input {tensor, LongTensor of indices}, got ' .. torch.type(input), level + 1)
   end
   local t = input[1]
   if not torch.type(input[2]):find('Long') then
      error('nn.Index: the indices must be a LongTensor, got a ' .. torch.type(input[2]), level + 1)
   end
   if self.dimension < 1 or self.dimension > t:dim() then
      error(('nn.Index: dimension %d is out of range for an input of size %s'):format(self.dimension,
         table.concat(T.sizes(t), 'x')), level + 1)
   end
end

function Index:updateOutput(input)
   check(self, input, 2)
   local t, index = input[1], input[2]
   torch.index(result(self, 'output', t), t, self.dimension, index)
   return self.output
end

function Index:updateGradInput(input, gradOutput)
   check(self, input, 2)
   local t, index = input[1], input[2]
   local gi = self.gradInput
   if type(gi) ~= 'table' then gi = {}; self.gradInput = gi end
   result(gi, 1, t):resizeAs(t):zero():indexAdd(self.dimension, index, gradOutput)
   result(gi, 2, t):resize(T.sizes(index)):zero()
   return self.gradInput
end

function Index:clearState()
   self.output:set()
   if type(self.gradInput) == 'table' then
      for _, g in ipairs(self.gradInput) do g:set() end
   end
   return self
end
