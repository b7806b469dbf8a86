-- nn.Linear(inputSize, outputSize[, bias = true]): y = W x + b for a vector or a batch of rows.
-- Torch7's initialisation: weight and bias uniform in +-1/sqrt(inputSize).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Linear, parent = torch.class('nn.Linear', 'nn.Module')

function Linear:__init(inputSize, outputSize, bias)
   parent.__init(self)
   if type(inputSize) ~= 'number' or type(outputSize) ~= 'number' or inputSize < 1 or outputSize < 1 then
      error(('nn.Linear: expected positive inputSize and outputSize, got %s and %s'):format(tostring(inputSize),
         tostring(outputSize)), 2)
   end
   if bias == nil then bias = true end
   self.weight = torch.Tensor(outputSize, inputSize)
   self.gradWeight = torch.Tensor(outputSize, inputSize):zero()
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize):zero()
   end
   self:reset()
end

function Linear:noBias()
   self.bias, self.gradBias = nil, nil
   return self
end

function Linear:reset(stdv)
   if stdv then stdv = stdv * math.sqrt(3) else stdv = 1 / math.sqrt(self.weight:size(2)) end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

local function check_input(self, input, what)
   T.expect_tensor(input, what, 'input', 3)
   local d = input:dim()
   if (d ~= 1 and d ~= 2) or input:size(d) ~= self.weight:size(2) then
      -- "size mismatch" as Torch7's matrix product says it (code and tests look for those words)
      error(('%s: size mismatch: expected input of size %d or Nx%d, got %s'):format(what, self.weight:size(2),
         self.weight:size(2), table.concat(T.sizes(input), 'x')), 3)
   end
   if input:type() ~= self.weight:type() then
      error(('%s: input is a %s but the module holds %s (convert with :type())'):format(what, input:type(),
         self.weight:type()), 3)
   end
end

local function ones(self, n)
   local b = self.addBuffer
   if b == nil or b:nElement() ~= n or b:type() ~= self.weight:type() then
      self.addBuffer = T.empty_tensor(self.weight:dtype(), self.weight:device()):resize(n):fill(1)
   end
   return self.addBuffer
end

function Linear:updateOutput(input)
   check_input(self, input, 'nn.Linear')
   if input:dim() == 1 then
      self.output:resize(self.weight:size(1))
      if self.bias then self.output:copy(self.bias) else self.output:zero() end
      self.output:addmv(1, self.weight, input)
   else
      self.output:resize(input:size(1), self.weight:size(1))
      self.output:addmm(0, self.output, 1, input, self.weight:t())
      if self.bias then self.output:addr(1, ones(self, input:size(1)), self.bias) end
   end
   return self.output
end

function Linear:updateGradInput(input, gradOutput)
   if self.gradInput then
      self.gradInput:resizeAs(input)
      if input:dim() == 1 then
         self.gradInput:addmv(0, 1, self.weight:t(), gradOutput)
      else
         self.gradInput:addmm(0, 1, gradOutput, self.weight)
      end
      return self.gradInput
   end
end

function Linear:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if input:dim() == 1 then
      self.gradWeight:addr(scale, gradOutput, input)
      if self.bias then self.gradBias:add(scale, gradOutput) end
   else
      self.gradWeight:addmm(scale, gradOutput:t(), input)
      if self.bias then self.gradBias:addmv(scale, gradOutput:t(), ones(self, input:size(1))) end
   end
end

function Linear:clearState()
   if self.addBuffer then self.addBuffer = nil end
   return parent.clearState(self)
end

function Linear:__tostring__()
   return torch.type(self) .. ('(%d -> %d)'):format(self.weight:size(2), self.weight:size(1))
      .. (self.bias == nil and ' without bias' or '')
end
