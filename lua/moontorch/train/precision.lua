-- train.precision: the -precision flags that recipes share, and what they mean for a run.
--   fp32  float32 everywhere (tf32: the same, with TF32 tensor cores for CUDA GEMMs and convolutions)
--   fp16  float16 model with fp32 master weights and optimizer state, dynamic loss scaling
--   bf16  bfloat16 model with fp32 master weights and optimizer state, no scaling
--   fp64  float64 everywhere
-- and -layout nchw|nhwc: nhwc stores the input batches channels-last, and on CUDA the model's
-- convolution weights too (train.Trainer{layout = }), which cuDNN runs as NHWC; same values.
-- Plain Lua: a recipe can list its flags without loading the library.
--   for _, row in ipairs(precision.recipeOptions()) do spec[#spec + 1] = row end
--   local typename = precision.typename(opt.precision)
--   precision.apply(opt)                     -- tf32 on CUDA
--   local scaler = precision.scaler(opt)     -- optim.GradScaler or nil, for train.Trainer{scaler = }
local P = {}

local TYPES = { fp32 = 'torch.FloatTensor', tf32 = 'torch.FloatTensor', float = 'torch.FloatTensor',
   fp64 = 'torch.DoubleTensor', double = 'torch.DoubleTensor', fp16 = 'torch.HalfTensor',
   bf16 = 'torch.BFloat16Tensor' }

-- the option rows (options.parse format)
function P.recipeOptions()
   return {
      { 'precision', 'fp32',
         'fp32 | tf32 (fp32 with TF32 tensor cores on CUDA) | fp16 | bf16 (fp32 master weights) | fp64',
         choices = { 'fp32', 'tf32', 'fp16', 'bf16', 'fp64', 'float', 'double' } },
      { 'lossScale', 65536, 'initial loss scale with -precision fp16 (dynamic)' },
      { 'scaleWindow', 2000, 'clean steps before the loss scale doubles (fp16)' },
      { 'clip', 0, 'clip the global gradient norm to this (0: no clipping)' },
      { 'accumulate', 1, 'micro-batches per batch (gradient accumulation; -batchSize stays the batch of one step)' },
      { 'layout', 'nchw', 'nchw | nhwc (channels-last weights and batches; cuDNN NHWC kernels on CUDA)',
         choices = { 'nchw', 'nhwc' } },
      { 'fuse', false, 'fuse BatchNorm+ReLU and BatchNorm+residual add+ReLU into one pass each '
         .. '(nn.utils.fuseBatchNorm; same results)' },
   }
end

-- -fuse: the model rewritten in place by nn.utils.fuseBatchNorm (bit-identical on the CPU); the
-- module list changes, so checkpoints record the flag and resume only with the same one
function P.fuse(model, opt)
   if opt.fuse then require('moontorch.nn').utils.fuseBatchNorm(model) end
   return model
end

-- the error message for a checkpoint written with another -fuse (nil: it fits)
function P.fuseMismatch(meta, opt)
   local saved = meta.fuse == true or meta.fuse == 'true'
   if saved ~= (opt.fuse == true) then
      return ('the checkpoint was written %s -fuse and this run is %s it (the module lists differ)'):format(
         saved and 'with' or 'without', opt.fuse and 'with' or 'without')
   end
end

-- whether the model is in a half dtype (fp32 master weights in the optimizer)
function P.isHalf(precision) return precision == 'fp16' or precision == 'bf16' end

-- what is wrong with these options, or nil
function P.problem(opt)
   if not TYPES[opt.precision] then return ('unknown -precision %s'):format(tostring(opt.precision)) end
   if type(opt.accumulate) ~= 'number' or opt.accumulate < 1 or opt.accumulate % 1 ~= 0 then
      return ('-accumulate must be a whole number >= 1, got %s'):format(tostring(opt.accumulate))
   end
   if not (opt.lossScale > 0) or opt.lossScale == math.huge then -- luacheck: ignore 581 (rejects NaN)
      return ('-lossScale must be a finite number > 0, got %s'):format(tostring(opt.lossScale))
   end
   if not (opt.scaleWindow >= 1) then -- luacheck: ignore 581 (rejects NaN)
      return ('-scaleWindow must be >= 1, got %s'):format(tostring(opt.scaleWindow))
   end
   if not (opt.clip >= 0) then -- luacheck: ignore 581 (rejects NaN)
      return ('-clip must be >= 0, got %s'):format(tostring(opt.clip))
   end
end

-- the CPU tensor type of the model's parameters, activations and inputs
function P.typename(precision)
   return TYPES[precision] or error(('unknown -precision %s'):format(tostring(precision)), 2)
end


-- process-wide settings a precision asks for: TF32 on CUDA
function P.apply(opt)
   if opt.device == 'cuda' then require('moontorch').cuda.allowTF32(opt.precision == 'tf32') end
end

-- The loss scaler of a run: fp16 scales dynamically, bf16 (and -clip) go through the same
-- checked step with a fixed scale of 1; plain fp32/fp64 runs need none.
function P.scaler(opt)
   local half, bf = opt.precision == 'fp16', opt.precision == 'bf16'
   if not (half or bf or opt.clip > 0) then return nil end
   return require('moontorch.optim').GradScaler{ dynamic = half, initScale = half and opt.lossScale or 1,
      growthInterval = opt.scaleWindow, clip = opt.clip > 0 and opt.clip or nil }
end

return P
