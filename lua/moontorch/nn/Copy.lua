-- nn.Copy([inputType, outputType, forceCopy, dontCast]): copies the input into a tensor of
-- outputType (and gradOutput back into one of inputType); both default to the default tensor
-- type. When the two types are equal and forceCopy is not set, input and gradOutput pass
-- through uncopied. With dontCast, :type(t) leaves the module (and so its two types) alone.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Copy, parent = torch.class('nn.Copy', 'nn.Module')

local function tensorOf(typename, what)
   local dtype = typename and T.parse_typename(typename)
   if not dtype then error(('nn.Copy: unknown %s type %s'):format(what, tostring(typename)), 3) end
   return torch.getmetatable(typename).new()
end

function Copy:__init(intype, outtype, forceCopy, dontCast)
   intype = intype or torch.getdefaulttensortype()
   outtype = outtype or torch.getdefaulttensortype()
   self.dontCast = dontCast
   parent.__init(self)
   self.gradInput = tensorOf(intype, 'input')
   self.output = tensorOf(outtype, 'output')
   -- Torch7 replaced the two passes on the instance; a flag keeps the module serializable
   self.passThrough = (not forceCopy) and intype == outtype
end

function Copy:updateOutput(input)
   T.expect_tensor(input, 'nn.Copy', 'input', 2)
   if self.passThrough then
      self.output = input
   else
      self.output:resize(T.sizes(input)):copy(input)
   end
   return self.output
end

function Copy:updateGradInput(input, gradOutput)
   T.expect_tensor(gradOutput, 'nn.Copy', 'gradOutput', 2)
   if self.passThrough then
      self.gradInput = gradOutput
   else
      self.gradInput:resize(T.sizes(gradOutput)):copy(gradOutput)
   end
   return self.gradInput
end

function Copy:type(typename, tensorCache)
   if typename and self.dontCast then return self end
   return parent.type(self, typename, tensorCache)
end

-- passed-through output and gradInput belong to the neighbours: drop them, never empty them
function Copy:clearState()
   if self.passThrough then
      self.output, self.gradInput = self.output.new(), self.gradInput.new()
      return self
   end
   return parent.clearState(self)
end
