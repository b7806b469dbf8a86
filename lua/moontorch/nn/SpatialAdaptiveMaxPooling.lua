-- nn.SpatialAdaptiveMaxPooling(W, H) as in Torch7: the maximum over each cell of an H x W grid laid
-- on the last two dimensions of a 3-d or 4-d input, whatever its size; cell i of n covers input
-- rows floor(i*in/n) .. ceil((i+1)*in/n)-1 (cells may overlap). One C pass over all cells
-- (mt_nn_window_maxpool2d); self.indices keeps the flat 1-based position of each maximum in the
-- input, so the gradient is one indexAdd (any device).
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

-- cell i of n over a dimension of size len: 0-based rows [floor(i*len/n), ceil((i+1)*len/n))
local function cells(len, n)
   local s, e = torch.LongTensor(1, n), torch.LongTensor(1, n)
   for i = 0, n - 1 do
      s[1][i + 1] = math.floor(i * len / n)
      e[1][i + 1] = math.ceil((i + 1) * len / n)
   end
   return s, e
end

-- one C pass over all cells (mt_nn_window_maxpool2d); the bounds are cached per input size
function Pool:updateOutput(input)
   T.expect_tensor(input, NAME, 'input', 3)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then error(('%s: expected a 3-d or 4-d input, got %d-d'):format(NAME, d), 2) end
   local iH, iW = input:size(d - 1), input:size(d)
   local key = ('%dx%d'):format(iH, iW)
   local b = self._cells
   if not b or b.key ~= key or b.oH ~= self.H or b.oW ~= self.W then
      local hs, he = cells(iH, self.H)
      local ws, we = cells(iW, self.W)
      b = { key = key, oH = self.H, oW = self.W, hs, he, ws, we }
      self._cells = b
   end
   return P.window_max(self, input, b[1], b[2], b[3], b[4])
end

Pool.updateGradInput = P.indexBackward(NAME, 3)

function Pool:clearState()
   self.indices, self._cells = nil, nil
   return parent.clearState(self)
end

function Pool:__tostring__() return ('%s(%d, %d)'):format(torch.type(self), self.W, self.H) end

return Pool
