-- nn.Cosine(inputSize, outputSize): y_j = w_j . x / (|w_j| |x|), the cosine similarity of the input
-- (a vector or N x inputSize batch) with each row of weight (outputSize x inputSize). As in Torch7,
-- 1e-12 is added to the norms, and reset() draws uniform in +-1/sqrt(outputSize).
-- Unlike Torch7, accGradParameters applies `scale` to batch inputs too.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Cosine, parent = torch.class('nn.Cosine', 'nn.Module')

local EPS = 1e-12

function Cosine:__init(inputSize, outputSize)
   if not (T.is_int(inputSize) and T.is_int(outputSize) and inputSize > 0 and outputSize > 0) then
      error(('nn.Cosine: expected positive inputSize and outputSize, got %s and %s'):format(tostring(inputSize),
         tostring(outputSize)), 2)
   end
   parent.__init(self)
   self.weight = torch.Tensor(outputSize, inputSize)
   self.gradWeight = torch.Tensor(outputSize, inputSize):zero()
   self:reset()
end

function Cosine:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(1)) end
   self.weight:uniform(-stdv, stdv)
   return self
end

local function buf(self, name, like)
   if not self[name] or self[name]:type() ~= like:type() then self[name] = like.new() end
   return self[name]
end

-- the input as an N x inputSize matrix
local function rows(self, input)
   T.expect_tensor(input, 'nn.Cosine', 'input', 3)
   local n = self.weight:size(2)
   if input:type() ~= self.weight:type() then
      error(('nn.Cosine: input is a %s but the module holds %s (convert with :type())'):format(input:type(),
         self.weight:type()), 3)
   end
   if input:dim() == 1 and input:size(1) == n then return input:view(1, n) end
   if input:dim() == 2 and input:size(2) == n then return input end
   error(('nn.Cosine: expected input of size %d or Nx%d, got %s'):format(n, n, table.concat(T.sizes(input), 'x')), 3)
end

function Cosine:updateOutput(input)
   local x = rows(self, input)
   local outputSize = self.weight:size(1)
   local wn = self.weight:norm(2, 2):add(EPS)  -- outputSize x 1
   local xn = x:norm(2, 2):add(EPS)            -- N x 1
   self._weightNorm, self._inputNorm = wn, xn
   if self.output:type() ~= x:type() then self.output = x.new() end
   local out = self.output:resize(x:size(1), outputSize)
   out:mm(x, self.weight:t())
   out:cdiv(wn:view(1, outputSize):expandAs(out)):cdiv(xn:expandAs(out))
   if input:dim() == 1 then self.output = out:view(outputSize) end
   return self.output
end

-- dy_j/dx_i = w_ji / (|w_j| |x|) - y_j x_i / |x|^2
function Cosine:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x = rows(self, input)
   local outputSize = self.weight:size(1)
   local go = gradOutput:contiguous():view(x:size(1), outputSize)
   local y = self.output:view(x:size(1), outputSize)
   local xn = self._inputNorm:expandAs(x)
   local g = buf(self, '_gradOutput', go):resizeAs(go):copy(go):cmul(y)
   local s = torch.sum(buf(self, '_sum', x), g, 2)                                -- sum_j go_j y_j
   if self.gradInput:type() ~= x:type() then self.gradInput = x.new() end
   local gi = self.gradInput:resizeAs(x):copy(x):cdiv(xn):cmul(s:expandAs(x))
   g:copy(go):cdiv(self._weightNorm:view(1, outputSize):expandAs(go))
   gi:addmm(-1, gi, 1, g, self.weight):cdiv(xn)
   self.gradInput = gi:view(input:size())
   return self.gradInput
end

-- dy_j/dw_ji = x_i / (|w_j| |x|) - y_j w_ji / |w_j|^2
function Cosine:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = rows(self, input)
   local outputSize = self.weight:size(1)
   local go = gradOutput:contiguous():view(x:size(1), outputSize)
   local y = self.output:view(x:size(1), outputSize)
   local wn = self._weightNorm
   local g = buf(self, '_gradOutput', go):resizeAs(go):copy(go):cmul(y)
   local s = torch.sum(buf(self, '_sum', x), g, 1):view(outputSize, 1)           -- sum_n go_nj y_nj
   local w = buf(self, '_weight', self.weight):resizeAs(self.weight):copy(self.weight)
   w:cmul(s:expandAs(w)):cdiv(wn:expandAs(w))
   local xs = buf(self, '_input', x):resizeAs(x):copy(x):cdiv(self._inputNorm:expandAs(x))
   w:addmm(-1, w, 1, go:t(), xs):cdiv(wn:expandAs(w))
   self.gradWeight:add(scale, w)
end

function Cosine:type(typename, tensorCache)
   if typename then
      self._input, self._weight, self._inputNorm, self._weightNorm, self._gradOutput, self._sum =
         nil, nil, nil, nil, nil, nil
   end
   return parent.type(self, typename, tensorCache)
end

function Cosine:clearState()
   self:_clearFields('_input', '_weight', '_gradOutput', '_sum', '_inputNorm', '_weightNorm')
   return parent.clearState(self)
end
