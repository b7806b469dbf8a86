-- channels_last.lua: channels-last (NHWC) storage of 4-d N x C x H x W tensors, PyTorch's
-- memory format, on every device:
--   t:channelsLast()    a tensor with t's sizes and values stored channels-last (strides
--                       H*W*C, 1, W*C, C); t itself when it already is
--   t:isChannelsLast()  whether t is stored so (false for a tensor that is also contiguous,
--                       as when C or H*W is 1)
-- t:contiguous() still gives the NCHW (row-major) copy. Convolutions, pooling, activations and
-- fresh pointwise results keep a channels-last input's layout (docs/design.md).
return function(torch, T)
   local C, methods = T.clib, T.tensor_methods

   function methods.isChannelsLast(t)
      return C.mt_tensor_is_channels_last(T.handle(t, 'isChannelsLast')) == 1
   end

   local function expect4(t, what)
      local nd = C.mt_tensor_ndim(T.handle(t, what))
      if nd ~= 4 then
         error(('%s: expected a 4-d tensor (N x C x H x W), got %d dimensions'):format(what, nd), 3)
      end
   end

   function methods.channelsLast(t)
      expect4(t, 'channelsLast')
      if t:isChannelsLast() then return t end
      local s = T.sizes(t)
      local out = T.new_tensor(t:dtype(), t:device(), s)
      return out:set(out:storage(), 1, s, T.channels_last_strides(s)):copy(t)
   end

   -- The channels-last strides of sizes s (a Lua table of 4 numbers).
   function T.channels_last_strides(s)
      return { s[2] * s[3] * s[4], 1, s[4] * s[2], s[2] }
   end

   -- T.follow_layout(dst, src): dst (a result buffer an nn module owns, already resized like
   -- src, so dense) restrided in place to src's layout, channels-last or NCHW, without moving
   -- values: the module then fills it. Anything else is left alone. Returns dst.
   function T.follow_layout(dst, src)
      if dst:dim() ~= 4 or not dst:isSameSizeAs(src) or dst:nElement() == 0 then return dst end
      local want = src:isChannelsLast()
      local cl = dst:isChannelsLast()
      if want == cl or not (cl or dst:isContiguous()) then return dst end
      local s = T.sizes(dst)
      return dst:set(dst:storage(), dst:storageOffset(), s, want and T.channels_last_strides(s) or nil)
   end
end
