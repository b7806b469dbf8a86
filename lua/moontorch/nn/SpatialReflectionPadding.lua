-- nn.SpatialReflectionPadding(pad_l, [pad_r=pad_l], [pad_t=pad_l], [pad_b=pad_l]) as in Torch7: pads
-- the last two dimensions of a 3-d or 4-d input with its mirror image (the border is not repeated);
-- each pad must be smaller than that dimension. The output gathers input rows and columns through
-- index tensors, and the gradient adds them back with indexAdd, so it runs wherever those ops do.
-- nn.SpatialReplicationPadding reuses this with the border repeated instead.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Pad, parent = torch.class('nn.SpatialReflectionPadding', 'nn.Module')

function Pad:__init(pad_l, pad_r, pad_t, pad_b)
   parent.__init(self)
   self.pad_l = pad_l
   self.pad_r = pad_r or pad_l
   self.pad_t = pad_t or pad_l
   self.pad_b = pad_b or pad_l
   for _, k in ipairs { 'pad_l', 'pad_r', 'pad_t', 'pad_b' } do
      local v = self[k]
      if type(v) ~= 'number' or v ~= math.floor(v) or v < 0 then
         error(('%s: %s must be a non-negative integer, got %s'):format(torch.type(self), k, tostring(v)), 2)
      end
   end
end

-- 0-based source of output position o (0-based) along a dimension of size n padded by `before`
function Pad:_source(o, n, before)
   local i = o - before
   if i < 0 then return -i end
   if i >= n then return 2 * (n - 1) - i end
   return i
end

-- pads must leave every source inside the input (reflection needs pad < size)
function Pad:_checkSize(n, before, after, what)
   if before >= n or after >= n then
      error(('%s: %s pads %d,%d must be smaller than the input size %d'):format(torch.type(self), what, before, after,
         n), 4)
   end
end

-- 1-based index tensor (on the input's device) of the sources of a padded dimension
local function indices(self, n, before, after, like)
   local t = {}
   for o = 0, n + before + after - 1 do t[o + 1] = self:_source(o, n, before) + 1 end
   local cpu = torch.LongTensor(t)
   if like:device() == cpu:device() then return cpu end
   return T.empty(cpu:dtype(), like:device()):resize(#t):copy(cpu)
end

local function check_input(self, input, what)
   T.expect_tensor(input, torch.type(self), what, 4)
   if input:dim() ~= 3 and input:dim() ~= 4 then
      error(('%s: expected a 3-d or 4-d %s, got %d-d'):format(torch.type(self), what, input:dim()), 3)
   end
end

function Pad:updateOutput(input)
   check_input(self, input, 'input')
   local d = input:dim()
   local H, W = input:size(d - 1), input:size(d)
   self:_checkSize(H, self.pad_t, self.pad_b, 'height')
   self:_checkSize(W, self.pad_l, self.pad_r, 'width')
   self._ih = indices(self, H, self.pad_t, self.pad_b, input)
   self._iw = indices(self, W, self.pad_l, self.pad_r, input)
   self.output = input:index(d - 1, self._ih):index(d, self._iw)
   return self.output
end

function Pad:updateGradInput(input, gradOutput)
   check_input(self, input, 'input')
   check_input(self, gradOutput, 'gradOutput')
   local d = input:dim()
   -- sum the padded columns back onto their sources, then the rows
   local sz = T.sizes(gradOutput)
   sz[d] = input:size(d)
   local cols = gradOutput.new():resize(torch.LongStorage(sz)):zero()
   cols:indexAdd(d, self._iw, gradOutput)
   local gi = nn.utils.result(self, 'gradInput', input)
   gi:resizeAs(input):zero()
   gi:indexAdd(d - 1, self._ih, cols)
   return self.gradInput
end

function Pad:clearState()
   self._ih, self._iw = nil, nil
   return parent.clearState(self)
end

function Pad:__tostring__()
   return ('%s(l=%d, r=%d, t=%d, b=%d)'):format(torch.type(self), self.pad_l, self.pad_r, self.pad_t, self.pad_b)
end

return Pad
