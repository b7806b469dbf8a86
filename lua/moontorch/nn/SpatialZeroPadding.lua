-- nn.SpatialZeroPadding(pad_l, [pad_r=pad_l], [pad_t=pad_l], [pad_b=pad_l]) as in Torch7: pads the
-- last two dimensions of a 3-d or 4-d input with zeros; a negative pad crops that side instead.
-- One C pass each way (mt_nn_pad2d_forward / _backward in zero mode, csrc/nn/padding.c).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ZERO = 0 -- MT_PAD_ZERO

local Pad, parent = torch.class('nn.SpatialZeroPadding', 'nn.Module')

local function int(v, what)
   if type(v) ~= 'number' or v ~= math.floor(v) then
      error(('nn.SpatialZeroPadding: %s must be an integer, got %s'):format(what, tostring(v)), 4)
   end
end

function Pad:__init(pad_l, pad_r, pad_t, pad_b)
   parent.__init(self)
   self.pad_l = pad_l
   self.pad_r = pad_r or pad_l
   self.pad_t = pad_t or pad_l
   self.pad_b = pad_b or pad_l
   int(self.pad_l, 'pad_l'); int(self.pad_r, 'pad_r'); int(self.pad_t, 'pad_t'); int(self.pad_b, 'pad_b')
end

local function check_input(self, input, what)
   T.expect_tensor(input, 'nn.SpatialZeroPadding', what, 4)
   if input:dim() ~= 3 and input:dim() ~= 4 then
      error(('nn.SpatialZeroPadding: expected a 3-d or 4-d %s, got %d-d'):format(what, input:dim()), 3)
   end
end

function Pad:updateOutput(input)
   check_input(self, input, 'input')
   local sz = T.sizes(input)
   local d = #sz
   local h, w = sz[d - 1] + self.pad_t + self.pad_b, sz[d] + self.pad_l + self.pad_r
   if h < 1 or w < 1 or sz[d - 1] + math.min(self.pad_t, 0) + math.min(self.pad_b, 0) < 1
      or sz[d] + math.min(self.pad_l, 0) + math.min(self.pad_r, 0) < 1 then
      error(('nn.SpatialZeroPadding: input %dx%d is too small for pads l%d r%d t%d b%d'):format(sz[d - 1], sz[d],
         self.pad_l, self.pad_r, self.pad_t, self.pad_b), 2)
   end
   local out = nn.utils.result(self, 'output', input)
   if out == input then out = T.empty_tensor(input:dtype(), input:device()); self.output = out end
   check(C.mt_nn_pad2d_forward(out.h, input.h, ZERO, self.pad_l, self.pad_r, self.pad_t, self.pad_b))
   return out
end

function Pad:updateGradInput(input, gradOutput)
   check_input(self, input, 'input')
   check_input(self, gradOutput, 'gradOutput')
   local gi = nn.utils.result(self, 'gradInput', input)
   if gi == gradOutput then gi = T.empty_tensor(input:dtype(), input:device()); self.gradInput = gi end
   check(C.mt_nn_pad2d_backward(gi.h, gradOutput.h, input.h, ZERO, self.pad_l, self.pad_r, self.pad_t, self.pad_b))
   return gi
end

function Pad:__tostring__()
   return ('%s(l=%d, r=%d, t=%d, b=%d)'):format(torch.type(self), self.pad_l, self.pad_r, self.pad_t, self.pad_b)
end

return Pad
