-- fashion_mnist/opts.lua: the command line of recipes/fashion_mnist.lua, one block per group;
-- the groups both recipes have (large-batch rows, precision, distributed, compression,
-- checkpoints) come from moontorch.train.flags. torch.CmdLine checks every range and choice.
local torch = require 'moontorch'
local flags = require 'moontorch.train.flags'
local int = flags.int

local M = {}
M.NAME = 'fashion_mnist'

function M.cmdline()
   local cmd = torch.CmdLine()
   cmd.name = M.NAME
   cmd:text('fashion_mnist.lua: train a small CNN on Fashion-MNIST (moontorch\'s default recipe)')
   flags.group(cmd, 'Data')
   cmd:option('-data', '/usr/share/datasets/fashion-mnist', 'directory with the four *-idx*-ubyte(.gz) files')
   cmd:option('-batchSize', 64, 'mini-batch size', int '[1, inf)')
   cmd:option('-testBatchSize', 500, 'mini-batch size for evaluation', int '[1, inf)')
   cmd:option('-augment', true, 'random horizontal flips in training')
   cmd:option('-limitBatches', 0, 'train on at most this many batches per epoch (0: all)', int '[0, inf)')
   cmd:option('-limitTestBatches', 0, 'evaluate at most this many test batches (0: all)', int '[0, inf)')
   flags.group(cmd, 'Model')
   cmd:option('-width', 32, 'channels of the first convolution of the small CNN', int '[1, inf)')
   flags.group(cmd, 'Optimization')
   cmd:option('-nEpochs', 8, 'number of epochs', int '[1, inf)')
   cmd:option('-LR', 0.05, 'peak learning rate (0: the optimizer\'s default)', { range = '[0, inf)' })
   cmd:option('-schedule', 'cosine', 'learning-rate schedule over iterations; poly: LR * (1 - t/T)^polyPower after '
      .. 'the warm-up', { choices = { 'cosine', 'step', 'constant', 'poly' } })
   cmd:option('-warmup', 1, 'epochs of linear warm-up', { range = '[0, inf)' })
   cmd:option('-optimizer', 'sgd', 'sgd | adam | adamw | lars | lamb',
      { choices = { 'sgd', 'adam', 'adamw', 'lars', 'lamb' } })
   cmd:option('-momentum', 0.9, 'momentum (sgd, lars)', { range = '[0, 1)' })
   cmd:option('-nesterov', true, 'Nesterov momentum (sgd)')
   cmd:option('-weightDecay', 5e-4, 'weight decay', { range = '[0, inf)' })
   cmd:option('-labelSmoothing', 0, 'label smoothing of the cross-entropy', { range = '[0, 1)' })
   flags.largeBatch(cmd)
   flags.group(cmd, 'Run')
   cmd:option('-device', 'cpu', 'cpu | cuda', { choices = { 'cpu', 'cuda' } })
   cmd:option('-threads', 2, 'CPU threads (with -dist, for the ranks of a host together)', int '[1, inf)')
   cmd:option('-seed', 1, 'random seed (data order, augmentation, dropout, initialisation)', int '[0, inf)')
   cmd:option('-quiet', false, 'no progress bar')
   flags.precision(cmd)
   flags.distributed(cmd)
   flags.compression(cmd, 1)
   flags.checkpoints(cmd, 'runs/fashion_mnist')
   return cmd
end

-- the options of args (a list of strings), checked
function M.parse(args) return flags.check(M.cmdline():parse(args or {})) end

-- checks the options a table holds against their ranges and choices (for callers that build one)
function M.check(opt) return M.cmdline():check(opt) end

return M
