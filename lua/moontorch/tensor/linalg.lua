-- linalg.lua: matrix products with Torch7's signatures: mm, bmm, mv, ger, dot and the
-- accumulating forms addmm, addbmm, baddbmm, addmv, addr ([res,] [v1,] M, [v2,] x, y).
-- Results take the inputs' dtype; all operands must share dtype and device.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor

   -- the result tensor: res when given, else an empty tensor like a (resized by the C op)
   local function result(res, a, op)
      if res ~= nil then
         T.handle(res, op)
         return res
      end
      local h = T.handle(a, op)
      return T.empty_tensor(C.mt_tensor_dtype(h), C.mt_tensor_device(h))
   end

   local function view_op(fn, t, ...)
      check(fn(T.out_handle, t.h, ...))
      return T.wrap_handle(T.out_handle[0])
   end

   ------------------------------------------------------------------------------------------
   -- argument parsing for the add* family
   --   function: torch.addmm([res,] [v1,] M, [v2,] x, y)
   --   method:   res:addmm([v1,] M, [v2,] x, y), or res:addmm([v1,] [v2,] x, y) with M = res
   --             (one number alone is v2: nn's gradWeight:addmm(scale, a, b))
   local function usage(op, method)
      if method then return op .. ': expected arguments ([v1,] [M,] [v2,] x, y) with tensors x and y' end
      return op .. ': expected arguments ([res,] [v1,] M, [v2,] x, y) with tensors M, x and y'
   end

   local function parse_add(op, self, ...)
      local n = select('#', ...)
      local args = { ... }
      local ntensors = 0
      for i = 1, n do
         local a = args[i]
         if is_tensor(a) then
            ntensors = ntensors + 1
         elseif type(a) ~= 'number' then
            error(op .. ': argument ' .. i .. ' is a ' .. type(a) .. '; ' .. usage(op, self ~= nil), 3)
         end
      end
      local i, res, beta, m, alpha = 1, self, 1, nil, 1
      if self == nil and ntensors == 4 then
         if not is_tensor(args[1]) then error(usage(op, false), 3) end
         res, i, ntensors = args[1], 2, 3
      end
      if ntensors == 3 then
         if type(args[i]) == 'number' then beta, i = args[i], i + 1 end
         m, i = args[i], i + 1
         if type(args[i]) == 'number' then alpha, i = args[i], i + 1 end
      elseif ntensors == 2 and self ~= nil then
         m = self
         if type(args[i]) == 'number' and type(args[i + 1]) == 'number' then
            beta, alpha, i = args[i], args[i + 1], i + 2
         elseif type(args[i]) == 'number' then
            alpha, i = args[i], i + 1
         end
      else
         error(usage(op, self ~= nil), 3)
      end
      local x, y = args[i], args[i + 1]
      if not is_tensor(m) or not is_tensor(x) or not is_tensor(y) or i + 1 ~= n then
         error(usage(op, self ~= nil), 3)
      end
      return res, beta, m, alpha, x, y
   end

   ------------------------------------------------------------------------------------------
   -- how the products are made: each function built here is the public one, so errors
   -- still point at the caller's line

   -- torch.op([res,] a, b) = a times b through c_op with beta = 0; cname names c_op when
   -- its errors should be reported under op
   local function product(op, c_op, cname)
      return function(res, a, b)
         if b == nil then res, a, b = nil, res, a end
         res = result(res, a, op)
         check(c_op(res.h, 0, nil, 1, T.handle(a, op), T.handle(b, op)), cname and op, cname)
         return res
      end
   end

   -- res:op(a, b) sets res = a op b (Torch7); a:op(b) returns a new result
   local function product_method(op)
      return function(self, a, b)
         if b == nil then return torch[op](nil, self, a) end
         return torch[op](self, a, b)
      end
   end

   -- torch.op and t:op for an accumulating form whose work is go(res, beta, M, alpha, x, y)
   local function accumulating(op, go)
      torch[op] = function(...) return go(parse_add(op, nil, ...)) end
      methods[op] = function(self, ...) return go(parse_add(op, self, ...)) end
   end

   -- an accumulating form that is one C call: res = beta*M + alpha * (x times y)
   local function one_call(op, c_op)
      return function(res, beta, m, alpha, x, y)
         res = result(res, m, op)
         check(c_op(res.h, beta, m.h, alpha, T.handle(x, op), T.handle(y, op)))
         return res
      end
   end

   ------------------------------------------------------------------------------------------
   -- matrix-matrix

   torch.mm = product('mm', C.mt_addmm)
   methods.mm = product_method('mm')
   torch.bmm = product('bmm', C.mt_baddbmm, 'baddbmm')
   methods.bmm = product_method('bmm')
   accumulating('addmm', one_call('addmm', C.mt_addmm))
   accumulating('baddbmm', one_call('baddbmm', C.mt_baddbmm))

   -- res = beta*M + alpha * sum_i x[i]*y[i]: one addmm per batch, accumulating into res
   local function addbmm(res, beta, m, alpha, x, y)
      res = result(res, m, 'addbmm')
      if x:dim() ~= 3 or y:dim() ~= 3 or x:size(1) ~= y:size(1) or x:size(3) ~= y:size(2) then
         local sx, sy = table.concat(T.sizes(x), 'x'), table.concat(T.sizes(y), 'x')
         error(('addbmm: size mismatch, batch1: %s, batch2: %s'):format(sx, sy), 3)
      end
      local nb = x:size(1)
      if nb == 0 then -- nothing to add: res = beta*M, through a product with an empty inner size
         local _, unit = T.sizes_buf({ 1, 1 }, true)
         local _, sx = T.sizes_buf({ x:size(2), 0 })
         local x0 = view_op(C.mt_tensor_as_strided, x, 2, sx, unit, 0)
         local _, sy = T.sizes_buf({ 0, y:size(3) })
         local y0 = view_op(C.mt_tensor_as_strided, y, 2, sy, unit, 0)
         check(C.mt_addmm(res.h, beta, m.h, alpha, x0.h, y0.h), 'addbmm', 'addmm')
         return res
      end
      for i = 0, nb - 1 do
         local xi, yi = view_op(C.mt_tensor_select, x, 0, i), view_op(C.mt_tensor_select, y, 0, i)
         if i == 0 then
            check(C.mt_addmm(res.h, beta, m.h, alpha, xi.h, yi.h), 'addbmm', 'addmm')
         else
            check(C.mt_addmm(res.h, 1, res.h, alpha, xi.h, yi.h), 'addbmm', 'addmm')
         end
      end
      return res
   end
   accumulating('addbmm', addbmm)

   ------------------------------------------------------------------------------------------
   -- matrix-vector

   torch.mv = product('mv', C.mt_addmv, 'addmv')
   methods.mv = product_method('mv')
   accumulating('addmv', one_call('addmv', C.mt_addmv))

   ------------------------------------------------------------------------------------------
   -- outer products: vec1 as a column times vec2 as a row

   local function outer_views(op, x, y)
      local hx, hy = T.handle(x, op), T.handle(y, op)
      if C.mt_tensor_ndim(hx) ~= 1 or C.mt_tensor_ndim(hy) ~= 1 then
         error(('%s: expected 1-d vectors, got vec1: %s, vec2: %s'):format(op, table.concat(T.sizes(x), 'x'),
            table.concat(T.sizes(y), 'x')), 4)
      end
      return view_op(C.mt_tensor_unsqueeze, x, 1), view_op(C.mt_tensor_unsqueeze, y, 0)
   end

   local function addr(res, beta, m, alpha, x, y)
      res = result(res, m, 'addr')
      local col, row = outer_views('addr', x, y)
      check(C.mt_addmm(res.h, beta, m.h, alpha, col.h, row.h), 'addr', 'addmm')
      return res
   end
   accumulating('addr', addr)

   function torch.ger(res, x, y)
      if y == nil then res, x, y = nil, res, x end
      res = result(res, x, 'ger')
      local col, row = outer_views('ger', x, y)
      check(C.mt_addmm(res.h, 0, nil, 1, col.h, row.h), 'ger', 'addmm')
      return res
   end
   methods.ger = product_method('ger')

   ------------------------------------------------------------------------------------------
   -- dot product (a number; tensors of any shapes with the same element count, as Torch7)

   local dot_out = ffi.new('double[1]')
   function torch.dot(a, b)
      check(C.mt_dot(T.handle(a, 'dot'), T.handle(b, 'dot'), dot_out))
      return dot_out[0]
   end
   methods.dot = torch.dot
end
