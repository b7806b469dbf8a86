-- nn.VolumetricReplicationPadding(pleft, [pright=pleft], [ptop=pleft], [pbottom=pleft], [pfront=pleft],
-- [pback=pleft]) as in Torch7: pads the last three dimensions (T, H, W) of a 4-d or 5-d input by
-- repeating its border. Each padded position reads the clamped input position, so the forward pass
-- is one index per dimension and the backward pass the matching indexAdds (border gradients sum).
-- A negative pad crops.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Pad, parent = torch.class('nn.VolumetricReplicationPadding', 'nn.Module')

local NAME = 'nn.VolumetricReplicationPadding'

function Pad:__init(pleft, pright, ptop, pbottom, pfront, pback)
   parent.__init(self)
   self.pleft = pleft
   self.pright = pright or pleft
   self.ptop = ptop or pleft
   self.pbottom = pbottom or pleft
   self.pfront = pfront or pleft
   self.pback = pback or pleft
   for _, f in ipairs { 'pleft', 'pright', 'ptop', 'pbottom', 'pfront', 'pback' } do
      local v = self[f]
      if type(v) ~= 'number' or v ~= math.floor(v) then
         error(('%s: %s must be an integer, got %s'):format(NAME, f, tostring(v)), 2)
      end
   end
end

-- 1-based clamped source positions for one padded dimension, on the device of like
local function sources(n, before, after, what, like)
   local o = n + before + after
   if n < 1 or o < 1 then
      error(('%s: the input %s (%d) padded by %d,%d would be empty'):format(NAME, what, n, before, after), 4)
   end
   local idx = torch.LongTensor(o)
   for i = 1, o do idx[i] = math.min(math.max(i - 1 - before, 0), n - 1) + 1 end
   if idx:device() ~= like:device() then idx = T.empty_tensor(idx:dtype(), like:device()):resize(o):copy(idx) end
   return idx
end

-- {dim, index} for T, H, W of input
function Pad:_plan(input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: input must be 4-d or 5-d, got size %s'):format(NAME, table.concat(T.sizes(input), 'x')), 3)
   end
   return {
      { d - 2, sources(input:size(d - 2), self.pfront, self.pback, 'time', input) },
      { d - 1, sources(input:size(d - 1), self.ptop, self.pbottom, 'height', input) },
      { d, sources(input:size(d), self.pleft, self.pright, 'width', input) },
   }
end

function Pad:updateOutput(input)
   local y = input
   for _, p in ipairs(self:_plan(input)) do y = y:index(p[1], p[2]) end
   self.output = y
   return self.output
end

function Pad:updateGradInput(input, gradOutput)
   local plan = self:_plan(input)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 4)
   local want = T.sizes(input)
   for _, p in ipairs(plan) do want[p[1]] = p[2]:size(1) end
   local got = T.sizes(gradOutput)
   if table.concat(got, 'x') ~= table.concat(want, 'x') then
      error(('%s: gradOutput has size %s, expected %s'):format(NAME, table.concat(got, 'x'),
         table.concat(want, 'x')), 2)
   end
   local g = gradOutput
   for i = 3, 1, -1 do
      local dim, idx = plan[i][1], plan[i][2]
      local sz = T.sizes(g)
      sz[dim] = input:size(dim)
      g = g.new():resize(torch.LongStorage(sz)):zero():indexAdd(dim, idx, g)
   end
   self.gradInput = g
   return self.gradInput
end

function Pad:__tostring__()
   return torch.type(self) .. ('(left=%d, right=%d, top=%d, bottom=%d, front=%d, back=%d)'):format(self.pleft,
      self.pright, self.ptop, self.pbottom, self.pfront, self.pback)
end

return Pad
