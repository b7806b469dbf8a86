-- cifar.lua: the CIFAR-10 and CIFAR-100 binary versions (the *-binary.tar.gz downloads), plain
-- or gzip-compressed, parsed in C (csrc/data/cifar.c).
--   local cifar = require 'moontorch.data.cifar'
--   local images, labels = cifar.load('cifar-10-batches-bin/data_batch_1.bin')
--   local images, labels = cifar.load('cifar-100-binary/train.bin', { cifar100 = true })
--   local train, test = cifar.loadDir('cifar-10-batches-bin')  -- {images =, labels =} each
-- Images are N x 3 x 32 x 32 ByteTensors (RGB planes); labels are 1-based LongTensors: N for
-- CIFAR-10, N x 2 (coarse, fine) for CIFAR-100.
local ffi = require 'ffi'
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local C = T.clib

local cifar = {}

local imgp, labp = ffi.new('mt_tensor*[1]'), ffi.new('mt_tensor*[1]')

function cifar.load(path, opts)
   if type(path) ~= 'string' then error('cifar.load: expected a file name, got ' .. type(path), 2) end
   if opts ~= nil and type(opts) ~= 'table' then error('cifar.load: options must be a table', 2) end
   local nlabels = (opts and opts.cifar100) and 2 or 1
   if C.mt_cifar_load(imgp, labp, path, nlabels) ~= 0 then T.raise() end
   local images, labels = T.wrap_handle(imgp[0]), T.wrap_handle(labp[0])
   labels:add(1) -- the files count from 0, Torch from 1
   if nlabels == 1 then labels = labels:view(labels:size(1)) end
   return images, labels
end

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

-- name or name.gz inside dir, or nil
local function find(dir, name)
   for _, p in ipairs({ dir .. '/' .. name, dir .. '/' .. name .. '.gz' }) do
      if exists(p) then return p end
   end
end

-- files of one split concatenated in order
local function load_all(paths, opts)
   if #paths == 1 then
      local images, labels = cifar.load(paths[1], opts)
      return { images = images, labels = labels }
   end
   local parts, n = {}, 0
   for i, p in ipairs(paths) do
      local images, labels = cifar.load(p, opts)
      parts[i] = { images, labels }
      n = n + images:size(1)
   end
   local lsize = parts[1][2]:size():totable()
   lsize[1] = n
   local images, labels = torch.ByteTensor(n, 3, 32, 32), torch.LongTensor(unpack(lsize))
   local at = 1
   for _, part in ipairs(parts) do
      local k = part[1]:size(1)
      images:narrow(1, at, k):copy(part[1])
      labels:narrow(1, at, k):copy(part[2])
      at = at + k
   end
   return { images = images, labels = labels }
end

-- The standard layouts: CIFAR-10's data_batch_1..5.bin and test_batch.bin, or CIFAR-100's
-- train.bin and test.bin (which implies CIFAR-100 labels), in dir or in the folder the archive
-- unpacks to (dir/cifar-10-batches-bin, dir/cifar-100-binary). Returns train, test.
function cifar.loadDir(dir)
   if type(dir) ~= 'string' then error('cifar.loadDir: expected a directory name, got ' .. type(dir), 2) end
   dir = dir:gsub('/+$', '')
   if dir == '' then dir = '/' end
   for _, d in ipairs({ dir, dir .. '/cifar-10-batches-bin', dir .. '/cifar-100-binary' }) do
      local batches = {}
      for i = 1, 5 do batches[i] = find(d, 'data_batch_' .. i .. '.bin') end
      local test10 = find(d, 'test_batch.bin')
      if #batches == 5 and test10 then
         return load_all(batches), load_all({ test10 })
      end
      local train100, test100 = find(d, 'train.bin'), find(d, 'test.bin')
      if train100 and test100 then
         return load_all({ train100 }, { cifar100 = true }), load_all({ test100 }, { cifar100 = true })
      end
   end
   error(('cifar.loadDir: %s holds neither CIFAR-10 (data_batch_1..5.bin, test_batch.bin) nor CIFAR-100 '
      .. '(train.bin, test.bin) files, nor a cifar-10-batches-bin or cifar-100-binary folder with them'):format(dir), 2)
end

return cifar
