-- nn.TemporalConvolution(inputFrameSize, outputFrameSize, kW, [dW=1]) as in Torch7: a 1-d
-- convolution over the frames of an nInputFrame x inputFrameSize input (or batch x nInputFrame x
-- inputFrameSize). Weight: outputFrameSize x (kW*inputFrameSize), frame-major. Output frame t is
-- sum over k of W_k * x[t*dW + k] (W_k: the weight's k-th block of inputFrameSize columns), so
-- for each k the frames x[k], x[k + dW], ... read as they lie form a strided matrix (row stride
-- dW*inputFrameSize), and each pass is kW GEMMs on such views (over the whole batch at once
-- where dW divides nInputFrame, else batched per sample): no unfold, no transposed copy (the
-- GEMMs read strided operands in place, csrc/cpu/blas.c).
local torch = require 'moontorch'
require 'moontorch.nn'
local T = require 'moontorch.internal'
local cc = require 'moontorch.nn.conv_common'

local TConv, parent = torch.class('nn.TemporalConvolution', 'nn.Module')

local NAME = 'nn.TemporalConvolution'

function TConv:__init(inputFrameSize, outputFrameSize, kW, dW)
   parent.__init(self)
   dW = dW or 1
   cc.posints(NAME, { { inputFrameSize, 'inputFrameSize' }, { outputFrameSize, 'outputFrameSize' }, { kW, 'kW' },
      { dW, 'dW' } })
   self.inputFrameSize, self.outputFrameSize, self.kW, self.dW = inputFrameSize, outputFrameSize, kW, dW
   self.weight = torch.Tensor(outputFrameSize, kW * inputFrameSize)
   self.bias = torch.Tensor(outputFrameSize)
   self.gradWeight = torch.Tensor(outputFrameSize, kW * inputFrameSize):zero()
   self.gradBias = torch.Tensor(outputFrameSize):zero()
   self:reset()
end

-- Torch7's default: uniform in +-1/sqrt(kW*inputFrameSize)
function TConv:reset(stdv) return cc.reset(self, stdv, self.kW * self.inputFrameSize) end

-- the input as a contiguous N x nInputFrame x inputFrameSize tensor, and whether it had no batch
-- dimension
local function as3d(self, input, what)
   T.expect_tensor(input, NAME, what, 4)
   local d = input:dim()
   if d ~= 2 and d ~= 3 then
      error(('%s: expected a 2-d or 3-d %s (frames x features), got %d-d'):format(NAME, what, d), 4)
   end
   if input:size(d) ~= self.inputFrameSize then
      error(('%s: input frames have %d features, expected inputFrameSize %d'):format(NAME, input:size(d),
         self.inputFrameSize), 4)
   end
   cc.check_frames(NAME, input:size(d - 1), self.kW, 4)
   cc.check_type(NAME, what, input, self.weight, 4)
   local x = input:isContiguous() and input or input:contiguous()
   if d == 2 then return x:view(1, x:size(1), x:size(2)), true end
   return x, false
end

-- frames k, k + dW, ... (0-based k, n of them) of each sample of the contiguous N x nF x F
-- tensor t, as an N x n x F view with row stride dW*F
local function frames(t, k, n, dW)
   local N, nF, F = t:size(1), t:size(2), t:size(3)
   return t.new():set(t:storage(), t:storageOffset() + k * F, { N, n, F }, { nF * F, dW * F, 1 })
end

-- block k (0-based) of the contiguous weight w (nOut x kW*F) as an N-batch (stride 0) of F x nOut
-- (transposed = true) or nOut x F matrices
local function wblock(w, k, N, F, transposed)
   local nOut, ld = w:size(1), w:size(2)
   if transposed then return w.new():set(w:storage(), w:storageOffset() + k * F, { N, F, nOut }, { 0, 1, ld }) end
   return w.new():set(w:storage(), w:storageOffset() + k * F, { N, nOut, F }, { 0, ld, 1 })
end

local function nOutFrames(self, nF) return math.floor((nF - self.kW) / self.dW) + 1 end

-- Flat layout, where dW divides nInputFrame: the whole batch as one N*nF x F matrix, whose rows
-- k, k + dW, ... (R of them) hold, for every sample n, the frames output t of n reads at tap k,
-- at row r = n*nF/dW + t (the other rows straddle two samples: garbage in the forward, zeros in
-- the gradients). So each pass is kW GEMMs with the batch in the rows instead of N*kW small
-- ones (with threads, each GEMM a parallel region: far fewer of them).
local function flatRows(N, nF, kW, dW) return math.floor((N * nF - kW) / dW) + 1 end

-- rows k, k + dW, ... of the contiguous tensor t seen as an M x F matrix: R x F, row stride dW*F
local function flatFrames(t, k, R, dW, F)
   return t.new():set(t:storage(), t:storageOffset() + k * F, { R, F }, { dW * F, 1 })
end

-- the N x oF x nOut rows of an R x nOut flat result (r = n*nF/dW + t)
local function flatOut(buf, N, oF, nF, dW, nOut)
   return buf.new():set(buf:storage(), buf:storageOffset(), { N, oF, nOut }, { nF / dW * nOut, nOut, 1 })
end

local function scratch(self, field, like)
   local b = self[field]
   if not torch.isTensor(b) or b:type() ~= like:type() then b = like.new(); self[field] = b end
   return b
end

-- gradOutput in the flat layout: R x nOut, zeros in the rows no output maps to
local function flatGrad(self, dy, N, oF, nF, nOut)
   local R = flatRows(N, nF, self.kW, self.dW)
   local g = scratch(self, '_flatGrad', dy):resize(R, nOut):zero()
   flatOut(g, N, oF, nF, self.dW, nOut):copy(dy)
   return g, R
end

function TConv:updateOutput(input)
   local x, single = as3d(self, input, 'input')
   local N, F, nOut = x:size(1), x:size(3), self.outputFrameSize
   local oF = nOutFrames(self, x:size(2))
   local w = self.weight:isContiguous() and self.weight or self.weight:contiguous()
   local y = self._output3
   if not torch.isTensor(y) or y:type() ~= x:type() then y = x.new(); self._output3 = y end
   y:resize(N, oF, nOut)
   local nF = x:size(2)
   if N > 1 and nF % self.dW == 0 then
      local R = flatRows(N, nF, self.kW, self.dW)
      local buf = scratch(self, '_flatOut', x):resize(R, nOut)
      if self.bias then buf:copy(self.bias:view(1, nOut):expand(R, nOut)) else buf:zero() end
      for k = 0, self.kW - 1 do
         local xk, wk = flatFrames(x, k, R, self.dW, F), w:narrow(2, k * F + 1, F)
         buf:addmm(1, buf, 1, xk, wk:t())
      end
      y:copy(flatOut(buf, N, oF, nF, self.dW, nOut))
      self.output = single and y:select(1, 1) or y
      return self.output
   end
   if self.bias then y:copy(self.bias:view(1, 1, nOut):expand(N, oF, nOut)) else y:zero() end
   for k = 0, self.kW - 1 do
      local xk, wk = frames(x, k, oF, self.dW), wblock(w, k, N, F, true)
      y:baddbmm(1, y, 1, xk, wk)
   end
   self.output = single and y:select(1, 1) or y
   return self.output
end

-- gradOutput (frames x out, batched or not) as a contiguous N x oF x out tensor
local function grad3d(self, gradOutput, single, N, oF)
   T.expect_tensor(gradOutput, NAME, 'gradOutput', 3)
   local g = single and gradOutput:dim() == 2 and gradOutput:view(1, gradOutput:size(1), gradOutput:size(2))
      or gradOutput
   if g:dim() ~= 3 or g:size(1) ~= N or g:size(2) ~= oF or g:size(3) ~= self.outputFrameSize then
      error(('%s: gradOutput has size %s, expected %s%dx%d'):format(NAME, table.concat(T.sizes(gradOutput), 'x'),
         single and '' or N .. 'x', oF, self.outputFrameSize), 3)
   end
   return g:isContiguous() and g or g:contiguous()
end

function TConv:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, single = as3d(self, input, 'input')
   local N, F = x:size(1), x:size(3)
   local oF = nOutFrames(self, x:size(2))
   local dy = grad3d(self, gradOutput, single, N, oF)
   local w = self.weight:isContiguous() and self.weight or self.weight:contiguous()
   local gi = self._gradInput3
   if not torch.isTensor(gi) or gi:type() ~= x:type() then gi = x.new(); self._gradInput3 = gi end
   gi:resizeAs(x):zero()
   local nF = x:size(2)
   if N > 1 and nF % self.dW == 0 then
      local g, R = flatGrad(self, dy, N, oF, nF, self.outputFrameSize)
      for k = 0, self.kW - 1 do
         local gk, wk = flatFrames(gi, k, R, self.dW, F), w:narrow(2, k * F + 1, F)
         gk:addmm(1, gk, 1, g, wk)
      end
      self.gradInput = single and gi:select(1, 1) or gi
      return self.gradInput
   end
   -- frames k + t*dW receive dy[t] * W_k; for dW < kW the passes overlap and add up
   for k = 0, self.kW - 1 do
      local gk, wk = frames(gi, k, oF, self.dW), wblock(w, k, N, F, false)
      gk:baddbmm(1, gk, 1, dy, wk)
   end
   self.gradInput = single and gi:select(1, 1) or gi
   return self.gradInput
end

function TConv:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x, single = as3d(self, input, 'input')
   local N, F, nOut = x:size(1), x:size(3), self.outputFrameSize
   local oF = nOutFrames(self, x:size(2))
   local dy = grad3d(self, gradOutput, single, N, oF)
   local gw = self.gradWeight
   local nF = x:size(2)
   if N > 1 and nF % self.dW == 0 then
      local g, R = flatGrad(self, dy, N, oF, nF, nOut)
      for k = 0, self.kW - 1 do
         local gk, xk = gw:narrow(2, k * F + 1, F), flatFrames(x, k, R, self.dW, F)
         gk:addmm(1, gk, scale, g:t(), xk)
      end
      if self.gradBias then self.gradBias:add(scale, dy:view(N * oF, nOut):sum(1):view(nOut)) end
      return
   end
   local dyT = dy:transpose(2, 3)
   for k = 0, self.kW - 1 do
      local gk, xk = gw:narrow(2, k * F + 1, F), frames(x, k, oF, self.dW)
      gk:addbmm(1, gk, scale, dyT, xk)
   end
   if self.gradBias then self.gradBias:add(scale, dy:view(N * oF, nOut):sum(1):view(nOut)) end
end

function TConv:clearState()
   self._output3, self._gradInput3, self._flatOut, self._flatGrad = nil, nil, nil, nil
   return parent.clearState(self)
end

function TConv:__tostring__()
   return ('%s(%d -> %d, %d, %d)'):format(torch.type(self), self.inputFrameSize, self.outputFrameSize, self.kW,
      self.dW)
end

return TConv
