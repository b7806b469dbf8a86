-- nn.Normalize(p[, eps = 1e-10]): each vector (or each row of a batch matrix) divided by its
-- p-norm, (sum |x|^p + eps)^(1/p); p = math.huge uses the max norm, max |x| + eps.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local utils = require 'moontorch.nn.utils'

local Normalize, parent = torch.class('nn.Normalize', 'nn.Module')

local function shape(t) return table.concat(T.sizes(t), 'x') end

function Normalize:__init(p, eps)
   parent.__init(self)
   if type(p) ~= 'number' or not (p > 0) then
      error('nn.Normalize: p must be a positive number (math.huge for the max norm), got ' .. tostring(p), 2)
   end
   self.p = p
   self.eps = eps or 1e-10
end

local function rows(input, what)
   T.expect_tensor(input, 'nn.Normalize', what, 4)
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error(('nn.Normalize: expected a vector or a batch matrix as %s, got size %s'):format(what, shape(input)), 4)
   end
   if input:dim() == 1 then return input:view(1, input:size(1)) end
   return input
end

function Normalize:updateOutput(input)
   local x = rows(input, 'input')
   local n = x:size(1)
   if self.p == math.huge then
      local norm, idx = torch.max(torch.abs(x), 2)
      self.norm, self._indices = norm:add(self.eps), idx
   else
      self.normp = torch.abs(x):pow(self.p):sum(2):add(self.eps)
      self.norm = torch.pow(self.normp, 1 / self.p)
   end
   local out = utils.result(self, 'output', input)
   torch.cdiv(out, x, self.norm:view(n, 1))
   return out:resizeAs(input)
end

-- d(x_i / N)/dx_j = delta_ij / N - x_i dN/dx_j / N^2, with dN/dx_j = N sign(x_j)|x_j|^(p-1) / normp
-- (normp = N^p) or, for the max norm, sign(x_k) at the maximum k only.
function Normalize:updateGradInput(input, gradOutput)
   local x = rows(input, 'input')
   local go = rows(gradOutput, 'gradOutput')
   if not go:isSameSizeAs(x) then
      error(('nn.Normalize: gradOutput has size %s but the input has size %s'):format(shape(gradOutput),
         shape(input)), 2)
   end
   if not self.norm or self.norm:size(1) ~= x:size(1) then
      error('nn.Normalize: backward needs a forward on the same input first', 2)
   end
   local cross = torch.cmul(x, go):sum(2)                  -- sum_i x_i g_i, n x 1
   local gi = utils.result(self, 'gradInput', input)
   local buf, den
   if self.p == math.huge then
      buf = T.new(x:dtype(), x:device(), T.sizes(x)):zero()
      buf:scatter(2, self._indices, torch.sign(x):gather(2, self._indices))
      torch.cmul(gi, go, self.norm:expandAs(go))
      den = torch.cmul(self.norm, self.norm)
   else
      buf = torch.abs(x):pow(self.p - 1):cmul(torch.sign(x))
      torch.cmul(gi, go, self.normp:expandAs(go))
      den = torch.cmul(self.normp, self.norm)
   end
   gi:add(-1, buf:cmul(cross:expandAs(buf)))
   gi:cdiv(den:expandAs(gi))
   return gi:resizeAs(input)
end

function Normalize:__tostring__()
   local fmt = self.p % 1 == 0 and '%s(%d)' or '%s(%f)'
   return fmt:format(torch.type(self), self.p)
end

function Normalize:clearState()
   self.norm, self.normp, self._indices = nil, nil, nil
   return parent.clearState(self)
end
