-- nn.PrintSize([prefix = 'PrintSize']): the identity, printing the size of the input on forward and
-- of gradOutput on backward (a table is printed as it is), to see the shapes flowing through a net.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local PrintSize, parent = torch.class('nn.PrintSize', 'nn.Module')

function PrintSize:__init(prefix)
   parent.__init(self)
   self.prefix = prefix or 'PrintSize'
end

local function size(x)
   if x == nil then return 'missing size' end
   if torch.isTensor(x) then return x:size() end
   return x
end

function PrintSize:updateOutput(input)
   print(self.prefix .. ':input\n', size(input))
   self.output = input
   return self.output
end

function PrintSize:updateGradInput(input, gradOutput)
   print(self.prefix .. ':gradOutput\n', size(gradOutput))
   self.gradInput = gradOutput
   return self.gradInput
end

PrintSize.clearState = nn.utils.dropBuffers -- output and gradInput are the caller's tensors
