-- nn.CAddTensorTable(): { v, {a, b, c} } -> { v + a, v + b, v + c }. The gradient of each of a, b, c
-- is its gradOutput; that of v is their sum.
local torch = require 'moontorch'
require 'moontorch.nn'

local CAddTensorTable, parent = torch.class('nn.CAddTensorTable', 'nn.Module')

function CAddTensorTable:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
end

local function check(input)
   if type(input) ~= 'table' or torch.isTensor(input) or not torch.isTensor(input[1]) or type(input[2]) ~= 'table'
      or torch.isTensor(input[2]) then
      error('nn.CAddTensorTable: input must be a table of a tensor and a table of tensors', 3)
   end
end

-- t[i] as a tensor of like's type, sized like it
local function slot(t, i, like)
   local r = t[i]
   if not torch.isTensor(r) or r:type() ~= like:type() then r = like.new() end
   t[i] = r
   return r:resizeAs(like)
end

function CAddTensorTable:updateOutput(input)
   check(input)
   local v, list = input[1], input[2]
   for i, x in ipairs(list) do slot(self.output, i, v):copy(x):add(v) end
   for i = #list + 1, #self.output do self.output[i] = nil end
   return self.output
end

function CAddTensorTable:updateGradInput(input, gradOutput)
   check(input)
   local v, list = input[1], input[2]
   local gv = slot(self.gradInput, 1, v):zero()
   if type(self.gradInput[2]) ~= 'table' or torch.isTensor(self.gradInput[2]) then self.gradInput[2] = {} end
   local gl = self.gradInput[2]
   for i = 1, #list do
      gv:add(gradOutput[i])
      slot(gl, i, v):copy(gradOutput[i])
   end
   for i = #list + 1, #gl do gl[i] = nil end
   return self.gradInput
end
