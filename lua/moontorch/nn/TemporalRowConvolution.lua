-- nn.TemporalRowConvolution(inputFrameSize, kW, [dW=1], [featFirst=false]) as in Torch7: each
-- feature (row) is convolved over time with its own kW kernel (weight: inputFrameSize x 1 x kW,
-- bias: inputFrameSize). Input: nInputFrame x inputFrameSize, or inputFrameSize x nInputFrame
-- when featFirst; a leading batch dimension is allowed. Run as a grouped convolution
-- (groups = inputFrameSize, csrc/nn/conv.c) on the input viewed as features x frames x 1.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local Row, parent = torch.class('nn.TemporalRowConvolution', 'nn.Module')

local NAME = 'nn.TemporalRowConvolution'

function Row:__init(inputFrameSize, kW, dW, featFirst)
   parent.__init(self)
   dW = dW or 1
   cc.posints(NAME, { { inputFrameSize, 'inputFrameSize' }, { kW, 'kW' }, { dW, 'dW' } })
   self.inputFrameSize, self.kW, self.dW = inputFrameSize, kW, dW
   self.weight = torch.Tensor(inputFrameSize, 1, kW)
   self.bias = torch.Tensor(inputFrameSize)
   self.gradWeight = torch.Tensor(inputFrameSize, 1, kW):zero()
   self.gradBias = torch.Tensor(inputFrameSize):zero()
   self.featFirst = featFirst and true or false
   self:reset()
end

Row.noBias = cc.noBias

-- Torch7's default: uniform in +-1/sqrt(kW*inputFrameSize)
function Row:reset(stdv) return cc.reset(self, stdv, self.kW * self.inputFrameSize) end

-- t (batched or not, frames x features or features x frames) as N x features x frames x 1
function Row:_planes(t, single)
   local p = self.featFirst and t or t:transpose(t:dim() - 1, t:dim())
   p = p:unsqueeze(p:dim() + 1)
   return single and p:unsqueeze(1) or p
end

-- N x features x frames x 1 back to the module's layout
function Row:_unplanes(y, single)
   local r = y:select(4, 1)
   if not self.featFirst then r = r:transpose(2, 3) end
   r = r:contiguous()
   return single and r:select(1, 1) or r
end

local function check_input(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 2 and d ~= 3 then
      error(('%s: expected a 2-d or 3-d input, got %d-d'):format(NAME, d), 4)
   end
   local fdim, tdim = self.featFirst and d - 1 or d, self.featFirst and d or d - 1
   if input:size(fdim) ~= self.inputFrameSize then
      error(('%s: input has %d features (dimension %d), expected inputFrameSize %d'):format(NAME, input:size(fdim),
         fdim, self.inputFrameSize), 4)
   end
   cc.check_frames(NAME, input:size(tdim), self.kW, 4)
   cc.check_type(NAME, 'input', input, self.weight, 4)
   return d == 2
end

local function check_grad(self, input, gradOutput)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   if not self.output or gradOutput:dim() ~= self.output:dim() or not gradOutput:isSameSizeAs(self.output) then
      error(('%s: gradOutput has size %s, expected the output size %s'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(self.output), 'x')), 3)
   end
end

function Row:_kernel() return self.weight:view(self.inputFrameSize, 1, self.kW, 1) end

function Row:updateOutput(input)
   local single = check_input(self, input)
   local y = cc.forward(input.new(), self:_planes(input, single), self:_kernel(), self.bias, 1, self.dW, 0, 0,
      self.inputFrameSize)
   self.output = self:_unplanes(y, single)
   return self.output
end

function Row:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local gi = cc.backward_input(input.new(), self:_planes(input, single), self:_planes(gradOutput, single),
      self:_kernel(), 1, self.dW, 0, 0, self.inputFrameSize)
   self.gradInput = self:_unplanes(gi, single)
   return self.gradInput
end

function Row:accGradParameters(input, gradOutput, scale)
   local single = check_input(self, input)
   check_grad(self, input, gradOutput)
   local gk = input.new(self.inputFrameSize, 1, self.kW, 1):zero()
   cc.backward_params(gk, self.gradBias, self:_planes(input, single), self:_planes(gradOutput, single), scale or 1,
      1, self.dW, 0, 0, self.inputFrameSize)
   self.gradWeight:add(gk:view(self.inputFrameSize, 1, self.kW))
end

function Row:__tostring__()
   local s = ('%s(%d, %d'):format(torch.type(self), self.inputFrameSize, self.kW)
   if self.dW ~= 1 then s = s .. (', %d'):format(self.dW) end
   return s .. (self.bias and ')' or ') without bias')
end

return Row
