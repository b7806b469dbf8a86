-- nn.TemporalConvolution(inputFrameSize, outputFrameSize, kW, [dW=1]) as in Torch7: a 1-d
-- convolution over the frames of an nInputFrame x inputFrameSize input (or batch x nInputFrame x
-- inputFrameSize). Weight: outputFrameSize x (kW*inputFrameSize), frame-major, which is the
-- contiguous weight of a 2-d convolution with one input plane and a kW x inputFrameSize kernel
-- sliding down the frames with stride dW; the module runs that convolution (csrc/nn/conv.c) on a
-- view of the input and transposes its output to frames x features.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local TConv, parent = torch.class('nn.TemporalConvolution', 'nn.Module')

local NAME = 'nn.TemporalConvolution'

function TConv:__init(inputFrameSize, outputFrameSize, kW, dW)
   parent.__init(self)
   dW = dW or 1
   cc.posints(NAME, { { inputFrameSize, 'inputFrameSize' }, { outputFrameSize, 'outputFrameSize' }, { kW, 'kW' },
      { dW, 'dW' } })
   self.inputFrameSize, self.outputFrameSize, self.kW, self.dW = inputFrameSize, outputFrameSize, kW, dW
   self.weight = torch.Tensor(outputFrameSize, kW * inputFrameSize)
   self.bias = torch.Tensor(outputFrameSize)
   self.gradWeight = torch.Tensor(outputFrameSize, kW * inputFrameSize):zero()
   self.gradBias = torch.Tensor(outputFrameSize):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*inputFrameSize)
function TConv:reset(stdv) return cc.reset(self, stdv, self.kW * self.inputFrameSize) end

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
   if what == 'input' then cc.check_frames(NAME, input:size(d - 1), self.kW, 4) end
   cc.check_type(NAME, what, input, self.weight, 4)
   local x = input:isContiguous() and input or input:contiguous()
   if d == 2 then return x:view(1, 1, x:size(1), x:size(2)), true end
   return x:view(x:size(1), 1, x:size(2), x:size(3)), false
end

function TConv:_kernel(w) return w:view(self.outputFrameSize, 1, self.kW, self.inputFrameSize) end

function TConv:updateOutput(input)
   local x, single = as4d(self, input, 'input')
   local y = cc.forward(input.new(), x, self:_kernel(self.weight), self.bias, 1, self.dW, 0, 0, 1)
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
   local gi = cc.backward_input(input.new(), x, grad4d(self, gradOutput, single), self:_kernel(self.weight), 1,
      self.dW, 0, 0, 1)
   self.gradInput = gi:view(T.sizes(input))
   return self.gradInput
end

function TConv:accGradParameters(input, gradOutput, scale)
   local x, single = as4d(self, input, 'input')
   cc.backward_params(self:_kernel(self.gradWeight), self.gradBias, x, grad4d(self, gradOutput, single), scale or 1,
      1, self.dW, 0, 0, 1)
end

function TConv:__tostring__()
   return ('%s(%d -> %d, %d, %d)'):format(torch.type(self), self.inputFrameSize, self.outputFrameSize, self.kW,
      self.dW)
end

return TConv
