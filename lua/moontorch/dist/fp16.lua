-- dist/fp16.lua: compress = 'fp16' for dist.DataParallel: each bucket crosses the wire as
-- float16, half the bytes of float32 (PyTorch's fp16_compress_hook, Horovod's fp16
-- compression). The bucket is divided by the rank count before it is rounded to half, so the
-- sum of N halves stays in half's range wherever the average does (dividing after the sum
-- overflowed in both of those projects). No error feedback: one rounding per value, whose error
-- is far below the gradient's noise.
local T = require 'moontorch.internal'
local codec = require 'moontorch.dist.codec'
local now = require('moontorch.util.progress').now

local FP16 = codec.class()
local M = {}

function M.new(ctx, opts)
   local self = codec.new(FP16, ctx, opts, { errorFeedback = false })
   if self.o.errorFeedback then codec.fail('fp16', 'has no error feedback (errorFeedback must be false)') end
   return self
end

function FP16:launch(b, bk)
   if self:warming() then return self:average(bk) end
   local t0 = now()
   local g = bk.grad
   local n = g:nElement()
   local wire = self:buffer(b, T.HALF, n)
   wire:copy(g:mul(1 / self.N))
   local h = self.dist.allreduceAsync(wire, 'sum', self.ctx.collectiveOpts)
   self:count(2 * n, 4 * n, 'allreduce')
   return self:handle(function()
      self:timed('exchange', function() h:wait() end)
      self:timed('select', function() g:copy(wire) end)
   end, t0, now())
end

return M
