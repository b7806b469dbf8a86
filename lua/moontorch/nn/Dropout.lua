-- nn.Dropout([p = 0.5] [, v1] [, inplace]): in training zeroes each element with probability p
-- and scales the kept ones by 1/(1-p) (Torch7's default, v1 = false); identity in evaluate().
-- The mask comes from the torch RNG (bernoulli) and is kept in self.noise.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local Dropout, parent = torch.class('nn.Dropout', 'nn.Module')
local result = nn.utils.result

-- The forward and backward passes start alike: self[field] becomes src itself in place, else a
-- copy of src in a buffer of src's type (remade after :type() or a device move) and layout
-- (channels-last or not). The noise stays NCHW, so its values do not depend on the layout.
local function startFrom(self, field, src)
   if self.inplace then
      self[field]:set(src)
   else
      T.follow_layout(result(self, field, src):resizeAs(src), src):copy(src)
   end
end

function Dropout:__init(p, v1, inplace, stochasticInference)
   parent.__init(self)
   self.p = p or 0.5
   self.train = true
   self.inplace = inplace or false
   self.stochastic_inference = stochasticInference or false
   self.v2 = not v1
   if type(self.p) ~= 'number' or self.p >= 1 or self.p < 0 then
      error('nn.Dropout: p must be in [0, 1), got ' .. tostring(self.p), 2)
   end
   self.noise = torch.Tensor()
end

function Dropout:updateOutput(input)
   startFrom(self, 'output', input)
   if self.p > 0 and (self.train or self.stochastic_inference) then
      result(self, 'noise', input):resizeAs(input)
      if not self.fixedNoise then
         self.noise:bernoulli(1 - self.p)
         if self.v2 then self.noise:div(1 - self.p) end
      end
      self.output:cmul(self.noise)
   elseif not self.v2 then
      self.output:mul(1 - self.p)
   end
   return self.output
end

function Dropout:updateGradInput(input, gradOutput)
   startFrom(self, 'gradInput', gradOutput)
   if self.train then
      if self.p > 0 then self.gradInput:cmul(self.noise) end
   elseif not self.v2 and self.p > 0 then
      self.gradInput:mul(1 - self.p)
   end
   return self.gradInput
end

function Dropout:setp(p) self.p = p end

function Dropout:clearState()
   if self.noise then self.noise:set() end
   return parent.clearState(self)
end

function Dropout:__tostring__() return torch.type(self) .. ('(%.2f)'):format(self.p) end
