-- nn.View(sizes...): a view of the input with the given sizes (one may be -1, inferred).
-- An input with more elements than the sizes hold is a batch, flattened into one leading
-- dimension; setNumInputDims(n) says how many trailing input dimensions form one sample.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local View, parent = torch.class('nn.View', 'nn.Module')

function View:__init(...)
   parent.__init(self)
   local args = { ... }
   local size
   if #args == 1 and type(args[1]) == 'table' then size = args[1]
   elseif #args == 1 and torch.type(args[1]) == 'torch.LongStorage' then size = args[1]:totable()
   else size = args end
   self.size = {}
   self.numElements = 1
   local inferred = 0
   for i = 1, #size do
      local s = size[i]
      if type(s) ~= 'number' or s ~= math.floor(s) or (s < 1 and s ~= -1) then
         error('nn.View: sizes must be positive integers or -1, got ' .. tostring(s), 2)
      end
      if s == -1 then inferred = inferred + 1 else self.numElements = self.numElements * s end
      self.size[i] = s
   end
   if inferred > 1 then error('nn.View: at most one size may be -1', 2) end
   self.inferred = inferred == 1
end

function View:setNumInputDims(n)
   self.numInputDims = n
   return self
end

local function sizes_str(t) return table.concat(T.sizes(t), 'x') end

-- the target sizes for this input, Torch7's rule: the trailing numInputDims dimensions (all of
-- them when unset) hold whole samples, their elements beyond one sample are a batch (unless a
-- size is -1, which takes them), and leading dimensions outside the sample are batch too. A
-- batch becomes one leading dimension (View(6) on 5x2x6 gives 10x6), left out when it is 1
-- and nothing lies outside the sample dimensions.
function View:_target(input)
   local isz = T.sizes(input)
   local nd = #isz
   local sampleDims = math.min(self.numInputDims or nd, nd)
   local sampleElems = 1
   for i = nd - sampleDims + 1, nd do sampleElems = sampleElems * isz[i] end
   if sampleElems % self.numElements ~= 0 then
      error(('nn.View: input of size %s cannot be viewed as %s'):format(sizes_str(input),
         table.concat(self.size, 'x')), 3)
   end
   local batch = self.inferred and 1 or sampleElems / self.numElements
   for i = 1, nd - sampleDims do batch = batch * isz[i] end
   local out = {}
   if batch ~= 1 or (self.numInputDims and nd > self.numInputDims) then out[1] = batch end
   local rest = input:nElement() / (batch * self.numElements)
   for i = 1, #self.size do
      out[#out + 1] = self.size[i] == -1 and rest or self.size[i]
   end
   local total = 1
   for i = 1, #out do total = total * out[i] end
   if total ~= input:nElement() or rest ~= math.floor(rest) then
      error(('nn.View: input of size %s (%d elements) cannot be viewed as %s'):format(sizes_str(input),
         input:nElement(), table.concat(self.size, 'x')), 3)
   end
   return out
end

function View:updateOutput(input)
   T.expect_tensor(input, torch.type(self), 'input')
   local target = self:_target(input)
   return nn.utils.viewInput(self, input, target)
end

View.updateGradInput = nn.utils.viewGradOutput
View.clearState = nn.utils.dropBuffers -- output and gradInput alias the input and gradOutput

function View:__tostring__()
   return torch.type(self) .. '(' .. table.concat(self.size, ', ') .. ')'
end
