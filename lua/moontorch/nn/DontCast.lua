-- nn.DontCast(module[, castin][, castout = castin][, moduleType]): a decorator whose :type() leaves
-- the decorated module as it is (a float module stays float inside a double network). With castin
-- the input (and gradInput) cross into moduleType and back; with castout the output (and
-- gradOutput). moduleType defaults to the type of the module's output or parameters.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local DontCast, parent = torch.class('nn.DontCast', 'nn.Decorator')

local function empty(typename)
   local dtype, device = T.parse_typename(typename)
   if not dtype then error("nn.DontCast: unknown tensor type '" .. tostring(typename) .. "'", 3) end
   return T.empty_tensor(dtype, device)
end

-- src's tensors (nested tables too) copied into tensors of typename, reusing dst's where they fit
local function castCopy(dst, src, typename)
   if torch.isTensor(src) then
      if not torch.isTensor(dst) or dst:type() ~= typename then dst = empty(typename) end
      dst:resize(src:size())
      if src:nElement() > 0 then dst:copy(src) end
      return dst
   elseif type(src) == 'table' then
      dst = (type(dst) == 'table' and not torch.isTensor(dst)) and dst or {}
      for k, v in pairs(src) do dst[k] = castCopy(dst[k], v, typename) end
      return dst
   end
   return src
end

-- the type of the first tensor in x (a tensor or nested table), or nil
local function tensorType(x)
   if torch.isTensor(x) then return x:type() end
   if type(x) == 'table' then
      for _, v in pairs(x) do
         local t = tensorType(v)
         if t then return t end
      end
   end
   return nil
end

function DontCast:__init(module, castin, castout, moduleType)
   parent.__init(self, module)
   self.castin = castin
   if castout == nil then castout = castin end
   self.castout = castout
   self.moduleType = moduleType
   if (self.castin or self.castout) and not self.moduleType then
      self.moduleType = tensorType(module.output) or tensorType(module:parameters())
      if not self.moduleType then
         error('nn.DontCast: cannot tell the module\'s tensor type: give it as argument 4 (moduleType)', 3)
      end
   end
end

-- the input as the module takes it
function DontCast:_moduleInput(input)
   if self.castin and tensorType(input) ~= self.moduleType then
      self._input = castCopy(self._input, input, self.moduleType)
      return self._input
   end
   return input
end

function DontCast:_moduleGradOutput(gradOutput)
   if self.castout and tensorType(gradOutput) ~= self.moduleType then
      self._gradOutput = castCopy(self._gradOutput, gradOutput, self.moduleType)
      return self._gradOutput
   end
   return gradOutput
end

-- castout: the output keeps this decorator's own tensor type (that of self.output)
function DontCast:updateOutput(input)
   local output = self.modules[1]:updateOutput(self:_moduleInput(input))
   if self.castout then
      self.output = castCopy(self.output, output, tensorType(self.output) or torch.Tensor():type())
   else
      self.output = output
   end
   return self.output
end

function DontCast:updateGradInput(input, gradOutput)
   if self.castin and tensorType(input) ~= self.moduleType then input = self._input end
   local gradInput = self.modules[1]:updateGradInput(input, self:_moduleGradOutput(gradOutput))
   if self.castin then
      self.gradInput = castCopy(self.gradInput, gradInput, tensorType(self.gradInput) or torch.Tensor():type())
   else
      self.gradInput = gradInput
   end
   return self.gradInput
end

function DontCast:accGradParameters(input, gradOutput, scale)
   if self.castin and tensorType(input) ~= self.moduleType then input = self._input end
   if self.castout and tensorType(gradOutput) ~= self.moduleType then gradOutput = self._gradOutput end
   self.modules[1]:accGradParameters(input, gradOutput, scale)
end

function DontCast:accUpdateGradParameters(input, gradOutput, lr)
   if self.castin and tensorType(input) ~= self.moduleType then input = self._input end
   if self.castout and tensorType(gradOutput) ~= self.moduleType then gradOutput = self._gradOutput end
   self.modules[1]:accUpdateGradParameters(input, gradOutput, lr)
end

-- the point of the module: only the decorator's own output (castout) and gradInput (castin)
-- change type, which sets the type its results are handed out in
function DontCast:type(typename)
   if not typename then return self._type end
   if self.castout and tensorType(self.output) ~= typename then self.output = castCopy(nil, self.output, typename) end
   if self.castin and tensorType(self.gradInput) ~= typename then
      self.gradInput = castCopy(nil, self.gradInput, typename)
   end
   self._type = typename
   return self
end
