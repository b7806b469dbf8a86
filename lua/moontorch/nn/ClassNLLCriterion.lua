-- nn.ClassNLLCriterion([weights] [, sizeAverage = true] [, ignoreIndex = -100]): negative
-- log-likelihood of log-probabilities (C or N x C) at class targets 1..C (a number, or a tensor
-- of N classes). Optional per-class weights; sizeAverage divides by the targets' total weight.
-- Samples whose target is ignoreIndex add nothing to the loss, the total weight or the gradient.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local C, check = T.clib, T.check
local ffi = require 'ffi'

local NLL, parent = torch.class('nn.ClassNLLCriterion', 'nn.Criterion')

function NLL:__init(weights, sizeAverage, ignoreIndex)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   self.ignoreIndex = ignoreIndex or -100
   if weights ~= nil then
      if not torch.isTensor(weights) or weights:dim() ~= 1 then
         error('nn.ClassNLLCriterion: weights must be a 1-d tensor', 2)
      end
      self.weights = weights
   end
   self.smoothing = 0
   self.output_tensor = torch.zeros(1)
   self.total_weight_tensor = torch.ones(1)
end

local loss_buf, tw_buf = ffi.new('double[1]'), ffi.new('double[1]')
local target_buf = {}

-- The target as a tensor on the input's device (a number becomes a 1-element tensor), and the
-- class weights' handle in the input's type: shared with nn.CrossEntropyCriterion (`name` is the
-- error prefix).
function NLL._target(input, target, name)
   if type(target) == 'number' then
      local t = target_buf[input:device()]
      if not t then
         t = T.new_tensor(T.LONG, input:device(), { 1 })
         target_buf[input:device()] = t
      end
      return t:fill(target)
   end
   if not torch.isTensor(target) then
      error(('%s: expected a number or a tensor of class indices as target, got %s')
         :format(name or 'nn.ClassNLLCriterion', torch.type(target)), 3)
   end
   return target
end
local target_tensor = NLL._target

function NLL._weights_h(self, input)
   local w = self.weights
   if w == nil then return nil end
   if w:type() ~= input:type() then
      w = w:type(input:type())
      self.weights = w
   end
   return w.h
end
local weights_h = NLL._weights_h

function NLL:__len() return self.weights and self.weights:nElement() or 0 end

-- When some targets are ignoreIndex: the rows of the others (a LongTensor, maybe empty);
-- nil when none is ignored (the C kernel then sees everything).
local function kept_rows(self, t)
   local ignored = t:eq(self.ignoreIndex or -100)
   if ignored:sum() == 0 then return nil end
   local keep = t:ne(self.ignoreIndex or -100)
   if keep:sum() == 0 then return torch.LongTensor() end
   return keep:nonzero():view(-1)
end

local function as_rows(input) return input:dim() == 1 and input:view(1, input:nElement()) or input end

function NLL:updateOutput(input, target)
   T.expect_tensor(input, 'nn.ClassNLLCriterion', 'input')
   local t = target_tensor(input, target)
   local rows = kept_rows(self, t)
   if rows then
      if rows:nElement() == 0 then
         self.output, self.total_weight = 0, 0
      else
         self:updateOutput(as_rows(input):index(1, rows), t:view(-1):index(1, rows))
      end
      self.output_tensor:fill(self.output)
      self.total_weight_tensor:fill(self.total_weight)
      return self.output
   end
   check(C.mt_nn_class_nll_forward(loss_buf, tw_buf, input.h, t.h, weights_h(self, input), 1,
      self.sizeAverage and 1 or 0, self.smoothing or 0))
   self.output = loss_buf[0]
   self.total_weight = tw_buf[0]
   self.output_tensor:fill(self.output)
   self.total_weight_tensor:fill(self.total_weight)
   return self.output
end

function NLL:updateGradInput(input, target)
   local t = target_tensor(input, target)
   local rows = kept_rows(self, t)
   if rows then
      local g = input.new(input:size()):zero()
      if rows:nElement() > 0 then
         local sub = self:updateGradInput(as_rows(input):index(1, rows), t:view(-1):index(1, rows))
         as_rows(g):indexCopy(1, rows, sub)
      end
      self.gradInput = g
      return self.gradInput
   end
   if self.gradInput:type() ~= input:type() then self.gradInput = T.empty_tensor(input:dtype(), input:device()) end
   check(C.mt_nn_class_nll_backward(self.gradInput.h, input.h, t.h, weights_h(self, input), 1,
      self.sizeAverage and 1 or 0, self.smoothing or 0, 1))
   return self.gradInput
end
