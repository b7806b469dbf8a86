-- dist/rgcflags.lua: the command-line side of residual gradient compression that the recipes
-- share: their -compress flags, the check of them, and how they become dist.DataParallel's
-- options. Plain Lua (no library loaded), so a recipe can list its flags on any build.
local M = {}

-- option rows (moontorch.util.options) for a recipe; warmupEpochs: the -densityWarmup default
function M.recipeOptions(warmupEpochs)
   return {
      { 'compress', 'none', 'gradient compression with -dist: none | rgc (residual top-k, sgd only) | auto (rgc '
         .. 'per bucket where moontorch.perf predicts a shorter step)', choices = { 'none', 'rgc', 'auto' } },
      { 'network', 'local', 'with -compress auto: the network the model assumes: a moontorch.perf preset, a cost '
         .. 'table file, or local (the table dist.init measured)' },
      { 'density', 0.001, 'fraction of each large gradient sent per step with -compress rgc' },
      { 'densityWarmup', warmupEpochs,
         'epochs of density warm-up (25%, 6.25%, 1.56%, 0.4%, then -density) with -compress rgc' },
      { 'rgcMethod', 'sampled', 'top-k selection with -compress rgc',
         choices = { 'exact', 'threshold', 'trimmed', 'sampled' } },
      { 'wire', 'float', 'precision of sent values with -compress rgc', choices = { 'float', 'half', 'bfloat16' } },
      { 'maskMomentum', true, 'clear the local velocity where values were sent with -compress rgc' },
   }
end

-- the reason opt's compression flags cannot be used, or nil (opt.dist: whether -dist is on)
function M.recipeProblem(opt)
   if opt.compress == 'none' then return nil end
   if not opt.dist then return ('-compress %s needs -dist'):format(opt.compress) end
   if opt.optimizer ~= 'sgd' then
      return ('-compress %s keeps momentum in its residuals (momentum correction) and needs -optimizer sgd, got %s')
         :format(opt.compress, opt.optimizer)
   end
   if not (opt.density > 0 and opt.density <= 1) then
      return ('-density must be in (0, 1], got %s'):format(opt.density)
   end
   if not (opt.densityWarmup >= 0) then -- luacheck: ignore 581 (rejects NaN)
      return ('-densityWarmup must be >= 0 epochs, got %s'):format(opt.densityWarmup)
   end
end

-- with -compress rgc: the compression options into dpopts, and momentum and weight decay moved
-- from the optimizer's config into the compressor (the optimizer then steps plainly). The
-- warm-up length is set with Compressor:schedule once the epoch length is known.
-- With -compress auto the same, plus -network (local: the table dist.init measured); auto runs
-- at -density from the start (no warm-up: its choice is made for that density).
function M.recipeSetup(opt, config, dpopts)
   if opt.compress ~= 'rgc' and opt.compress ~= 'auto' then return dpopts end
   dpopts.compress, dpopts.density, dpopts.method, dpopts.wire = opt.compress, opt.density, opt.rgcMethod, opt.wire
   if opt.compress == 'auto' and opt.network and opt.network ~= 'local' then dpopts.network = opt.network end
   dpopts.momentum, dpopts.weightDecay = config.momentum or 0, config.weightDecay or 0
   dpopts.nesterov, dpopts.maskMomentum = config.nesterov or false, opt.maskMomentum
   config.momentum, config.weightDecay, config.nesterov, config.dampening = 0, 0, nil, nil
   return dpopts
end

return M
