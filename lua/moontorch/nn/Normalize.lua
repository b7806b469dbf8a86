-- nn.Normalize(p[, eps = 1e-10]): each vector (or each row of a batch matrix) divided by its
-- p-norm, (sum |x|^p + eps)^(1/p); p = math.huge uses the max norm, max |x| + eps. One C op each
-- way (mt_nn_normalize_*); the backward recomputes the norms from the input.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local Normalize, parent = torch.class('nn.Normalize', 'nn.Module')

local function shape(t) return table.concat(T.sizes(t), 'x') end

function Normalize:__init(p, eps)
   parent.__init(self)
   if type(p) ~= 'number' or not (p > 0) then -- luacheck: ignore 581 (rejects NaN)
      error('nn.Normalize: p must be a positive number (math.huge for the max norm), got ' .. tostring(p), 2)
   end
   self.p = p
   self.eps = eps or 1e-10
end

local function rows(input, what)
   T.expect_tensor(input, 'nn.Normalize', what, 4)
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error(('nn.Normalize: expected a vector or a batch matrix as %s, got size %s'):format(what, shape(input)), 4)
   end
end

function Normalize:updateOutput(input)
   rows(input, 'input')
   if self.output:type() ~= input:type() then self.output = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_normalize_forward(self.output.h, input.h, self.p, self.eps))
   return self.output
end

-- d(x_i / N)/dx_j = delta_ij / N - x_i dN/dx_j / N^2, with dN/dx_j = N sign(x_j)|x_j|^(p-1) / N^p
-- or, for the max norm, sign(x_k) at the (first) maximum k only.
function Normalize:updateGradInput(input, gradOutput)
   rows(input, 'input')
   T.expect_tensor(gradOutput, 'nn.Normalize', 'gradOutput', 3)
   if not gradOutput:isSameSizeAs(input) then
      error(('nn.Normalize: gradOutput has size %s but the input has size %s'):format(shape(gradOutput),
         shape(input)), 2)
   end
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_normalize_backward(self.gradInput.h, input.h, gradOutput.h, self.p, self.eps))
   return self.gradInput
end

function Normalize:__tostring__()
   local fmt = self.p % 1 == 0 and '%s(%d)' or '%s(%f)'
   return fmt:format(torch.type(self), self.p)
end
