-- nn.SpatialReplicationPadding(pad_l, [pad_r=pad_l], [pad_t=pad_l], [pad_b=pad_l]) as in Torch7: pads
-- the last two dimensions of a 3-d or 4-d input by repeating its border. nn.SpatialReflectionPadding's
-- C passes in replication mode.
local torch = require 'moontorch'
require 'moontorch.nn'

local Pad = torch.class('nn.SpatialReplicationPadding', 'nn.SpatialReflectionPadding')

Pad._mode = 2 -- MT_PAD_REPLICATE

return Pad
