-- nn.SpatialGlobalAveragePooling(): the mean of each plane, N x C x H x W -> N x C x 1 x 1 (3-d
-- inputs: C x 1 x 1). nn.SpatialAdaptiveAveragePooling(W, H) as in Torch7: output W x H whatever
-- the input size, cell i of n averaging input rows floor(i*in/n) .. ceil((i+1)*in/n)-1.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local Global, parent = torch.class('nn.SpatialGlobalAveragePooling', 'nn.SpatialAveragePooling')

function Global:__init()
   parent.__init(self, 1, 1)
end

function Global:_window(input)
   if not torch.isTensor(input) or (input:dim() ~= 3 and input:dim() ~= 4) then
      error(('%s: expected a 3-d or 4-d input, got %s'):format(torch.type(self), torch.isTensor(input) and
         table.concat(T.sizes(input), 'x') or torch.type(input)), 4)
   end
   local d = input:dim()
   local h, w = input:size(d - 1), input:size(d)
   return w, h, w, h, 0, 0
end

function Global:__tostring__() return torch.type(self) .. '()' end

local Adaptive, aparent = torch.class('nn.SpatialAdaptiveAveragePooling', 'nn.Module')

function Adaptive:__init(W, H)
   aparent.__init(self)
   H = H or W
   for _, v in ipairs { { W, 'W' }, { H, 'H' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('nn.SpatialAdaptiveAveragePooling: output %s must be a positive integer, got %s'):format(v[2],
            tostring(v[1])), 2)
      end
   end
   self.W, self.H = W, H
end

local result = nn.utils.result

function Adaptive:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   check(C.mt_adaptive_avgpool2d_forward(result(self, 'output', input).h, input.h, self.W, self.H))
   return self.output
end

function Adaptive:updateGradInput(input, gradOutput)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 3)
   check(C.mt_adaptive_avgpool2d_backward(result(self, 'gradInput', input).h, gradOutput.h, input.h))
   return self.gradInput
end

function Adaptive:__tostring__() return ('%s(%d, %d)'):format(torch.type(self), self.W, self.H) end

return Global
