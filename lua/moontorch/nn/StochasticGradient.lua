-- nn.StochasticGradient(module, criterion): Torch7's plain SGD trainer. train(dataset) runs
-- maxIteration epochs (0: forever) over dataset[i] = {input, target}, i = 1..dataset:size(), in a
-- shuffled order (shuffleIndices), one accUpdateGradParameters step per example at
-- learningRate / (1 + iteration * learningRateDecay). hookExample(self, example) runs after each
-- example, hookIteration(self, iteration, meanError) after each epoch.
local torch = require 'moontorch'
require 'moontorch.nn'

local StochasticGradient = torch.class('nn.StochasticGradient')

function StochasticGradient:__init(module, criterion)
   if not torch.isTypeOf(module, 'nn.Module') then
      error('nn.StochasticGradient: argument 1 must be a module, got ' .. torch.type(module), 3)
   end
   if not torch.isTypeOf(criterion, 'nn.Criterion') then
      error('nn.StochasticGradient: argument 2 must be a criterion, got ' .. torch.type(criterion), 3)
   end
   self.learningRate = 0.01
   self.learningRateDecay = 0
   self.maxIteration = 25
   self.shuffleIndices = true
   self.module = module
   self.criterion = criterion
   self.verbose = true
end

function StochasticGradient:train(dataset)
   if type(dataset) ~= 'table' or type(dataset.size) ~= 'function' then
      error('nn.StochasticGradient:train: dataset must be a table with a size() method and dataset[i] = '
         .. '{input, target}', 2)
   end
   local n = dataset:size()
   local module, criterion = self.module, self.criterion
   local order = self.shuffleIndices and torch.randperm(n, 'torch.LongTensor') or nil
   local lr = self.learningRate
   local iteration = 1
   print('# StochasticGradient: training')
   while true do
      local err = 0
      for t = 1, n do
         local example = dataset[order and order[t] or t]
         local input, target = example[1], example[2]
         err = err + criterion:forward(module:forward(input), target)
         module:updateGradInput(input, criterion:updateGradInput(module.output, target))
         module:accUpdateGradParameters(input, criterion.gradInput, lr)
         if self.hookExample then self.hookExample(self, example) end
      end
      err = err / n
      if self.hookIteration then self.hookIteration(self, iteration, err) end
      if self.verbose then print('# current error = ' .. err) end
      iteration = iteration + 1
      lr = self.learningRate / (1 + iteration * self.learningRateDecay)
      if self.maxIteration > 0 and iteration > self.maxIteration then
         print('# StochasticGradient: you have reached the maximum number of iterations')
         print('# training error = ' .. err)
         break
      end
   end
end
