-- nn.SpatialDropout([p = 0.5, stochasticInference = false]): dropout of whole feature maps.
-- Input C x H x W or N x C x H x W; in training each map (one per sample and channel) is kept
-- with probability 1 - p, unscaled, or zeroed. In evaluate() the output is input * (1 - p), as
-- in Torch7 (no 1/(1-p) scaling while training, unlike nn.Dropout's default); with
-- stochasticInference maps are still dropped at evaluation. self.noise (N x C x 1 x 1) holds the
-- last mask. nn.VolumetricDropout is the same over C x T x H x W maps
-- (SpatialDropout.defineFeatureDropout).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local SpatialDropout = torch.class('nn.SpatialDropout', 'nn.Module')
local result = nn.utils.result

local function checkP(self, p, level)
   if type(p) ~= 'number' or p < 0 or p >= 1 then
      error(('%s: p must be in [0, 1), got %s'):format(torch.type(self), tostring(p)), level + 1)
   end
end

-- Gives `class` its passes for inputs whose last `nSpatial` dimensions form one feature map;
-- `layout` names the accepted inputs in errors.
function SpatialDropout.defineFeatureDropout(class, nSpatial, layout)
   function class:__init(p, stochasticInference)
      nn.Module.__init(self)
      self.p = p or 0.5
      checkP(self, self.p, 3)
      self.train = true
      self.stochastic_inference = stochasticInference or false
      self.noise = torch.Tensor()
   end

   -- the mask's sizes: the input's leading (sample and channel) sizes, then a 1 per map dimension
   local function maskSizes(self, input)
      local nd = input:dim()
      if nd ~= nSpatial + 1 and nd ~= nSpatial + 2 then
         error(('%s: expected a %s input, got size %s'):format(torch.type(self), layout,
            table.concat(T.sizes(input), 'x')), 3)
      end
      local sizes = T.sizes(input)
      for d = nd - nSpatial + 1, nd do sizes[d] = 1 end
      return sizes
   end

   function class:updateOutput(input)
      T.expect_tensor(input, torch.type(self), 'input', 2)
      local sizes = maskSizes(self, input)
      local out = result(self, 'output', input):resizeAs(input):copy(input)
      if self.train or self.stochastic_inference then
         local noise = result(self, 'noise', input):resize(sizes):bernoulli(1 - self.p)
         out:cmul(noise:expandAs(input)) -- one draw per feature map, spread over the map
      else
         out:mul(1 - self.p)
      end
      return self.output
   end

   function class:updateGradInput(input, gradOutput)
      T.expect_tensor(gradOutput, torch.type(self), 'gradOutput', 2)
      if not self.train then
         error(torch.type(self) .. ': backward is only defined in training mode (call :training())', 2)
      end
      if not gradOutput:isSameSizeAs(input) or self.noise:dim() ~= input:dim() then
         error(('%s: gradOutput has size %s, the input size %s (and forward must come first)'):format(
            torch.type(self), table.concat(T.sizes(gradOutput), 'x'), table.concat(T.sizes(input), 'x')), 2)
      end
      result(self, 'gradInput', gradOutput):resizeAs(gradOutput):copy(gradOutput):cmul(self.noise:expandAs(input))
      return self.gradInput
   end

   function class:setp(p)
      checkP(self, p, 2)
      self.p = p
   end

   function class:__tostring__()
      return ('%s(%f)'):format(torch.type(self), self.p)
   end

   function class:clearState()
      if self.noise then self.noise:set() end
      return nn.Module.clearState(self)
   end
end

SpatialDropout.defineFeatureDropout(SpatialDropout, 2,
   '3-d (features x height x width) or 4-d (batch x features x height x width)')
