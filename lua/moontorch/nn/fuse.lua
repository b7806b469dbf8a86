-- nn.utils.fuseBatchNorm(model) / model:fuseBatchNorm(): rewrites, inside every nn.Sequential of
-- model (in place; returns model and the number of rewrites),
--   [BN, ReLU]                                            -> nn.BatchNormReLU
--   [ConcatTable{Sequential{..., BN}, shortcut}, CAddTable, ReLU] (the ResNet block)
--        -> [ConcatTable{Sequential{...}, shortcut}, nn.BatchNormAddReLU]
-- where BN is an nn.BatchNormalization / SpatialBatchNormalization / VolumetricBatchNormalization
-- and ReLU a plain nn.ReLU in place (nn.ReLU(true), as the recipes' models have it): the fused
-- backward reads the output for the mask as ReLU(true) does, so a later in-place module that
-- changes that output has the same effect on both (ReLU(false) reads its input instead, which
-- fusing would not keep). The fused modules take over the BN's tensors (weight, bias, their
-- gradients, running and saved statistics: no copy, so flattened parameters stay flattened)
-- and compute bit-identical results on the CPU. The module list changes, so a checkpoint of
-- train.state (which names tensors by module index) resumes a model fused the same way.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'

local BN_TYPES = { ['nn.BatchNormalization'] = true, ['nn.SpatialBatchNormalization'] = true,
   ['nn.VolumetricBatchNormalization'] = true }
local FIELDS = { 'weight', 'bias', 'gradWeight', 'gradBias', 'running_mean', 'running_var', 'save_mean', 'save_std' }

local function isBN(m) return m ~= nil and BN_TYPES[torch.type(m)] == true end
local function isReLU(m)
   return m ~= nil and torch.type(m) == 'nn.ReLU' and m.inplace == true and (m.threshold or 0) == 0
      and (m.val or 0) == 0
end

-- a fused module of class cls holding bn's tensors and settings
local function takeOver(cls, bn)
   local f = cls(bn.running_mean:nElement(), bn.eps, bn.momentum, bn.affine)
   for _, k in ipairs(FIELDS) do f[k] = bn[k] end
   f.nDim, f.train, f._type, f.ghostBatch = bn.nDim, bn.train, bn._type, bn.ghostBatch
   f.output = bn.output
   -- the batch norm's gradInput is already of the model's type (a fresh one would be float32);
   -- BatchNormAddReLU's is a table it fills in the input's type
   if torch.isTensor(f.gradInput) then f.gradInput = bn.gradInput end
   return f
end

local function blockAt(mods, i)
   local ct, add, relu = mods[i], mods[i + 1], mods[i + 2]
   if torch.type(ct) ~= 'nn.ConcatTable' or #ct.modules ~= 2 or torch.type(add) ~= 'nn.CAddTable'
      or not isReLU(relu) then
      return nil
   end
   local branch = ct.modules[1]
   if torch.type(branch) ~= 'nn.Sequential' or #branch.modules < 2 or not isBN(branch.modules[#branch.modules]) then
      return nil
   end
   return branch
end

local function fuseSequential(seq)
   local mods, out, n, i = seq.modules, {}, 0, 1
   while i <= #mods do
      local branch = blockAt(mods, i)
      if branch then
         local bn = branch.modules[#branch.modules]
         branch:remove(#branch.modules)
         out[#out + 1] = mods[i]
         out[#out + 1] = takeOver(nn.BatchNormAddReLU, bn)
         n, i = n + 1, i + 3
      elseif isBN(mods[i]) and isReLU(mods[i + 1]) then
         out[#out + 1] = takeOver(nn.BatchNormReLU, mods[i])
         n, i = n + 1, i + 2
      else
         out[#out + 1] = mods[i]
         i = i + 1
      end
   end
   if n > 0 then
      seq.modules = out
      seq.output = out[#out].output
      seq.gradInput = out[1].gradInput
   end
   return n
end

local function walk(m)
   local n = 0
   if type(m.modules) == 'table' then
      for _, c in ipairs(m.modules) do n = n + walk(c) end
      if torch.type(m) == 'nn.Sequential' then n = n + fuseSequential(m) end
   end
   return n
end

function nn.utils.fuseBatchNorm(model)
   if not torch.isTypeOf(model, 'nn.Module') then error('nn.utils.fuseBatchNorm: expected an nn.Module', 2) end
   return model, walk(model)
end

function nn.Module:fuseBatchNorm() return nn.utils.fuseBatchNorm(self) end
