-- nn.Profile(module[, print_interval = 100][, name]): module itself, timing its forward and
-- backward calls; every print_interval calls of either it prints the time they took together.
-- A timer is made per call rather than kept, so the module clones and serializes as any other.
local torch = require 'moontorch'
require 'moontorch.nn'

local Profile, parent = torch.class('nn.Profile', 'nn.Decorator')

function Profile:__init(module, print_interval, name)
   parent.__init(self, module)
   print_interval = print_interval or 100
   if type(print_interval) ~= 'number' or print_interval < 1 then
      error('nn.Profile: print_interval must be a positive number, got ' .. tostring(print_interval), 3)
   end
   self.print_interval = print_interval
   self.name = name or torch.type(module)
   self.module = module
   self.numFwds, self.numBwds = 0, 0
   self.summedFwdTime, self.summedBwdTime = 0, 0
end

-- count one call of `what` ('Fwd' or 'Bwd') that took t seconds; print each print_interval calls
function Profile:_record(what, t)
   local n, sum = 'num' .. what .. 's', 'summed' .. what .. 'Time'
   self[n], self[sum] = self[n] + 1, self[sum] + t
   if self[n] % self.print_interval == 0 then
      print(('%s took %.3f seconds for %d %s passes'):format(self.name, self[sum], self.print_interval,
         what == 'Fwd' and 'forward' or 'backward'))
      self[n], self[sum] = 0, 0
   end
end

function Profile:updateOutput(input)
   local timer = torch.Timer()
   self.output = self.modules[1]:updateOutput(input)
   self:_record('Fwd', timer:time().real)
   return self.output
end

function Profile:updateGradInput(input, gradOutput)
   local timer = torch.Timer()
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   self:_record('Bwd', timer:time().real)
   return self.gradInput
end
