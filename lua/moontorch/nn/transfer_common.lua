-- What the elementwise transfer modules (Threshold, HardTanh, ELU, RReLU, ...) share: argument
-- checks that name the module, and their result tensors, which in place are the input (forward)
-- or gradOutput (backward) itself, as Torch7's THNN makes them.
local torch = require 'moontorch'
local T = require 'moontorch.internal'

local P = {}

-- level 4: the error points at the caller of forward/backward (module -> updateOutput -> here)
function P.checkInput(self, input)
   T.expect_tensor(input, torch.type(self), 'input', 4)
   if input:dim() == 0 then error(torch.type(self) .. ': expected a non-empty input tensor', 4) end
   return input
end

-- gradOutput must hold as many elements as the input (Torch7's THNN_CHECK_NELEMENT); a
-- differently shaped one is read in row-major order, viewed as the input.
function P.checkGradOutput(self, input, gradOutput)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 4)
   if gradOutput:nElement() ~= input:nElement() then
      error(('%s: gradOutput has %d elements (size %s) but the input has %d (size %s)'):format(torch.type(self),
         gradOutput:nElement(), table.concat(T.sizes(gradOutput), 'x'), input:nElement(),
         table.concat(T.sizes(input), 'x')), 4)
   end
   if not gradOutput:isSameSizeAs(input) then gradOutput = gradOutput:contiguous():view(T.sizes(input)) end
   return gradOutput
end

-- self[field] as a tensor of like's type sized as like, never aliasing like (it may have been
-- set to an input by an earlier in-place call, or converted by :type()).
function P.buffer(self, field, like)
   local r = self[field]
   if not torch.isTensor(r) or r == like or r:type() ~= like:type() then
      r = T.empty_tensor(like:dtype(), like:device())
      self[field] = r
   end
   return r:resizeAs(like)
end

-- The forward result: the input itself in place (its values are overwritten), else self.output
-- holding a copy of the input for the caller to transform.
function P.output(self, input, inplace)
   if inplace then
      self.output = input
      return input
   end
   return P.buffer(self, 'output', input):copy(input)
end

-- The backward result: gradOutput itself in place, else self.gradInput holding a copy of it.
function P.gradInput(self, gradOutput, inplace)
   if inplace then
      self.gradInput = gradOutput
      return gradOutput
   end
   return P.buffer(self, 'gradInput', gradOutput):copy(gradOutput)
end

-- A new 0/1 tensor of t's type: 1 where t <= v (op 'le'), t > v (op 'gt'), and so on; a
-- factor for cmul, where a ByteTensor mask would only serve maskedFill.
function P.mask(t, op, v)
   local m = T.empty_tensor(t:dtype(), t:device())
   return m[op](m, t, v)
end

-- in-place flags are booleans (Torch7 refuses anything else)
function P.checkInplace(name, ip, level)
   if ip ~= nil and type(ip) ~= 'boolean' then
      error(('%s: the in-place flag must be a boolean, got %s'):format(name, type(ip)), (level or 2) + 1)
   end
   return ip or false
end

return P
