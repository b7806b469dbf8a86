-- conv.lua: Torch7's direct convolutions of images with kernels (maths.md):
--   torch.conv2([res,] x, k [,'V' or 'F'])   2-d: x, k 2-d (one image), 3-d and 3-d (plane i
--                                           with kernel i), or 3-d and 4-d (out[q] = sum over
--                                           p of x[p] with k[q][p]); 'V' valid (default), 'F' full
--   torch.xcorr2(...)                        the same, cross-correlation (kernel not flipped)
--   torch.conv3 / torch.xcorr3               3-d analogues: 3-d/3-d, 4-d/4-d, 4-d/5-d
-- Any dtype (input and kernel the same), CPU and CUDA; the C op is mt_tensor_conv. Methods are
-- the functions with self first, as Torch7's wrappers make them: x:conv2(k), res:conv2(x, k).
return function(torch, T)
   local C, is_tensor = T.clib, T.is_tensor

   local function go(name, ns, flip, res, x, k, vf)
      if not is_tensor(x) then error(('%s: expected a tensor as input, got %s'):format(name, type(x)), 3) end
      if not is_tensor(k) then error(('%s: expected a tensor as kernel, got %s'):format(name, type(k)), 3) end
      vf = vf or 'V'
      if vf ~= 'V' and vf ~= 'F' then
         error(("%s: the last argument must be 'V' (valid) or 'F' (full), got %s"):format(name, tostring(vf)), 3)
      end
      res = res or T.empty_tensor(C.mt_tensor_dtype(T.handle(x, name)), C.mt_tensor_device(x.h))
      T.check(C.mt_tensor_conv(T.handle(res, name), T.handle(x, name), T.handle(k, name), ns, vf == 'F' and 1 or 0,
         flip and 1 or 0), name, nil, 3)
      return res
   end

   for _, f in ipairs { { 'conv2', 2, true }, { 'xcorr2', 2, false }, { 'conv3', 3, true }, { 'xcorr3', 3, false } } do
      local name, ns, flip = f[1], f[2], f[3]
      torch[name] = function(a, b, c, d)
         local r
         if is_tensor(c) then r = go(name, ns, flip, a, b, c, d) else r = go(name, ns, flip, nil, a, b, c) end
         return r
      end
      T.tensor_methods[name] = torch[name]
   end
end
