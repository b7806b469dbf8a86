-- perf/models.lua: the parameter-owning layers of ResNet-50 and VGG-16 as lists (shapes and
-- forward FLOPs per 224x224 image), so the performance model and bench/dp_step.lua can work on
-- the real gradient lists without building the networks.
--   local m = require('moontorch.perf.models')
--   local layers = m.layers('resnet50')   -- { {name =, weight = {shape}, bias = {shape}|nil, flops =}, ... }
--   local params, flops = m.summary(layers)
-- Lists are in forward order, which is also getParameters' order of the real networks.
local models = {}

local function conv(list, name, cin, cout, k, hout, bias)
   list[#list + 1] = { name = name, weight = { cout, cin, k, k }, bias = bias and { cout } or nil,
      flops = 2 * cin * cout * k * k * hout * hout }
end
local function bn(list, name, c, h)
   -- normalise, scale and shift: a handful of operations per element
   list[#list + 1] = { name = name, weight = { c }, bias = { c }, flops = 8 * c * h * h }
end
local function linear(list, name, nin, nout)
   list[#list + 1] = { name = name, weight = { nout, nin }, bias = { nout }, flops = 2 * nin * nout }
end

-- ResNet-50 as lua/moontorch/models/resnet.lua builds it (fb.resnet.torch: stride on the 3x3, shortcut
-- B, convolutions without bias): 25,557,032 parameters
local function resnet50()
   local L = {}
   conv(L, 'conv1', 3, 64, 7, 112)
   bn(L, 'bn1', 64, 112)
   local cin, h = 64, 56
   for si, st in ipairs({ { 64, 3, 1 }, { 128, 4, 2 }, { 256, 6, 2 }, { 512, 3, 2 } }) do
      local n, count, stride = st[1], st[2], st[3]
      for b = 1, count do
         local s = b == 1 and stride or 1
         local hin, hout = h, h / s
         local p = ('layer%d.%d.'):format(si, b)
         conv(L, p .. 'conv1', cin, n, 1, hin)
         bn(L, p .. 'bn1', n, hin)
         conv(L, p .. 'conv2', n, n, 3, hout)
         bn(L, p .. 'bn2', n, hout)
         conv(L, p .. 'conv3', n, n * 4, 1, hout)
         bn(L, p .. 'bn3', n * 4, hout)
         if cin ~= n * 4 or s ~= 1 then
            conv(L, p .. 'shortcut', cin, n * 4, 1, hout)
            bn(L, p .. 'shortcut_bn', n * 4, hout)
         end
         cin, h = n * 4, hout
      end
   end
   linear(L, 'fc', 2048, 1000)
   return L
end

-- VGG-16 (configuration D, Simonyan & Zisserman 2014), convolutions with bias: 138,357,544
local function vgg16()
   local L = {}
   local cin, h, i = 3, 224, 0
   for _, v in ipairs({ 64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M' }) do
      if v == 'M' then
         h = h / 2
      else
         i = i + 1
         conv(L, 'conv' .. i, cin, v, 3, h, true)
         cin = v
      end
   end
   linear(L, 'fc6', 512 * 7 * 7, 4096)
   linear(L, 'fc7', 4096, 4096)
   linear(L, 'fc8', 4096, 1000)
   return L
end

-- name -> the list's builder, the published parameter count and the one-worker backward ms
-- bench/dp_step.lua models by default (about a V100's in fp32 at batch 64)
models.MODELS = {
   resnet50 = { layers = resnet50, params = 25557032, computeMs = 110, desc = 'ResNet-50' },
   vgg16 = { layers = vgg16, params = 138357544, computeMs = 195, desc = 'VGG-16' },
}

function models.layers(name)
   local m = models.MODELS[name]
   if not m then
      local names = {}
      for k in pairs(models.MODELS) do names[#names + 1] = k end
      table.sort(names)
      error(("perf.models: unknown model '%s' (%s)"):format(tostring(name), table.concat(names, ', ')), 2)
   end
   return m.layers()
end

function models.numel(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return n
end

-- parameters and forward FLOPs per image of a list
function models.summary(layers)
   local params, flops = 0, 0
   for _, l in ipairs(layers) do
      params = params + models.numel(l.weight) + (l.bias and models.numel(l.bias) or 0)
      flops = flops + l.flops
   end
   return params, flops
end

return models
