-- dist/powersgd.lua: compress = 'powersgd' for dist.DataParallel: rank-r compression by one
-- step of power iteration (Vogels et al. 2019, "PowerSGD"; PyTorch ships it as a DDP hook).
-- Each gradient with at least two dimensions is a matrix M (n = size(1) rows, the rest as
-- columns), with this rank's residual added (error feedback). With Q (m x r) from the last step
-- (warm start; at first random, the same on every rank):
--   P = M Q, allreduced (sum) together with the bucket's other gradients (biases, batch norm:
--   they go dense), then P's columns made orthonormal (Gram-Schmidt);
--   Q = M^T P, allreduced and divided by N: the average over the ranks of M^T P;
--   the update is P Q^T, the average of the ranks' M projected on span(P), and the residual
--   M - P Q^T stays with the rank.
-- (n + m) r floats cross the wire instead of n m; a matrix whose factors would not be
-- minCompressionRate (2) times smaller goes dense. When r >= min(n, m) P spans every column and
-- the update is the exact average. The first `start` (100) steps are plain averages, as
-- PyTorch's start_powerSGD_iter. Both allreduces stay collectives in bucket order: P's is
-- started by launch, Q's runs when the bucket's handle is waited on.
local torch = require 'moontorch'
local T = require 'moontorch.internal'
local codec = require 'moontorch.dist.codec'
local now = require('moontorch.util.progress').now

local PowerSGD = codec.class()
local M = {}

local DEFAULTS = { rank = 2, start = 100, minCompressionRate = 2, warmStart = true, seed = 0 }

-- the matrix shape (n, m) of a gradient view, or nil for a vector
local function matrixShape(g)
   if g:dim() < 2 then return nil end
   local n = g:size(1)
   return n, g:nElement() / n
end

-- per bucket: the compressed matrices (flat offset, n, m, r, their places in P and Q) and the
-- dense ranges (flat offset, length, place in P after the matrices)
local function plan(ctx, bk, o)
   local mats, dense, np, nq = {}, {}, 0, 0
   local ranges = {}
   for _, ui in ipairs(bk.units) do ranges[#ranges + 1] = ctx.units[ui] end
   table.sort(ranges, function(a, b) return a.lo < b.lo end)
   for _, u in ipairs(ranges) do
      local n, m
      if #u.params == 1 then n, m = matrixShape(ctx.grads[u.params[1]]) end
      local r = n and math.min(o.rank, n, m)
      if n and (n + m) * r * o.minCompressionRate < n * m then
         mats[#mats + 1] = { lo = u.lo, n = n, m = m, r = r, p = np, q = nq }
         np, nq = np + n * r, nq + m * r
      elseif u.hi > u.lo then
         dense[#dense + 1] = { lo = u.lo, len = u.hi - u.lo }
      end
   end
   local pos = np
   for _, d in ipairs(dense) do
      d.p = pos
      pos = pos + d.len
   end
   return { mats = mats, dense = dense, np = np, nq = nq, psize = pos }
end

function M.new(ctx, opts)
   local self = codec.new(PowerSGD, ctx, opts, DEFAULTS)
   local o = self.o
   if type(o.rank) ~= 'number' or o.rank < 1 or o.rank % 1 ~= 0 then
      codec.fail('powersgd', 'rank must be a whole number >= 1, got %s', tostring(o.rank))
   end
   if type(o.minCompressionRate) ~= 'number' or not (o.minCompressionRate >= 0) then -- luacheck: ignore 581
      codec.fail('powersgd', 'minCompressionRate must be a number >= 0, got %s', tostring(o.minCompressionRate))
   end
   -- the first Qs: normal numbers from a generator of their own, so every rank draws the same
   local gen = torch.Generator()
   torch.manualSeed(gen, o.seed)
   self.gen, self.plans = gen, {}
   for b, bk in ipairs(ctx.buckets) do
      local pl = plan(ctx, bk, o)
      self.plans[b] = pl
      if pl.nq > 0 then
         pl.Q = self:residual('q' .. b, pl.nq) -- not a residual, but per-step state to keep likewise
         pl.Q:copy(torch.FloatTensor(pl.nq):normal(gen, 0, 1))
         if o.errorFeedback then
            for i, mt in ipairs(pl.mats) do mt.e = self:residual(('e%d.%d'):format(b, i), mt.n * mt.m) end
         end
      end
   end
   return self
end

-- Gram-Schmidt on the columns of p (n x r) in place, in float64 (p is small), each column
-- projected off the ones before it twice ("twice is enough": the second pass restores the
-- orthogonality the first loses on a column they nearly explain). Every column comes out a unit
-- vector orthogonal to the others, also one of float32 noise (M's rank below r): P stays
-- orthonormal, so P P^T M is a projection of M whatever the columns hold, and error feedback
-- keeps the rest. Only a column with nothing left at float64 precision becomes zero. No
-- threshold could tell noise from a real, nearly dependent direction: float32 noise reaches 6e-6
-- of a column's length, and a random Q has given real remainders of 2.6e-5.
local DEPENDENT = 1e-12
local function orthogonalize(p)
   local r = p:size(2)
   local q = p:double()
   local length = torch.norm(q, 2, 1)
   for i = 1, r do
      local c = q:select(2, i)
      if i > 1 then
         local before = q:narrow(2, 1, i - 1)
         for _ = 1, 2 do c:add(-1, torch.mv(before, torch.mv(before:t(), c))) end
      end
      local norm = c:norm()
      if norm > DEPENDENT * length[1][i] then c:div(norm) else c:zero() end
   end
   p:copy(q)
end
M.orthogonalize = orthogonalize

function PowerSGD:launch(b, bk)
   local pl = self.plans[b]
   if self:warming() or pl.nq == 0 then return self:average(bk) end
   local t0 = now()
   local flat, N, ef = self.ctx.grad, self.N, self.o.errorFeedback
   local P = self:buffer('p' .. b, T.FLOAT, pl.psize)
   local Q = pl.Q
   if not self.o.warmStart then Q:copy(torch.FloatTensor(pl.nq):normal(self.gen, 0, 1)) end
   for _, mt in ipairs(pl.mats) do
      local g = flat:narrow(1, mt.lo + 1, mt.n * mt.m)
      -- M: the gradient plus this rank's residual (the residual tensor itself), or the gradient
      mt.M = (ef and mt.e:add(g) or g):view(mt.n, mt.m)
      mt.g = g:view(mt.n, mt.m)
      mt.P = P:narrow(1, mt.p + 1, mt.n * mt.r):view(mt.n, mt.r)
      mt.Q = Q:narrow(1, mt.q + 1, mt.m * mt.r):view(mt.m, mt.r)
      mt.P:mm(mt.M, mt.Q)
   end
   for _, d in ipairs(pl.dense) do P:narrow(1, d.p + 1, d.len):copy(flat:narrow(1, d.lo + 1, d.len)) end
   local h = self.dist.allreduceAsync(P, 'sum', self.ctx.collectiveOpts)
   self:count(4 * (pl.psize + pl.nq), 4 * bk.grad:nElement(), 'allreduce')
   return self:handle(function()
      self:timed('exchange', function() h:wait() end)
      self:timed('select', function()
         for _, mt in ipairs(pl.mats) do
            orthogonalize(mt.P)
            mt.Q:mm(mt.M:t(), mt.P)
         end
      end)
      self:timed('exchange', function() self.dist.allreduce(Q, 'sum', self.ctx.collectiveOpts) end)
      self:timed('select', function()
         Q:div(N)
         for _, mt in ipairs(pl.mats) do
            mt.g:mm(mt.P, mt.Q:t())
            if ef then mt.M:add(-1, mt.g) end -- the residual: what the projection left out
            mt.M, mt.g, mt.P, mt.Q = nil, nil, nil, nil
         end
         for _, d in ipairs(pl.dense) do
            flat:narrow(1, d.lo + 1, d.len):copy(P:narrow(1, d.p + 1, d.len)):div(N)
         end
      end)
   end, t0, now())
end

function PowerSGD:describe(s) s.rank = self.o.rank end

-- per bucket: how many gradients are compressed, and the floats of P and Q (for tests, benches)
function PowerSGD:layout()
   local r = {}
   for b, pl in ipairs(self.plans) do r[b] = { matrices = #pl.mats, dense = #pl.dense, p = pl.np, q = pl.nq } end
   return r
end

return M
