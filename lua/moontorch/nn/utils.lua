-- nn.utils: what several module files share (pooling-window checks and printing, result tensors, the
-- buffers of modules whose output is a view).
local torch = require 'moontorch'
local T = require 'moontorch.internal'

local utils = {}

-- A pooling window: kW and kH numbers >= 1, else 'nn.X: kW must be a positive integer, got v'
-- at the caller's caller (the line constructing the module).
function utils.checkWindow(self, kW, kH)
   for _, v in ipairs { { kW, 'kW' }, { kH, 'kH' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 then
         error(('%s: %s must be a positive integer, got %s'):format(torch.type(self), v[2], tostring(v[1])), 3)
      end
   end
end

-- Max and average pooling print alike, as Torch7 does: 'nn.X(kWxkH, dW,dH[, padW,padH])'.
function utils.poolToString(self)
   local s = ('%s(%dx%d, %d,%d'):format(torch.type(self), self.kW, self.kH, self.dW, self.dH)
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   return s .. ')'
end

-- self[field] as a result tensor of like's type, made anew when the module was converted
-- with :type() or moved to another device (the C op resizes it).
function utils.result(self, field, like)
   local r = self[field]
   if r == nil or not torch.isTensor(r) or r:type() ~= like:type() then
      r = T.empty_tensor(like:dtype(), like:device())
      self[field] = r
   end
   return r
end

-- View, Reshape, Flatten: the output is the input (made contiguous) viewed as `sizes`, and the
-- gradient is gradOutput viewed back as the input.
function utils.viewInput(self, input, sizes)
   local src = input:isContiguous() and input or input:contiguous()
   self.output = src:view(sizes)
   return self.output
end

function utils.viewGradOutput(self, input, gradOutput)
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   self.gradInput = g:view(T.sizes(input))
   return self.gradInput
end

-- clearState for modules whose output and gradInput alias other tensors: drop the references
-- instead of emptying (and so resizing) tensors that belong to someone else.
function utils.dropBuffers(self)
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
   return self
end

return utils
