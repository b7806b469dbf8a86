-- cuda.lua: torch.cuda.* (devices, memory, synchronisation) and moving tensors between the
-- host and GPUs: t:cuda([device]), t:cpu(), t:pin(), torch.pinnedTensor(...).
--
-- Devices are 1-based here, like cutorch (the C core uses 0-based ordinals and -1 for the CPU).
-- The current device (torch.cuda.setDevice) is kept in Lua: it is where torch.CudaTensor(...),
-- t:cuda() and t:type('torch.CudaTensor') put new tensors. Ops run on their operands' device.
-- Unlike cutorch, whose CudaTensor is float only, t:cuda() keeps the dtype (a DoubleTensor
-- becomes a CudaDoubleTensor).
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods = T.clib, T.check, T.tensor_methods
   local floor = math.floor

   local cuda = {}
   torch.cuda = cuda
   local current = 1 -- 1-based, as cutorch

   function cuda.isCompiled() return C.mt_cuda_is_compiled() ~= 0 end
   function cuda.deviceCount() return tonumber(C.mt_cuda_device_count()) end
   cuda.getDeviceCount = cuda.deviceCount
   function cuda.isAvailable() return cuda.isCompiled() and cuda.deviceCount() > 0 end

   -- Raise the clear "no CUDA" errors; `level` is error()'s level seen from the caller.
   local function need_cuda(op, level)
      if C.mt_cuda_is_compiled() == 0 then
         error(op .. ': this build of moontorch has no CUDA support', level + 1)
      end
      if C.mt_cuda_device_count() == 0 then error(op .. ': no CUDA device is available', level + 1) end
   end

   -- A 1-based device argument (nil: the current device) as a 0-based ordinal.
   local function device_arg(op, dev, level)
      need_cuda(op, level + 1)
      if dev == nil then return current - 1 end
      local n = cuda.deviceCount()
      if type(dev) ~= 'number' or dev ~= floor(dev) or dev < 1 or dev > n then
         error(('%s: device %s out of range (%d device%s present, numbered 1 to %d)'):format(op, tostring(dev), n,
            n == 1 and '' or 's', n), level + 1)
      end
      return dev - 1
   end

   function cuda.getDevice() return current end
   function cuda.setDevice(dev)
      if dev == nil then error('cuda.setDevice: expected a device number', 2) end
      device_arg('cuda.setDevice', dev, 2)
      current = dev
   end

   -- synchronize([dev]): wait for the queued work of one device, or of all when dev is nil.
   function cuda.synchronize(dev)
      local d = dev == nil and -1 or device_arg('cuda.synchronize', dev, 2)
      need_cuda('cuda.synchronize', 2)
      check(C.mt_cuda_synchronize(d))
   end

   -- emptyCache([dev]): give memory cached by the allocators back to the driver (every device
   -- and the pinned host cache when dev is nil).
   function cuda.emptyCache(dev)
      local d = dev == nil and -1 or device_arg('cuda.emptyCache', dev, 2)
      need_cuda('cuda.emptyCache', 2)
      check(C.mt_cuda_empty_cache(d))
   end

   local stats = ffi.new('mt_memory_stats')
   -- memoryStats([dev]) -> { allocated, reserved, peak, peakReserved, allocs, systemAllocs } in
   -- bytes and counts; systemAllocs counts cudaMalloc calls (flat once the cache is warm).
   function cuda.memoryStats(dev)
      local d = device_arg('cuda.memoryStats', dev, 2)
      check(C.mt_memory_stats_get(d, stats))
      return { allocated = tonumber(stats.allocated), reserved = tonumber(stats.reserved),
         peak = tonumber(stats.peak_allocated), peakReserved = tonumber(stats.peak_reserved),
         allocs = tonumber(stats.num_allocs), systemAllocs = tonumber(stats.num_system_allocs) }
   end

   function cuda.resetPeakMemoryStats(dev)
      check(C.mt_memory_reset_peak(device_arg('cuda.resetPeakMemoryStats', dev, 2)))
   end

   local namebuf = ffi.new('char[256]')
   function cuda.getDeviceName(dev)
      check(C.mt_cuda_device_name(device_arg('cuda.getDeviceName', dev, 2), namebuf, 256))
      return ffi.string(namebuf)
   end

   ---------------------------------------------------------------------------------------------
   -- numerics settings (process-wide, like PyTorch's torch.backends flags; csrc/cuda/settings.c)

   local intbuf = ffi.new('int[1]')
   local dblbuf = ffi.new('double[1]')

   -- allowTF32([on]) -> the previous setting. Off by default: float32 GEMMs and convolutions run
   -- in plain fp32 and match the CPU within float rounding. On, cuBLAS and cuDNN may round
   -- float32 inputs to TF32 (10-bit mantissa) on tensor cores. Without an argument, only reads.
   function cuda.allowTF32(on)
      local old = C.mt_cuda_get_allow_tf32() ~= 0
      if on == nil then
         if not cuda.isCompiled() then need_cuda('cuda.allowTF32', 2) end
         return old
      end
      if type(on) ~= 'boolean' then error('cuda.allowTF32: expected a boolean, got ' .. type(on), 2) end
      check(C.mt_cuda_set_allow_tf32(on and 1 or 0, intbuf))
      return intbuf[0] ~= 0
   end

   -- convAlgorithm([mode [, workspaceMB]]) -> previous mode, previous workspaceMB. mode
   -- 'heuristic' (the default: cuDNN's ranking, nothing run) or 'search' (each convolution's
   -- candidates are timed once and the fastest kept); workspaceMB: the most workspace a chosen
   -- algorithm may use, in MiB (default 1024; kept when nil). Without arguments, only reads.
   local MODES = { heuristic = C.MT_CONV_ALGO_HEURISTIC, search = C.MT_CONV_ALGO_SEARCH }
   function cuda.convAlgorithm(mode, workspaceMB)
      if not cuda.isCompiled() then need_cuda('cuda.convAlgorithm', 2) end
      check(C.mt_cuda_get_conv_algorithm(intbuf, dblbuf))
      local old_mode = intbuf[0] == C.MT_CONV_ALGO_SEARCH and 'search' or 'heuristic'
      local old_mb = tonumber(dblbuf[0])
      if mode == nil and workspaceMB == nil then return old_mode, old_mb end
      mode = mode or old_mode
      if MODES[mode] == nil then
         error(("cuda.convAlgorithm: mode must be 'heuristic' or 'search', got %s"):format(tostring(mode)), 2)
      end
      if workspaceMB ~= nil
         and (type(workspaceMB) ~= 'number' or not (workspaceMB >= 0)) then -- luacheck: ignore 581 (rejects NaN)
         error('cuda.convAlgorithm: workspaceMB must be a number >= 0, got ' .. tostring(workspaceMB), 2)
      end
      check(C.mt_cuda_set_conv_algorithm(MODES[mode], workspaceMB or old_mb))
      return old_mode, old_mb
   end

   -- torch.cuda.channelsLast(t), torch.cuda.isChannelsLast(t): t:channelsLast() and
   -- t:isChannelsLast() (channels_last.lua, any device), under their earlier names
   cuda.channelsLast = methods.channelsLast
   cuda.isChannelsLast = methods.isChannelsLast

   ---------------------------------------------------------------------------------------------
   -- moving tensors

   -- t:cuda([dev]): the tensor on a GPU with the same dtype. Without a device, a tensor already
   -- on a GPU is returned as is (cutorch's type conversion); with one, it moves there.
   function methods.cuda(t, dev)
      local h = T.handle(t, 'cuda')
      local d = device_arg('cuda', dev, 2)
      local cur = C.mt_tensor_device(h)
      if cur >= 0 and (dev == nil or cur == d) then return t end
      return T.convert(t, C.mt_tensor_dtype(h), d)
   end

   -- t:cpu(): the tensor in host memory (itself when it already is)
   function methods.cpu(t)
      local h = T.handle(t, 'cpu')
      if C.mt_tensor_device(h) < 0 then return t end
      return T.convert(t, C.mt_tensor_dtype(h), T.CPU_DEVICE)
   end

   local function new_pinned(dtype, sizes)
      local n, buf = T.sizes_buf(sizes)
      check(C.mt_tensor_new_pinned(T.out_handle, dtype, n, buf))
      return T.wrap_handle(T.out_handle[0])
   end

   -- t:pin(): a copy in page-locked host memory (itself if already pinned), from which copies to
   -- a GPU are asynchronous. Do not overwrite a pinned tensor on the host while a copy from it
   -- may still be running (torch.cuda.synchronize() first). Without CUDA, plain memory.
   function methods.pin(t)
      local h = T.handle(t, 'pin')
      if C.mt_tensor_is_pinned(h) ~= 0 then return t end
      local r = new_pinned(C.mt_tensor_dtype(h), T.sizes(t))
      check(C.mt_copy(r.h, h))
      return r
   end
   function methods.isPinned(t) return C.mt_tensor_is_pinned(T.handle(t, 'isPinned')) ~= 0 end

   -- torch.pinnedTensor([typename,] sizes...): an uninitialised pinned host tensor; the dtype is
   -- that of a CPU type name ('torch.ByteTensor') or the default tensor type.
   local function pinned_sizes(dtype, a, ...)
      if T.is_size(a) or (type(a) == 'table' and not T.is_tensor(a)) then return new_pinned(dtype, a) end
      return new_pinned(dtype, { a, ... })
   end
   function torch.pinnedTensor(a, ...)
      if type(a) == 'string' then
         local dtype, dev = T.parse_typename(a)
         if not dtype or dev ~= T.CPU_DEVICE then
            error("pinnedTensor: expected a CPU tensor type, got '" .. a .. "'", 2)
         end
         return pinned_sizes(dtype, ...)
      end
      return pinned_sizes(T.default_dtype(), a, ...)
   end

   ---------------------------------------------------------------------------------------------
   -- torch.CudaTensor(...) and friends build on the current device

   local function cuda_constructor(name, dtype)
      local cpu_type = T.tensor_types[T.typename(dtype, T.CPU_DEVICE)]
      return function(_, a, ...)
         need_cuda(name, 2)
         local dev = current - 1
         if a == nil then return T.empty_tensor(dtype, dev) end
         if type(a) == 'number' then return T.new_tensor(dtype, dev, { a, ... }) end
         if T.is_size(a) then return T.new_tensor(dtype, dev, a) end
         if T.is_tensor(a) then
            -- Torch7: a new tensor sharing a's storage, which must be of this very type
            if a:dtype() ~= dtype or a:device() < 0 then
               error(name .. ': cannot share storage between ' .. a:type() .. ' and ' .. name, 2)
            end
            return T.alias(a)
         end
         if type(a) == 'table' then return T.convert(cpu_type(a, ...), dtype, dev) end
         error(name .. ': cannot construct a tensor from a ' .. type(a), 2)
      end
   end

   for name, ty in pairs(T.tensor_types) do
      if ty.device >= 0 then getmetatable(ty).__call = cuda_constructor(name, ty.dtype) end
   end

   -- t:type(typename): t converted to typename's dtype and device (t itself when they are
   -- t's). 'torch.CudaTensor' and friends keep a CUDA tensor on its device and take a host
   -- tensor to the current device.
   function T.convert_to_typename(t, typename)
      local dtype, device = T.parse_typename(typename)
      if not dtype then error("type: unknown tensor type '" .. tostring(typename) .. "'", 3) end
      if device >= 0 then
         device = C.mt_tensor_device(T.handle(t, 'type'))
         if device < 0 then
            need_cuda('type', 3)
            device = current - 1
         end
      end
      return T.convert(t, dtype, device)
   end
end
