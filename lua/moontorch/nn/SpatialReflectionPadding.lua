-- nn.SpatialReflectionPadding(pad_l, [pad_r=pad_l], [pad_t=pad_l], [pad_b=pad_l]) as in Torch7: pads
-- the last two dimensions of a 3-d or 4-d input with its mirror image (the border is not repeated);
-- each pad must be smaller than that dimension; a negative pad crops that side. One C pass each
-- way (mt_nn_pad2d_forward / _backward, csrc/nn/padding.c, which also checks the pads against the input);
-- nn.SpatialReplicationPadding reuses this with the border repeated instead (its _mode).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local Pad, parent = torch.class('nn.SpatialReflectionPadding', 'nn.Module')

function Pad:__init(pad_l, pad_r, pad_t, pad_b)
   parent.__init(self)
   self.pad_l = pad_l
   self.pad_r = pad_r or pad_l
   self.pad_t = pad_t or pad_l
   self.pad_b = pad_b or pad_l
   for _, k in ipairs { 'pad_l', 'pad_r', 'pad_t', 'pad_b' } do
      local v = self[k]
      if type(v) ~= 'number' or v ~= math.floor(v) then
         error(('%s: %s must be an integer, got %s'):format(torch.type(self), k, tostring(v)), 2)
      end
   end
end

Pad._mode = 1 -- MT_PAD_REFLECT

local function check_input(self, input, what)
   T.expect_tensor(input, torch.type(self), what, 4)
   if input:dim() ~= 3 and input:dim() ~= 4 then
      error(('%s: expected a 3-d or 4-d %s, got %d-d'):format(torch.type(self), what, input:dim()), 3)
   end
end

-- Negative pads crop, as in Torch7: the input is narrowed by them first, then padded by the
-- positive ones (reflecting about the cropped border). Returns the narrowed input (input itself
-- when nothing is cropped) and the pads to apply.
local function crop(self, input)
   local pl, pr, pt, pb = self.pad_l, self.pad_r, self.pad_t, self.pad_b
   if pl >= 0 and pr >= 0 and pt >= 0 and pb >= 0 then return input, pl, pr, pt, pb end
   local d = input:dim()
   local h, w = input:size(d - 1), input:size(d)
   local cl, cr, ct, cb = math.max(-pl, 0), math.max(-pr, 0), math.max(-pt, 0), math.max(-pb, 0)
   if w - cl - cr < 1 or h - ct - cb < 1 then
      error(('%s: pads l=%d r=%d t=%d b=%d crop all of a %dx%d input'):format(torch.type(self), pl, pr, pt, pb,
         h, w), 3)
   end
   local x = input:narrow(d, 1 + cl, w - cl - cr):narrow(d - 1, 1 + ct, h - ct - cb)
   return x, math.max(pl, 0), math.max(pr, 0), math.max(pt, 0), math.max(pb, 0)
end

function Pad:updateOutput(input)
   check_input(self, input, 'input')
   local out = nn.utils.result(self, 'output', input)
   if out == input then out = T.empty_tensor(input:dtype(), input:device()); self.output = out end
   local x, pl, pr, pt, pb = crop(self, input)
   if x ~= input then x = x:contiguous() end
   check(C.mt_nn_pad2d_forward(out.h, x.h, self._mode, pl, pr, pt, pb))
   return out
end

function Pad:updateGradInput(input, gradOutput)
   check_input(self, input, 'input')
   check_input(self, gradOutput, 'gradOutput')
   local gi = nn.utils.result(self, 'gradInput', input)
   if gi == gradOutput then gi = T.empty_tensor(input:dtype(), input:device()); self.gradInput = gi end
   local x, pl, pr, pt, pb = crop(self, input)
   if x == input then
      check(C.mt_nn_pad2d_backward(gi.h, gradOutput.h, input.h, self._mode, pl, pr, pt, pb))
      return gi
   end
   -- the cropped border gets no gradient: the gradient of the narrowed input, placed inside zeros
   local part = nn.utils.result(self, '_gradCropped', input)
   x = x:contiguous()
   check(C.mt_nn_pad2d_backward(part.h, gradOutput.h, x.h, self._mode, pl, pr, pt, pb))
   gi:resizeAs(input):zero()
   select(1, crop(self, gi)):copy(part)
   return gi
end

function Pad:clearState()
   self._gradCropped = nil
   return parent.clearState(self)
end

function Pad:__tostring__()
   return ('%s(l=%d, r=%d, t=%d, b=%d)'):format(torch.type(self), self.pad_l, self.pad_r, self.pad_t, self.pad_b)
end

return Pad
