-- tensor_math_spec.lua: the ops of math_extra_spec, scan_spec and sampling_spec computed on
-- the GPU and on the CPU from the same fresh random inputs (contiguous, transposed, narrowed and
-- expanded layouts), compared with dtype tolerances. Pending on machines without a GPU.
local torch = require 'moontorch'
local util = require 'spec.util'
local cu = require 'spec.cuda.util'
local gpu_it, on_layouts, same = cu.gpu_it, cu.on_layouts, cu.same
local FLOATS, SHAPES = cu.FLOATS, cu.SHAPES
local INTS = { 'torch.IntTensor', 'torch.LongTensor' }

describe('CUDA extra math matches the CPU', function()
   gpu_it('acos asin atan tan sinh cosh trunc frac on every float dtype and layout', function()
      local ranges = { acos = { -0.99, 0.99 }, asin = { -0.99, 0.99 }, atan = { -4, 4 }, tan = { -1.2, 1.2 },
         sinh = { -3, 3 }, cosh = { -3, 3 }, trunc = { -5, 5 }, frac = { -5, 5 } }
      for name, r in pairs(ranges) do
         for _, ty in ipairs(FLOATS) do
            for _, shape in ipairs(SHAPES) do
               on_layouts(name, ty, shape, function(a) return torch[name](a), a:clone()[name](a:clone()) end,
                  { { r[1], r[2] } }, nil, true)
            end
         end
      end
   end)

   gpu_it('remainder and fmod with numbers and tensors, negative operands, float and integer dtypes', function()
      for _, ty in ipairs(FLOATS) do
         for _, shape in ipairs(SHAPES) do
            on_layouts('remainder/fmod', ty, shape, function(a, b)
               return torch.remainder(a, 1.75), torch.remainder(a, -0.6), torch.fmod(a, -1.75),
                  torch.cremainder(a, b), torch.cfmod(a, b), torch.cremainder(a, -b), torch.cfmod(a, -b)
            end, { { -6, 6 }, { 0.5, 2.5 } }, nil, true)
         end
      end
      for _, ty in ipairs(INTS) do
         on_layouts('int remainder/fmod', ty, { 5, 7 }, function(a, b)
            return torch.remainder(a, 7), torch.remainder(a, -7), torch.fmod(a, -7), torch.cremainder(a, b),
               torch.cfmod(a, b), torch.cremainder(a, -b), torch.cfmod(a, -b)
         end, { { -50, 50 }, { 1, 10 } })
         local z = torch.LongTensor { 1, 0 }:cuda()
         util.assert_error(function() torch.cfmod(torch.LongTensor { 3, 4 }:cuda(), z) end, 'cfmod', 'division by zero')
         util.assert_error(function() torch.cremainder(torch.LongTensor { 3, 4 }:cuda(), z) end, 'cremainder', 'zero')
      end
   end)

   gpu_it('bit ops and shifts on integer dtypes, shifts scale floats', function()
      for _, ty in ipairs { 'torch.IntTensor', 'torch.LongTensor', 'torch.ByteTensor' } do
         local lo = ty == 'torch.ByteTensor' and 0 or -100000
         on_layouts('bit ops', ty, { 5, 7 }, function(a, b)
            return torch.cbitand(a, b), torch.cbitor(a, b), torch.cbitxor(a, b), torch.bitand(a, 77),
               torch.bitor(a, 77), torch.bitxor(a, 77)
         end, { { lo, 100000 }, { lo, 100000 } })
         on_layouts('shifts', ty, { 5, 7 }, function(a, n)
            return torch.clshift(a, n), torch.crshift(a, n), torch.lshift(a, 3), torch.rshift(a, 5)
         end, { { lo, 100000 }, { 0, 70 } })
      end
      on_layouts('float shifts', 'torch.FloatTensor', { 5, 7 }, function(a)
         return torch.lshift(a, 3), torch.rshift(a, 2)
      end, { { -3, 3 } })
      util.assert_error(function() torch.bitand(torch.FloatTensor(3):fill(1):cuda(), 1) end, 'bitand',
         'integer dtypes only')
   end)

   gpu_it('cumsum and cumprod on every dtype, dim and layout', function()
      for _, ty in ipairs(cu.ALL_TYPES) do
         for _, shape in ipairs(SHAPES) do
            for dim = 1, #shape do
               local isf = ty ~= 'torch.IntTensor' and ty ~= 'torch.LongTensor' and ty ~= 'torch.ByteTensor'
                  and ty ~= 'torch.BoolTensor'
               on_layouts('cumsum', ty, shape, function(a) return torch.cumsum(a, dim) end,
                  { { isf and -1 or -20, isf and 1 or 20 } }, shape[dim], true)
               on_layouts('cumprod', ty, shape, function(a) return torch.cumprod(a, dim) end,
                  { { isf and 0.8 or -2, isf and 1.2 or 3 } }, shape[dim], true)
            end
         end
      end
   end)

   gpu_it('multinomial and logNormal: CUDA tensors give the CPU draws for the same seed', function()
      local p = torch.DoubleTensor(3, 6):uniform(0.1, 2)
      for _, repl in ipairs { true, false } do
         torch.manualSeed(11)
         local c = torch.multinomial(p, 5, repl)
         torch.manualSeed(11)
         local g = torch.multinomial(p:cuda(), 5, repl)
         assert.are.equal(cu.cuda_name('torch.LongTensor'), g:type())
         assert.are.same(util.flat(c), util.flat(g:cpu()))
      end
      torch.manualSeed(12)
      local c = torch.DoubleTensor(101):logNormal(0.2, 0.5)
      torch.manualSeed(12)
      local g = torch.DoubleTensor(101):cuda():logNormal(0.2, 0.5)
      same(c, g, 'torch.DoubleTensor', 'logNormal')
   end)
end)
