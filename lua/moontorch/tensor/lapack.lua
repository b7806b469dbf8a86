-- lapack.lua: Torch7's LAPACK functions (maths.md, "Eigenvalues, SVD, Linear System
-- Solution"): gesv, trtrs, gels, inverse, potrf, potrs, potri, pstrf, qr, geqrf, orgqr, ormqr,
-- eig, symeig, svd. Each is torch.f([results...,] inputs... [, options]) as in Torch7: the
-- result tensors are all given or none, the options are Torch7's one-letter strings. Float and
-- double CPU tensors; results have the inputs' type and (matrices) come back column-major.
return function(torch, T)
   local C, check, is_tensor = T.clib, T.check, T.is_tensor

   local function typename(x)
      if is_tensor(x) then return T.typename(C.mt_tensor_dtype(x.h), C.mt_tensor_device(x.h)) end
      return type(x)
   end

   -- f = { name, results = {names}, inputs = {names}, options = {{what, 'AB', default}, ...},
   --       tol = true (pstrf's trailing number) }; returns results, inputs, option bytes, tol
   local function parse(f, ...)
      local args, n = { ... }, select('#', ...)
      local nt = 0
      while nt < n and is_tensor(args[nt + 1]) do nt = nt + 1 end
      local nres, nin = #f.results, #f.inputs
      local usage = ('%s: expected arguments (%s%s%s)'):format(f.name,
         '[' .. table.concat(f.results, ', ') .. ',] ', table.concat(f.inputs, ', '),
         (function()
            local o = {}
            for _, opt in ipairs(f.options) do
               o[#o + 1] = (" [, '%s' or '%s']"):format(opt[2]:sub(1, 1), opt[2]:sub(2, 2))
            end
            if f.tol then o[#o + 1] = ' [, tol]' end
            return table.concat(o)
         end)())
      local res, inp = {}, {}
      if nt == nres + nin then
         for i = 1, nres do res[i] = args[i] end
         for i = 1, nin do inp[i] = args[nres + i] end
      elseif nt == nin then
         for i = 1, nin do inp[i] = args[i] end
      else
         local given = {}
         for i = 1, n do given[i] = typename(args[i]) end
         error(usage .. ', got (' .. table.concat(given, ', ') .. ')', 3)
      end
      local opts, i = {}, nt + 1
      for k, opt in ipairs(f.options) do
         local v = args[i]
         if type(v) == 'string' then
            if #v ~= 1 or not opt[2]:find(v, 1, true) then
               error(("%s: %s should be '%s' or '%s', got '%s'"):format(f.name, opt[1], opt[2]:sub(1, 1),
                  opt[2]:sub(2, 2), v), 3)
            end
            i = i + 1
         else
            v = opt[3]
         end
         opts[k] = v:byte()
      end
      local tol = -1
      if f.tol and type(args[i]) == 'number' then tol, i = args[i], i + 1 end
      if i <= n then
         error(('%s: unexpected argument %d (%s); %s'):format(f.name, i, typename(args[i]), usage), 3)
      end
      return res, inp, opts, tol
   end

   -- a new result of the first input's type, or an IntTensor on its device (pstrf's pivots)
   local function fresh(like, int)
      local h = like.h
      return T.empty_tensor(int and T.INT or C.mt_tensor_dtype(h), C.mt_tensor_device(h))
   end

   local function results(res, inp, n, int_at)
      for i = 1, n do
         if res[i] == nil then res[i] = fresh(inp[1], int_at == i) end
      end
      return res
   end

   local function handles(ts)
      local hs = {}
      for i, t in ipairs(ts) do hs[i] = t.h end
      return hs
   end

   -- define torch[name]; `call(C, results handles, input handles, opts, tol)` runs the C op
   local function define(f, call)
      torch[f.name] = function(...)
         local res, inp, opts, tol = parse(f, ...)
         for i, t in ipairs(inp) do T.handle(t, f.name .. ' ' .. f.inputs[i]) end
         res = results(res, inp, #f.results, f.int_result)
         check(call(handles(res), handles(inp), opts, tol), f.name)
         if f.post then f.post(res, inp) end
         return unpack(res, 1, #f.results)
      end
   end

   define({ name = 'gesv', results = { 'resb', 'resa' }, inputs = { 'B', 'A' }, options = {} },
      function(r, i) return C.mt_gesv(r[1], r[2], i[1], i[2]) end)
   define({ name = 'trtrs', results = { 'resb', 'resa' }, inputs = { 'B', 'A' },
         options = { { 'uplo', 'UL', 'U' }, { 'trans', 'NT', 'N' }, { 'diag', 'NU', 'N' } } },
      function(r, i, o) return C.mt_trtrs(r[1], r[2], i[1], i[2], o[1], o[2], o[3]) end)
   -- gels' X has n rows (A is m x n), as Torch7's code gives it (its doc's m rows are stale): for
   -- m > n, a view of the first n rows of LAPACK's m x k block, whose rows below hold the residual
   local function gels_rows(res, inp)
      local m, n = tonumber(C.mt_tensor_size(inp[2].h, 0)), tonumber(C.mt_tensor_size(inp[2].h, 1))
      if m > n then T.tensor_methods.set(res[1], T.tensor_methods.narrow(res[1], 1, 1, n)) end
   end
   define({ name = 'gels', results = { 'resb', 'resa' }, inputs = { 'B', 'A' }, options = {}, post = gels_rows },
      function(r, i) return C.mt_gels(r[1], r[2], i[1], i[2]) end)
   define({ name = 'inverse', results = { 'res' }, inputs = { 'x' }, options = {} },
      function(r, i) return C.mt_inverse(r[1], i[1]) end)
   define({ name = 'potrf', results = { 'res' }, inputs = { 'A' }, options = { { 'uplo', 'UL', 'U' } } },
      function(r, i, o) return C.mt_potrf(r[1], i[1], o[1]) end)
   define({ name = 'potrs', results = { 'res' }, inputs = { 'B', 'chol' }, options = { { 'uplo', 'UL', 'U' } } },
      function(r, i, o) return C.mt_potrs(r[1], i[1], i[2], o[1]) end)
   define({ name = 'potri', results = { 'res' }, inputs = { 'chol' }, options = { { 'uplo', 'UL', 'U' } } },
      function(r, i, o) return C.mt_potri(r[1], i[1], o[1]) end)
   define({ name = 'pstrf', results = { 'res', 'piv' }, inputs = { 'A' }, options = { { 'uplo', 'UL', 'U' } },
         tol = true, int_result = 2 },
      function(r, i, o, tol) return C.mt_pstrf(r[1], r[2], i[1], o[1], tol) end)
   define({ name = 'qr', results = { 'q', 'r' }, inputs = { 'x' }, options = {} },
      function(r, i) return C.mt_qr(r[1], r[2], i[1]) end)
   define({ name = 'geqrf', results = { 'm', 'tau' }, inputs = { 'a' }, options = {} },
      function(r, i) return C.mt_geqrf(r[1], r[2], i[1]) end)
   define({ name = 'orgqr', results = { 'q' }, inputs = { 'm', 'tau' }, options = {} },
      function(r, i) return C.mt_orgqr(r[1], i[1], i[2]) end)
   define({ name = 'ormqr', results = { 'res' }, inputs = { 'm', 'tau', 'mat' },
         options = { { 'side', 'LR', 'L' }, { 'trans', 'NT', 'N' } } },
      function(r, i, o) return C.mt_ormqr(r[1], i[1], i[2], i[3], o[1], o[2]) end)
   define({ name = 'eig', results = { 'rese', 'resv' }, inputs = { 'a' }, options = { { 'jobvr', 'NV', 'N' } } },
      function(r, i, o) return C.mt_eig(r[1], r[2], i[1], o[1]) end)
   define({ name = 'symeig', results = { 'rese', 'resv' }, inputs = { 'a' },
         options = { { 'jobz', 'NV', 'N' }, { 'uplo', 'UL', 'U' } } },
      function(r, i, o) return C.mt_symeig(r[1], r[2], i[1], o[1], o[2]) end)
   define({ name = 'svd', results = { 'resu', 'ress', 'resv' }, inputs = { 'a' }, options = { { 'job', 'SA', 'S' } } },
      function(r, i, o) return C.mt_svd(r[1], r[2], r[3], i[1], o[1]) end)
end
