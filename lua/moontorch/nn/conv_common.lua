-- Plumbing shared by the convolution modules (nn.Spatial*/Temporal*/Volumetric* convolutions and
-- sub-samplings): Torch7-style argument checks, the default reset, and the C 2-d convolution
-- passes of csrc/nn/conv.c as the grouped (plane-wise) modules call them. Plain functions, not a
-- class, so the modules keep their own Torch7 fields and saved files stay as they were.
-- Error levels are counted as if the check stood in the calling function, so messages point
-- at the same place they did when each module held its own copy.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local M = {}

-- error unless v is a positive integer; level as for error(), counted from posint
function M.posint(v, what, name, level)
   if type(v) ~= 'number' or v ~= math.floor(v) or v < 1 then
      error(('%s: %s must be a positive integer, got %s'):format(name, what, tostring(v)), level or 4)
   end
end

-- the constructor checks: each {value, what} of list a positive integer (error at __init's caller)
function M.posints(name, list)
   for _, v in ipairs(list) do M.posint(v[1], v[2], name, 4) end
end

function M.noBias(self)
   self.bias, self.gradBias = nil, nil
   return self
end

-- Torch7's default reset: uniform in +-1/sqrt(fanin); reset(stdv) gives a uniform distribution
-- with standard deviation stdv. The weight is drawn before the bias, as in Torch7.
function M.reset(self, stdv, fanin)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(fanin) end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

-- error (at `level` of the caller) unless t has the module's tensor type
function M.check_type(name, what, t, weight, level)
   if t:type() ~= weight:type() then
      error(('%s: %s is a %s but the module holds %s (convert with :type())'):format(name, what, t:type(),
         weight:type()), level + 1)
   end
end

-- error (at `level` of the caller) when a temporal input has fewer frames than the kernel
function M.check_frames(name, frames, kW, level)
   if frames < kW then error(('%s: input has %d frames, fewer than kW %d'):format(name, frames, kW), level + 1) end
end

-- A 3-d or 4-d input of self.nInputPlane planes as 4-d, and whether it was 3-d. With `kernel`,
-- also that each plane is at least kH x kW (the modules without padding).
function M.batched4d(self, name, input, kernel)
   T.expect_tensor(input, name, 'input', 4)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then
      error(('%s: expected a 3-d or 4-d input, got size %s'):format(name, table.concat(T.sizes(input), 'x')), 4)
   end
   if input:size(d - 2) ~= self.nInputPlane then
      error(('%s: input has %d planes, expected nInputPlane %d'):format(name, input:size(d - 2), self.nInputPlane), 4)
   end
   if kernel and (input:size(d - 1) < self.kH or input:size(d) < self.kW) then
      error(('%s: input plane %dx%d is smaller than the kernel %dx%d'):format(name, input:size(d - 1), input:size(d),
         self.kH, self.kW), 4)
   end
   M.check_type(name, 'input', input, self.weight, 4)
   if d == 3 then return input:view(1, input:size(1), input:size(2), input:size(3)), true end
   return input, false
end

-- A 3-d or 4-d tensor of nInputPlane planes (the input or gradOutput of a module that keeps the
-- planes) as a contiguous 4-d one
function M.planes4d(self, name, t, what)
   T.expect_tensor(t, name, what, 4)
   local d = t:dim()
   if (d ~= 3 and d ~= 4) or t:size(d - 2) ~= self.nInputPlane then
      error(('%s: expected a 3-d or 4-d %s with %d planes, got size %s'):format(name, what, self.nInputPlane,
         table.concat(T.sizes(t), 'x')), 4)
   end
   local x = t:isContiguous() and t or t:contiguous()
   if d == 3 then return x:view(1, x:size(1), x:size(2), x:size(3)) end
   return x
end

-- gradOutput as 4-d to go with the batched input x (single: the input was 3-d)
function M.grad4d(name, x, gradOutput, single)
   T.expect_tensor(gradOutput, name, 'gradOutput', 4)
   if single and gradOutput:dim() == 3 then
      return gradOutput:view(1, gradOutput:size(1), gradOutput:size(2), gradOutput:size(3))
   end
   if gradOutput:dim() ~= 4 or gradOutput:size(1) ~= x:size(1) then
      error(('%s: gradOutput has size %s, which does not match the input %s'):format(name,
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(x), 'x')), 3)
   end
   return gradOutput
end

-- A full (transposed) convolution's gradInput: g, or {g, zeros like the target} when the input
-- was Torch7's {input, target} form (the target only sets the output size).
function M.full_grad_input(self, input, g)
   if type(input) == 'table' then -- tensors are cdata
      -- the target only gives a size: its gradient is one zero expanded to its shape (Torch7's,
      -- which costs no memory)
      local target = input[2]
      local zero = self._zeroScalar
      if not torch.isTensor(zero) or zero:type() ~= target:type() then
         zero = target.new(1):zero()
         self._zeroScalar = zero
      end
      local ones = {}
      for i = 1, target:dim() do ones[i] = 1 end
      self.gradInput = { g, zero:view(table.unpack(ones)):expandAs(target) }
   else
      self.gradInput = g
   end
   return self.gradInput
end

-- Grouped-kernel assembly for the sub-samplings: one weight per plane, filled into an
-- n x 1 x kH x kW kernel (groups = n), and that kernel's gradient summed back to one per plane.
function M.filled_kernel(weight, n, kH, kW)
   return weight:view(n, 1, 1, 1):expand(n, 1, kH, kW):contiguous()
end

function M.kernel_sums(gk, n) return gk:view(n, -1):sum(2):view(n) end

-- the per-plane sums of an N x P x ... tensor (a bias gradient): each sample's planes summed where
-- they lie, then the N x P sums (a plane-major copy first moved the whole tensor: 7.6 against
-- 0.8 ms on VolumetricConvolution's bench gradOutput)
function M.plane_sums(t)
   local N, P = t:size(1), t:size(2)
   local c = t:isContiguous() and t or t:contiguous()
   return c:view(N, P, c:nElement() / (N * P)):sum(3):sum(1):view(P)
end

-- The C 2-d convolution passes without dilation (results resized in C; bias/gradBias may be
-- nil). A C failure is reported at the module method's caller, as a direct check() call was.
function M.forward(y, x, w, bias, dW, dH, padW, padH, groups)
   check(C.mt_conv2d_forward(y.h, x.h, w.h, bias and bias.h or nil, dW, dH, padW, padH, 1, 1, groups), nil, nil, 3)
   return y
end

function M.backward_input(gi, x, dy, w, dW, dH, padW, padH, groups)
   check(C.mt_conv2d_backward_input(gi.h, x.h, dy.h, w.h, dW, dH, padW, padH, 1, 1, groups), nil, nil, 3)
   return gi
end

function M.backward_params(gw, gb, x, dy, scale, dW, dH, padW, padH, groups)
   check(C.mt_conv2d_backward_params(gw.h, gb and gb.h or nil, x.h, dy.h, scale, dW, dH, padW, padH, 1, 1, groups),
      nil, nil, 3)
   return gw
end

return M
