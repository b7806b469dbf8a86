-- dist/onebit.lua: compress = 'onebit' for dist.DataParallel: 1-bit quantisation with error
-- feedback (Seide et al. 2014, "1-Bit Stochastic Gradient Descent"; DeepSpeed's 1-bit Adam
-- keeps the same compensation). Per bucket, every rank adds its residual to its gradient, and
-- sends, per chunk of `chunk` elements (2048), one scale (the mean magnitude, the scale of least
-- squared error for a sign code) and one bit per element (the sign); what the code leaves out
-- stays in the residual for the next step. The codes travel by allgather (n/8 bytes and
-- 4 n/chunk per rank, 30x less than float32), and every rank decodes every rank's code in rank
-- order, so every rank gets the same average. The bodies are the backend slots
-- dist_onebit_encode and dist_onebit_decode (csrc/cpu/dist_onebit.c, kernels/dist_onebit.cu).
local T = require 'moontorch.internal'
local dlib = require 'moontorch.dist.lib'
local codec = require 'moontorch.dist.codec'
local now = require('moontorch.util.progress').now

local D = dlib.C
local OneBit = codec.class()
local M = {}

function M.new(ctx, opts)
   local self = codec.new(OneBit, ctx, opts, { chunk = 2048 })
   local c = self.o.chunk
   if type(c) ~= 'number' or c < 8 or c % 8 ~= 0 or c > 2 ^ 30 then
      codec.fail('onebit', 'chunk must be a positive multiple of 8, got %s', tostring(c))
   end
   if self.o.errorFeedback then
      for b, bk in ipairs(ctx.buckets) do self:residual('e' .. b, bk.hi - bk.lo) end
   end
   return self
end

-- bytes of one rank's code for n elements: the bits, then the scales
function M.codeBytes(n, chunk)
   return math.ceil(n / 8) + 4 * math.ceil(n / chunk)
end

function OneBit:launch(b, bk)
   if self:warming() then return self:average(bk) end
   local t0 = now()
   local g, chunk, N = bk.grad, self.o.chunk, self.N
   local n = g:nElement()
   local nbytes, nchunks = math.ceil(n / 8), math.ceil(n / chunk)
   -- the residual (or, without error feedback, a scratch copy of the gradient) gets the code's
   -- error; the addition of the gradient happens inside the encoding's one pass
   local e, add
   if self.o.errorFeedback then e, add = self:residual('e' .. b, n), g
   else e = self:buffer('e' .. b, T.FLOAT, n):copy(g) end
   local bits, scales = self:buffer('bits' .. b, T.BYTE, nbytes), self:buffer('scales' .. b, T.FLOAT, nchunks)
   T.check(D.mt_dist_onebit_encode(e.h, add and add.h or nil, bits.h, scales.h, chunk), 'dist.onebit')
   local allBits = self:buffer('allbits' .. b, T.BYTE, N * nbytes)
   local allScales = self:buffer('allscales' .. b, T.FLOAT, N * nchunks)
   local hb = self.dist.allgatherAsync(allBits, bits)
   local hs = self.dist.allgatherAsync(allScales, scales)
   self:count(M.codeBytes(n, chunk), 4 * n, 'allgather')
   return self:handle(function()
      self:timed('exchange', function()
         hb:wait()
         hs:wait()
      end)
      self:timed('select', function()
         T.check(D.mt_dist_onebit_decode(g.h, allBits.h, allScales.h, chunk, N, 1 / N), 'dist.onebit')
      end)
   end, t0, now())
end

function OneBit:describe(s) s.chunk = self.o.chunk end

return M
