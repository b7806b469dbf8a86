-- nn.PairwiseDistance(p): {x, y} -> ||x - y||_p (vectors: output of size 1), or of each row pair
-- (b x n matrices: output of size b). p defaults to 2 and is stored as self.norm, as in Torch7.
local torch = require 'moontorch'
require 'moontorch.nn'
local utils = require 'moontorch.nn.utils'

local PairwiseDistance, parent = torch.class('nn.PairwiseDistance', 'nn.Module')

function PairwiseDistance:__init(p)
   parent.__init(self)
   self.gradInput = {}
   self.diff = torch.Tensor()
   self.norm = p or 2
   if type(self.norm) ~= 'number' or self.norm < 1 then
      error('nn.PairwiseDistance: p must be a number >= 1, got ' .. tostring(p), 2)
   end
end

local function rows(self, input)
   local a, b = utils.rowPairs('nn.PairwiseDistance', input)
   if self.diff:type() ~= a:type() then self.diff = a.new() end
   if self.output:type() ~= a:type() then self.output = a.new() end
   return a, b
end

function PairwiseDistance:updateOutput(input)
   local a, b = rows(self, input)
   local p = self.norm
   local d = self.diff:resizeAs(a):copy(a):add(-1, b)
   local s = d.new():resizeAs(d):copy(d):abs():pow(p)
   torch.sum(self.output, s, 2)
   self.output = self.output:view(a:size(1)):pow(1 / p)
   return self.output
end

-- d||d||_p / dx = sign(d) |d|^(p-1) / ||d||_p^(p-1), and y gets the negative. The norm is kept
-- above 1e-12 so that equal inputs give a zero gradient rather than 0/0. (Torch7 adds 1e-6 to
-- the norm instead, leaves out the |d|^(p-2) factor for 1 < p < 2 and picks a random sign at
-- d = 0 for p = 1; this follows the derivative, with sign(0) = 0.)
function PairwiseDistance:updateGradInput(input, gradOutput)
   local a, b = rows(self, input)
   local p = self.norm
   for i = 1, 2 do
      if not self.gradInput[i] or self.gradInput[i]:type() ~= a:type() then self.gradInput[i] = a.new() end
   end
   local d = self.diff:resizeAs(a):copy(a):add(-1, b)
   local g = self.gradInput[1]:resizeAs(a)
   g:sign(d)
   if p ~= 1 then g:cmul(d.new():resizeAs(d):copy(d):abs():pow(p - 1)) end
   -- per row: gradOutput / norm^(p-1)
   local scale = self.output.new():resize(a:size(1), 1):copy(self.output):cmax(1e-12):pow(-(p - 1))
   scale:cmul(gradOutput:contiguous():view(a:size(1), 1))
   g:cmul(scale:expandAs(g))
   self.gradInput[1] = g:view(input[1]:size())
   self.gradInput[2]:resizeAs(g):copy(g):mul(-1)
   self.gradInput[2] = self.gradInput[2]:view(input[2]:size())
   for i = 3, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end

function PairwiseDistance:clearState()
   self:_clearFields('diff')
   return parent.clearState(self)
end
