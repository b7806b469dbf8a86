-- nn.TemporalSubSampling(inputFrameSize, kW, [dW=1]) as in Torch7: over an nInputFrame x
-- inputFrameSize input (a batch of them is accepted too), each feature's kW-frame windows are
-- summed, times that feature's weight, plus its bias (weight and bias: inputFrameSize). Run as
-- a grouped convolution (csrc/nn/conv.c) on the input viewed as features x frames x 1, with a
-- kernel filled with each feature's weight; the weight's gradient sums that kernel's gradient.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.C, T.check

local Sub, parent = torch.class('nn.TemporalSubSampling', 'nn.Module')

local NAME = 'nn.TemporalSubSampling'

function Sub:__init(inputFrameSize, kW, dW)
   parent.__init(self)
   dW = dW or 1
   for _, v in ipairs { { inputFrameSize, 'inputFrameSize' }, { kW, 'kW' }, { dW, 'dW' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.inputFrameSize, self.kW, self.dW = inputFrameSize, kW, dW
   self.weight = torch.Tensor(inputFrameSize)
   self.bias = torch.Tensor(inputFrameSize)
   self.gradWeight = torch.Tensor(inputFrameSize):zero()
   self.gradBias = torch.Tensor(inputFrameSize):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW)
function Sub:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.kW) end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
   return self
end

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
   if input:size(d - 1) < self.kW then
      error(('%s: input has %d frames, fewer than kW %d'):format(NAME, input:size(d - 1), self.kW), 4)
   end
   if input:type() ~= self.weight:type() then
      error(('%s: input is a %s but the module holds %s (convert with :type())'):format(NAME, input:type(),
         self.weight:type()), 4)
   end
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
   local F = self.inputFrameSize
   return self.weight:view(F, 1, 1, 1):expand(F, 1, self.kW, 1):contiguous()
end

function Sub:updateOutput(input)
   local single = check_input(self, input)
   local y = input.new()
   check(C.mt_conv2d_forward(y.h, as4d(input, single).h, self:_kernel().h, self.bias.h, 1, self.dW, 0, 0, 1, 1,
      self.inputFrameSize))
   local out = y:select(4, 1):transpose(2, 3):contiguous()   -- N x frames x features
   self.output = single and out:select(1, 1) or out
   return self.output
end

function Sub:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local gi = input.new()
   check(C.mt_conv2d_backward_input(gi.h, as4d(input, single).h, as4d(gradOutput, single).h, self:_kernel().h, 1,
      self.dW, 0, 0, 1, 1, self.inputFrameSize))
   local g = gi:select(4, 1):transpose(2, 3):contiguous()
   self.gradInput = single and g:select(1, 1) or g
   return self.gradInput
end

function Sub:accGradParameters(input, gradOutput, scale)
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local F = self.inputFrameSize
   local gk = input.new(F, 1, self.kW, 1):zero()
   check(C.mt_conv2d_backward_params(gk.h, self.gradBias.h, as4d(input, single).h, as4d(gradOutput, single).h,
      scale or 1, 1, self.dW, 0, 0, 1, 1, F))
   self.gradWeight:add(gk:view(F, self.kW):sum(2):view(F))
end

return Sub
