-- nn.Mean([dimension = 1, nInputDims]): the mean over a dimension, i.e.
-- nn.Sum(dimension, nInputDims, true); kept for Torch7 code that names it.
local torch = require 'moontorch'
require 'moontorch.nn'

local Mean, parent = torch.class('nn.Mean', 'nn.Sum')

function Mean:__init(dimension, nInputDims)
   parent.__init(self, dimension, nInputDims, true)
end
