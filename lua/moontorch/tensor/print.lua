-- print.lua: tostring(t) in Torch7's layout: values in aligned columns, a common scale
-- factor ("1e-03 *") when every magnitude is small or large, columns wrapped at the line width
-- under "Columns a to b" headers, 3-d and larger tensors as "(i,j,.,.) = " matrices, and a
-- "[torch.FloatTensor of size 2x3]" footer. Big tensors are summarised: only the first and
-- last `edgeitems` entries of each long dimension are copied to the host and shown.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods = T.clib, T.check, T.tensor_methods
   local floor, abs, huge = math.floor, math.abs, math.huge

   local opts = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 }

   -- torch.setprintoptions{precision=, threshold=, edgeitems=, linewidth=}; nil keys keep
   -- their value, `true` as the argument restores the defaults.
   local defaults = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 }
   function torch.setprintoptions(o)
      if o == true then o = defaults end
      if type(o) ~= 'table' then error('setprintoptions: expected a table of options, got ' .. type(o), 2) end
      local lows = { precision = 0, threshold = 0, edgeitems = 1, linewidth = 10 }
      for k, v in pairs(o) do
         if lows[k] == nil then error("setprintoptions: unknown option '" .. tostring(k) .. "'", 2) end
         if type(v) ~= 'number' or v ~= floor(v) or v < lows[k] then
            error(('setprintoptions: %s must be an integer >= %d, got %s'):format(k, lows[k], tostring(v)), 2)
         end
      end
      for k, v in pairs(o) do opts[k] = v end
   end
   function torch.getprintoptions()
      local r = {}
      for k, v in pairs(opts) do r[k] = v end
      return r
   end

   ------------------------------------------------------------------------------------------
   -- The part of t that is shown, as a contiguous CPU double tensor R, and for each dimension
   -- the number of leading/trailing entries kept (nil: all of that dimension is shown).
   local function narrow_into(dst, src, d, dstart, sstart, len)
      check(C.mt_tensor_narrow(T.out_handle, dst, d, dstart, len))
      local dv = T.wrap_handle(T.out_handle[0])
      check(C.mt_tensor_narrow(T.out_handle, src, d, sstart, len))
      return dv, T.wrap_handle(T.out_handle[0])
   end

   local function host_copy(t, sizes)
      local nd, numel = #sizes, methods.nElement(t)
      local keep, rs, elided = {}, {}, {}
      for d = 1, nd do
         rs[d] = sizes[d]
         if numel > opts.threshold and sizes[d] > 2 * opts.edgeitems then
            keep[d] = opts.edgeitems
            rs[d] = 2 * opts.edgeitems
            elided[#elided + 1] = d
         end
      end
      local R = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, rs)
      -- copy each of the 2^k corner blocks (k elided dimensions) of t into R
      local function fill(i, dst, src)
         if i > #elided then
            check(C.mt_copy(dst.h, src.h))
            return
         end
         local d, e = elided[i], opts.edgeitems
         local dv, sv = narrow_into(dst.h, src.h, d - 1, 0, 0, e)
         fill(i + 1, dv, sv)
         dv, sv = narrow_into(dst.h, src.h, d - 1, e, sizes[d] - e, e)
         fill(i + 1, dv, sv)
      end
      fill(1, R, t)
      return R, keep, rs
   end

   ------------------------------------------------------------------------------------------
   -- number formatting: one format for the whole tensor so columns line up

   local function special(v)
      if v ~= v then return 'nan' end
      if v == huge then return 'inf' end
      if v == -huge then return '-inf' end
   end

   -- Returns fmt(v) -> string, the common cell width, and the scale factor (or nil).
   local function choose_format(p, n, integer_dtype)
      local allint, maxabs, minabs, finite = true, 0, huge, false
      local width = 0
      for i = 0, n - 1 do
         local v = p[i]
         local s = special(v)
         if s then
            width = math.max(width, #s)
         else
            finite = true
            local a = abs(v)
            if a > maxabs then maxabs = a end
            if a ~= 0 and a < minabs then minabs = a end
            if v ~= floor(v) then allint = false end
         end
      end
      local sign = 1 -- room for a minus sign, so columns align as in Torch7
      local prec = opts.precision
      local numfmt, scale
      if not finite then
         numfmt = '%.0f'
      elseif allint and (integer_dtype or maxabs < 1e10) then
         numfmt = '%.0f'
         width = math.max(width, #('%.0f'):format(maxabs) + sign)
      else
         local emax = floor(math.log10(maxabs))
         local emin = minabs < huge and floor(math.log10(minabs)) or emax
         -- 10^emax may print as 9.99..e(emax-1) after rounding: nudge to the true exponent
         if 10 ^ (emax + 1) <= maxabs then emax = emax + 1 elseif 10 ^ emax > maxabs then emax = emax - 1 end
         if emax - emin > prec then
            numfmt = '%.' .. prec .. 'e'
            width = math.max(width, #numfmt:format(maxabs) + sign, #numfmt:format(minabs < huge and minabs or 0) + sign)
         elseif emax > 4 or emax < -1 then
            scale = 10 ^ emax
            numfmt = '%.' .. prec .. 'f'
            width = math.max(width, #numfmt:format(maxabs / scale) + sign)
         else
            numfmt = '%.' .. prec .. 'f'
            width = math.max(width, #numfmt:format(maxabs) + sign)
         end
      end
      local fmt
      if scale then
         fmt = function(v) return special(v) or numfmt:format(v / scale) end
      else
         fmt = function(v) return special(v) or numfmt:format(v) end
      end
      return fmt, width, scale
   end

   local function pad(s, w) return (' '):rep(w - #s) .. s end

   -- Entries shown along one dimension: { r = index in R (0-based), i = index in t } or
   -- the string '...' where entries were left out.
   local function dim_entries(size, keep)
      local list = {}
      if not keep then
         for i = 1, size do list[i] = { r = i - 1, i = i } end
         return list
      end
      for i = 1, keep do list[#list + 1] = { r = i - 1, i = i } end
      list[#list + 1] = '...'
      for j = 1, keep do list[#list + 1] = { r = keep + j - 1, i = size - keep + j } end
      return list
   end

   -- Lines of one matrix (rows x cols entries) starting at R offset `base`.
   local function matrix_lines(out, p, base, rstride, rows, cols, fmt, w, scale)
      if scale then out[#out + 1] = ('%.0e *'):format(scale) end
      local cell = w + 1
      local per = math.max(1, floor((opts.linewidth - 1) / cell))
      local chunks = {}
      for c = 1, #cols, per do chunks[#chunks + 1] = { c, math.min(#cols, c + per - 1) } end
      for ci, ch in ipairs(chunks) do
         if #chunks > 1 then
            -- name the first and last real columns of the chunk
            local first, last
            for c = ch[1], ch[2] do
               if cols[c] ~= '...' then
                  first = first or cols[c].i
                  last = cols[c].i
               end
            end
            if ci > 1 then out[#out + 1] = '' end
            if first == nil then out[#out + 1] = 'Columns ...'
            elseif first == last then out[#out + 1] = 'Column ' .. first
            else out[#out + 1] = ('Columns %d to %d'):format(first, last) end
         end
         for _, r in ipairs(rows) do
            if r == '...' then
               out[#out + 1] = ' ...'
            else
               local parts = {}
               for c = ch[1], ch[2] do
                  local e = cols[c]
                  if e == '...' then parts[#parts + 1] = pad('...', w)
                  else parts[#parts + 1] = pad(fmt(p[base + r.r * rstride + e.r]), w) end
               end
               out[#out + 1] = ' ' .. table.concat(parts, ' ')
            end
         end
      end
   end

   -- The body (every line before the footer, each ending in a newline) for a tensor.
   local function format_body(t)
      local sizes = T.sizes(t)
      local nd = #sizes
      if methods.nElement(t) == 0 then return '' end
      local R, keep, rs = host_copy(t, sizes)
      T.canonicalize_nans(R) -- R is a fresh double copy, read below through a double*
      local n = methods.nElement(R)
      local p = ffi.cast('double*', C.mt_tensor_data(R.h))
      local fmt, w, scale = choose_format(p, n, not T.dtypes[C.mt_tensor_dtype(t.h) + 1].is_float)
      local out = {}
      if nd == 0 then
         -- one number needs no scale line: scientific notation instead
         local v = p[0]
         out[1] = scale and (special(v) or ('%.' .. opts.precision .. 'e'):format(v)) or fmt(v)
      elseif nd == 1 then
         if scale then out[#out + 1] = ('%.0e *'):format(scale) end
         for _, e in ipairs(dim_entries(sizes[1], keep[1])) do
            out[#out + 1] = e == '...' and ' ...' or ' ' .. pad(fmt(p[e.r]), w)
         end
      else
         local rstrides = {}
         local s = 1
         for d = nd, 1, -1 do rstrides[d] = s; s = s * rs[d] end
         local rows, cols = dim_entries(sizes[nd - 1], keep[nd - 1]), dim_entries(sizes[nd], keep[nd])
         if nd == 2 then
            matrix_lines(out, p, 0, rstrides[1], rows, cols, fmt, w, scale)
         else
            -- walk the leading dimensions; each full index names one matrix
            local idx, first = {}, true
            local function walk(d, base)
               if d > nd - 2 then
                  if not first then out[#out + 1] = '' end
                  first = false
                  out[#out + 1] = '(' .. table.concat(idx, ',') .. ',.,.) = '
                  matrix_lines(out, p, base, rstrides[nd - 1], rows, cols, fmt, w, scale)
                  return
               end
               for _, e in ipairs(dim_entries(sizes[d], keep[d])) do
                  if e == '...' then
                     if not first then out[#out + 1] = '' end
                     out[#out + 1] = '...'
                  else
                     idx[d] = e.i
                     walk(d + 1, base + e.r * rstrides[d])
                  end
               end
               idx[d] = nil
            end
            walk(1, 0)
         end
      end
      return table.concat(out, '\n') .. '\n'
   end
   T.format_values = format_body

   local function footer(t)
      local name = t:type()
      local sizes = T.sizes(t)
      if #sizes == 1 and sizes[1] == 0 then return '[' .. name .. ' with no dimension]' end
      if #sizes == 0 then return '[' .. name .. ' of size []]' end
      return '[' .. name .. ' of size ' .. table.concat(sizes, 'x') .. ']'
   end

   T.tensor_metatable.__tostring = function(t)
      if t.h == nil then return '[moontorch tensor (freed)]' end
      return format_body(t) .. footer(t)
   end
end
