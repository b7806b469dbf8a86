-- nn.TemporalConvolution(inputFrameSize, outputFrameSize, kW, [dW=1]) as in Torch7: a 1-d
-- convolution over the frames of an nInputFrame x inputFrameSize input (or batch x nInputFrame x
-- inputFrameSize). Weight: outputFrameSize x (kW*inputFrameSize), frame-major, which is the
-- contiguous weight of a 2-d convolution with one input plane and a kW x inputFrameSize kernel
-- sliding down the frames with stride dW; the module runs that convolution (csrc/nn/conv.c) on a
-- view of the input and transposes its output to frames x features.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.C, T.check

local TConv, parent = torch.class('nn.TemporalConvolution', 'nn.Module')

local NAME = 'nn.TemporalConvolution'

function TConv:__init(inputFrameSize, outputFrameSize, kW, dW)
   parent.__init(self)
   dW = dW or 1
   for _, v in ipairs { { inputFrameSize, 'inputFrameSize' }, { outputFrameSize, 'outputFrameSize' }, { kW, 'kW' },
      { dW, 'dW' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.inputFrameSize, self.outputFrameSize, self.kW, self.dW = inputFrameSize, outputFrameSize, kW, dW
   self.weight = torch.Tensor(outputFrameSize, kW * inputFrameSize)
   self.bias = torch.Tensor(outputFrameSize)
   self.gradWeight = torch.Tensor(outputFrameSize, kW * inputFrameSize):zero()
   self.gradBias = torch.Tensor(outputFrameSize):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*inputFrameSize)
function TConv:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.kW * self.inputFrameSize) end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
   return self
end

-- the input as N x 1 x nInputFrame x inputFrameSize, and whether it had no batch dimension
local function as4d(self, input, what)
   T.expect_tensor(input, NAME, what, 4)
   local d = input:dim()
   if d ~= 2 and d ~= 3 then
      error(('%s: expected a 2-d or 3-d %s (frames x features), got %d-d'):format(NAME, what, d), 4)
   end
   if what == 'input' and input:size(d) ~= self.inputFrameSize then
      error(('%s: input frames have %d features, expected inputFrameSize %d'):format(NAME, input:size(d),
         self.inputFrameSize), 4)
   end
   if what == 'input' and input:size(d - 1) < self.kW then
      error(('%s: input has %d frames, fewer than kW %d'):format(NAME, input:size(d - 1), self.kW), 4)
   end
   if input:type() ~= self.weight:type() then
      error(('%s: %s is a %s but the module holds %s (convert with :type())'):format(NAME, what, input:type(),
         self.weight:type()), 4)
   end
   local x = input:isContiguous() and input or input:contiguous()
   if d == 2 then return x:view(1, 1, x:size(1), x:size(2)), true end
   return x:view(x:size(1), 1, x:size(2), x:size(3)), false
end

function TConv:_kernel(w) return w:view(self.outputFrameSize, 1, self.kW, self.inputFrameSize) end

function TConv:updateOutput(input)
   local x, single = as4d(self, input, 'input')
   local y = input.new()
   check(C.mt_conv2d_forward(y.h, x.h, self:_kernel(self.weight).h, self.bias.h, 1, self.dW, 0, 0, 1, 1, 1))
   -- N x out x frames x 1 -> N x frames x out
   local out = y:select(4, 1):transpose(2, 3):contiguous()
   self.output = single and out:select(1, 1) or out
   return self.output
end

-- gradOutput (frames x out, batched or not) as the convolution's N x out x frames x 1
local function grad4d(self, gradOutput, single)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local g = single and gradOutput:view(1, gradOutput:size(1), gradOutput:size(2)) or gradOutput
   if g:dim() ~= 3 or g:size(3) ~= self.outputFrameSize then
      error(('%s: gradOutput has size %s, expected frames x %d'):format(NAME, table.concat(T.sizes(gradOutput), 'x'),
         self.outputFrameSize), 3)
   end
   return g:transpose(2, 3):contiguous():view(g:size(1), g:size(3), g:size(2), 1)
end

function TConv:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = as4d(self, input, 'input')
   local gi = input.new()
   check(C.mt_conv2d_backward_input(gi.h, x.h, grad4d(self, gradOutput, single).h, self:_kernel(self.weight).h, 1,
      self.dW, 0, 0, 1, 1, 1))
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function TConv:accGradParameters(input, gradOutput, scale)
   local x, single = as4d(self, input, 'input')
   check(C.mt_conv2d_backward_params(self:_kernel(self.gradWeight).h, self.gradBias.h, x.h,
      grad4d(self, gradOutput, single).h, scale or 1, 1, self.dW, 0, 0, 1, 1, 1))
end

function TConv:__tostring__()
   return ('%s(%d -> %d, %d, %d)'):format(torch.type(self), self.inputFrameSize, self.outputFrameSize, self.kW,
      self.dW)
end

return TConv
