-- nn.Contiguous(): passes a contiguous input (and gradOutput) through as it is; a
-- non-contiguous one is copied into a contiguous buffer of the module's.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Contiguous = torch.class('nn.Contiguous', 'nn.Module')
local result = nn.utils.result

-- self[field] becomes x or a contiguous copy of it in self[buffer]. The buffer is the module's
-- own: writing into self[field] could clobber the previous pass's tensor, which it aliased.
local function contiguousOf(self, field, buffer, x, what)
   T.expect_tensor(x, 'nn.Contiguous', what, 3)
   if x:isContiguous() then
      self[field] = x
   else
      self[field] = result(self, buffer, x):resizeAs(x):copy(x)
   end
   return self[field]
end

function Contiguous:updateOutput(input)
   return contiguousOf(self, 'output', '_output', input, 'input')
end

function Contiguous:updateGradInput(input, gradOutput)
   return contiguousOf(self, 'gradInput', '_gradInput', gradOutput, 'gradOutput')
end

function Contiguous:clearState()
   self._output, self._gradInput = nil, nil
   return nn.utils.dropBuffers(self)
end
