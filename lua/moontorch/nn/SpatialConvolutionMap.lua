-- nn.SpatialConvolutionMap(connTable, kW, kH, [dW=1], [dH=1]) as in Torch7: a convolution whose
-- input-output plane pairs are listed in connTable (K x 2 rows of {input plane, output plane}),
-- each row with its own kH x kW kernel (weight: K x kH x kW, bias: nOutputPlane). The kernels are
-- added into a dense nOutputPlane x nInputPlane kernel (zero where there is no connection) that
-- the C convolution runs; the rows' gradients are read back out of the dense gradient. Also
-- nn.tables.full, oneToOne and random, which build connection tables.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local Map, parent = torch.class('nn.SpatialConvolutionMap', 'nn.Module')

local NAME = 'nn.SpatialConvolutionMap'

nn.tables = nn.tables or {}

-- every input plane to every output plane (the output plane varies slowest)
function nn.tables.full(nin, nout)
   local t = torch.Tensor(nin * nout, 2)
   local r = 1
   for o = 1, nout do
      for i = 1, nin do t[r][1], t[r][2], r = i, o, r + 1 end
   end
   return t
end

function nn.tables.oneToOne(nfeat)
   local t = torch.Tensor(nfeat, 2)
   for i = 1, nfeat do t[i][1], t[i][2] = i, i end
   return t
end

-- each output plane gets nto distinct input planes; outputs take successive chunks of a random
-- permutation of the inputs, drawing a fresh permutation once its whole chunks are used up
function nn.tables.random(nin, nout, nto)
   if nto > nin then error(('nn.tables.random: nto %d is more than nin %d'):format(nto, nin), 2) end
   local t = torch.Tensor(nto * nout, 2)
   local perm, chunk, chunks = torch.randperm(nin), 0, math.floor(nin / nto)
   for o = 1, nout do
      for k = 1, nto do
         local r = (o - 1) * nto + k
         t[r][1], t[r][2] = perm[chunk * nto + k], o
      end
      chunk = chunk + 1
      if chunk == chunks then perm, chunk = torch.randperm(nin), 0 end
   end
   return t
end

-- also nn.SpatialFullConvolutionMap's constructor: the errors name the class being made
function Map:__init(conMatrix, kW, kH, dW, dH)
   parent.__init(self)
   local name = torch.typename(self)
   if not torch.isTensor(conMatrix) or conMatrix:dim() ~= 2 or conMatrix:size(2) ~= 2 then
      error(name .. ': connTable must be a K x 2 tensor of {input plane, output plane} rows', 2)
   end
   dW, dH = dW or 1, dH or 1
   cc.posints(name, { { kW, 'kW' }, { kH, 'kH' }, { dW, 'dW' }, { dH, 'dH' } })
   if conMatrix:min() < 1 then error(name .. ': connTable plane numbers start at 1', 2) end
   self.kW, self.kH, self.dW, self.dH = kW, kH, dW, dH
   self.connTable = conMatrix
   self.nInputPlane = conMatrix:select(2, 1):max()
   self.nOutputPlane = conMatrix:select(2, 2):max()
   local K = conMatrix:size(1)
   self.weight = torch.Tensor(K, kH, kW)
   self.bias = torch.Tensor(self.nOutputPlane)
   self.gradWeight = torch.Tensor(K, kH, kW):zero()
   self.gradBias = torch.Tensor(self.nOutputPlane):zero()
   self:reset()
end

-- Torch7's default: each kernel and bias uniform in +-1/sqrt(kW*kH*fan-in of its output plane)
function Map:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
      self.weight:uniform(-stdv, stdv)
      self.bias:uniform(-stdv, stdv)
      return self
   end
   local fanin = {}
   for o = 1, self.nOutputPlane do fanin[o] = 0 end
   for k = 1, self.connTable:size(1) do
      local o = self.connTable[k][2]
      fanin[o] = fanin[o] + 1
   end
   for k = 1, self.connTable:size(1) do
      local s = 1 / math.sqrt(self.kW * self.kH * math.max(fanin[self.connTable[k][2]], 1))
      self.weight:select(1, k):uniform(-s, s)
   end
   for o = 1, self.nOutputPlane do
      local s = 1 / math.sqrt(self.kW * self.kH * math.max(fanin[o], 1))
      self.bias[o] = torch.uniform(-s, s)
   end
   return self
end

-- The dense kernel is A x B x kH x kW, zero where two planes are not connected, A numbering the
-- planes of the connection table's column `_major`: a convolution's kernel is nOut x nIn
-- (column 2 first); nn.SpatialFullConvolutionMap's transposed one is nIn x nOut (column 1).
Map._major = 2
local function planes(self, column) return column == 1 and self.nInputPlane or self.nOutputPlane end

-- the row of the dense kernel (viewed A*B x kH*kW) that each connection lands in
function Map:_rows()
   local ct, a = self.connTable, self._major
   local nB = planes(self, 3 - a)
   local idx = torch.LongTensor(ct:size(1))
   for k = 1, ct:size(1) do idx[k] = (ct[k][a] - 1) * nB + ct[k][3 - a] end
   -- indices live on the weight's device (a module moved to CUDA)
   if self.weight:device() == idx:device() then return idx end
   return T.empty_tensor(idx:dtype(), self.weight:device()):resize(idx:size(1)):copy(idx)
end

function Map:_dense()
   local nA, nB, K = planes(self, self._major), planes(self, 3 - self._major), self.connTable:size(1)
   local w = self.weight.new(nA * nB, self.kH * self.kW):zero()
   w:indexAdd(1, self:_rows(), self.weight:contiguous():view(K, self.kH * self.kW))
   return w:view(nA, nB, self.kH, self.kW)
end

function Map:updateOutput(input)
   local x, single = cc.batched4d(self, NAME, input, true)
   local out = cc.forward(input.new(), x, self:_dense(), self.bias, self.dW, self.dH, 0, 0, 1)
   self.output = single and out:select(1, 1) or out
   return self.output
end

function Map:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = cc.batched4d(self, NAME, input, true)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local gi = cc.backward_input(input.new(), x, g, self:_dense(), self.dW, self.dH, 0, 0, 1)
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function Map:accGradParameters(input, gradOutput, scale)
   local x, single = cc.batched4d(self, NAME, input, true)
   local g = cc.grad4d(NAME, x, gradOutput, single)
   local nIn, nOut, K = self.nInputPlane, self.nOutputPlane, self.connTable:size(1)
   local gw = input.new(nOut, nIn, self.kH, self.kW):zero()
   cc.backward_params(gw, self.gradBias, x, g, scale or 1, self.dW, self.dH, 0, 0, 1)
   self.gradWeight:view(K, self.kH * self.kW):add(gw:view(nOut * nIn, self.kH * self.kW):index(1, self:_rows()))
end

function Map:decayParameters(decay)
   self.weight:add(-decay, self.weight)
   self.bias:add(-decay, self.bias)
end

return Map
