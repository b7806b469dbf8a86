-- nn.FlattenTable: a nested table of tensors -> the flat table of its tensors in depth-first
-- order (the tensors themselves). The gradient is gradOutput's tensors put back in the nesting.
local torch = require 'moontorch'
require 'moontorch.nn'

local FlattenTable, parent = torch.class('nn.FlattenTable', 'nn.Module')

function FlattenTable:__init()
   parent.__init(self)
   self.output = {}
   self.input_map = {}
   self.gradInput = {}
end

-- appends x's tensors to out; returns x's shape: the index in out, or a table of shapes
local function flatten(out, x)
   if torch.isTensor(x) then
      out[#out + 1] = x
      return #out
   elseif type(x) == 'table' then
      local map = {}
      for i, v in ipairs(x) do map[i] = flatten(out, v) end
      return map
   end
   error('nn.FlattenTable: expected a (nested) table of tensors, found a ' .. torch.type(x), 3)
end

local function unflatten(flat, map)
   if type(map) == 'number' then
      if flat[map] == nil then error(('nn.FlattenTable: gradOutput has no element %d'):format(map), 3) end
      return flat[map]
   end
   local t = {}
   for i, m in ipairs(map) do t[i] = unflatten(flat, m) end
   return t
end

-- does map (from an earlier pass) place exactly input's tensors in out?
local function same_map(out, input, map)
   if torch.isTensor(input) then return type(map) == 'number' and out[map] == input end
   if type(input) ~= 'table' or type(map) ~= 'table' or #input ~= #map then return false end
   for i = 1, #input do
      if not same_map(out, input[i], map[i]) then return false end
   end
   return true
end

function FlattenTable:updateOutput(input)
   if type(input) ~= 'table' or torch.isTensor(input) then
      error('nn.FlattenTable: expected a table, got ' .. torch.type(input), 2)
   end
   -- the same tensors in the same nesting keep the output table (Torch7: nothing is rebuilt)
   if not same_map(self.output, input, self.input_map) then
      local out = {}
      self.input_map = flatten(out, input)
      self.output = out
   end
   return self.output
end

function FlattenTable:updateGradInput(input, gradOutput)
   if type(gradOutput) ~= 'table' or torch.isTensor(gradOutput) then
      error('nn.FlattenTable: expected gradOutput to be a table, got ' .. torch.type(gradOutput), 2)
   end
   local map = flatten({}, input)      -- the input's current nesting
   self.gradInput = unflatten(gradOutput, map)
   return self.gradInput
end

-- output and gradInput only hold references to other modules' tensors
function FlattenTable:type(t, tensorCache)
   self.output, self.gradInput = {}, {}
   return parent.type(self, t, tensorCache)
end

function FlattenTable:clearState()
   self.output, self.gradInput, self.input_map = {}, {}, {}
   return self
end
