-- conv_pool_spec.lua: SpatialConvolution (groups, dilation), SpatialMaxPooling, SpatialAveragePooling,
-- global and adaptive average pooling: forward against direct float64 loops in Lua, backward against
-- central finite differences in float64, both against PyTorch fixtures (spec/fixtures/gen_conv.py),
-- plus layouts, dtypes, accumulation and error messages. Inputs are fresh random numbers.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local F64, F32 = 'torch.DoubleTensor', 'torch.FloatTensor'
local TOL32 = { atol = 2e-5, rtol = 2e-5 }

---------------------------------------------------------------------------------------------
-- references in plain Lua over flat row-major arrays

-- cfg: N C H W O kW kH dW dH padW padH dilW dilH groups
local function conv_out_size(cfg)
   local oH = math.floor((cfg.H + 2 * cfg.padH - cfg.dilH * (cfg.kH - 1) - 1) / cfg.dH) + 1
   local oW = math.floor((cfg.W + 2 * cfg.padW - cfg.dilW * (cfg.kW - 1) - 1) / cfg.dW) + 1
   return oH, oW
end

local function ref_conv(x, w, b, cfg)
   local N, C, H, W, O, g = cfg.N, cfg.C, cfg.H, cfg.W, cfg.O, cfg.groups
   local Cg, Og = C / g, O / g
   local oH, oW = conv_out_size(cfg)
   local out = {}
   for n = 0, N - 1 do
      for o = 0, O - 1 do
         local gr = math.floor(o / Og)
         for oy = 0, oH - 1 do
            for ox = 0, oW - 1 do
               local s = b and b[o + 1] or 0
               for c = 0, Cg - 1 do
                  local ci = gr * Cg + c
                  for ky = 0, cfg.kH - 1 do
                     local iy = oy * cfg.dH - cfg.padH + ky * cfg.dilH
                     if iy >= 0 and iy < H then
                        for kx = 0, cfg.kW - 1 do
                           local ix = ox * cfg.dW - cfg.padW + kx * cfg.dilW
                           if ix >= 0 and ix < W then
                              s = s + x[((n * C + ci) * H + iy) * W + ix + 1] *
                                  w[((o * Cg + c) * cfg.kH + ky) * cfg.kW + kx + 1]
                           end
                        end
                     end
                  end
               end
               out[((n * O + o) * oH + oy) * oW + ox + 1] = s
            end
         end
      end
   end
   return out, oH, oW
end

-- gradients of sum(conv(x) * gy) by the same loops as ref_conv: gradInput, gradWeight, gradBias
local function ref_conv_backward(x, w, gy, cfg)
   local N, C, H, W, O, g = cfg.N, cfg.C, cfg.H, cfg.W, cfg.O, cfg.groups
   local Cg, Og = C / g, O / g
   local oH, oW = conv_out_size(cfg)
   local gx, gw, gb = {}, {}, {}
   for i = 1, N * C * H * W do gx[i] = 0 end
   for i = 1, O * Cg * cfg.kH * cfg.kW do gw[i] = 0 end
   for o = 1, O do gb[o] = 0 end
   for n = 0, N - 1 do
      for o = 0, O - 1 do
         local gr = math.floor(o / Og)
         for oy = 0, oH - 1 do
            for ox = 0, oW - 1 do
               local d = gy[((n * O + o) * oH + oy) * oW + ox + 1]
               gb[o + 1] = gb[o + 1] + d
               for c = 0, Cg - 1 do
                  local ci = gr * Cg + c
                  for ky = 0, cfg.kH - 1 do
                     local iy = oy * cfg.dH - cfg.padH + ky * cfg.dilH
                     if iy >= 0 and iy < H then
                        for kx = 0, cfg.kW - 1 do
                           local ix = ox * cfg.dW - cfg.padW + kx * cfg.dilW
                           if ix >= 0 and ix < W then
                              local xi = ((n * C + ci) * H + iy) * W + ix + 1
                              local wi = ((o * Cg + c) * cfg.kH + ky) * cfg.kW + kx + 1
                              gx[xi] = gx[xi] + d * w[wi]
                              gw[wi] = gw[wi] + d * x[xi]
                           end
                        end
                     end
                  end
               end
            end
         end
      end
   end
   return gx, gw, gb
end

local function pool_out(n, k, s, p, ceil)
   local span = n + 2 * p - k
   local o = (ceil and math.ceil(span / s) or math.floor(span / s)) + 1
   if ceil and (o - 1) * s >= n + p then o = o - 1 end
   return o
end

-- kind 'max' or 'avg'; planes = N*C
local function ref_pool(kind, x, planes, H, W, p)
   local oH, oW = pool_out(H, p.kH, p.dH, p.padH, p.ceil), pool_out(W, p.kW, p.dW, p.padW, p.ceil)
   local out = {}
   for pl = 0, planes - 1 do
      for oy = 0, oH - 1 do
         for ox = 0, oW - 1 do
            local y0, x0 = oy * p.dH - p.padH, ox * p.dW - p.padW
            local y1, x1 = math.min(y0 + p.kH, H + p.padH), math.min(x0 + p.kW, W + p.padW)
            local padded = (y1 - y0) * (x1 - x0)
            y0, x0, y1, x1 = math.max(y0, 0), math.max(x0, 0), math.min(y1, H), math.min(x1, W)
            local v = kind == 'max' and -math.huge or 0
            for iy = y0, y1 - 1 do
               for ix = x0, x1 - 1 do
                  local e = x[(pl * H + iy) * W + ix + 1]
                  if kind == 'max' then v = math.max(v, e) else v = v + e end
               end
            end
            if kind == 'avg' then v = v / (p.cip == false and (y1 - y0) * (x1 - x0) or padded) end
            out[(pl * oH + oy) * oW + ox + 1] = v
         end
      end
   end
   return out, oH, oW
end

---------------------------------------------------------------------------------------------
-- finite differences: loss = sum(forward() * gy); d loss / d param[i] by central differences

local function loss(out, gy)
   local o = out:contiguous()
   local d, s = o:data(), 0
   for i = 1, #gy do s = s + d[i - 1] * gy[i] end
   return s
end

local function numeric_grad(forward, param, gy, eps)
   eps = eps or 1e-6
   assert(param:isContiguous() and param:type() == F64)
   local d, g = param:data(), {}
   for i = 0, param:nElement() - 1 do
      local v = d[i]
      d[i] = v + eps
      local lp = loss(forward(), gy)
      d[i] = v - eps
      local lm = loss(forward(), gy)
      d[i] = v
      g[i + 1] = (lp - lm) / (2 * eps)
   end
   return g
end

local FD_TOL = { atol = 1e-6, rtol = 1e-5 }

local function conv_module(cfg, cls)
   local m
   if cls == 'dilated' then
      m = nn.SpatialDilatedConvolution(cfg.C, cfg.O, cfg.kW, cfg.kH, cfg.dW, cfg.dH, cfg.padW, cfg.padH, cfg.dilW,
         cfg.dilH)
   else
      m = nn.SpatialConvolution(cfg.C, cfg.O, cfg.kW, cfg.kH, cfg.dW, cfg.dH, cfg.padW, cfg.padH, cfg.groups)
      m.dilationW, m.dilationH = cfg.dilW, cfg.dilH
   end
   if cfg.nobias then m:noBias() end
   return m:double()
end

local function cfgs()
   local function c(t)
      t.dilW, t.dilH, t.groups = t.dilW or 1, t.dilH or 1, t.groups or 1
      return t
   end
   return {
      c { N = 2, C = 3, H = 7, W = 6, O = 4, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 1 },
      c { N = 1, C = 2, H = 9, W = 8, O = 3, kW = 3, kH = 2, dW = 2, dH = 2, padW = 1, padH = 0 },
      c { N = 3, C = 4, H = 6, W = 7, O = 6, kW = 3, kH = 3, dW = 1, dH = 2, padW = 0, padH = 1, groups = 2 },
      c { N = 2, C = 3, H = 9, W = 9, O = 2, kW = 3, kH = 3, dW = 1, dH = 1, padW = 2, padH = 2, dilW = 2, dilH = 2,
          nobias = true },
      c { N = 2, C = 5, H = 5, W = 4, O = 3, kW = 1, kH = 1, dW = 1, dH = 1, padW = 0, padH = 0 },
      c { N = 3, C = 4, H = 5, W = 3, O = 2, kW = 1, kH = 1, dW = 2, dH = 1, padW = 0, padH = 1, groups = 2 },
      c { N = 1, C = 4, H = 8, W = 5, O = 4, kW = 5, kH = 3, dW = 2, dH = 1, padW = 2, padH = 1, dilW = 1, dilH = 2,
          groups = 4 },
      c { N = 5, C = 3, H = 4, W = 5, O = 5, kW = 2, kH = 4, dW = 3, dH = 1, padW = 0, padH = 2 },
   }
end

local function cfg_str(c)
   return ('N%d C%d %dx%d O%d k%dx%d s%d,%d p%d,%d d%d,%d g%d%s'):format(c.N, c.C, c.H, c.W, c.O, c.kW, c.kH, c.dW,
      c.dH, c.padW, c.padH, c.dilW, c.dilH, c.groups, c.nobias and ' nobias' or '')
end

-- an input in one of several layouts with its flat row-major values
local function rand_input(shape, typename, layout)
   if layout == 'transposed' then
      local s = { shape[1], shape[2], shape[4], shape[3] }
      local t = util.rand_tensor(s, typename)
      t = t:transpose(3, 4)
      return t, util.flat(t)
   elseif layout == 'narrowed' then
      local s = { shape[1], shape[2] + 2, shape[3], shape[4] + 1 }
      local t = util.rand_tensor(s, typename)
      t = t:narrow(2, 2, shape[2]):narrow(4, 1, shape[4])
      return t, util.flat(t)
   end
   return util.rand_tensor(shape, typename)
end

---------------------------------------------------------------------------------------------
-- fixtures

local function read_fixture(name)
   local f = assert(io.open('spec/fixtures/' .. name, 'r'))
   local cases = {}
   local cur
   while true do
      local line = f:read('*l')
      if not line then break end
      if line:sub(1, 5) == 'case ' then
         cur = { params = {}, tensors = {} }
         for k, v in line:gmatch('(%w+)=(%S+)') do cur.params[k] = tonumber(v) or v end
         cases[#cases + 1] = cur
      elseif line:sub(1, 7) == 'tensor ' then
         local words = {}
         for w in line:gmatch('%S+') do words[#words + 1] = w end
         local sizes = {}
         for i = 4, 3 + tonumber(words[3]) do sizes[#sizes + 1] = tonumber(words[i]) end
         local vals = {}
         for v in f:read('*l'):gmatch('%S+') do vals[#vals + 1] = tonumber(v) end
         cur.tensors[words[2]] = { sizes = sizes, vals = vals }
      end
   end
   f:close()
   assert(#cases > 0, 'empty fixture ' .. name)
   return cases
end

local function fixture_tensor(ft, typename)
   local d = T.parse_typename(typename)
   return T.from_flat(ft.vals, ft.sizes, d, T.CPU_DEVICE)
end

---------------------------------------------------------------------------------------------
describe('nn.SpatialConvolution', function()
   it('forward matches direct loops (float64, float32; contiguous, transposed, narrowed inputs)', function()
      for _, cfg in ipairs(cfgs()) do
         for _, ty in ipairs { F64, F32 } do
            for _, layout in ipairs { 'contiguous', 'transposed', 'narrowed' } do
               local m = conv_module(cfg):type(ty)
               local x, xf = rand_input({ cfg.N, cfg.C, cfg.H, cfg.W }, ty, layout)
               local y = m:forward(x)
               local ref, oH, oW = ref_conv(xf, util.flat(m.weight), m.bias and util.flat(m.bias), cfg)
               assert.are.same({ cfg.N, cfg.O, oH, oW }, T.sizes(y))
               util.assert_close(y, ref, ty == F64 and util.tol[F64] or TOL32,
                  cfg_str(cfg) .. ' ' .. ty .. ' ' .. layout)
            end
         end
      end
   end)

   it('gives the same results on one thread and on several (batch-parallel path, large enough to use it)', function()
      local n0 = torch.getnumthreads()
      local big = {
         { N = 8, C = 8, H = 17, W = 15, O = 16, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 1, dilW = 1, dilH = 1,
           groups = 2 },
         { N = 8, C = 32, H = 16, W = 16, O = 32, kW = 1, kH = 1, dW = 1, dH = 1, padW = 0, padH = 0, dilW = 1,
           dilH = 1, groups = 1 },
      }
      for _, cfg in ipairs(big) do
         local m = conv_module(cfg)
         local x, xf = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W })
         local gy = util.rand_tensor({ cfg.N, cfg.O, conv_out_size(cfg) })
         local res = {}
         for _, nt in ipairs { 1, 2 } do
            torch.setnumthreads(nt)
            m:zeroGradParameters()
            local y = m:forward(x):clone()
            local gi = m:backward(x, gy):clone()
            res[nt] = { y, gi, m.gradWeight:clone(), m.gradBias:clone() }
         end
         torch.setnumthreads(n0)
         util.assert_close(res[2][1], (ref_conv(xf, util.flat(m.weight), util.flat(m.bias), cfg)), util.tol[F64],
            cfg_str(cfg) .. ' output')
         for i = 1, 4 do
            util.assert_close(res[2][i], res[1][i], { atol = 1e-11, rtol = 1e-11 }, cfg_str(cfg) .. ' result ' .. i)
         end
      end
   end)

   it('matches direct loops on the paths for small images, "same" stride-1 runs, and 1 to 3 threads', function()
      -- conv.c's plan takes several images per GEMM when an image has few output pixels (4x4,
      -- 6x7 ...), with runs of the batch per thread and gradWeight partials summed at the end;
      -- stride-1 convolutions whose output is as wide as the input copy one shifted run per
      -- kernel tap; gradInput of stride-1 ones with many input planes is a forward convolution
      -- of gradOutput with the flipped kernel; 3x3 ones with many planes go through Winograd
      -- transforms. Odd batch sizes leave the threads uneven runs; the first two shapes are
      -- large enough to use threads at all.
      local n0 = torch.getnumthreads()
      local function c(t)
         t.dilW, t.dilH, t.groups = t.dilW or 1, t.dilH or 1, t.groups or 1
         return t
      end
      local shapes = {
         c { N = 7, C = 32, H = 4, W = 4, O = 32, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 1 },
         c { N = 6, C = 32, H = 7, W = 6, O = 32, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 1, groups = 2 },
         c { N = 5, C = 6, H = 9, W = 18, O = 4, kW = 3, kH = 3, dW = 1, dH = 1, padW = 2, padH = 2, dilW = 2,
             dilH = 2 },
         c { N = 4, C = 3, H = 2, W = 3, O = 5, kW = 5, kH = 5, dW = 1, dH = 1, padW = 2, padH = 2 },
         c { N = 5, C = 4, H = 5, W = 7, O = 6, kW = 3, kH = 1, dW = 1, dH = 1, padW = 1, padH = 0, groups = 2 },
         -- a dilated kernel row that lies below the image for every output row (fuzz_conv found
         -- the run copy clearing past its column row there)
         c { N = 3, C = 2, H = 6, W = 5, O = 3, kW = 3, kH = 4, dW = 1, dH = 1, padW = 1, padH = 2, dilH = 3 },
         c { N = 5, C = 6, H = 7, W = 9, O = 4, kW = 3, kH = 3, dW = 2, dH = 2, padW = 1, padH = 0, dilH = 2 },
         c { N = 9, C = 6, H = 3, W = 5, O = 8, kW = 1, kH = 1, dW = 1, dH = 1, padW = 0, padH = 0 },
         c { N = 3, C = 4, H = 6, W = 5, O = 4, kW = 2, kH = 3, dW = 1, dH = 3, padW = 1, padH = 1, nobias = true },
         -- many input planes, few output planes, stride 1: gradInput as a flipped forward
         c { N = 3, C = 64, H = 5, W = 6, O = 16, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 0, dilH = 2 },
         c { N = 2, C = 128, H = 4, W = 5, O = 8, kW = 2, kH = 3, dW = 1, dH = 1, padW = 1, padH = 2, groups = 2 },
         -- 3x3, stride 1, 32+ planes, 256+ tiles of 2x2 outputs: Winograd F(2x2, 3x3), forward and
         -- (flipped) gradInput; odd output sizes leave half tiles at the edges
         c { N = 5, C = 32, H = 15, W = 13, O = 32, kW = 3, kH = 3, dW = 1, dH = 1, padW = 1, padH = 1 },
         c { N = 9, C = 64, H = 12, W = 9, O = 64, kW = 3, kH = 3, dW = 1, dH = 1, padW = 2, padH = 0, groups = 2,
             nobias = true },
      }
      for _, cfg in ipairs(shapes) do
         local oH, oW = conv_out_size(cfg)
         for _, ty in ipairs { F64, F32 } do
            local tol = ty == F64 and { atol = 1e-10, rtol = 1e-10 } or { atol = 1e-4, rtol = 1e-4 }
            local m = conv_module(cfg):type(ty)
            local x, xf = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W }, ty)
            local gy, gyf = util.rand_tensor({ cfg.N, cfg.O, oH, oW }, ty)
            local wf = util.flat(m.weight)
            local y_ref = ref_conv(xf, wf, m.bias and util.flat(m.bias), cfg)
            local gx_ref, gw_ref, gb_ref = ref_conv_backward(xf, wf, gyf, cfg)
            -- gradients accumulate into what is there: start from random values, scale 0.5
            local gw0, gw0f = util.rand_tensor(T.sizes(m.gradWeight), ty)
            local gb0, gb0f = util.rand_tensor({ cfg.O }, ty)
            for i = 1, #gw_ref do gw_ref[i] = gw0f[i] + 0.5 * gw_ref[i] end
            for i = 1, #gb_ref do gb_ref[i] = gb0f[i] + 0.5 * gb_ref[i] end
            for _, nt in ipairs { 1, 2, 3 } do
               torch.setnumthreads(nt)
               local what = ('%s %s, %d threads'):format(cfg_str(cfg), ty, nt)
               m.gradWeight:copy(gw0)
               if m.bias then m.gradBias:copy(gb0) end
               util.assert_close(m:forward(x), y_ref, tol, what .. ' output')
               util.assert_close(m:backward(x, gy, 0.5), gx_ref, tol, what .. ' gradInput')
               util.assert_close(m.gradWeight, gw_ref, tol, what .. ' gradWeight')
               if m.bias then util.assert_close(m.gradBias, gb_ref, tol, what .. ' gradBias') end
            end
         end
      end
      torch.setnumthreads(n0)
   end)

   it('backward matches finite differences in float64 (input, weight, bias)', function()
      for _, cfg in ipairs(cfgs()) do
         local m = conv_module(cfg)
         local x = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W })
         local oH, oW = conv_out_size(cfg)
         local gy, gyf = util.rand_tensor({ cfg.N, cfg.O, oH, oW })
         m:zeroGradParameters()
         m:forward(x)
         local gi = m:backward(x, gy):clone()
         local fwd = function() return m:forward(x) end
         local what = cfg_str(cfg)
         util.assert_close(gi, numeric_grad(fwd, x, gyf), FD_TOL, what .. ' gradInput')
         util.assert_close(m.gradWeight, numeric_grad(fwd, m.weight, gyf), FD_TOL, what .. ' gradWeight')
         if m.bias then util.assert_close(m.gradBias, numeric_grad(fwd, m.bias, gyf), FD_TOL, what .. ' gradBias') end
      end
   end)

   it('computes float16 and bfloat16 through float32 (forward, gradInput, gradWeight, gradBias)', function()
      for _, ty in ipairs { 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local tol = ty == 'torch.HalfTensor' and { atol = 1e-2, rtol = 1e-2 } or { atol = 4e-2, rtol = 2e-2 }
         for _, cfg in ipairs { cfgs()[1], cfgs()[3], cfgs()[5] } do
            local m = conv_module(cfg):type(ty)
            local m64 = conv_module(cfg)
            m64.weight:copy(m.weight)
            m64.bias:copy(m.bias)
            local x = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W }, ty)
            local oH, oW = conv_out_size(cfg)
            local gy = util.rand_tensor({ cfg.N, cfg.O, oH, oW }, ty)
            m:zeroGradParameters()
            m64:zeroGradParameters()
            local y = m:forward(x)
            assert.are.equal(ty, y:type())
            local x64, gy64 = x:double(), gy:double()
            util.assert_close(y, m64:forward(x64), tol, ty .. ' output')
            util.assert_close(m:backward(x, gy), m64:backward(x64, gy64), tol, ty .. ' gradInput')
            util.assert_close(m.gradWeight, m64.gradWeight, { atol = tol.atol * 4, rtol = tol.rtol },
               ty .. ' gradWeight')
            util.assert_close(m.gradBias, m64.gradBias, { atol = tol.atol * 4, rtol = tol.rtol }, ty .. ' gradBias')
         end
      end
   end)

   it('SpatialDilatedConvolution takes dilation in the constructor', function()
      local cfg = cfgs()[4]
      cfg.nobias = nil
      local m = conv_module(cfg, 'dilated')
      assert.are.equal(2, m.dilationW)
      local x, xf = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W })
      local y = m:forward(x)
      util.assert_close(y, (ref_conv(xf, util.flat(m.weight), util.flat(m.bias), cfg)), util.tol[F64], 'dilated')
      assert.are.equal('nn.SpatialDilatedConvolution(3 -> 2, 3x3, 1,1, 2,2, 2,2)', tostring(m))
   end)

   it('accGradParameters accumulates scale * gradient; backward accumulates too', function()
      local cfg = cfgs()[3]
      local m = conv_module(cfg)
      local x = util.rand_tensor({ cfg.N, cfg.C, cfg.H, cfg.W })
      local gy = util.rand_tensor({ cfg.N, cfg.O, conv_out_size(cfg) })
      m:zeroGradParameters()
      m:forward(x)
      m:accGradParameters(x, gy, 1)
      local gw, gb = util.flat(m.gradWeight), util.flat(m.gradBias)
      m:accGradParameters(x, gy, 0.5)
      m:backward(x, gy, 2)
      for i = 1, #gw do gw[i] = gw[i] * 3.5 end
      for i = 1, #gb do gb[i] = gb[i] * 3.5 end
      util.assert_close(m.gradWeight, gw, FD_TOL, 'gradWeight')
      util.assert_close(m.gradBias, gb, FD_TOL, 'gradBias')
   end)

   it('accepts a 3-d input as a batch of one and non-contiguous gradOutput', function()
      local cfg = cfgs()[2]
      local m = conv_module(cfg)
      local x, xf = util.rand_tensor({ cfg.C, cfg.H, cfg.W })
      local y = m:forward(x)
      local oH, oW = conv_out_size(cfg)
      assert.are.same({ cfg.O, oH, oW }, T.sizes(y))
      cfg.N = 1
      util.assert_close(y, (ref_conv(xf, util.flat(m.weight), util.flat(m.bias), cfg)), util.tol[F64], '3-d')
      local gyt = util.rand_tensor({ cfg.O, oW, oH }):transpose(2, 3)
      local gi = m:updateGradInput(x, gyt):clone()
      local gi2 = m:updateGradInput(x:view(1, cfg.C, cfg.H, cfg.W), gyt:contiguous():view(1, cfg.O, oH, oW))
      assert.are.same({ cfg.C, cfg.H, cfg.W }, T.sizes(gi))
      util.assert_close(gi, util.flat(gi2), util.tol[F64], 'gradInput')
   end)

   it('matches PyTorch (fixtures) in float64 and float32', function()
      for i, case in ipairs(read_fixture('conv_conv.txt')) do
         local p, ts = case.params, case.tensors
         for _, ty in ipairs { F64, F32 } do
            local tol = ty == F64 and { atol = 1e-10, rtol = 1e-10 } or { atol = 1e-4, rtol = 1e-4 }
            local w = fixture_tensor(ts.weight, ty)
            local m = nn.SpatialConvolution(w:size(2) * p.groups, w:size(1), p.kW, p.kH, p.dW, p.dH, p.padW, p.padH,
               p.groups):type(ty)
            m.dilationW, m.dilationH = p.dilW, p.dilH
            m.weight:copy(w)
            if p.bias == 1 then m.bias:copy(fixture_tensor(ts.bias, ty)) else m:noBias() end
            m:zeroGradParameters()
            local x = fixture_tensor(ts.input, ty)
            local what = ('case %d %s'):format(i, ty)
            util.assert_close(m:forward(x), ts.output.vals, tol, what .. ' output')
            util.assert_close(m:backward(x, fixture_tensor(ts.gradOutput, ty)), ts.gradInput.vals, tol,
               what .. ' gradInput')
            util.assert_close(m.gradWeight, ts.gradWeight.vals, tol, what .. ' gradWeight')
            if p.bias == 1 then util.assert_close(m.gradBias, ts.gradBias.vals, tol, what .. ' gradBias') end
         end
      end
   end)

   it("initialises like Torch7 and prints like Torch7", function()
      local m = nn.SpatialConvolution(3, 16, 3, 3, 1, 1, 1, 1)
      local bound = 1 / math.sqrt(3 * 3 * 3)
      local w = util.flat(m.weight)
      local mx = 0
      for _, v in ipairs(w) do mx = math.max(mx, math.abs(v)) end
      assert.is_true(mx <= bound and mx > 0.5 * bound, 'weights in +-1/sqrt(fan-in)')
      assert.are.same({ 16, 3, 3, 3 }, T.sizes(m.weight))
      assert.are.equal('nn.SpatialConvolution(3 -> 16, 3x3, 1,1, 1,1)', tostring(m))
      assert.are.equal('nn.SpatialConvolution(3 -> 16, 5x5)', tostring(nn.SpatialConvolution(3, 16, 5, 5)))
      assert.are.equal('nn.SpatialConvolution(4 -> 8, 3x3, 2,2) without bias',
         tostring(nn.SpatialConvolution(4, 8, 3, 3, 2, 2):noBias()))
      assert.are.equal('nn.SpatialConvolution(4 -> 8, 3x3, 1,1, 1,1, groups 2)',
         tostring(nn.SpatialConvolution(4, 8, 3, 3, 1, 1, 1, 1, 2)))
      m:reset(0.1)
      mx = 0
      for _, v in ipairs(util.flat(m.weight)) do mx = math.max(mx, math.abs(v)) end
      assert.is_true(mx <= 0.1 * math.sqrt(3) and mx > 0.05, 'reset(stdv)')
      assert.are.same({ 8, 2, 3, 3 }, T.sizes(nn.SpatialConvolution(4, 8, 3, 3, 1, 1, 1, 1, 2).weight))
   end)

   it('rejects bad input with clear messages', function()
      local m = nn.SpatialConvolution(3, 4, 3, 3)
      util.assert_error(function() m:forward(torch.randn(2, 5, 8, 8)) end, 'SpatialConvolution', 'input has 5 channels',
         'expects 3')
      util.assert_error(function() m:forward(torch.randn(2, 3, 2, 8)) end, 'SpatialConvolution', '2x8', 'smaller',
         '3x3')
      util.assert_error(function() m:forward(torch.randn(3, 8)) end, 'nn.SpatialConvolution', '3-d or 4-d', '3x8')
      util.assert_error(function() m:forward(torch.randn(2, 3, 8, 8):double()) end, 'nn.SpatialConvolution',
         'torch.DoubleTensor', 'torch.FloatTensor')
      local m2 = nn.SpatialConvolution(3, 4, 3, 3)
      local x = torch.randn(2, 3, 8, 8)
      m2:forward(x)
      util.assert_error(function() m2:backward(x, torch.randn(2, 4, 5, 6)) end, 'SpatialConvolution', 'gradOutput',
         '2x4x5x6', '2x4x6x6')
      util.assert_error(function() nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 0, 0, 2) end, 'nn.SpatialConvolution',
         'divisible by groups 2')
      util.assert_error(function() nn.SpatialConvolution(3, 4, 0, 3) end, 'nn.SpatialConvolution', 'kW')
   end)
end)

---------------------------------------------------------------------------------------------
local POOLS = {
   { kW = 2, kH = 2, dW = 2, dH = 2, padW = 0, padH = 0, ceil = false },
   { kW = 2, kH = 2, dW = 2, dH = 2, padW = 0, padH = 0, ceil = true },
   { kW = 3, kH = 3, dW = 2, dH = 2, padW = 1, padH = 1, ceil = false },
   { kW = 3, kH = 3, dW = 2, dH = 2, padW = 1, padH = 1, ceil = true },
   { kW = 3, kH = 2, dW = 1, dH = 2, padW = 1, padH = 0, ceil = true },
   { kW = 4, kH = 3, dW = 3, dH = 2, padW = 2, padH = 1, ceil = true },
   { kW = 1, kH = 1, dW = 2, dH = 1, padW = 0, padH = 0, ceil = false },
}
local POOL_SHAPES = { { 2, 3, 7, 6 }, { 1, 2, 9, 8 }, { 3, 5, 5 }, { 2, 1, 10, 7 } }

local function pool_str(p)
   return ('k%dx%d s%d,%d p%d,%d%s%s'):format(p.kW, p.kH, p.dW, p.dH, p.padW, p.padH, p.ceil and ' ceil' or '',
      p.cip == false and ' exclude-pad' or '')
end

local function make_pool(kind, p)
   local m
   if kind == 'max' then
      m = nn.SpatialMaxPooling(p.kW, p.kH, p.dW, p.dH, p.padW, p.padH)
   else
      m = nn.SpatialAveragePooling(p.kW, p.kH, p.dW, p.dH, p.padW, p.padH)
      if p.cip == false then m:setCountExcludePad() end
   end
   if p.ceil then m:ceil() end
   return m
end

-- distinct values (no ties for max pooling) in random order, spaced well apart from eps
local function distinct_input(shape, typename)
   local n = util.numel(shape)
   local vals = {}
   for i = 1, n do vals[i] = (i - n / 2) / n * 4 end
   for i = n, 2, -1 do
      local j = math.random(i)
      vals[i], vals[j] = vals[j], vals[i]
   end
   local d = T.parse_typename(typename or F64)
   local t = T.from_flat(vals, shape, d, T.CPU_DEVICE)
   return t, util.flat(t)
end

local function planes_hw(shape)
   local d = #shape
   local planes = 1
   for i = 1, d - 2 do planes = planes * shape[i] end
   return planes, shape[d - 1], shape[d]
end

for _, kind in ipairs { 'max', 'avg' } do
   local cls = kind == 'max' and 'nn.SpatialMaxPooling' or 'nn.SpatialAveragePooling'
   local variants = {}
   for _, p in ipairs(POOLS) do
      variants[#variants + 1] = p
      if kind == 'avg' then
         local q = {}
         for k, v in pairs(p) do q[k] = v end
         q.cip = false
         variants[#variants + 1] = q
      end
   end

   describe(cls, function()
      it('forward matches direct loops (float64, float32, float16, bfloat16; several layouts)', function()
         for _, p in ipairs(variants) do
            for _, shape in ipairs(POOL_SHAPES) do
               for _, ty in ipairs { F64, F32, 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
                  local layouts = (#shape == 4 and (ty == F64 or ty == F32)) and { 'contiguous', 'transposed',
                     'narrowed' } or { 'contiguous' }
                  for _, layout in ipairs(layouts) do
                     local x, xf
                     if layout == 'contiguous' then x, xf = distinct_input(shape, ty)
                     else x, xf = rand_input(shape, ty, layout) end
                     local m = make_pool(kind, p)
                     local y = m:forward(x)
                     local planes, H, W = planes_hw(shape)
                     local ref, oH, oW = ref_pool(kind, xf, planes, H, W, p)
                     local osz = {}
                     for i = 1, #shape - 2 do osz[i] = shape[i] end
                     osz[#osz + 1], osz[#osz + 2] = oH, oW
                     assert.are.same(osz, T.sizes(y))
                     assert.are.equal(ty, y:type())
                     local tol = util.tol[ty] or TOL32
                     util.assert_close(y, ref, tol, pool_str(p) .. ' ' .. ty .. ' ' .. layout)
                  end
               end
            end
         end
      end)

      it('backward matches finite differences in float64', function()
         for _, p in ipairs(variants) do
            for _, shape in ipairs(POOL_SHAPES) do
               local x = distinct_input(shape)
               local m = make_pool(kind, p)
               local y = m:forward(x)
               local gy, gyf = util.rand_tensor(T.sizes(y))
               local gi = m:backward(x, gy):clone()
               local num = numeric_grad(function() return m:forward(x) end, x, gyf)
               util.assert_close(gi, num, FD_TOL, pool_str(p) .. ' ' .. table.concat(shape, 'x'))
            end
         end
      end)

      it('handles non-contiguous gradOutput', function()
         local p = POOLS[4]
         local m = make_pool(kind, p)
         local x = distinct_input({ 2, 3, 7, 6 })
         local y = m:forward(x)
         local s = T.sizes(y)
         local gyt = util.rand_tensor({ s[1], s[2], s[4], s[3] }):transpose(3, 4)
         local gi = m:backward(x, gyt):clone()
         util.assert_close(gi, m:backward(x, gyt:contiguous()), util.tol[F64], 'gradInput')
      end)

      it('matches PyTorch (fixtures)', function()
         local n = 0
         for i, case in ipairs(read_fixture('conv_pool.txt')) do
            local p, ts = case.params, case.tensors
            if p.kind == kind then
               n = n + 1
               p.ceil = p.ceil == 1
               if p.cip ~= nil then p.cip = p.cip == 1 end
               for _, ty in ipairs { F64, F32 } do
                  local tol = ty == F64 and { atol = 1e-12, rtol = 1e-12 } or { atol = 1e-5, rtol = 1e-5 }
                  local m = make_pool(kind, p)
                  local x = fixture_tensor(ts.input, ty)
                  local what = ('case %d %s %s'):format(i, pool_str(p), ty)
                  util.assert_close(m:forward(x), ts.output.vals, tol, what .. ' output')
                  util.assert_close(m:backward(x, fixture_tensor(ts.gradOutput, ty)), ts.gradInput.vals, tol,
                     what .. ' gradInput')
               end
            end
         end
         assert.is_true(n >= 6, 'fixture cases found')
      end)

      it('rejects bad input with clear messages', function()
         local name = cls:sub(4)
         util.assert_error(function() make_pool(kind, POOLS[1]):forward(torch.randn(5, 6)) end, name, '3-d or 4-d',
            '5x6')
         util.assert_error(function() make_pool(kind, POOLS[1]):forward(torch.randn(1, 2, 1, 1)) end, name, '1x1',
            'smaller', '2x2')
         util.assert_error(function() make_pool(kind, { kW = 2, kH = 2, dW = 1, dH = 1, padW = 2, padH = 0 })
            :forward(torch.randn(1, 2, 6, 6)) end, name, 'padding 2x0', 'half the kernel 2x2')
         util.assert_error(function() make_pool(kind, POOLS[1]):forward(torch.LongTensor(1, 2, 4, 4):fill(1)) end, name,
            'int64', 'floating')
         local m = make_pool(kind, POOLS[1])
         local x = torch.randn(1, 2, 6, 6)
         m:forward(x)
         util.assert_error(function() m:backward(x, torch.randn(1, 2, 4, 3)) end, name, 'gradOutput', '1x2x4x3',
            '1x2x3x3')
         util.assert_error(function() make_pool(kind, { kW = 0, kH = 2 }) end, cls, 'kW')
      end)
   end)
end

describe('pooling defaults and printing', function()
   it("follow Torch7: max pooling stride defaults to the kernel, average pooling's to 1", function()
      local m = nn.SpatialMaxPooling(3, 2)
      assert.are.same({ 3, 2, 0, 0, false }, { m.dW, m.dH, m.padW, m.padH, m.ceil_mode })
      assert.are.equal('nn.SpatialMaxPooling(3x2, 3,2)', tostring(m))
      assert.are.equal('nn.SpatialMaxPooling(3x3, 2,2, 1,1)', tostring(nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1)))
      local a = nn.SpatialAveragePooling(3, 3)
      assert.are.same({ 1, 1, true }, { a.dW, a.dH, a.count_include_pad })
      assert.are.equal('nn.SpatialAveragePooling(3x3, 1,1)', tostring(a))
      assert.are.equal(m, m:ceil())
      assert.is_true(m.ceil_mode)
      m:floor()
      assert.is_false(m.ceil_mode)
   end)
end)

describe('max pooling backward with corrupted indices', function()
   it('names an index outside its plane (-1, past the end) on 1 and 2 threads', function()
      local threads = torch.getnumthreads()
      for _, nth in ipairs { 1, 2 } do
         torch.setnumthreads(nth)
         for _, badv in ipairs { -1, 32 * 33 } do
            local m = nn.SpatialMaxPooling(2, 2)
            local x = torch.randn(16, 3, 32, 33) -- enough elements for the parallel loop
            local y = m:forward(x)
            m.indices[{ 11, 2, 2, 1 }] = badv
            local ok, err = pcall(function() m:backward(x, torch.randn(y:size())) end)
            assert.is_false(ok)
            assert.truthy(tostring(err):find(('index %d out of range for a 32x33 plane'):format(badv), 1, true),
               tostring(err))
         end
      end
      torch.setnumthreads(threads)
   end)
end)

describe('nn.SpatialGlobalAveragePooling', function()
   it('averages each plane (4-d and 3-d, float64 and float32) and its backward matches finite differences', function()
      for _, shape in ipairs { { 2, 3, 5, 7 }, { 4, 1, 1 }, { 3, 6, 4 } } do
         for _, ty in ipairs { F64, F32 } do
            for _, m in ipairs { nn.SpatialGlobalAveragePooling(), nn.SpatialAdaptiveAveragePooling(1, 1) } do
               local x, xf = util.rand_tensor(shape, ty)
               local y = m:forward(x)
               local planes, H, W = planes_hw(shape)
               local ref = {}
               for p = 0, planes - 1 do
                  local s = 0
                  for i = 1, H * W do s = s + xf[p * H * W + i] end
                  ref[p + 1] = s / (H * W)
               end
               local osz = {}
               for i = 1, #shape - 2 do osz[i] = shape[i] end
               osz[#osz + 1], osz[#osz + 2] = 1, 1
               assert.are.same(osz, T.sizes(y))
               util.assert_close(y, ref, ty == F64 and util.tol[F64] or TOL32, torch.type(m) .. ' ' .. ty)
               if ty == F64 then
                  local gy, gyf = util.rand_tensor(osz)
                  local gi = m:backward(x, gy):clone()
                  util.assert_close(gi, numeric_grad(function() return m:forward(x) end, x, gyf), FD_TOL, 'gradInput')
               end
            end
         end
      end
      assert.are.equal('nn.SpatialGlobalAveragePooling()', tostring(nn.SpatialGlobalAveragePooling()))
   end)
end)

-- adaptive windows: cell i of n covers [floor(i*in/n), ceil((i+1)*in/n))
local function ref_adaptive(x, planes, H, W, oH, oW)
   local out = {}
   for p = 0, planes - 1 do
      for oy = 0, oH - 1 do
         for ox = 0, oW - 1 do
            local y0, y1 = math.floor(oy * H / oH), math.ceil((oy + 1) * H / oH)
            local x0, x1 = math.floor(ox * W / oW), math.ceil((ox + 1) * W / oW)
            local s = 0
            for iy = y0, y1 - 1 do
               for ix = x0, x1 - 1 do s = s + x[(p * H + iy) * W + ix + 1] end
            end
            out[(p * oH + oy) * oW + ox + 1] = s / ((y1 - y0) * (x1 - x0))
         end
      end
   end
   return out
end

describe('nn.SpatialAdaptiveAveragePooling', function()
   local CASES = { { { 2, 3, 7, 6 }, 3, 2 }, { { 1, 2, 10, 9 }, 4, 4 }, { { 3, 5, 5 }, 5, 5 }, { { 2, 1, 3, 4 }, 5, 7 },
      { { 2, 2, 13, 11 }, 3, 5 } }

   it('forward matches direct loops (float64, float32, float16; contiguous and transposed inputs)', function()
      for _, c in ipairs(CASES) do
         local shape, oW, oH = c[1], c[2], c[3]
         for _, ty in ipairs { F64, F32, 'torch.HalfTensor' } do
            for _, layout in ipairs(#shape == 4 and ty ~= 'torch.HalfTensor' and { 'contiguous', 'transposed' }
               or { 'contiguous' }) do
               local x, xf = rand_input(shape, ty, layout)
               local m = nn.SpatialAdaptiveAveragePooling(oW, oH)
               local y = m:forward(x)
               local planes, H, W = planes_hw(shape)
               local osz = {}
               for i = 1, #shape - 2 do osz[i] = shape[i] end
               osz[#osz + 1], osz[#osz + 2] = oH, oW
               assert.are.same(osz, T.sizes(y))
               util.assert_close(y, ref_adaptive(xf, planes, H, W, oH, oW), util.tol[ty], ty .. ' ' .. layout)
            end
         end
      end
   end)

   it('backward matches finite differences in float64', function()
      for _, c in ipairs(CASES) do
         local m = nn.SpatialAdaptiveAveragePooling(c[2], c[3])
         local x = util.rand_tensor(c[1])
         local y = m:forward(x)
         local gy, gyf = util.rand_tensor(T.sizes(y))
         local gi = m:backward(x, gy):clone()
         util.assert_close(gi, numeric_grad(function() return m:forward(x) end, x, gyf), FD_TOL,
            table.concat(c[1], 'x'))
      end
   end)

   it('matches PyTorch (fixtures)', function()
      for i, case in ipairs(read_fixture('conv_adaptive.txt')) do
         local p, ts = case.params, case.tensors
         for _, ty in ipairs { F64, F32 } do
            local tol = ty == F64 and { atol = 1e-12, rtol = 1e-12 } or { atol = 1e-5, rtol = 1e-5 }
            local m = nn.SpatialAdaptiveAveragePooling(p.oW, p.oH)
            local x = fixture_tensor(ts.input, ty)
            util.assert_close(m:forward(x), ts.output.vals, tol, 'case ' .. i .. ' output')
            util.assert_close(m:backward(x, fixture_tensor(ts.gradOutput, ty)), ts.gradInput.vals, tol,
               'case ' .. i .. ' gradInput')
         end
      end
   end)

   it('prints and rejects bad input with clear messages', function()
      assert.are.equal('nn.SpatialAdaptiveAveragePooling(3, 2)', tostring(nn.SpatialAdaptiveAveragePooling(3, 2)))
      util.assert_error(function() nn.SpatialAdaptiveAveragePooling(0, 2) end, 'nn.SpatialAdaptiveAveragePooling',
         'W', '0')
      local m = nn.SpatialAdaptiveAveragePooling(2, 2)
      util.assert_error(function() m:forward(torch.randn(4, 4)) end, 'SpatialAdaptiveAveragePooling', '3-d or 4-d',
         '4x4')
      local x = torch.randn(1, 2, 5, 5)
      m:forward(x)
      util.assert_error(function() m:backward(x, torch.randn(1, 3, 2, 2)) end, 'SpatialAdaptiveAveragePooling',
         'gradOutput', '1x3x2x2', '1x2x2x2')
   end)
end)
