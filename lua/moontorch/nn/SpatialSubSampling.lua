-- nn.SpatialSubSampling(nInputPlane, kW, kH, [dW=1], [dH=1]) as in Torch7: each plane's kW x kH
-- windows are summed, times that plane's weight, plus its bias (weight and bias: nInputPlane).
-- That is a grouped convolution (groups = nInputPlane, csrc/nn/conv.c) whose kernel for plane c
-- is filled with weight[c]; the weight's gradient is the sum of that kernel's gradient.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.C, T.check

local Sub, parent = torch.class('nn.SpatialSubSampling', 'nn.Module')

local NAME = 'nn.SpatialSubSampling'

function Sub:__init(nInputPlane, kW, kH, dW, dH)
   parent.__init(self)
   dW, dH = dW or 1, dH or 1
   for _, v in ipairs { { nInputPlane, 'nInputPlane' }, { kW, 'kW' }, { kH, 'kH' }, { dW, 'dW' }, { dH, 'dH' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.nInputPlane, self.kW, self.kH, self.dW, self.dH = nInputPlane, kW, kH, dW, dH
   self.weight = torch.Tensor(nInputPlane)
   self.bias = torch.Tensor(nInputPlane)
   self.gradWeight = torch.Tensor(nInputPlane):zero()
   self.gradBias = torch.Tensor(nInputPlane):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*kH)
function Sub:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.kW * self.kH) end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
   return self
end

local function batched(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then
      error(('%s: expected a 3-d or 4-d input, got size %s'):format(NAME, table.concat(T.sizes(input), 'x')), 4)
   end
   if input:size(d - 2) ~= self.nInputPlane then
      error(('%s: input has %d planes, expected nInputPlane %d'):format(NAME, input:size(d - 2), self.nInputPlane), 4)
   end
   if input:size(d - 1) < self.kH or input:size(d) < self.kW then
      error(('%s: input plane %dx%d is smaller than the kernel %dx%d'):format(NAME, input:size(d - 1), input:size(d),
         self.kH, self.kW), 4)
   end
   if input:type() ~= self.weight:type() then
      error(('%s: input is a %s but the module holds %s (convert with :type())'):format(NAME, input:type(),
         self.weight:type()), 4)
   end
   if d == 3 then return input:view(1, input:size(1), input:size(2), input:size(3)), true end
   return input, false
end

function Sub:_kernel()
   return self.weight:view(self.nInputPlane, 1, 1, 1):expand(self.nInputPlane, 1, self.kH, self.kW):contiguous()
end

function Sub:updateOutput(input)
   local x, single = batched(self, input)
   local out = input.new()
   check(C.mt_conv2d_forward(out.h, x.h, self:_kernel().h, self.bias.h, self.dW, self.dH, 0, 0, 1, 1,
      self.nInputPlane))
   self.output = single and out:select(1, 1) or out
   return self.output
end

local function grad4d(x, gradOutput, single)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   if single and gradOutput:dim() == 3 then
      return gradOutput:view(1, gradOutput:size(1), gradOutput:size(2), gradOutput:size(3))
   end
   if gradOutput:dim() ~= 4 or gradOutput:size(1) ~= x:size(1) then
      error(('%s: gradOutput has size %s, which does not match the input %s'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(x), 'x')), 3)
   end
   return gradOutput
end

function Sub:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = batched(self, input)
   local g = grad4d(x, gradOutput, single)
   local gi = input.new()
   check(C.mt_conv2d_backward_input(gi.h, x.h, g.h, self:_kernel().h, self.dW, self.dH, 0, 0, 1, 1,
      self.nInputPlane))
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function Sub:accGradParameters(input, gradOutput, scale)
   local x, single = batched(self, input)
   local g = grad4d(x, gradOutput, single)
   local gk = input.new(self.nInputPlane, 1, self.kH, self.kW):zero()
   check(C.mt_conv2d_backward_params(gk.h, self.gradBias.h, x.h, g.h, scale or 1, self.dW, self.dH, 0, 0, 1, 1,
      self.nInputPlane))
   self.gradWeight:add(gk:view(self.nInputPlane, -1):sum(2):view(self.nInputPlane))
end

return Sub
