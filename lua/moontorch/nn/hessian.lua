-- hessian.lua: nn.hessian, Torch7's diagonal Hessian estimate (LeCun's "Efficient BackProp",
-- a Gauss-Newton approximation), off until nn.hessian.enable() adds these methods:
--   m:initDiagHessianParameters()                      makes diagHessianWeight/Bias buffers
--   m:updateDiagHessianInput(input, diagHessianOutput) -> m.diagHessianInput
--   m:accDiagHessianParameters(input, diagHessianOutput) adds into diagHessianWeight/Bias
-- A layer linear in its weights gets them by running its own backward on squared operands:
-- updateGradInput with the weights squared, accGradParameters on the input squared. Pointwise
-- layers square their derivative. parameters() and getParameters() return a third list/vector,
-- the diagonal Hessians. nn.Jacobian.testDiagHessian{Input,Weight,Bias} check the estimate.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local hessian = {}
nn.hessian = hessian

-- run fn with module fields swapped pairwise (a[i] <-> b[i]), swapping back afterwards even on error
local function swapped(m, a, b, fn, ...)
   for i = 1, #a do m[a[i]], m[b[i]] = m[b[i]], m[a[i]] end
   local ok, err = pcall(fn, ...)
   for i = 1, #a do m[a[i]], m[b[i]] = m[b[i]], m[a[i]] end
   if not ok then error(err, 0) end
end

-- d2F/dx2 = sum_k (d2F/dy_k2) w_kx^2: the layer's updateGradInput with w replaced by w.^2
function hessian.updateDiagHessianInput(m, input, diagHessianOutput, w, wsq)
   if #w ~= #wsq then error('nn.hessian: ' .. #w .. ' weight names but ' .. #wsq .. ' names for their squares', 2) end
   m.diagHessianInput = m.diagHessianInput or input.new()
   m.diagHessianInput:resizeAs(input):zero()
   for i = 1, #w do
      m[wsq[i]] = m[wsq[i]] or m[w[i]].new()
      torch.cmul(m[wsq[i]]:resizeAs(m[w[i]]), m[w[i]], m[w[i]])
   end
   local names, others = { 'gradInput' }, { 'diagHessianInput' }
   for i = 1, #w do names[#names + 1] = w[i]; others[#others + 1] = wsq[i] end
   swapped(m, names, others, m.updateGradInput, m, input, diagHessianOutput)
   return m.diagHessianInput
end

-- d2F/dw2 = sum (d2F/dy2) x^2: accGradParameters on input.^2, accumulating into the hessian buffers
function hessian.accDiagHessianParameters(m, input, diagHessianOutput, gw, hw)
   if #gw ~= #hw then error('nn.hessian: ' .. #gw .. ' gradient names but ' .. #hw .. ' hessian names', 2) end
   m.inputSq = m.inputSq or input.new()
   torch.cmul(m.inputSq:resizeAs(input), input, input)
   for i = 1, #gw do m[hw[i]] = m[hw[i]] or m[gw[i]].new():resizeAs(m[gw[i]]):zero() end
   local output = m.output
   m.output = output.new() -- the forward on input.^2 must not clobber the real output
   local ok, err = pcall(function()
      m:updateOutput(m.inputSq)
      swapped(m, gw, hw, m.accGradParameters, m, m.inputSq, diagHessianOutput, 1)
   end)
   m.output = output
   if not ok then error(err, 0) end
end

-- a pointwise y = f(x): d2F/dx2 = f'(x)^2 d2F/dy2
function hessian.updateDiagHessianInputPointWise(m, input, diagHessianOutput)
   local ones = diagHessianOutput.new():resizeAs(diagHessianOutput):fill(1)
   hessian.updateDiagHessianInput(m, input, ones, {}, {})
   m.diagHessianInput:cmul(m.diagHessianInput):cmul(diagHessianOutput)
   return m.diagHessianInput
end

function hessian.initDiagHessianParameters(m, gw, hw)
   m.diagHessianInput = m.diagHessianInput or m.gradInput.new()
   for i = 1, #gw do m[hw[i]] = m[hw[i]] or m[gw[i]].new():resizeAs(m[gw[i]]):zero() end
end

local GRADS, HESS = { 'gradWeight', 'gradBias' }, { 'diagHessianWeight', 'diagHessianBias' }

-- the layers linear in their weights; names: the weights squared for the input's hessian
local function linear_in_weights(cls, w, wsq)
   if not cls then return end
   function cls:updateDiagHessianInput(input, dho) return hessian.updateDiagHessianInput(self, input, dho, w, wsq) end
   function cls:accDiagHessianParameters(input, dho)
      local gw, hw = {}, {}
      for i, name in ipairs(GRADS) do
         if self[name] then gw[#gw + 1] = name; hw[#hw + 1] = HESS[i] end
      end
      hessian.accDiagHessianParameters(self, input, dho, gw, hw)
   end
   function cls:initDiagHessianParameters()
      local gw, hw = {}, {}
      for i, name in ipairs(GRADS) do
         if self[name] then gw[#gw + 1] = name; hw[#hw + 1] = HESS[i] end
      end
      hessian.initDiagHessianParameters(self, gw, hw)
   end
end

local function pointwise(cls)
   if not cls then return end
   function cls:updateDiagHessianInput(input, dho) return hessian.updateDiagHessianInputPointWise(self, input, dho) end
end

local enabled = false
function hessian.enable()
   if enabled then return end
   enabled = true
   local Module = nn.Module
   function Module:updateDiagHessianInput()
      error(torch.type(self) .. ':updateDiagHessianInput() is undefined', 2)
   end
   function Module.accDiagHessianParameters() end
   function Module.initDiagHessianParameters() end

   function nn.Container:initDiagHessianParameters()
      for _, m in ipairs(self.modules) do m:initDiagHessianParameters() end
   end

   -- backward through the chain, each module fed its predecessor's output
   function nn.Sequential:updateDiagHessianInput(input, dho)
      local n = #self.modules
      for i = n, 2, -1 do dho = self.modules[i]:updateDiagHessianInput(self.modules[i - 1].output, dho) end
      self.diagHessianInput = self.modules[1]:updateDiagHessianInput(input, dho)
      return self.diagHessianInput
   end

   function nn.Sequential:accDiagHessianParameters(input, dho)
      local n = #self.modules
      for i = n, 2, -1 do
         self.modules[i]:accDiagHessianParameters(self.modules[i - 1].output, dho)
         dho = self.modules[i].diagHessianInput
      end
      self.modules[1]:accDiagHessianParameters(input, dho)
   end

   function nn.Criterion:updateDiagHessianInput()
      error(torch.type(self) .. ':updateDiagHessianInput() is undefined', 2)
   end

   -- loss sum (x - t)^2 (over n when averaged): second derivative 2 (or 2/n) everywhere
   function nn.MSECriterion:updateDiagHessianInput(input)
      self.diagHessianInput = self.diagHessianInput or input.new()
      self.diagHessianInput:resizeAs(input):fill(self.sizeAverage and 2 / input:nElement() or 2)
      return self.diagHessianInput
   end

   if nn.WeightedMSECriterion then
      nn.WeightedMSECriterion.updateDiagHessianInput = nn.MSECriterion.updateDiagHessianInput
   end
   -- sum |x|: Torch7 takes 1 where x ~= 0 and 0 at 0
   if nn.L1Cost then
      function nn.L1Cost:updateDiagHessianInput(input)
         self.diagHessianInput = self.diagHessianInput or input.new()
         self.diagHessianInput:resizeAs(input):copy(torch.ne(input, 0))
         return self.diagHessianInput
      end
   end

   linear_in_weights(nn.Linear, { 'weight' }, { 'weightSq' })
   linear_in_weights(nn.SpatialConvolution, { 'weight' }, { 'weightSq' })
   linear_in_weights(nn.SpatialConvolutionLocal, { 'weight' }, { 'weightSq' })
   linear_in_weights(nn.SpatialFullConvolution, { 'weight' }, { 'weightSq' })
   linear_in_weights(nn.SpatialConvolutionMap, { 'weight', 'bias' }, { 'weightSq', 'biasSq' })
   linear_in_weights(nn.SpatialFullConvolutionMap, { 'weight' }, { 'weightSq' })
   -- x - tanh(x): Torch7 adds diagHessianOutput to its tanh's estimate (the sum of the two terms' own)
   if nn.TanhShrink then
      function nn.TanhShrink:updateDiagHessianInput(input, dho)
         hessian.updateDiagHessianInputPointWise(self.tanh, input, dho)
         self.diagHessianInput = self.diagHessianInput or input.new()
         torch.add(self.diagHessianInput:resizeAs(input), self.tanh.diagHessianInput, dho)
         return self.diagHessianInput
      end
   end
   pointwise(nn.Tanh)
   pointwise(nn.Square)
   pointwise(nn.Sqrt)

   function nn.Reshape:updateDiagHessianInput(input, dho)
      self.diagHessianInput = self.diagHessianInput or input.new()
      self.diagHessianInput:set(dho:contiguous()):resizeAs(input)
      return self.diagHessianInput
   end

   -- parameters() and getParameters() gain a third result: the diagonal Hessians
   local parameters = Module.parameters
   function Module:parameters()
      local w, gw = parameters(self)
      if not w then return end
      local h = {}
      if self.weight then h[#h + 1] = self.diagHessianWeight end
      if self.bias then h[#h + 1] = self.diagHessianBias end
      return w, gw, h
   end
   local cparameters = nn.Container.parameters
   function nn.Container:parameters()
      local w, gw = cparameters(self)
      local h = {}
      for _, m in ipairs(self.modules) do
         local _, _, mh = m:parameters()
         for _, t in ipairs(mh or {}) do h[#h + 1] = t end
      end
      return w, gw, h
   end
   local getParameters = Module.getParameters
   function Module:getParameters()
      local p, g = getParameters(self)
      local _, _, h = self:parameters()
      if h and h[1] then
         local flat = h[1].new()
         local n = 0
         for _, t in ipairs(h) do n = n + t:nElement() end
         flat:resize(n)
         local at = 1
         for _, t in ipairs(h) do -- each hessian becomes a view into the flat vector, like the others
            local k = t:nElement()
            local view = flat:narrow(1, at, k)
            view:copy(t:contiguous():view(k))
            t:set(view:storage(), at, t:size())
            at = at + k
         end
         return p, g, flat
      end
      return p, g
   end
end

return hessian
