-- nn.SpatialReplicationPadding(pad_l, [pad_r=pad_l], [pad_t=pad_l], [pad_b=pad_l]) as in Torch7: pads
-- the last two dimensions of a 3-d or 4-d input by repeating its border. The gather/indexAdd
-- machinery is nn.SpatialReflectionPadding's; only the source of a padded position differs.
local torch = require 'moontorch'
require 'moontorch.nn'

local Pad = torch.class('nn.SpatialReplicationPadding', 'nn.SpatialReflectionPadding')

function Pad:_source(o, n, before)
   return math.min(math.max(o - before, 0), n - 1)
end

function Pad:_checkSize(n, before, after, what)
   if n < 1 then error(('%s: the input %s is empty'):format(torch.type(self), what), 4) end
end

return Pad
