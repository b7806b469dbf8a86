-- lapack_spec.lua: Torch7's LAPACK functions on fresh random, well-conditioned, odd-sized
-- matrices: each result is checked by the property that defines it (A X = B, Q^T Q = I, A V =
-- V diag(e), U S V^T = A, ...) and, for eigenvalues, singular values and least squares, against
-- numpy (/usr/bin/python3), in float64 and (looser) float32; non-contiguous inputs, reused and
-- in-place results, and the errors for singular, not positive definite, non-square and
-- wrongly typed inputs.
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'

local D, F = 'torch.DoubleTensor', 'torch.FloatTensor'
local TOL = { [D] = 1e-10, [F] = 2e-4 }

local function dtype_of(ty) return (T.parse_typename(ty)) end

-- a matrix from row-major flat values
local function mat(flat, r, c, ty) return T.from_flat(flat, { r, c }, dtype_of(ty or D), T.CPU_DEVICE) end
local function rand(r, c, ty) return (util.rand_tensor({ r, c }, ty or D, -1, 1)) end

-- well-conditioned: random plus n on the diagonal
local function wellcond(n, ty)
   local f = util.rand_flat(n * n, -1, 1)
   for i = 0, n - 1 do f[i * n + i + 1] = f[i * n + i + 1] + n end
   return mat(f, n, n, ty), f
end

-- symmetric positive definite: R R^T + n I
local function spd(n, ty)
   local r = rand(n, n, D)
   local a = r * r:t() + torch.eye(n):double() * n
   return a:type(ty or D)
end

local function diag(e, ty)
   local n = e:size(1)
   local f = {}
   for i = 1, n * n do f[i] = 0 end
   local ev = util.flat(e)
   for i = 0, n - 1 do f[i * n + i + 1] = ev[i + 1] end
   return mat(f, n, n, ty or D)
end

local function maxabs(x) return x:clone():abs():max() end
local function maxdiff(x, y) return maxabs(x - y) end

-- the same values in a non-contiguous layout: every other column of a wider matrix
local function strided(t)
   local r, c = t:size(1), t:size(2)
   local v = torch.zeros(r, 2 * c):type(t:type()):unfold(2, 1, 2):select(3, 1)
   v:copy(t)
   assert(not v:isContiguous() and v:stride(2) == 2 and maxdiff(v, t) == 0)
   return v
end

-- the same values column-major (strides 1, rows): LAPACK's own layout
local function colmajor(t) return t:t():clone():t() end

local function is_colmajor(t) return t:stride(1) == 1 and t:stride(2) == t:size(1) end

-- numpy references: one python run for a list of {kind, A [, B]}; returns a list of flat arrays
local function numpy(cases)
   local inp = os.tmpname()
   local f = assert(io.open(inp, 'w'))
   for _, c in ipairs(cases) do
      f:write(c[1], '\n')
      for k = 2, 3 do
         local m = c[k]
         if m then
            f:write(m:size(1), ' ', m:size(2), '\n')
            local fl = util.flat(m)
            for i = 1, #fl do fl[i] = ('%.17g'):format(fl[i]) end
            f:write(table.concat(fl, ' '), '\n')
         end
      end
   end
   f:close()
   local py = [[
import sys, numpy as np
lines = open(sys.argv[1]).read().split('\n'); i = 0
def m():
    global i
    r, c = map(int, lines[i].split()); v = np.array([float(x) for x in lines[i+1].split()]).reshape(r, c); i += 2
    return v
while i < len(lines) and lines[i]:
    kind = lines[i]; i += 1
    a = m()
    if kind == 'eig':
        w = np.linalg.eigvals(a); w = sorted(w, key=lambda z: (round(z.real, 6), z.imag))
        out = [x for z in w for x in (z.real, z.imag)]
    elif kind == 'symeig': out = np.linalg.eigvalsh(a, 'U')
    elif kind == 'svd': out = np.linalg.svd(a, compute_uv=False)
    elif kind == 'lstsq': out = np.linalg.lstsq(a, m(), rcond=None)[0].ravel()
    print(' '.join(repr(float(x)) for x in out))
]]
   local script = os.tmpname()
   util.write_bytes(script, py)
   local out, rc = util.sh(("%s %s %s"):format(util.PY, script, inp))
   os.remove(inp)
   os.remove(script)
   assert(rc == 0, 'numpy failed: ' .. out)
   local res = {}
   for line in out:gmatch('[^\n]+') do
      if not line:match('^exit=') then
         local r = {}
         for x in line:gmatch('%S+') do r[#r + 1] = tonumber(x) end
         res[#res + 1] = r
      end
   end
   assert(#res == #cases, 'numpy answered ' .. #res .. ' of ' .. #cases .. ' cases: ' .. out)
   return res
end

-- eigenvalues as sorted flat (re, im) pairs, the order numpy's side uses
local function sorted_pairs(e)
   local p = {}
   for i = 1, e:size(1) do p[i] = { e[i][1], e[i][2] } end
   table.sort(p, function(x, y)
      local rx, ry = math.floor(x[1] * 1e6 + 0.5), math.floor(y[1] * 1e6 + 0.5)
      if rx ~= ry then return rx < ry end
      return x[2] < y[2]
   end)
   local f = {}
   for _, z in ipairs(p) do f[#f + 1], f[#f + 2] = z[1], z[2] end
   return f
end

describe('LAPACK functions', function()
   for _, ty in ipairs { D, F } do
      local tol = TOL[ty]
      describe(ty, function()
         it('gesv solves A X = B, B 2-d or 1-d, LU column-major, inputs untouched', function()
            local n, k = 7, 3
            local a, b = wellcond(n, ty), rand(n, k, ty)
            local a0, b0 = a:clone(), b:clone()
            local x, lu = torch.gesv(b, a)
            assert.are.same({ n, k }, T.sizes(x))
            assert.is_true(is_colmajor(x) and is_colmajor(lu))
            assert(maxdiff(a * x, b) < tol * n, 'residual ' .. maxdiff(a * x, b))
            assert.are.equal(0, maxdiff(a, a0) + maxdiff(b, b0))
            -- LU holds the factors: unit-lower L times upper U is A with its rows permuted
            local l, u = lu:clone(), lu:clone()
            for i = 1, n do
               for j = 1, n do
                  if j > i then l[i][j] = 0 elseif j == i then l[i][j] = 1 else u[i][j] = 0 end
               end
            end
            local plu, used = l * u, {}
            for i = 1, n do
               local found
               for r = 1, n do
                  if not used[r] and maxdiff(plu:select(1, i), a:select(1, r)) < tol * n then found = r end
               end
               assert(found, 'row ' .. i .. ' of L U is no row of A')
               used[found] = true
            end
            local x1 = torch.gesv(b:select(2, 2), a)
            assert.are.same({ n, 1 }, T.sizes(x1))
            assert(maxdiff(x1:select(2, 1), x:select(2, 2)) < tol)
         end)

         it('gesv and trtrs take non-contiguous inputs and reuse or update result tensors', function()
            local n, k = 5, 3
            local a, b = wellcond(n, ty), rand(n, k, ty)
            local x = torch.gesv(b, a)
            local resb, resa = torch.Tensor():type(ty), torch.Tensor():type(ty)
            local rb, ra = torch.gesv(resb, resa, strided(b), strided(a))
            assert.are.equal(resb, rb)
            assert.are.equal(resa, ra)
            assert(maxdiff(resb, x) < tol)
            -- in place, Torch7's torch.gesv(b, a, b, a): column-major and row-major operands
            for _, layout in ipairs { colmajor, function(t) return t:clone() end } do
               local bb, aa = layout(b), layout(a)
               torch.gesv(bb, aa, bb, aa)
               assert(maxdiff(bb, x) < tol, 'in-place gesv')
               assert(maxdiff(a * bb, b) < tol * n)
            end
         end)

         it('trtrs solves with the upper or lower triangle, transposed or not, unit or not', function()
            local n, k = 7, 2
            local a, af = wellcond(n, ty)
            local b = rand(n, k, ty)
            for _, uplo in ipairs { 'U', 'L' } do
               for _, trans in ipairs { 'N', 'T' } do
                  for _, unit in ipairs { 'N', 'U' } do
                     local f = {}
                     for i = 0, n - 1 do
                        for j = 0, n - 1 do
                           local keep = (uplo == 'U' and j >= i) or (uplo == 'L' and j <= i)
                           f[i * n + j + 1] = keep and af[i * n + j + 1] or 0
                           if i == j and unit == 'U' then f[i * n + j + 1] = 1 end
                        end
                     end
                     local tri = mat(f, n, n, ty)
                     local op = trans == 'T' and tri:t() or tri
                     local x = torch.trtrs(b, a, uplo, trans, unit)
                     assert(maxdiff(op * x, b) < tol * n, uplo .. trans .. unit)
                  end
               end
            end
         end)

         it('inverse: inverse(A) A = I, into a given result, from a non-contiguous input', function()
            local n = 9
            local a = wellcond(n, ty)
            local inv = torch.inverse(a)
            local eye = torch.eye(n):type(ty)
            assert(maxdiff(inv * a, eye) < tol * n)
            assert(maxdiff(a * inv, eye) < tol * n)
            assert.is_true(is_colmajor(inv))
            local res = torch.Tensor(3, 4):type(ty)
            assert.are.equal(res, torch.inverse(res, strided(a)))
            assert(maxdiff(res, inv) < tol)
         end)

         it('potrf (U and L), potrs and potri', function()
            local n, k = 7, 3
            local a = spd(n, ty)
            local u = torch.potrf(a)
            local l = torch.potrf(a, 'L')
            local scale = maxabs(a)
            assert(maxdiff(u:t() * u, a) < tol * scale, 'U^T U')
            assert(maxdiff(l * l:t(), a) < tol * scale, 'L L^T')
            for i = 1, n do
               for j = 1, n do
                  if i > j then assert.are.equal(0, u[i][j]) end
                  if i < j then assert.are.equal(0, l[i][j]) end
               end
            end
            local b = rand(n, k, ty)
            for _, c in ipairs { { u, 'U' }, { l, 'L' } } do
               local x = torch.potrs(b, c[1], c[2])
               assert(maxdiff(a * x, b) < tol * n, 'potrs ' .. c[2])
               local inv = torch.potri(c[1], c[2])
               assert(maxdiff(inv * a, torch.eye(n):type(ty)) < tol * n, 'potri ' .. c[2])
               assert(maxdiff(inv, inv:t()) == 0, 'potri symmetric')
            end
            local res = torch.Tensor():type(ty)
            torch.potrf(res, strided(a), 'L')
            assert(maxdiff(res, l) < tol)
         end)

         it('pstrf: P^T A P = U^T U with the pivots (an IntTensor permutation)', function()
            local n = 7
            local a = spd(n, ty)
            for _, uplo in ipairs { 'U', 'L' } do
               local f, piv = torch.pstrf(a, uplo)
               assert.are.equal('torch.IntTensor', piv:type())
               local seen, p = {}, util.flat(piv)
               for i = 1, n do
                  assert(p[i] >= 1 and p[i] <= n and not seen[p[i]])
                  seen[p[i]] = true
               end
               local prod = uplo == 'U' and f:t() * f or f * f:t()
               for i = 1, n do
                  for j = 1, n do
                     assert(math.abs(prod[i][j] - a[p[i]][p[j]]) < tol * n * n, 'pstrf ' .. uplo)
                  end
               end
               -- complete pivoting picks the largest remaining diagonal first
               local dmax = 1
               for i = 2, n do if a[i][i] > a[dmax][dmax] then dmax = i end end
               assert.are.equal(dmax, p[1])
            end
            local res, piv = torch.Tensor():type(ty), torch.IntTensor()
            local r1, r2 = torch.pstrf(res, piv, a, 'U', -1)
            assert.are.equal(res, r1)
            assert.are.equal(piv, r2)
         end)

         it('qr: Q orthonormal, R upper triangular, QR = A (tall and wide); geqrf + orgqr give Q', function()
            for _, sz in ipairs { { 7, 5 }, { 5, 7 }, { 5, 5 } } do
               local m, n = sz[1], sz[2]
               local k = math.min(m, n)
               local a = rand(m, n, ty)
               local q, r = torch.qr(a)
               assert.are.same({ m, k }, T.sizes(q))
               assert.are.same({ k, n }, T.sizes(r))
               assert(is_colmajor(q))
               assert(maxdiff(q:t() * q, torch.eye(k):type(ty)) < tol * m, 'Q^T Q')
               assert(maxdiff(q * r, a) < tol * m, 'QR')
               for i = 1, k do for j = 1, i - 1 do assert.are.equal(0, r[i][j]) end end
               local ref, tau = torch.geqrf(a)
               assert.are.same({ m, n }, T.sizes(ref))
               assert.are.same({ k }, T.sizes(tau))
               local q2 = torch.orgqr(ref, tau)
               assert(maxdiff(q2, q) < tol, 'orgqr')
               local qq, rr = torch.Tensor():type(ty), torch.Tensor(2, 2):type(ty)
               torch.qr(qq, rr, strided(a))
               assert(maxdiff(qq, q) < tol and maxdiff(rr, r) < tol, 'qr into given tensors')
            end
         end)

         if ty == F then
            -- Float32 factors in float64 and rounds: Torch7's own tests ask QR = A to 1e-5, which
            -- float32 Householder QR misses by a few ulps on matrices of positive entries.
            it('float QR reproduces A within 2 ulps of its largest column norm (qr and geqrf + orgqr)', function()
               for _, sz in ipairs { { 512, 64 }, { 64, 512 }, { 256, 256 } } do
                  local a = util.rand_tensor(sz, F, 0, 1)
                  local ad = a:double()
                  local bound = 2 * 2 ^ -24 * torch.norm(ad, 2, 1):max()
                  local q, r = torch.qr(a)
                  assert.are.equal(F, torch.type(q))
                  local err = (q:double() * r:double() - ad):abs():max()
                  assert(err < bound, ('qr %dx%d: %g >= %g'):format(sz[1], sz[2], err, bound))
                  local m, tau = torch.geqrf(a)
                  err = (torch.orgqr(m, tau):double() * r:double() - ad):abs():max()
                  assert(err < bound, ('geqrf + orgqr %dx%d: %g >= %g'):format(sz[1], sz[2], err, bound))
               end
            end)
         end

         it('ormqr multiplies by Q or Q^T from the left or the right', function()
            local n = 7
            local a = rand(n, n, ty)
            local q = torch.qr(a)
            local ref, tau = torch.geqrf(a)
            local cl, cr = rand(n, 3, ty), rand(3, n, ty)
            assert(maxdiff(torch.ormqr(ref, tau, cl), q * cl) < tol * n, 'L N')
            assert(maxdiff(torch.ormqr(ref, tau, cl, 'L', 'T'), q:t() * cl) < tol * n, 'L T')
            assert(maxdiff(torch.ormqr(ref, tau, cr, 'R'), cr * q) < tol * n, 'R N')
            assert(maxdiff(torch.ormqr(ref, tau, cr, 'R', 'T'), cr * q:t()) < tol * n, 'R T')
            local res = torch.Tensor():type(ty)
            assert.are.equal(res, torch.ormqr(res, strided(ref), tau, strided(cl)))
            assert(maxdiff(res, q * cl) < tol * n)
         end)

         it('symeig: A V = V diag(e), ascending, V orthonormal; uplo picks the triangle; N gives values', function()
            local n = 7
            local s = rand(n, n, ty)
            s = s + s:t()
            local e, v = torch.symeig(s, 'V')
            assert(is_colmajor(v))
            assert(maxdiff(s * v, v * diag(e, ty)) < tol * n, 'A V = V diag(e)')
            assert(maxdiff(v:t() * v, torch.eye(n):type(ty)) < tol * n)
            for i = 2, n do assert(e[i] >= e[i - 1]) end
            -- garbage in the triangle not named: 'L' reads the lower one only
            local junk = s:clone()
            for i = 1, n do for j = i + 1, n do junk[i][j] = 100 + i end end
            local el = torch.symeig(junk, 'N', 'L')
            assert(maxdiff(el, e) < tol * n, "symeig 'L'")
            local eu = torch.symeig(junk:t():clone(), 'N', 'U')
            assert(maxdiff(eu, e) < tol * n, "symeig 'U'")
            -- with 'N' a given eigenvector result is left alone
            local re, rv = torch.Tensor():type(ty), torch.Tensor(2, 3):type(ty):fill(7)
            local o1, o2 = torch.symeig(re, rv, s)
            assert(o1 == re and o2 == rv and maxdiff(re, e) < tol * n)
            assert.are.same({ 2, 3 }, T.sizes(rv))
            assert.are.equal(7, rv:min())
            assert.are.equal(7, rv:max())
         end)

         it('eig: A v = w v for real and complex-pair eigenvectors (LAPACK packing)', function()
            local n = 7
            local a = rand(n, n, ty)
            local e, v = torch.eig(a, 'V')
            assert.are.same({ n, 2 }, T.sizes(e))
            assert(is_colmajor(v))
            local j = 1
            local av = a * v
            while j <= n do
               local wr, wi = e[j][1], e[j][2]
               if wi == 0 then
                  assert(maxdiff(av:select(2, j), v:select(2, j) * wr) < tol * n, 'real eigenpair ' .. j)
                  j = j + 1
               else
                  local vr, vi = v:select(2, j), v:select(2, j + 1)
                  assert(maxdiff(av:select(2, j), vr * wr - vi * wi) < tol * n, 'complex pair, real part')
                  assert(maxdiff(av:select(2, j + 1), vr * wi + vi * wr) < tol * n, 'complex pair, imaginary part')
                  assert.are.equal(-wi, e[j + 1][2])
                  j = j + 2
               end
            end
            local e2 = torch.eig(strided(a))
            util.assert_close(sorted_pairs(e2), sorted_pairs(e), { atol = tol * n, rtol = tol }, 'eig N')
         end)

         it('svd: U S V^T = A for S and A, U and V orthonormal', function()
            for _, sz in ipairs { { 7, 5 }, { 5, 7 } } do
               local m, n = sz[1], sz[2]
               local k = math.min(m, n)
               local a = rand(m, n, ty)
               local u, s, v = torch.svd(a)
               assert.are.same({ m, k }, T.sizes(u))
               assert.are.same({ k }, T.sizes(s))
               assert.are.same({ n, k }, T.sizes(v))
               assert(is_colmajor(u))
               assert(maxdiff(u * diag(s, ty) * v:t(), a) < tol * m, 'USV^T')
               assert(maxdiff(u:t() * u, torch.eye(k):type(ty)) < tol * m)
               assert(maxdiff(v:t() * v, torch.eye(k):type(ty)) < tol * m)
               for i = 2, k do assert(s[i] <= s[i - 1] and s[i] >= 0) end
               local ua, sa, va = torch.svd(strided(a), 'A')
               assert.are.same({ m, m }, T.sizes(ua))
               assert.are.same({ n, n }, T.sizes(va))
               assert(maxdiff(sa, s) < tol * m)
               assert(maxdiff(ua:t() * ua, torch.eye(m):type(ty)) < tol * m)
               assert(maxdiff(va:t() * va, torch.eye(n):type(ty)) < tol * m)
               assert(maxdiff(ua:narrow(2, 1, k) * diag(s, ty) * va:narrow(2, 1, k):t(), a) < tol * m)
               local ru, rs, rv = torch.Tensor():type(ty), torch.Tensor():type(ty), torch.Tensor(1):type(ty)
               local o1, o2, o3 = torch.svd(ru, rs, rv, a, 'S')
               assert(o1 == ru and o2 == rs and o3 == rv)
               assert(maxdiff(ru * diag(rs, ty) * rv:t(), a) < tol * m)
            end
         end)
      end)
   end

   it('agrees with numpy: eig, symeig, svd and gels (least squares and least norm)', function()
      local cases, ours = {}, {}
      local function add(kind, a, b, mine) cases[#cases + 1] = { kind, a, b }; ours[#ours + 1] = mine end
      local g = rand(7, 7)
      add('eig', g, nil, sorted_pairs(torch.eig(g)))
      local s = rand(9, 9)
      s = s + s:t()
      add('symeig', s, nil, util.flat(torch.symeig(s)))
      local w = rand(5, 8)
      add('svd', w, nil, util.flat((select(2, torch.svd(w)))))
      local tall, bt = rand(9, 5), rand(9, 3)
      local x = torch.gels(bt, tall)
      -- n rows, as Torch7's code (not its doc) gives them
      assert.are.same({ 5, 3 }, T.sizes(x))
      add('lstsq', tall, bt, util.flat(x))
      -- x views the first n rows of LAPACK's m x k block; the rows below hold the residual: their
      -- sum of squares is ||A X - B||^2
      local block = torch.DoubleTensor(x:storage(), x:storageOffset(), torch.LongStorage { 9, 3 },
         torch.LongStorage { 1, x:stride(2) })
      local resid = (tall * x - bt)
      for j = 1, 3 do
         local r1 = resid:select(2, j):norm()
         local r2 = block:select(2, j):narrow(1, 6, 4):norm()
         assert(math.abs(r1 - r2) < 1e-10, 'gels residual rows')
      end
      local wide, bw = rand(3, 7), rand(3, 2)
      local xw = torch.gels(bw, wide)
      assert.are.same({ 7, 2 }, T.sizes(xw))
      add('lstsq', wide, bw, util.flat(xw))
      -- a 1-d right-hand side is one column
      local x1 = torch.gels(bt:select(2, 2), tall)
      assert.are.same({ 5, 1 }, T.sizes(x1))
      assert(maxdiff(x1:select(2, 1), x:select(2, 2)) < 1e-10)
      local ref = numpy(cases)
      for i, c in ipairs(cases) do
         util.assert_close(ours[i], ref[i], { atol = 1e-10, rtol = 1e-9 }, c[1] .. ' vs numpy')
      end
      -- float32 gels against the same float64 answer
      local xf = torch.gels(bt:float(), tall:float())
      util.assert_close(util.flat(xf), ref[4], { atol = 2e-4, rtol = 2e-4 }, 'float gels')
   end)

   it('reports singular, not positive definite, non-square and wrongly typed inputs', function()
      local n = 5
      local a = wellcond(n)
      local sing = a:clone()
      sing:select(2, 3):zero()
      sing:select(1, 3):zero() -- row and column 3 zero: U(3,3) is exactly zero after pivoting
      util.assert_error(function() torch.gesv(rand(n, 2), sing) end, 'gesv', 'singular', 'U(3,3)')
      util.assert_error(function() torch.inverse(sing) end, 'inverse', 'singular', 'U(3,3)')
      local tri = torch.eye(n):double()
      tri[4][4] = 0
      util.assert_error(function() torch.trtrs(rand(n, 1), tri) end, 'trtrs', 'singular', 'A(4,4)')
      local npd = spd(n)
      npd[3][3] = -1
      util.assert_error(function() torch.potrf(npd) end, 'potrf', 'not positive definite', 'order')
      util.assert_error(function() torch.pstrf(-spd(n)) end, 'pstrf', 'not positive semidefinite')
      util.assert_error(function() torch.potri(tri, 'L') end, 'potri', 'singular', '(4,4)')
      local ref, tau = torch.geqrf(rand(n, 3))
      util.assert_error(function() torch.ormqr(ref, tau, rand(n + 1, 2)) end, 'ormqr', 'rows')
      util.assert_error(function() torch.orgqr(ref, rand(4, 1):select(2, 1)) end, 'orgqr', 'tau', 'at most 3')
      util.assert_error(function() torch.gesv(rand(n, 2), rand(n, n + 1)) end, 'gesv', 'square', '5x6')
      util.assert_error(function() torch.inverse(rand(3, 4)) end, 'inverse', 'square')
      util.assert_error(function() torch.potrf(rand(3, 4)) end, 'potrf', 'square')
      util.assert_error(function() torch.symeig(rand(3, 4)) end, 'symeig', 'square')
      util.assert_error(function() torch.gesv(rand(n + 2, 1), a) end, 'gesv', 'incompatible')
      util.assert_error(function() torch.inverse(torch.IntTensor(3, 3):fill(1)) end, 'inverse', 'int32',
         'FloatTensor or DoubleTensor')
      util.assert_error(function() torch.gesv(rand(n, 1, F), a) end, 'gesv', 'float32', 'float64')
      util.assert_error(function() torch.svd(rand(3, 3), 'X') end, 'svd', "'S' or 'A'", "'X'")
      util.assert_error(function() torch.potrf(spd(3), 'upper') end, 'potrf', "'U' or 'L'")
      util.assert_error(function() torch.gesv(a) end, 'gesv', 'expected arguments')
      util.assert_error(function() torch.qr(torch.Tensor(2, 0)) end, 'qr', 'empty')
      util.assert_error(function() torch.inverse(torch.Tensor(3)) end, 'inverse', '2-d')
      local r = torch.DoubleTensor()
      util.assert_error(function() torch.gesv(r, r, rand(n, 1), a) end, 'gesv', 'share memory')
   end)

   it('never prints: LAPACK errors come back as Lua errors only', function()
      local script = os.tmpname()
      util.write_bytes(script, [[
package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
local torch = require 'moontorch'
local z = torch.zeros(4, 4):double()
for _, f in ipairs { function() torch.gesv(torch.ones(4, 1):double(), z) end, function() torch.inverse(z) end,
   function() torch.potrf(-torch.eye(4):double()) end, function() torch.svd(torch.ones(3, 3):double(), 'Q') end } do
   assert(not pcall(f))
end
]])
      local out, rc = util.sh('luajit ' .. script)
      os.remove(script)
      assert.are.equal(0, rc, out)
      assert.are.equal('exit=0', (out:gsub('%s+$', '')), 'unexpected output: ' .. out)
   end)

   util.gpu_it('CUDA tensors get a clear CPU-only error', function()
      local a = wellcond(3):cuda()
      util.assert_error(function() torch.inverse(a) end, 'inverse', 'CPU only', ':double()')
   end)
end)
