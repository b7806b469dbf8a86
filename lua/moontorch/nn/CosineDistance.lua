-- nn.CosineDistance: {x, y} -> the cosine similarity x.y / (|x| |y|) (vectors: output of size 1),
-- or of each row pair (b x n matrices: output of size b). As in Torch7, 1e-12 is added to the
-- squared norms so that a zero vector gives 0, not NaN.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local CosineDistance, parent = torch.class('nn.CosineDistance', 'nn.Module')

local EPS = 1e-12

function CosineDistance:__init()
   parent.__init(self)
   self.gradInput = { torch.Tensor(), torch.Tensor() }
end

function CosineDistance:updateOutput(input)
   local a, b = utils.rowPairs('nn.CosineDistance', input)
   for _, f in ipairs({ 'output', 'buffer', 'w1', 'w22', 'w32', 'w' }) do
      if not self[f] or self[f]:type() ~= a:type() then self[f] = a.new() end
   end
   local buf = self.buffer
   torch.sum(self.w1, buf:cmul(a, b), 2)                           -- x.y
   torch.sum(self.w22, buf:cmul(a, a), 2):add(EPS):pow(-1)           -- 1 / |x|^2
   torch.sum(self.w32, buf:cmul(b, b), 2):add(EPS):pow(-1)           -- 1 / |y|^2
   self.w:resizeAs(self.w22):copy(self.w22):cmul(self.w32):sqrt()   -- 1 / (|x| |y|)
   self.output:resizeAs(self.w1):copy(self.w1):cmul(self.w)
   self.output = self.output:view(a:size(1))
   return self.output
end

-- d cos / dx = (y - (x.y / |x|^2) x) / (|x| |y|), and symmetrically for y
function CosineDistance:updateGradInput(input, gradOutput)
   local a, b = utils.rowPairs('nn.CosineDistance', input)
   local go = gradOutput:contiguous():view(a:size(1), 1)
   local w1, buf = self.w1, self.buffer
   for i, pair in ipairs({ { b, a, self.w22 }, { a, b, self.w32 } }) do
      local other, this, inv = pair[1], pair[2], pair[3]
      local g = self.gradInput[i]
      if not g or g:type() ~= a:type() then g = a.new() end
      buf:resizeAs(w1):copy(w1):cmul(inv)
      g:resizeAs(this):copy(other):addcmul(-1, buf:expandAs(this), this)
      g:cmul(self.w:expandAs(this)):cmul(go:expandAs(this))
      self.gradInput[i] = g:view(input[i]:size())
   end
   return self.gradInput
end

function CosineDistance:clearState()
   self:_clearFields('buffer', 'w1', 'w22', 'w32', 'w')
   return parent.clearState(self)
end
