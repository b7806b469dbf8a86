-- nn.CrossEntropyCriterion([weights] [, sizeAverage = true | labelSmoothing = 0]): LogSoftMax
-- followed by ClassNLLCriterion on raw scores (C or N x C) with class targets 1..C. A boolean
-- second argument is Torch7's sizeAverage; a number is the label smoothing eps: the target
-- distribution is then (1-eps) one-hot + eps/C uniform, as PyTorch's label_smoothing.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

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
   self.lsm = nn.LogSoftMax()
   self.nll = nn.ClassNLLCriterion(weights)
   self.nll.smoothing = labelSmoothing
   self.labelSmoothing = labelSmoothing
   self.sizeAverage = sizeAverage
end

function CE:updateOutput(input, target)
   self.lsm:updateOutput(input)
   self.nll.sizeAverage = self.sizeAverage
   self.nll.smoothing = self.labelSmoothing
   self.output = self.nll:updateOutput(self.lsm.output, target)
   return self.output
end

function CE:updateGradInput(input, target)
   self.nll.sizeAverage = self.sizeAverage
   self.nll:updateGradInput(self.lsm.output, target)
   self.gradInput = self.lsm:updateGradInput(input, self.nll.gradInput)
   return self.gradInput
end

function CE:clearState()
   self.lsm:clearState()
   self.nll:clearState()
   return parent.clearState(self)
end
