-- nn.UpSampling(scale, [mode='nearest']) and nn.UpSampling({[odepth=D,] oheight=H, owidth=W}, 'linear')
-- as in Torch7: up-sampling of the last two (4-d input) or three (5-d input) dimensions, nearest
-- neighbour or (bi/tri)linear with aligned corners. With a scale, both modes give size*scale, as
-- Torch7's code does (its documentation gives (size-1)*(scale-1)+size for linear).
-- Composed from tensor ops: both modes are separable, so the module interpolates one dimension at
-- a time (index and a weighted sum); the backward pass adds the gradients back with indexAdd.
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'

local Up, parent = torch.class('nn.UpSampling', 'nn.Module')

local NAME = 'nn.UpSampling'
local unpack = table.unpack or unpack

function Up:__init(params, mode)
   parent.__init(self)
   -- Torch7 reads any other mode as nearest
   self.mode = (mode == 'linear' or mode == 'bilinear' or mode == 'trilinear') and 'linear' or 'nearest'
   if type(params) == 'table' then
      if self.mode == 'nearest' then error(NAME .. ': nearest neighbour up-sampling requires a scale_factor', 2) end
      self.odepth, self.owidth, self.oheight = params.odepth, params.owidth, params.oheight
      if self.owidth == nil or self.oheight == nil then
         error(NAME .. ': output height and width (oheight, owidth) are required', 2)
      end
      for _, k in ipairs { 'odepth', 'oheight', 'owidth' } do
         local v = self[k]
         if v ~= nil and (type(v) ~= 'number' or v < 1 or v ~= math.floor(v)) then
            error(('%s: %s must be a positive integer, got %s'):format(NAME, k, tostring(v)), 2)
         end
      end
   else
      if type(params) ~= 'number' or params < 1 or params ~= math.floor(params) then
         error(('%s: scale_factor must be a positive integer, got %s'):format(NAME, tostring(params)), 2)
      end
      self.scale_factor = params
   end
   self.inputSize = torch.LongStorage(5):fill(0)
   self.outputSize = torch.LongStorage(5):fill(0)
end

-- the output sizes of the up-sampled dimensions (the last 2 or 3), also kept in Torch7's fields
function Up:setSize(input)
   local d = input:dim()
   for i = 1, d do self.inputSize[i], self.outputSize[i] = input:size(i), input:size(i) end
   local first = 3   -- batch x planes come first
   if self.scale_factor then
      for i = first, d do self.outputSize[i] = input:size(i) * self.scale_factor end
   else
      if d == 5 and self.odepth == nil then
         error(NAME .. ': a 5-d input needs an output depth (odepth)', 3)
      end
      if d == 5 then self.outputSize[3] = self.odepth end
      self.outputSize[d - 1], self.outputSize[d] = self.oheight, self.owidth
   end
   return first
end

-- for one dimension (n in, m out): the source indices i0, i1 (LongTensors) and the weight of i1
local function plan(self, n, m, like)
   local i0, i1 = torch.LongTensor(m), torch.LongTensor(m)
   local w = torch.DoubleTensor(m):zero()
   for j = 0, m - 1 do
      if self.mode == 'nearest' then
         local s = math.floor(j / self.scale_factor)
         i0[j + 1], i1[j + 1] = s + 1, s + 1
      else
         local src = m > 1 and j * (n - 1) / (m - 1) or 0
         local a = math.floor(src)
         local b = math.min(a + 1, n - 1)
         i0[j + 1], i1[j + 1], w[j + 1] = a + 1, b + 1, src - a
      end
   end
   -- everything that meets the input lives on its device and has its type
   local function on(t, dtype)
      return T.empty_tensor(dtype, like:device()):resize(m):copy(t)
   end
   return on(i0, i0:dtype()), on(i1, i1:dtype()), on(w, like:dtype())
end

-- w (1-d, along dimension dim) viewed to broadcast over a tensor of sizes `sizes`
local function along(w, dim, sizes)
   local shape = {}
   for i = 1, #sizes do shape[i] = i == dim and sizes[i] or 1 end
   return w:view(unpack(shape)):expand(unpack(sizes))
end

local function check_input(input)
   T.expect_tensor(input, NAME, 'input', 4)
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(('%s: expected a 4-d or 5-d input (batch x planes x [depth x] height x width), got size %s'):format(NAME,
         table.concat(T.sizes(input), 'x')), 4)
   end
end

function Up:updateOutput(input)
   check_input(input)
   local first = self:setSize(input)
   local y = input
   self._plans = {}
   for dim = first, input:dim() do
      local n, m = input:size(dim), self.outputSize[dim]
      local i0, i1, w = plan(self, n, m, input)
      self._plans[dim] = { i0, i1, w }
      local a = y:index(dim, i0)
      if self.mode == 'linear' then
         local sizes = T.sizes(a)
         local lam = along(w, dim, sizes)
         a:add(y:index(dim, i1):add(-1, a):cmul(lam))   -- a + (b - a) * lambda
      end
      y = a
   end
   self.output = y == input and input:clone() or y
   return self.output
end

function Up:updateGradInput(input, gradOutput)
   check_input(input)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local first = self:setSize(input)
   local want = {}
   for i = 1, input:dim() do want[i] = self.outputSize[i] end
   if gradOutput:dim() ~= input:dim() or table.concat(T.sizes(gradOutput), 'x') ~= table.concat(want, 'x') then
      error(('%s: gradOutput has size %s, expected %s'):format(NAME, table.concat(T.sizes(gradOutput), 'x'),
         table.concat(want, 'x')), 2)
   end
   -- undo the dimensions in reverse order: each step maps the gradient of a result to its source
   local g = gradOutput
   for dim = input:dim(), first, -1 do
      local n = input:size(dim)
      local p = self._plans and self._plans[dim]
      if not p or p[1]:size(1) ~= g:size(dim) then p = { plan(self, n, g:size(dim), input) } end
      local sizes = T.sizes(g)
      sizes[dim] = n
      local src = g.new(unpack(sizes)):zero()
      if self.mode == 'linear' then
         local lam = along(p[3], dim, T.sizes(g))
         local gb = g:clone():cmul(lam)
         src:indexAdd(dim, p[1], g:clone():add(-1, gb))
         src:indexAdd(dim, p[2], gb)
      else
         src:indexAdd(dim, p[1], g:contiguous())
      end
      g = src
   end
   self.gradInput = g
   return self.gradInput
end

function Up:clearState()
   self._plans = nil
   return parent.clearState(self)
end

function Up:__tostring__()
   if self.scale_factor then return ('%s(%dx, %s)'):format(torch.type(self), self.scale_factor, self.mode) end
   if self.odepth then
      return ('%s(%dx%dx%d, %s)'):format(torch.type(self), self.odepth, self.oheight, self.owidth, self.mode)
   end
   return ('%s(%dx%d, %s)'):format(torch.type(self), self.oheight, self.owidth, self.mode)
end

return Up
