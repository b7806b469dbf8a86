-- dist/compressflags.lua: the command-line side of gradient compression that the recipes share:
-- the check of their -compress flags, and how those become dist.DataParallel's options (the
-- flags themselves: moontorch.train.flags.compression). Plain Lua (no library loaded), so a
-- recipe can check its flags on any build.
local COMPRESSORS = require 'moontorch.dist.compressors'

local M = {}

-- the reason opt's compression flags cannot be used, or nil (opt.dist: whether -dist is on)
function M.recipeProblem(opt)
   if opt.compress == 'none' then return nil end
   if not opt.dist then return ('-compress %s needs -dist'):format(opt.compress) end
   local c = COMPRESSORS.BY_NAME[opt.compress]
   if c.momentum and opt.optimizer ~= 'sgd' then
      return ('-compress %s keeps momentum in its residuals (momentum correction) and needs -optimizer sgd, got %s')
         :format(opt.compress, opt.optimizer)
   end
   if c.kind == 'bucket' and (opt.precision == 'fp16' or opt.precision == 'bf16') then
      return ('-compress %s compresses float32 gradients; with -precision %s use -compress rgc or none')
         :format(opt.compress, opt.precision)
   end
   if opt.rgcExchange == 'hierarchical' and opt.wire ~= 'float' then
      return ('-rgcExchange hierarchical sums float32 values on the way; -wire must be float, got %s'):format(opt.wire)
   end
   if not (opt.density > 0 and opt.density <= 1) then
      return ('-density must be in (0, 1], got %s'):format(opt.density)
   end
   if not (opt.densityWarmup >= 0) then -- luacheck: ignore 581 (rejects NaN)
      return ('-densityWarmup must be >= 0 epochs, got %s'):format(opt.densityWarmup)
   end
end

-- the DataParallel options of opt's -compress (into dpopts). With rgc and auto, momentum and
-- weight decay move from the optimizer's config into the compressor (the optimizer then steps
-- plainly); rgc's warm-up length is set with Compressor:schedule once the epoch length is known;
-- auto runs at -density from the start (its choice is made for that density) on -network
-- (local: the table dist.init measured). The per-bucket compressors (powersgd, onebit, fp16)
-- leave the optimizer as it is and start after -compressStart plain steps.
function M.recipeSetup(opt, config, dpopts)
   local c = COMPRESSORS.BY_NAME[opt.compress or 'none']
   if not c or c.kind == 'none' then return dpopts end
   dpopts.compress = opt.compress
   if c.kind == 'bucket' then
      dpopts.start = opt.compressStart
      if opt.compress == 'powersgd' then dpopts.rank = opt.compressRank end
      return dpopts
   end
   dpopts.density, dpopts.method, dpopts.wire = opt.density, opt.rgcMethod, opt.wire
   dpopts.exchange = opt.rgcExchange
   if opt.compress == 'auto' and opt.network and opt.network ~= 'local' then dpopts.network = opt.network end
   dpopts.momentum, dpopts.weightDecay = config.momentum or 0, config.weightDecay or 0
   dpopts.nesterov, dpopts.maskMomentum = config.nesterov or false, opt.maskMomentum
   config.momentum, config.weightDecay, config.nesterov, config.dampening = 0, 0, nil, nil
   return dpopts
end

return M
