-- conv2_spec.lua: torch.conv2/xcorr2/conv3/xcorr3 (Torch7's direct convolutions) against a
-- direct float64 reference written here, on fresh random odd-sized inputs: every shape form
-- (one image, plane by plane, planes summed), valid and full, flipped and not, transposed
-- inputs and kernels, result-first forms, and their errors.
local torch = require 'moontorch'
local util = require 'spec.util'

local function transposed_rand(shape, tn)
   -- a non-contiguous tensor with these sizes: a transposed copy of the last two dims
   local s = {}
   for i = 1, #shape do s[i] = shape[i] end
   s[#s], s[#s - 1] = s[#s - 1], s[#s]
   local t = util.rand_tensor(s, tn, -3, 3):transpose(#s - 1, #s)
   assert(not t:isContiguous())
   return t, util.flat(t)
end

-- Reference. x: planes P (or none) of D x H x W (D = 1 in 2-d), k: kernels; shapes as given
-- to torch.conv*; returns the flat result and its sizes.
local function ref(fx, xs, fk, ks, ns, full, flip)
   local single = #xs == ns
   local diagonal = not single and #ks == ns + 1
   local function sp(s, lead) -- spatial sizes padded to 3
      local r = { 1, 1, 1 }
      for i = 1, ns do r[3 - ns + i] = s[lead + i] end
      return r
   end
   local xl = single and 0 or 1
   local kl = single and 0 or (diagonal and 1 or 2)
   local Q = single and 1 or ks[1]
   local Pk = (single or diagonal) and 1 or ks[2]
   local X, K = sp(xs, xl), sp(ks, kl)
   local O = {}
   for i = 1, 3 do O[i] = full and X[i] + K[i] - 1 or X[i] - K[i] + 1 end
   local function xat(p, d, h, w) return fx[((p * X[1] + d) * X[2] + h) * X[3] + w + 1] end
   local function kat(q, pk, d, h, w) return fk[(((q * Pk + pk) * K[1] + d) * K[2] + h) * K[3] + w + 1] end
   local out = {}
   for q = 0, Q - 1 do
      for od = 0, O[1] - 1 do
         for oh = 0, O[2] - 1 do
            for ow = 0, O[3] - 1 do
               local acc = 0
               for pk = 0, Pk - 1 do
                  local p = diagonal and q or pk
                  if single then p = 0 end
                  for a = 0, K[1] - 1 do
                     for b = 0, K[2] - 1 do
                        for c = 0, K[3] - 1 do
                           local id, ih, iw = od + a, oh + b, ow + c
                           if full then id, ih, iw = id - K[1] + 1, ih - K[2] + 1, iw - K[3] + 1 end
                           if id >= 0 and id < X[1] and ih >= 0 and ih < X[2] and iw >= 0 and iw < X[3] then
                              local ka, kb, kc = a, b, c
                              if flip then ka, kb, kc = K[1] - 1 - a, K[2] - 1 - b, K[3] - 1 - c end
                              acc = acc + xat(p, id, ih, iw) * kat(q, pk, ka, kb, kc)
                           end
                        end
                     end
                  end
               end
               out[#out + 1] = acc
            end
         end
      end
   end
   local sizes = {}
   if not single then sizes[1] = Q end
   for i = 1, ns do sizes[#sizes + 1] = O[3 - ns + i] end
   return out, sizes
end

local function sizes_of(t)
   local s = {}
   for i = 1, t:dim() do s[i] = t:size(i) end
   return s
end

local cases = {
   { 2, { 7, 9 }, { 3, 4 } },
   { 2, { 3, 6, 5 }, { 3, 2, 3 } },
   { 2, { 3, 6, 5 }, { 4, 3, 3, 2 } },
   { 3, { 5, 4, 6 }, { 2, 3, 3 } },
   { 3, { 2, 4, 5, 3 }, { 2, 3, 2, 2 } },
   { 3, { 2, 3, 4, 5 }, { 3, 2, 2, 3, 2 } },
}

describe('conv2, xcorr2, conv3, xcorr3', function()
   for _, tn in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.IntTensor' } do
      it('match the float64 reference in every shape form (' .. tn .. ')', function()
         for _, c in ipairs(cases) do
            local ns, xs, ks = c[1], c[2], c[3]
            for _, flip in ipairs { true, false } do
               local name = (flip and 'conv' or 'xcorr') .. ns
               local x, fx = transposed_rand(xs, tn)
               local k = util.rand_tensor(ks, tn, -2, 2)
               local fk = util.flat(k)
               for _, vf in ipairs { 'V', 'F' } do
                  local expect, esizes = ref(fx, xs, fk, ks, ns, vf == 'F', flip)
                  local r = vf == 'V' and torch[name](x, k) or torch[name](x, k, vf)
                  local what = ('%s %s x %s %s'):format(name, table.concat(xs, 'x'), table.concat(ks, 'x'), vf)
                  assert.are.same(esizes, sizes_of(r), what)
                  assert.are.equal(x:type(), r:type())
                  util.assert_close(r, expect, util.tol[tn] or { atol = 0, rtol = 0 }, what)
               end
            end
         end
      end)
   end

   it('write a given result and take a transposed kernel', function()
      local x, fx = util.rand_tensor({ 9, 7 }, 'torch.DoubleTensor')
      local k, fk = transposed_rand({ 3, 5 }, 'torch.DoubleTensor')
      local res = torch.DoubleTensor(2, 2)
      assert.is_true(torch.conv2(res, x, k, 'F') == res)
      util.assert_close(res, ref(fx, { 9, 7 }, fk, { 3, 5 }, 2, true, true), nil, 'conv2 into res')
      assert.is_true(res:xcorr2(x, k) == res)
      util.assert_close(res, ref(fx, { 9, 7 }, fk, { 3, 5 }, 2, false, false), nil, 'res:xcorr2')
      util.assert_close(x:conv2(k), ref(fx, { 9, 7 }, fk, { 3, 5 }, 2, false, true), nil, 'x:conv2(k)')
      -- the result may be the input itself
      local y = x:clone()
      torch.xcorr2(y, y, k)
      util.assert_close(y, ref(fx, { 9, 7 }, fk, { 3, 5 }, 2, false, false), nil, 'xcorr2 into its input')
   end)

   it('gives the sizes of maths.md', function()
      local x, k = torch.rand(20, 20), torch.rand(5, 5)
      assert.are.same({ 16, 16 }, sizes_of(torch.conv2(x, k)))
      assert.are.same({ 24, 24 }, sizes_of(torch.conv2(x, k, 'F')))
      assert.are.same({ 7, 7, 7 }, sizes_of(torch.conv3(torch.rand(9, 9, 9), torch.rand(3, 3, 3))))
   end)

   it('reject bad shapes, options and dtypes', function()
      local x = torch.randn(5, 6)
      util.assert_error(function() torch.conv2(x, torch.randn(7, 2)) end, 'conv2:', 'smaller than the kernel', '5x6',
         '7x2')
      util.assert_error(function() torch.conv2(x, torch.randn(2, 2, 2)) end, 'conv2:', 'dimensions', '5x6', '2x2x2')
      util.assert_error(function() torch.xcorr2(torch.randn(3, 5, 5), torch.randn(2, 2, 2)) end, 'xcorr2:', '3 planes')
      util.assert_error(function() torch.conv2(torch.randn(3, 5, 5), torch.randn(4, 2, 2, 2)) end, 'conv2:', 'planes')
      util.assert_error(function() torch.conv3(x, torch.randn(2, 2)) end, 'conv3:', 'dimensions')
      util.assert_error(function() torch.conv2(x, torch.randn(2, 2), 'X') end, 'conv2:', "'V'", "'F'")
      util.assert_error(function() torch.conv2(x, torch.randn(2, 2):double()) end, 'conv2:', 'same dtype')
      util.assert_error(function() torch.conv2(x, 3) end, 'conv2:', 'kernel')
   end)
end)

describe('conv2 & co. on CUDA', function()
   util.gpu_it('match the CPU', function()
      for _, c in ipairs(cases) do
         local ns, xs, ks = c[1], c[2], c[3]
         local x, k = transposed_rand(xs, 'torch.FloatTensor'), util.rand_tensor(ks, 'torch.FloatTensor')
         for _, name in ipairs { 'conv' .. ns, 'xcorr' .. ns } do
            for _, vf in ipairs { 'V', 'F' } do
               util.assert_close(torch[name](x:cuda(), k:cuda(), vf):float(), torch[name](x, k, vf),
                  util.tol['torch.FloatTensor'], name .. ' ' .. vf)
            end
         end
      end
   end)
end)
