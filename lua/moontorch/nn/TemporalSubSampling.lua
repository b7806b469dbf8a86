-- nn.TemporalSubSampling(inputFrameSize, kW, [dW=1]) as in Torch7: over an nInputFrame x
-- inputFrameSize input (a batch of them is accepted too), each feature's kW-frame windows are
-- summed, times that feature's weight, plus its bias (weight and bias: inputFrameSize). Run as
-- a grouped convolution (csrc/nn/conv.c) on the input viewed as features x frames x 1, with a
-- kernel filled with each feature's weight; the weight's gradient sums that kernel's gradient.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local Sub, parent = torch.class('nn.TemporalSubSampling', 'nn.Module')

local NAME = 'nn.TemporalSubSampling'

function Sub:__init(inputFrameSize, kW, dW)
   parent.__init(self)
   dW = dW or 1
   cc.posints(NAME, { { inputFrameSize, 'inputFrameSize' }, { kW, 'kW' }, { dW, 'dW' } })
   self.inputFrameSize, self.kW, self.dW = inputFrameSize, kW, dW
   self.weight = torch.Tensor(inputFrameSize)
   self.bias = torch.Tensor(inputFrameSize)
   self.gradWeight = torch.Tensor(inputFrameSize):zero()
   self.gradBias = torch.Tensor(inputFrameSize):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW)
function Sub:reset(stdv) return cc.reset(self, stdv, self.kW) end

-- a frames x features tensor (batched or not) as N x features x frames x 1
local function planes(t) return t:transpose(t:dim() - 1, t:dim()):unsqueeze(t:dim() + 1) end
local function as4d(t, single) local p = planes(t) return single and p:unsqueeze(1) or p end

local function check_input(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 2 and d ~= 3 then
      error(('%s: expected a 2-d or 3-d input (frames x features), got %d-d'):format(NAME, d), 4)
   end
   if input:size(d) ~= self.inputFrameSize then
      error(('%s: input frames have %d features, expected inputFrameSize %d'):format(NAME, input:size(d),
         self.inputFrameSize), 4)
   end
   cc.check_frames(NAME, input:size(d - 1), self.kW, 4)
   cc.check_type(NAME, 'input', input, self.weight, 4)
   return d == 2
end

local function check_grad(self, input, gradOutput)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local d = input:dim()
   local frames = math.floor((input:size(d - 1) - self.kW) / self.dW) + 1
   if gradOutput:dim() ~= d or gradOutput:size(d - 1) ~= frames or gradOutput:size(d) ~= self.inputFrameSize
      or (d == 3 and gradOutput:size(1) ~= input:size(1)) then
      error(('%s: gradOutput has size %s, expected %s%d x %d'):format(NAME, table.concat(T.sizes(gradOutput), 'x'),
         d == 3 and input:size(1) .. ' x ' or '', frames, self.inputFrameSize), 3)
   end
end

function Sub:_kernel()
   return cc.filled_kernel(self.weight, self.inputFrameSize, self.kW, 1)
end

function Sub:updateOutput(input)
   local single = check_input(self, input)
   local y = cc.forward(input.new(), as4d(input, single), self:_kernel(), self.bias, 1, self.dW, 0, 0,
      self.inputFrameSize)
   local out = y:select(4, 1):transpose(2, 3):contiguous()   -- N x frames x features
   self.output = single and out:select(1, 1) or out
   return self.output
end

function Sub:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local gi = cc.backward_input(input.new(), as4d(input, single), as4d(gradOutput, single), self:_kernel(), 1,
      self.dW, 0, 0, self.inputFrameSize)
   local g = gi:select(4, 1):transpose(2, 3):contiguous()
   self.gradInput = single and g:select(1, 1) or g
   return self.gradInput
end

function Sub:accGradParameters(input, gradOutput, scale)
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local F = self.inputFrameSize
   local gk = input.new(F, 1, self.kW, 1):zero()
   cc.backward_params(gk, self.gradBias, as4d(input, single), as4d(gradOutput, single), scale or 1, 1, self.dW, 0, 0,
      F)
   self.gradWeight:add(cc.kernel_sums(gk, F))
end

return Sub
