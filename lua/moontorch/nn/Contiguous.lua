-- nn.Contiguous(): passes a contiguous input (and gradOutput) through (the output shares its
-- storage); a non-contiguous one is copied into a contiguous tensor.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Contiguous = torch.class('nn.Contiguous', 'nn.Module')
local result = nn.utils.result

-- self[field] stays the module's own tensor object, as in Torch7: set to x's storage when x is
-- contiguous, else a contiguous copy of x. A copy first detaches it from the storage an earlier
-- pass set it to: writing there would clobber that pass's input (or x, a view of it).
local function contiguousOf(self, field, x, what)
   T.expect_tensor(x, 'nn.Contiguous', what, 3)
   local r = result(self, field, x)
   local aliased = '_' .. field .. 'IsInput'
   if x:isContiguous() then
      self[aliased] = true
      return r:set(x)
   end
   if self[aliased] then r:set() end
   self[aliased] = nil
   return r:resizeAs(x):copy(x)
end

function Contiguous:updateOutput(input)
   return contiguousOf(self, 'output', input, 'input')
end

function Contiguous:updateGradInput(input, gradOutput)
   return contiguousOf(self, 'gradInput', gradOutput, 'gradOutput')
end

function Contiguous:clearState()
   self._outputIsInput, self._gradInputIsInput = nil, nil
   return nn.utils.dropBuffers(self)
end
