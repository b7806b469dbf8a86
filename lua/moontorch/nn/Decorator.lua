-- nn.Decorator(module): a container of one module that hands it every call. Subclasses (nn.NaN,
-- nn.Profile, nn.DontCast) change what happens around one of them; Decorator.decorate(class)
-- gives another class these methods, for classes that decorate but inherit from elsewhere.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local Decorator, parent = torch.class('nn.Decorator', 'nn.Container')

function Decorator:__init(module)
   parent.__init(self)
   if not torch.isTypeOf(module, 'nn.Module') then
      error(('%s: expects a module to decorate, got %s'):format(torch.type(self), torch.type(module)), 3)
   end
   self.modules[1] = module
end

function Decorator:updateOutput(input)
   self.output = self.modules[1]:updateOutput(input)
   return self.output
end

function Decorator:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   return self.gradInput
end

function Decorator:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(input, gradOutput, scale)
end

function Decorator:accUpdateGradParameters(input, gradOutput, lr)
   self.modules[1]:accUpdateGradParameters(input, gradOutput, lr)
end

function Decorator:sharedAccUpdateGradParameters(input, gradOutput, lr)
   self.modules[1]:sharedAccUpdateGradParameters(input, gradOutput, lr)
end

-- output and gradInput are the decorated module's: drop them, and let it empty its own
function Decorator:clearState()
   nn.utils.dropBuffers(self)
   self.modules[1]:clearState()
   return self
end

function Decorator:__tostring__()
   local m = self.modules[1]
   return torch.type(self) .. ' @ ' .. (m.__tostring__ and m:__tostring__() or torch.type(m))
end

function Decorator.decorate(class)
   for _, name in ipairs { 'updateOutput', 'updateGradInput', 'accGradParameters', 'accUpdateGradParameters',
      'sharedAccUpdateGradParameters', 'clearState', '__tostring__' } do
      class[name] = Decorator[name]
   end
end
