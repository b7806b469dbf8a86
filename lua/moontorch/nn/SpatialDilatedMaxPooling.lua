-- nn.SpatialDilatedMaxPooling(kW, kH, [dW=kW], [dH=kH], [padW=0], [padH=0], [dilationW=1], [dilationH=1])
-- with :ceil()/:floor(), as in Torch7: max pooling whose kH x kW window samples every dilation-th
-- pixel. The C pooling op has no dilation, so this is composed from tensor views: the input is
-- padded with -inf, and for each of the kH*kW window offsets a strided view (unfold with size 1)
-- picks that offset's pixel of every window; a running max keeps the first maximum, as Torch7
-- does. self.indices holds, like nn.SpatialMaxPooling's, the 0-based position within the plane.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Pool, parent = torch.class('nn.SpatialDilatedMaxPooling', 'nn.SpatialMaxPooling')

local NAME = 'nn.SpatialDilatedMaxPooling'

function Pool:__init(kW, kH, dW, dH, padW, padH, dilationW, dilationH)
   parent.__init(self, kW, kH, dW, dH, padW, padH)
   self.dilationW = dilationW or 1
   self.dilationH = dilationH or 1
   for _, v in ipairs { { self.dW, 'dW' }, { self.dH, 'dH' }, { self.dilationW, 'dilationW' },
      { self.dilationH, 'dilationH' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
end

-- the output size along one dimension (Torch7's formula; in ceil mode the last window must
-- start inside the input or its left padding)
local function outsize(self, n, k, d, pad, dil, what)
   local span = dil * (k - 1) + 1
   local q = (n + 2 * pad - span) / d
   local o = (self.ceil_mode and math.ceil(q) or math.floor(q)) + 1
   if self.ceil_mode and (o - 1) * d >= n + pad then o = o - 1 end
   if o < 1 then
      error(('%s: input %s %d is too small for a window of %d (dilation %d, padding %d)'):format(NAME, what, n, k,
         dil, pad), 4)
   end
   return o
end

-- the input as N x C x H x W, after checks, and the geometry of the pass
local function geometry(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then
      error(('%s: expected a 3-d or 4-d input, got size %s'):format(NAME, table.concat(T.sizes(input), 'x')), 3)
   end
   if self.padW * 2 > self.kW or self.padH * 2 > self.kH then
      error(('%s: padding %d,%d must be at most half the kernel %dx%d'):format(NAME, self.padW, self.padH, self.kW,
         self.kH), 3)
   end
   local x = d == 3 and input:view(1, input:size(1), input:size(2), input:size(3)) or input
   local H, W = x:size(3), x:size(4)
   local g = { H = H, W = W, single = d == 3 }
   g.oH = outsize(self, H, self.kH, self.dH, self.padH, self.dilationH, 'height')
   g.oW = outsize(self, W, self.kW, self.dW, self.padW, self.dilationW, 'width')
   -- the padded plane covers every window, also the ones ceil mode adds past the right edge
   g.Hp = math.max(H + 2 * self.padH, (g.oH - 1) * self.dH + self.dilationH * (self.kH - 1) + 1)
   g.Wp = math.max(W + 2 * self.padW, (g.oW - 1) * self.dW + self.dilationW * (self.kW - 1) + 1)
   return x, g
end

-- the input part of a padded N x C x Hp x Wp tensor
local function inner(self, p, g) return p:narrow(3, self.padH + 1, g.H):narrow(4, self.padW + 1, g.W) end

-- the pixel at window offset (ki, kj), 0-based, of every window: an N x C x oH x oW view of p
local function offset_view(self, p, g, ki, kj)
   local v = p:narrow(3, ki * self.dilationH + 1, (g.oH - 1) * self.dH + 1)
      :narrow(4, kj * self.dilationW + 1, (g.oW - 1) * self.dW + 1)
   return v:unfold(3, 1, self.dH):unfold(4, 1, self.dW):select(6, 1):select(5, 1)
end

function Pool:updateOutput(input)
   local x, g = geometry(self, input)
   self.iheight, self.iwidth = g.H, g.W
   local N, Cn = x:size(1), x:size(2)
   local p = x.new(N, Cn, g.Hp, g.Wp):fill(-math.huge)
   inner(self, p, g):copy(x)
   local best = offset_view(self, p, g, 0, 0):clone()
   local ai, aj = best.new(best:size()):zero(), best.new(best:size()):zero()
   for ki = 0, self.kH - 1 do
      for kj = 0, self.kW - 1 do
         if ki + kj > 0 then
            local v = offset_view(self, p, g, ki, kj)
            local gt = v:gt(best)          -- strictly greater: the first maximum wins
            ai:maskedFill(gt, ki)
            aj:maskedFill(gt, kj)
            best:cmax(v)
         end
      end
   end
   self._ki, self._kj = ai, aj
   -- positions within the (unpadded) plane, 0-based: row * W + column
   local rows = torch.range(0, g.oH - 1):mul(self.dH):add(-self.padH):typeAs(best):view(g.oH, 1)
   local cols = torch.range(0, g.oW - 1):mul(self.dW):add(-self.padW):typeAs(best):view(1, g.oW)
   local pos = ai:clone():mul(self.dilationH):add(rows:expand(g.oH, g.oW)):mul(g.W)
      :add(aj:clone():mul(self.dilationW)):add(cols:expand(g.oH, g.oW))
   if not torch.isTensor(self.indices) or self.indices:device() ~= input:device() then
      self.indices = T.empty_tensor(torch.LongTensor():dtype(), input:device())
   end
   self.indices:resize(pos:size()):copy(pos)
   self.output = g.single and best:select(1, 1) or best
   if g.single then self.indices = self.indices:select(1, 1) end
   return self.output
end

function Pool:updateGradInput(input, gradOutput)
   local x, g = geometry(self, input)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local go = g.single and gradOutput:dim() == 3 and gradOutput:view(1, gradOutput:size(1), gradOutput:size(2),
      gradOutput:size(3)) or gradOutput
   if not self._ki or go:dim() ~= 4 or go:size(1) ~= x:size(1) or go:size(2) ~= x:size(2) or go:size(3) ~= g.oH
      or go:size(4) ~= g.oW or not self._ki:isSameSizeAs(go) then
      error(('%s: gradOutput has size %s, expected the output size of a forward pass on this input'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x')), 2)
   end
   local gp = x.new(x:size(1), x:size(2), g.Hp, g.Wp):zero()
   -- each offset's views hold distinct pixels, so one masked add per offset routes every gradient
   for ki = 0, self.kH - 1 do
      for kj = 0, self.kW - 1 do
         local part = go:clone()
         part:maskedFill(self._ki:ne(ki), 0)
         part:maskedFill(self._kj:ne(kj), 0)
         offset_view(self, gp, g, ki, kj):add(part)
      end
   end
   local gi = inner(self, gp, g):contiguous()
   self.gradInput = g.single and gi:select(1, 1) or gi
   return self.gradInput
end

function Pool:clearState()
   self._ki, self._kj = nil, nil
   return parent.clearState(self)
end

function Pool:__tostring__()
   local s = ('%s(%dx%d, %d,%d'):format(torch.type(self), self.kW, self.kH, self.dW, self.dH)
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. (', %d,%d'):format(self.padW, self.padH) end
   return s .. (', %d,%d)'):format(self.dilationW, self.dilationH)
end

return Pool
