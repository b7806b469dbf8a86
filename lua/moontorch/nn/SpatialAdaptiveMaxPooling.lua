-- nn.SpatialAdaptiveMaxPooling(W, H) as in Torch7: the maximum over each cell of an H x W grid laid
-- on the last two dimensions of a 3-d or 4-d input, whatever its size; cell i of n covers input
-- rows floor(i*in/n) .. ceil((i+1)*in/n)-1 (cells may overlap). Composed per cell from narrow and
-- max; self.indices keeps the flat 1-based position of each maximum in the input, so the gradient
-- is one indexAdd (any device).
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local P = require 'moontorch.nn.pooling_common'

local Pool, parent = torch.class('nn.SpatialAdaptiveMaxPooling', 'nn.Module')

local NAME = 'nn.SpatialAdaptiveMaxPooling'

function Pool:__init(W, H)
   parent.__init(self)
   H = H or W
   for _, v in ipairs { { W, 'W' }, { H, 'H' } } do
      if type(v[1]) ~= 'number' or v[1] < 1 or v[1] ~= math.floor(v[1]) then
         error(('%s: output %s must be a positive integer, got %s'):format(NAME, v[2], tostring(v[1])), 2)
      end
   end
   self.W, self.H = W, H
end

local on = P.on

function Pool:updateOutput(input)
   T.expect_tensor(input, NAME, 'input', 3)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then error(('%s: expected a 3-d or 4-d input, got %d-d'):format(NAME, d), 2) end
   local iH, iW = input:size(d - 1), input:size(d)
   local oH, oW = self.H, self.W
   local n = input:nElement() / (iH * iW)
   local x = input:contiguous():view(n, iH, iW)
   local out = input.new():resize(n, oH * oW)
   -- everything indexing the input lives on its device
   local idx = T.empty(torch.LongTensor():dtype(), input:device()):resize(n, oH * oW)
   -- first flat position (0-based) of every plane
   local base = on(torch.range(0, n - 1):long():mul(iH * iW), input)
   for i = 0, oH - 1 do
      local hs, he = math.floor(i * iH / oH), math.ceil((i + 1) * iH / oH)
      for j = 0, oW - 1 do
         local ws, we = math.floor(j * iW / oW), math.ceil((j + 1) * iW / oW)
         local hl, wl = he - hs, we - ws
         local cell = x:narrow(2, hs + 1, hl):narrow(3, ws + 1, wl):contiguous():view(n, hl * wl)
         local v, k = cell:max(2)
         local c = i * oW + j + 1
         out:select(2, c):copy(v:view(n))
         -- the cell's k-th element (1-based) lies at row hs + (k-1) // wl, column ws + (k-1) % wl
         local pos = {}
         for r = 0, hl - 1 do for s = 0, wl - 1 do pos[#pos + 1] = (hs + r) * iW + ws + s + 1 end end
         local p = on(torch.LongTensor(pos), input):index(1, k:contiguous():view(n))
         idx:select(2, c):copy(p:add(base))
      end
   end
   self.indices = idx
   local sz = T.sizes(input)
   sz[d - 1], sz[d] = oH, oW
   self.output = out:view(torch.LongStorage(sz))
   return self.output
end

Pool.updateGradInput = P.indexBackward(NAME, 3)

function Pool:clearState()
   self.indices = nil
   return parent.clearState(self)
end

function Pool:__tostring__() return ('%s(%d, %d)'):format(torch.type(self), self.W, self.H) end

return Pool
