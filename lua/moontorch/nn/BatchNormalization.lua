-- nn.BatchNormalization(nOutput [, eps = 1e-5] [, momentum = 0.1] [, affine = true]): batch
-- normalization of N x C inputs (SpatialBatchNormalization: N x C x H x W). Training uses the
-- batch statistics and moves the running ones (running = (1-momentum) running + momentum batch,
-- unbiased variance); evaluate() uses the running statistics. The math is in C.
--
-- Ghost batches (Hoffer et al. 2017): with m.ghostBatch = g (nn.utils.ghostBatchNorm(model, g),
-- the recipes' -ghostBatch), training normalizes an input of N > g samples in ceil(N / g) slices
-- of dim 1, of nearly equal sizes, each with its own statistics, as data-parallel training with
-- per-worker batch norm does on that many workers; the running statistics move once per slice,
-- in order. With N <= g, and in evaluation, nothing changes. The fused modules
-- (nn.BatchNormReLU, nn.BatchNormAddReLU) slice the same way.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check

local BN, parent = torch.class('nn.BatchNormalization', 'nn.Module')
BN.nDim = 2

function BN:__init(nOutput, eps, momentum, affine)
   parent.__init(self)
   if type(nOutput) ~= 'number' or nOutput < 1 then
      error(torch.type(self) .. ': expected a positive number of features, got ' .. tostring(nOutput), 2)
   end
   if affine ~= nil then
      if type(affine) ~= 'boolean' then error(torch.type(self) .. ': affine must be a boolean', 2) end
      self.affine = affine
   else
      self.affine = true
   end
   self.eps = eps or 1e-5
   self.momentum = momentum or 0.1
   self.train = true
   self.running_mean = torch.zeros(nOutput)
   self.running_var = torch.ones(nOutput)
   if self.affine then
      self.weight = torch.Tensor(nOutput)
      self.bias = torch.Tensor(nOutput)
      self.gradWeight = torch.zeros(nOutput)
      self.gradBias = torch.zeros(nOutput)
      self:reset()
   end
   self.save_mean = torch.Tensor()
   self.save_std = torch.Tensor()   -- holds 1/sqrt(var + eps), as Torch7's save_std
end

function BN:reset()
   if self.weight then self.weight:fill(1) end
   if self.bias then self.bias:zero() end
   self.running_mean:zero()
   self.running_var:fill(1)
end

local function h(t) return t and t.h or nil end

-- the statistics' type for an input type: the same, or float32 (on the same device) for
-- float16/bfloat16 inputs
local HALVES = { [T.HALF] = true, [T.BFLOAT16] = true }
local STATS = { 'running_mean', 'running_var', 'save_mean', 'save_std' }
local function statsOk(input, stat)
   if input:type() == stat:type() then return true end
   return HALVES[input:dtype()] and stat:dtype() == T.FLOAT and stat:device() == input:device()
end

-- sample: a single sample (no batch dimension) is allowed too, in evaluation only (Torch7)
function BN:checkInputDim(input, sample)
   T.expect_tensor(input, torch.type(self), 'input', 3)
   local nd = self.nDim
   if sample and self.train == false and input:dim() == nd - 1 then
      input = nn.utils.addSingletonDimension(input, 1)
   end
   if input:dim() ~= nd then
      error(('%s: expected a %d-d input (%s), got size %s'):format(torch.type(self), nd,
         nd == 2 and 'batch x features' or nd == 4 and 'batch x channels x height x width'
         or 'batch x channels x time x height x width', table.concat(T.sizes(input), 'x')), 3)
   end
   if input:size(2) ~= self.running_mean:nElement() then
      error(('%s: got %d features (size %s), expected %d'):format(torch.type(self), input:size(2),
         table.concat(T.sizes(input), 'x'), self.running_mean:nElement()), 3)
   end
   if not statsOk(input, self.running_mean) then
      error(('%s: input is a %s but the module holds %s (convert with :type())'):format(torch.type(self), input:type(),
         self.running_mean:type()), 3)
   end
end

-- type(t): as nn.Module's, except that a float16/bfloat16 type keeps the statistics (running
-- and saved) in float32 on the target device, as PyTorch and cuDNN do: running averages with a
-- small momentum would otherwise lose most updates to half precision rounding. The weight and
-- bias follow t, so that getParameters flattens them with the other parameters.
function BN:type(typename, tensorCache)
   if not typename then return parent.type(self) end
   local dtype = T.parse_typename(typename)
   if not HALVES[dtype] then return parent.type(self, typename, tensorCache) end
   local kept = {}
   for _, k in ipairs(STATS) do
      kept[k], self[k] = self[k], nil
   end
   parent.type(self, typename, tensorCache)
   local ftype = typename:find('Cuda') and 'torch.CudaTensor' or 'torch.FloatTensor'
   for _, k in ipairs(STATS) do
      if kept[k] then self[k] = kept[k]:type(ftype) end
   end
   return self
end

-- the ghost slices {first, count} of an input of N samples, nil for one batch
function BN:ghostSlices(N)
   local g = self.ghostBatch
   if not (self.train and g and N > g) then return nil end
   if type(g) ~= 'number' or g < 1 or g ~= math.floor(g) then
      error(('%s: ghostBatch must be a positive integer, got %s'):format(torch.type(self), tostring(g)), 3)
   end
   local G, slices = math.ceil(N / g), {}
   for k = 1, G do
      local a, b = math.floor(N * (k - 1) / G), math.floor(N * k / G)
      slices[k] = { a + 1, b - a }
   end
   return slices
end

local function slice(t, s) return t and t:narrow(1, s[1], s[2]) or nil end

-- op(output, x, residual, save_mean, save_std) over the whole batch or each ghost slice
function BN:forwardSlices(x, residual, op)
   local slices = self:ghostSlices(x:size(1))
   if not slices then
      op(self.output, x, residual, self.save_mean, self.save_std)
      return self.output
   end
   self.output:resizeAs(x)
   self.save_mean:resize(#slices, x:size(2))
   self.save_std:resize(#slices, x:size(2))
   for k, s in ipairs(slices) do
      op(slice(self.output, s), slice(x, s), slice(residual, s), self.save_mean[k], self.save_std[k])
   end
   return self.output
end

-- op(gradInput, gradResidual, x, output, gradOutput, save_mean, save_std) likewise; the slices'
-- parameter gradients add up, as the backward of a batch adds its samples'
function BN:backwardSlices(x, gradOutput, gradInput, gradResidual, op)
   local slices = self:ghostSlices(x:size(1))
   if not slices then
      op(gradInput, gradResidual, x, self.output, gradOutput, self.save_mean, self.save_std)
      return
   end
   if self.save_mean:dim() ~= 2 or self.save_mean:size(1) ~= #slices then
      error(('%s: backward of %d ghost slices without their forward (run forward first)'):format(torch.type(self),
         #slices), 3)
   end
   if gradInput then gradInput:resizeAs(x) end
   if gradResidual then gradResidual:resizeAs(x) end
   for k, s in ipairs(slices) do
      op(slice(gradInput, s), slice(gradResidual, s), slice(x, s), slice(self.output, s), slice(gradOutput, s),
         self.save_mean[k], self.save_std[k])
   end
end

-- a single sample (evaluation) as a batch of one; nil, as is, for a batch
local function asBatch(self, t)
   if self.train == false and t:dim() == self.nDim - 1 then return nn.utils.addSingletonDimension(t, 1) end
end

-- a result computed for a batch of one, viewed back to the sample's shape
local function unbatch(r, like)
   return r:nElement() == like:nElement() and r:view(T.sizes(like)) or r
end

-- Training mode for x: a batch with one value per channel has no statistics; Torch7 then
-- normalizes with the running ones and leaves them alone, as evaluation does.
local function trains(self, x)
   return self.train and x:nElement() > x:size(2) and 1 or 0
end

function BN:updateOutput(input)
   self:checkInputDim(input, true)
   local x = asBatch(self, input)
   self:forwardSlices(x or input, nil, function(out, xx, _, sm, ss)
      check(C.mt_nn_batchnorm_forward(out.h, xx.h, h(self.weight), h(self.bias), self.running_mean.h,
         self.running_var.h, sm.h, ss.h, trains(self, xx), self.momentum, self.eps))
   end)
   if x then self.output = unbatch(self.output, input) end
   return self.output
end

local function backward(self, input, gradOutput, scale, gradInput, gradWeight, gradBias)
   self:checkInputDim(input, true)
   local x, go = asBatch(self, input), asBatch(self, gradOutput)
   self:backwardSlices(x or input, go or gradOutput, gradInput, nil, function(gi, _, xx, _, g, sm, ss)
      check(C.mt_nn_batchnorm_backward(h(gi), h(gradWeight), h(gradBias), xx.h, g.h, h(self.weight),
         self.running_mean.h, self.running_var.h, sm.h, ss.h, trains(self, xx), scale or 1, self.eps))
   end)
   if x and gradInput then self.gradInput = unbatch(gradInput, input) end
   return self.gradInput
end

function BN:backward(input, gradOutput, scale)
   return backward(self, input, gradOutput, scale, self.gradInput, self.gradWeight, self.gradBias)
end

function BN:updateGradInput(input, gradOutput)
   return backward(self, input, gradOutput, 1, self.gradInput, nil, nil)
end

function BN:accGradParameters(input, gradOutput, scale)
   if self.affine then backward(self, input, gradOutput, scale, nil, self.gradWeight, self.gradBias) end
end

function BN:clearState()
   self.save_mean:set()
   self.save_std:set()
   return parent.clearState(self)
end

function BN:__tostring__()
   local ghost = self.ghostBatch and (', ghost batches of %d'):format(self.ghostBatch) or ''
   return ('%s (%dD) (%d%s)'):format(torch.type(self), self.nDim, self.running_mean:nElement(), ghost)
end
