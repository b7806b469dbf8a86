-- nn.Bilinear(inputSize1, inputSize2, outputSize[, bias = true]): {x1, x2} (N x inputSize1 and
-- N x inputSize2) -> y (N x outputSize), y[n][k] = x1[n]^T W[k] x2[n] + b[k].
-- weight is outputSize x inputSize1 x inputSize2; Torch7's initialisation: uniform in
-- +-1/sqrt(inputSize1). Unlike Torch7, accGradParameters applies `scale` to gradWeight too.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Bilinear, parent = torch.class('nn.Bilinear', 'nn.Module')

local function posint(x) return type(x) == 'number' and x == math.floor(x) and x > 0 end

function Bilinear:__init(inputSize1, inputSize2, outputSize, bias)
   if not (posint(inputSize1) and posint(inputSize2) and posint(outputSize)) then
      error(('nn.Bilinear: expected positive integers inputSize1, inputSize2, outputSize, got %s, %s, %s'):format(
         tostring(inputSize1), tostring(inputSize2), tostring(outputSize)), 2)
   end
   parent.__init(self)
   if bias == nil then bias = true end
   self.weight = torch.Tensor(outputSize, inputSize1, inputSize2)
   self.gradWeight = torch.Tensor(outputSize, inputSize1, inputSize2):zero()
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize):zero()
   end
   self.gradInput = { torch.Tensor(), torch.Tensor() }
   self:reset()
end

function Bilinear:reset(stdv)
   if stdv then
      if type(stdv) ~= 'number' or stdv <= 0 then error('nn.Bilinear: reset expects a positive stdv', 2) end
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.weight:size(2))
   end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

local function sz(t) return table.concat(T.sizes(t), 'x') end

local function check_input(self, input)
   if type(input) ~= 'table' or #input ~= 2 or not torch.isTensor(input[1]) or not torch.isTensor(input[2]) then
      error('nn.Bilinear: expected a table of two tensors {x1, x2}, got ' .. torch.type(input), 3)
   end
   local a, b = input[1], input[2]
   local w = self.weight
   if a:dim() ~= 2 or b:dim() ~= 2 or a:size(1) ~= b:size(1) or a:size(2) ~= w:size(2) or b:size(2) ~= w:size(3) then
      error(('nn.Bilinear: expected inputs of sizes Nx%d and Nx%d, got %s and %s'):format(w:size(2), w:size(3),
         sz(a), sz(b)), 3)
   end
   if a:type() ~= w:type() or b:type() ~= w:type() then
      error(('nn.Bilinear: inputs are %s and %s but the module holds %s (convert with :type())'):format(a:type(),
         b:type(), w:type()), 3)
   end
end

local function check_grad(self, input, gradOutput)
   check_input(self, input)
   if not torch.isTensor(gradOutput) or gradOutput:dim() ~= 2 or gradOutput:size(1) ~= input[1]:size(1)
      or gradOutput:size(2) ~= self.weight:size(1) then
      error(('nn.Bilinear: expected gradOutput of size %dx%d, got %s'):format(input[1]:size(1), self.weight:size(1),
         torch.isTensor(gradOutput) and sz(gradOutput) or torch.type(gradOutput)), 3)
   end
end

local function buffer(self, name, like)
   if not self[name] or self[name]:type() ~= like:type() then self[name] = like.new() end
   return self[name]:resizeAs(like)
end

function Bilinear:updateOutput(input)
   check_input(self, input)
   local a, b = input[1], input[2]
   local buff2 = buffer(self, 'buff2', b)
   if self.output:type() ~= a:type() then self.output = a.new() end
   self.output:resize(a:size(1), self.weight:size(1))
   for k = 1, self.weight:size(1) do
      -- (x1 W_k) .* x2, summed over the second input's features
      buff2:mm(a, self.weight[k]):cmul(b)
      torch.sum(self.output:narrow(2, k, 1), buff2, 2)
   end
   if self.bias then self.output:add(self.bias:view(1, self.bias:nElement()):expandAs(self.output)) end
   return self.output
end

function Bilinear:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   check_grad(self, input, gradOutput)
   local a, b = input[1], input[2]
   for i = 1, 2 do
      if not self.gradInput[i] or self.gradInput[i]:type() ~= a:type() then self.gradInput[i] = a.new() end
   end
   local g1 = self.gradInput[1]:resizeAs(a):zero()
   local g2 = self.gradInput[2]:resizeAs(b):zero()
   local buff1, buff2 = buffer(self, 'buff1', a), buffer(self, 'buff2', b)
   for k = 1, self.weight:size(1) do
      local go = gradOutput:narrow(2, k, 1)
      -- dy_k/dx1 = W_k x2, dy_k/dx2 = W_k^T x1, each weighted by the sample's gradOutput[k]
      g1:add(buff1:mm(b, self.weight[k]:t()):cmul(go:expandAs(a)))
      g2:add(buff2:mm(a, self.weight[k]):cmul(go:expandAs(b)))
   end
   return self.gradInput
end

function Bilinear:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   check_grad(self, input, gradOutput)
   local a, b = input[1], input[2]
   local buff1 = buffer(self, 'buff1', a)
   for k = 1, self.weight:size(1) do
      buff1:cmul(a, gradOutput:narrow(2, k, 1):expandAs(a))
      self.gradWeight[k]:addmm(scale, buff1:t(), b)
   end
   if self.bias then self.gradBias:add(scale, gradOutput:sum(1):view(self.gradBias:nElement())) end
end

function Bilinear:clearState()
   self:_clearFields('buff1', 'buff2')
   return parent.clearState(self)
end

function Bilinear:__tostring__()
   return torch.type(self) .. ('(%dx%d -> %d) %s'):format(self.weight:size(2), self.weight:size(3),
      self.weight:size(1), self.bias == nil and ' without bias' or '')
end
