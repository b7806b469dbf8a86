-- nn.Unsqueeze(pos[, numInputDims]): inserts a size-1 dimension at position pos (1 to dim + 1) as
-- a view of the input. With numInputDims, the dimensions before the last numInputDims are batch
-- dimensions and pos counts past them.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Unsqueeze, parent = torch.class('nn.Unsqueeze', 'nn.Module')

function Unsqueeze:__init(pos, numInputDims)
   parent.__init(self)
   if not T.is_int(pos) then error('nn.Unsqueeze: the position pos must be an integer, got ' .. tostring(pos), 2) end
   self.pos = pos
   self:setNumInputDims(numInputDims)
end

function Unsqueeze:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

-- Without numInputDims every input is one sample (Torch7 kept the first input's dim() as
-- numInputDims, so a later input with more dimensions counted as a batch).
function Unsqueeze:_position(input)
   local nd = input:dim()
   local sampleDims = self.numInputDims or nd
   if sampleDims > nd then
      error(('nn.Unsqueeze: numInputDims is %d but the input has size %s'):format(sampleDims,
         table.concat(T.sizes(input), 'x')), 3)
   end
   local pos = self.pos + nd - sampleDims
   if pos < 1 or pos > nd + 1 then
      error(('nn.Unsqueeze: position %d is out of range for an input of size %s (numInputDims %d)'):format(
         self.pos, table.concat(T.sizes(input), 'x'), sampleDims), 3)
   end
   return pos
end

function Unsqueeze:updateOutput(input)
   T.expect_tensor(input, 'nn.Unsqueeze', 'input', 2)
   self.output = input:unsqueeze(self:_position(input))
   return self.output
end

function Unsqueeze:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, 'nn.Unsqueeze', 'gradOutput', 2)
   if gradOutput:nElement() ~= input:nElement() then
      error(('nn.Unsqueeze: gradOutput has %d elements but the input %d'):format(gradOutput:nElement(),
         input:nElement()), 2)
   end
   return nn.utils.viewGradOutput(self, input, gradOutput)
end

Unsqueeze.clearState = nn.utils.dropBuffers -- output and gradInput alias the input and gradOutput

function Unsqueeze:__tostring__()
   return torch.type(self) .. '(dim ' .. self.pos .. ')'
end
