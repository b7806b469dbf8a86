-- nn.ZipTableOneToMany(): { v, {a, b, c} } -> { {v, a}, {v, b}, {v, c} }. The gradient of v is
-- the sum of the gradients of its copies; those of a, b, c are passed back as they come.
local torch = require 'moontorch'
require 'moontorch.nn'

local ZipTableOneToMany, parent = torch.class('nn.ZipTableOneToMany', 'nn.Module')

function ZipTableOneToMany:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
   self.gradInputEl = torch.Tensor()
end

local function check(input)
   if type(input) ~= 'table' or torch.isTensor(input) or #input ~= 2 or type(input[2]) ~= 'table'
      or torch.isTensor(input[2]) then
      error('nn.ZipTableOneToMany: input must be a table of an element and a table', 3)
   end
end

function ZipTableOneToMany:updateOutput(input)
   check(input)
   local r = {}
   for i, v in ipairs(input[2]) do r[i] = { input[1], v } end
   self.output = r
   return self.output
end

function ZipTableOneToMany:updateGradInput(input, gradOutput)
   check(input)
   local el = input[1]
   if self.gradInputEl:type() ~= el:type() then self.gradInputEl = el.new() end
   self.gradInputEl:resizeAs(el):zero()
   local grads = {}
   for i, g in ipairs(gradOutput) do
      self.gradInputEl:add(g[1])
      grads[i] = g[2]
   end
   self.gradInput = { self.gradInputEl, grads }
   return self.gradInput
end

function ZipTableOneToMany:clearState()
   self.output, self.gradInput = {}, {}
   self.gradInputEl:set()
   return self
end
