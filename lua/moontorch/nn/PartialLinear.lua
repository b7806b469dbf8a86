-- nn.PartialLinear(inputSize, outputSize, [bias=true]) as in Torch7: a Linear layer that can be
-- restricted to a subset of its outputs with setPartition(indices) (resetPartition() restores
-- all of them); only those rows of the weight are used and trained, the others are kept. Built
-- as Torch7 builds it, so its files load: self.network = Sequential(ParallelTable(Identity,
-- LookupTable(outputSize, inputSize)), MM(false, true)) fed {input, partition}; the weight is the
-- LookupTable's (N(0, 1) initially) and the bias is 1 x outputSize (zero initially).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local PL, parent = torch.class('nn.PartialLinear', 'nn.Module')

local NAME = 'nn.PartialLinear'

function PL:__init(inputsize, outputsize, bias)
   parent.__init(self)
   if type(inputsize) ~= 'number' or type(outputsize) ~= 'number' or inputsize < 1 or outputsize < 1 then
      error(('%s: expected positive inputSize and outputSize, got %s and %s'):format(NAME, tostring(inputsize),
         tostring(outputsize)), 2)
   end
   if bias == nil then bias = true end
   local pt = nn.ParallelTable()
   pt:add(nn.Identity()):add(nn.LookupTable(outputsize, inputsize))
   self.network = nn.Sequential():add(pt):add(nn.MM(false, true))
   if bias then
      self.bias = torch.Tensor(1, outputsize):zero()
      self.gradBias = torch.Tensor(1, outputsize):zero()
   end
   self.inputsize, self.outputsize = inputsize, outputsize
   self.allcolumns = torch.range(1, outputsize)
   self:resetPartition()
end

function PL:setPartition(indices)
   if not torch.isTensor(indices) or indices:dim() ~= 1 or indices:nElement() == 0 then
      error(NAME .. ': setPartition expects a non-empty 1-d tensor of output indices', 2)
   end
   if indices:min() < 1 or indices:max() > self.outputsize then
      error(('%s: partition indices must lie in 1..%d'):format(NAME, self.outputsize), 2)
   end
   self.partition = indices:type(self.allcolumns:type())
   return self
end

function PL:resetPartition()
   self.partition = self.allcolumns
   return self
end

function PL:_lookup() return self.network:get(1):get(2) end

function PL:parameters()
   local lt = self:_lookup()
   if self.bias then return { lt.weight, self.bias }, { lt.gradWeight, self.gradBias } end
   return { lt.weight }, { lt.gradWeight }
end

local function check_input(self, input)
   T.expect_tensor(input, NAME, 'input', 4)
   if input:dim() ~= 2 or input:size(2) ~= self.inputsize then
      error(('%s: expected an N x %d input, got size %s'):format(NAME, self.inputsize,
         table.concat(T.sizes(input), 'x')), 4)
   end
end

local function check_grad(self, input, gradOutput)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   local p = self.partition:nElement()
   if gradOutput:dim() ~= 2 or gradOutput:size(1) ~= input:size(1) or gradOutput:size(2) ~= p then
      error(('%s: gradOutput has size %s, expected %d x %d (the partition has %d outputs)'):format(NAME,
         table.concat(T.sizes(gradOutput), 'x'), input:size(1), p, p), 4)
   end
end

function PL:updateOutput(input)
   check_input(self, input)
   -- the output is the network's (as in Torch7, which :set()s it), plus the partition's biases
   self.output = self.network:forward({ input, self.partition })
   if self.bias then
      local idx = self.partition:long()
      self.output:add(self.bias:index(2, idx):expandAs(self.output))
   end
   return self.output
end

function PL:updateGradInput(input, gradOutput)
   if self.gradInput then
      check_input(self, input)
      check_grad(self, input, gradOutput)
      self.network:updateGradInput({ input, self.partition }, gradOutput)
      self.gradInput = self.network.gradInput[1]
   end
   return self.gradInput
end

function PL:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   check_input(self, input)
   check_grad(self, input, gradOutput)
   -- the LookupTable's gradient (the partition's rows of dL/dW = gradOutput' * input), computed
   -- here so that it does not depend on updateGradInput having run first
   self:_lookup():accGradParameters(self.partition, torch.mm(gradOutput:t(), input), scale)
   if self.bias then
      local gb = gradOutput:sum(1):mul(scale)   -- 1 x partition size
      self.gradBias:indexAdd(2, self.partition:long(), gb)
   end
end

-- the gradient step straight into the weight and bias
function PL:accUpdateGradParameters(input, gradOutput, lr)
   local lt = self:_lookup()
   local gw, gb = lt.gradWeight, self.gradBias
   lt.gradWeight, self.gradBias = lt.weight, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   lt.gradWeight, self.gradBias = gw, gb
end

function PL:sharedAccUpdateGradParameters(input, gradOutput, lr)
   self:accUpdateGradParameters(input, gradOutput, lr)
end

function PL:zeroGradParameters()
   self.network:zeroGradParameters()
   if self.gradBias then self.gradBias:zero() end
end

function PL:updateParameters(lr)
   self.network:updateParameters(lr)
   if self.bias then self.bias:add(-lr, self.gradBias) end
end

function PL:training() parent.training(self); self.network:training() end
function PL:evaluate() parent.evaluate(self); self.network:evaluate() end

function PL:clearState()
   self.network:clearState()
   return parent.clearState(self)
end

function PL:__tostring__()
   return torch.type(self) .. ('(%d -> %d)'):format(self.inputsize, self.outputsize) ..
      (self.bias == nil and ' without bias' or '')
end

return PL
