-- train.precision: what the -precision flags (train.flags.precision) mean for a run.
--   fp32  float32 everywhere (tf32: the same, with TF32 tensor cores for CUDA GEMMs and convolutions)
--   fp16  float16 model with fp32 master weights and optimizer state, dynamic loss scaling
--   bf16  bfloat16 model with fp32 master weights and optimizer state, no scaling
--   fp64  float64 everywhere
-- and -layout nchw|nhwc: nhwc stores the input batches channels-last, and on CUDA the model's
-- convolution weights too (train.Trainer{layout = }), which cuDNN runs as NHWC; same values.
--   local typename = precision.typename(opt.precision)
--   precision.apply(opt)                     -- tf32 on CUDA
--   local scaler = precision.scaler(opt)     -- optim.GradScaler or nil, for train.Trainer{scaler = }
local P = {}

local TYPES = { fp32 = 'torch.FloatTensor', tf32 = 'torch.FloatTensor', float = 'torch.FloatTensor',
   fp64 = 'torch.DoubleTensor', double = 'torch.DoubleTensor', fp16 = 'torch.HalfTensor',
   bf16 = 'torch.BFloat16Tensor' }

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
