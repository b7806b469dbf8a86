-- moontorch.train: the training harness every recipe and script can use.
--   local train = require 'moontorch.train'
--   local t = train.Trainer{ model = model, criterion = criterion, optimizer = optim.sgd,
--      config = { learningRate = 0.1 }, schedule = optim.schedule.cosine(0.1, 1000),
--      train = loader, val = valLoader, nEpochs = 10, save = 'runs/x', checkpointEvery = 500 }
--   if resumePath then t:resume(resumePath) end
--   local last, best = t:fit()
-- (or the epoch loop written out: see trainer.lua). train.state: checkpoints of model +
-- optimizer state + progress; train.topk: accuracy counts. For recipes: train.flags (their
-- shared option groups), train.recipe (their shared set-up), train.precision.
local train = {}

train.meter = require 'moontorch.train.meter'
train.state = require 'moontorch.train.state'
train.Trainer = require 'moontorch.train.trainer'

train.topk = require('moontorch.train.meter').topk

return train
