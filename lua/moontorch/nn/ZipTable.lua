-- nn.ZipTable(): a table of tables to the table of their i-th elements:
-- { {a1, a2}, {b1, b2}, {c1, c2} } -> { {a1, b1, c1}, {a2, b2, c2} }. Backward zips gradOutput
-- back the same way. The tensors are passed on, not copied.
local torch = require 'moontorch'
require 'moontorch.nn'

local ZipTable, parent = torch.class('nn.ZipTable', 'nn.Module')

function ZipTable:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
end

local function zip(name, what, tables)
   if type(tables) ~= 'table' or torch.isTensor(tables) then
      error(('%s: expected a table of tables as %s, got %s'):format(name, what, torch.type(tables)), 3)
   end
   local r = {}
   for i, t in ipairs(tables) do
      if type(t) ~= 'table' or torch.isTensor(t) then
         error(('%s: %s[%d] must be a table, got %s'):format(name, what, i, torch.type(t)), 3)
      end
      for j, v in ipairs(t) do
         r[j] = r[j] or {}
         r[j][i] = v
      end
   end
   return r
end

function ZipTable:updateOutput(input)
   self.output = zip('nn.ZipTable', 'input', input)
   return self.output
end

function ZipTable:updateGradInput(input, gradOutput)
   self.gradInput = zip('nn.ZipTable', 'gradOutput', gradOutput)
   return self.gradInput
end
