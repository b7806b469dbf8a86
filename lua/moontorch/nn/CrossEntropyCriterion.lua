-- nn.CrossEntropyCriterion([weights] [, sizeAverage = true | labelSmoothing = 0]): LogSoftMax
-- followed by ClassNLLCriterion on raw scores (C or N x C) with class targets 1..C. A boolean
-- second argument is Torch7's sizeAverage; a number is the label smoothing eps: the target
-- distribution is then (1-eps) one-hot + eps/C uniform, as PyTorch's label_smoothing. Samples
-- whose target is ignoreIndex (-100; a field, as ClassNLLCriterion's) add nothing.
-- One C op each way (mt_nn_cross_entropy_*) gives the composition's results bit for bit without
-- its N x C intermediates; the forward keeps each row's log-sum-exp for the backward.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ffi = require 'ffi'

local CE, parent = torch.class('nn.CrossEntropyCriterion', 'nn.Criterion')

function CE:__init(weights, labelSmoothing)
   parent.__init(self)
   if type(weights) == 'number' and labelSmoothing == nil then weights, labelSmoothing = nil, weights end
   local sizeAverage = true
   if type(labelSmoothing) == 'boolean' then sizeAverage, labelSmoothing = labelSmoothing, nil end
   labelSmoothing = labelSmoothing or 0
   if type(labelSmoothing) ~= 'number' or labelSmoothing < 0 or labelSmoothing > 1 then
      error('nn.CrossEntropyCriterion: label smoothing must be between 0 and 1, got ' .. tostring(labelSmoothing), 2)
   end
   if weights ~= nil and (not torch.isTensor(weights) or weights:dim() ~= 1) then
      error('nn.CrossEntropyCriterion: weights must be a 1-d tensor', 2)
   end
   self.weights = weights
   self.labelSmoothing = labelSmoothing
   self.sizeAverage = sizeAverage
   self.ignoreIndex = -100
   -- Torch7's parts, kept for code that reaches into them: nll.sizeAverage is the setting used
   -- (set directly, or through self.sizeAverage when that changes), nll.weights the class
   -- weights. The loss itself is one fused op: lsm.output is not filled.
   self.lsm = nn.LogSoftMax()
   self.nll = nn.ClassNLLCriterion(weights, sizeAverage)
   self.oldSizeAverage = sizeAverage
end

-- the sizeAverage in force, Torch7's rule: a changed self.sizeAverage is copied into nll
local function size_average(self)
   local nll = self.nll
   if not nll then return self.sizeAverage end
   if self.sizeAverage ~= self.oldSizeAverage then nll.sizeAverage = self.sizeAverage end
   self.oldSizeAverage = self.sizeAverage
   return nll.sizeAverage
end

local loss_buf, tw_buf = ffi.new('double[1]'), ffi.new('double[1]')
-- the target and weight helpers are ClassNLLCriterion's (loaded before this file)
local function target_tensor(input, target)
   return nn.ClassNLLCriterion._target(input, target, 'nn.CrossEntropyCriterion')
end
local function weights_h(self, input)
   local owner = self.nll and self.nll.weights and self.nll or self -- a Torch7 file keeps them in nll
   return nn.ClassNLLCriterion._weights_h(owner, input)
end

-- Each criterion's per-row log-sum-exp from its last forward: float64 whatever the input's type
-- (the composition's bits depend on it), so kept beside the module rather than in a field that
-- :type() would convert; scratch, not state (clone and serialization leave it out).
local lse_of = setmetatable({}, { __mode = 'k' })

local function lse_buf(self, input)
   local b = lse_of[self]
   if not b or b:device() ~= input:device() then
      b = T.empty_tensor(T.DOUBLE, input:device())
      lse_of[self] = b
   end
   return b
end

function CE:updateOutput(input, target)
   T.expect_tensor(input, 'nn.CrossEntropyCriterion', 'input')
   local t = target_tensor(input, target)
   check(C.mt_nn_cross_entropy_forward(loss_buf, tw_buf, lse_buf(self, input).h, input.h, t.h, weights_h(self, input),
      1, self.ignoreIndex or -100, size_average(self) and 1 or 0, self.labelSmoothing or 0))
   self.output = loss_buf[0]
   self.total_weight = tw_buf[0]
   return self.output
end

function CE:updateGradInput(input, target)
   T.expect_tensor(input, 'nn.CrossEntropyCriterion', 'input')
   local t = target_tensor(input, target)
   local lse = lse_of[self]
   if not lse then error('nn.CrossEntropyCriterion: backward needs a forward on the same input first', 2) end
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_cross_entropy_backward(self.gradInput.h, input.h, lse.h, t.h, weights_h(self, input), 1,
      self.ignoreIndex or -100, size_average(self) and 1 or 0, self.labelSmoothing or 0, 1))
   return self.gradInput
end

function CE:clearState()
   lse_of[self] = nil
   return parent.clearState(self)
end
