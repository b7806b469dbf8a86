-- train.state: a training run's state in one safetensors checkpoint: the model's parameters
-- and BN statistics (by module index and field), the optimizer state, and metadata (epochs
-- and iterations done, the generator's state, whatever the caller adds). Written atomically
-- by moontorch.checkpoint, so an interrupted save leaves the previous checkpoint whole.
--   state.save(path, model, optimState, { epoch = 3, iteration = 1500 })
--   local optimState, meta = state.load(path, model, { format = 'my recipe 1' })
local torch = require 'moontorch'
local optim = require 'moontorch.optim'
local checkpoint = require 'moontorch.checkpoint'
local T = require 'moontorch.internal'

local state = {}

-- the tensors that make a model: name -> tensor (shared with the model)
function state.tensors(model)
   local out = {}
   for i, m in ipairs(model:listModules()) do
      for _, field in ipairs({ 'weight', 'bias', 'running_mean', 'running_var' }) do
         if torch.isTensor(m[field]) and m[field]:nElement() > 0 then out[('%d.%s'):format(i, field)] = m[field] end
      end
   end
   return out
end

function state.save(path, model, optimState, meta)
   local tensors = {}
   for k, t in pairs(state.tensors(model)) do tensors[k] = t:cpu() end
   local ts, values = optim.stateToCheckpoint(optimState, 'optim.')
   for k, t in pairs(ts) do tensors[k] = t:cpu() end
   local m = {}
   for k, v in pairs(meta or {}) do m[k] = v end
   m.optim = values
   checkpoint.save(path, tensors, m)
end

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- Copies the checkpoint's tensors into model (converting type and device) and returns the
-- optimizer state (its float tensors in the type of the model's parameters, or as saved when it
-- holds a master copy) and the metadata.
-- opts.format: the metadata "format" the checkpoint must have; opts.check(meta, path): may refuse
-- the checkpoint (by raising an error) before anything is copied.
function state.load(path, model, opts)
   opts = opts or {}
   local tensors, meta = checkpoint.load(path)
   meta = meta or {}
   if opts.format and meta.format ~= opts.format then
      fail('%s: not a checkpoint of this recipe (format %s)', path, tostring(meta.format))
   end
   if opts.check then opts.check(meta, path) end
   local ptype
   for name, t in pairs(state.tensors(model)) do
      local src = tensors[name]
      if not src then fail('%s: no tensor %s for this model', path, name) end
      if src:nElement() ~= t:nElement() then
         fail('%s: tensor %s has %d elements, the model expects %d (another number of classes?)', path, name,
            src:nElement(), t:nElement())
      end
      t:copy(src:contiguous():view(t:size())) -- copy converts dtype and device
      if not name:find('running_', 1, true) then ptype = ptype or t:type() end -- BN stats may be fp32
   end
   local st = optim.stateFromCheckpoint(tensors, meta.optim, 'optim.')
   local cuda = ptype and ptype:find('Cuda')
   -- with an fp32 master copy (mixed precision) the state keeps the dtypes it was saved in
   local keep = st.master ~= nil
   for k, v in pairs(st) do
      if torch.isTensor(v) then
         if keep then st[k] = cuda and v:type(T.typename(v:dtype(), 0)) or v
         elseif cuda then st[k] = v:cuda()
         elseif v:type() == 'torch.FloatTensor' or v:type() == 'torch.DoubleTensor' then st[k] = v:type(ptype) end
      end
   end
   return st, meta
end

return state
