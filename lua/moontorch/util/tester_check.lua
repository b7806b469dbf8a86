-- tester_check.lua: the deep comparisons behind torch.Tester's eq/ne, assertTensorEq and
-- assertTableEq. Each returns (success, message): success already inverted when `negate`,
-- message saying why the values differ (or, negated, why they are equal).
-- Numbers compare within a tolerance; equal values (infinities included) always match and NaN
-- never does, so a NaN can never make an equality test pass.
return function(torch, T)
   local check = {}

   local function is_storage(x)
      return torch.isStorage ~= nil and not T.is_tensor(x) and not not torch.isStorage(x)
   end
   check.is_storage = is_storage

   -- Largest |a - b| over two CPU double tensors of the same number of elements.
   local function max_diff(a, b)
      local d = (a - b):abs()
      d:maskedFill(a:eq(b), 0) -- equal infinities differ by NaN otherwise
      return d:max()
   end

   local function verdict(err, tolerance, negate, prefix)
      local ok = err <= tolerance -- false for NaN
      if negate then ok = not ok end
      if ok then return true end
      return false, ('%s%s violation: max diff=%s, tolerance=%s'):format(prefix, negate and 'NE(==)' or 'EQ(==)',
         tostring(err), tostring(tolerance))
   end

   -- ignoreDims: tensors with the same elements in another shape are equal (assertTensorEq's
   -- Torch7 compatibility, {{1}} == {1}).
   function check.tensors(ta, tb, tolerance, negate, ignoreDims)
      if not ignoreDims and ta:dim() ~= tb:dim() then return negate, 'The tensors have different dimensions' end
      if ta:type() ~= tb:type() then return negate, 'The tensors have different types' end
      local n = ta:nElement()
      if n == 0 and tb:nElement() == 0 then return not negate, 'Both tensors are empty' end
      local same = ignoreDims and n == tb:nElement() or (not ignoreDims and ta:isSameSizeAs(tb))
      if not same then return negate, 'The tensors have different sizes' end
      -- compared on the CPU in float64, whatever the tensors' device and type
      local a = ta:type('torch.DoubleTensor'):contiguous():view(n)
      local b = tb:type('torch.DoubleTensor'):contiguous():view(n)
      return verdict(max_diff(a, b), tolerance, negate, 'Tensor')
   end

   function check.storages(sa, sb, tolerance, negate)
      if sa:size() ~= sb:size() then return negate, 'The storages have different sizes' end
      if torch.type(sa) ~= torch.type(sb) then return negate, 'The storages have different types' end
      local a, b = sa:totable(), sb:totable()
      local err = 0
      for i = 1, #a do
         local x, y = tonumber(a[i]), tonumber(b[i])
         local d = x == y and 0 or math.abs(x - y)
         if d ~= d then err = d break end
         if d > err then err = d end
      end
      return verdict(err, tolerance, negate, 'Storage')
   end

   -- Tables breadth first, so a difference is reported at the shallowest place it shows.
   function check.tables(t1, t2, tolerance, negate)
      local queue, head = { { t1, t2 } }, 1
      local seen = {}
      while queue[head] do
         local a, b, where = queue[head][1], queue[head][2], queue[head][3]
         head = head + 1
         local function at(k) return where and (where .. '.' .. tostring(k)) or tostring(k) end
         for k, va in pairs(a) do
            local vb = b[k]
            if vb == nil then
               return negate, ('Entry %s missing in second table (is %s in first)'):format(at(k), tostring(va))
            end
            if type(va) == 'table' and type(vb) == 'table' and not is_storage(va) then
               if not (seen[va] and seen[va][vb]) then -- cycles
                  seen[va] = seen[va] or {}
                  seen[va][vb] = true
                  queue[#queue + 1] = { va, vb, at(k) }
               end
            else
               local ok, msg = check.eq(va, vb, tolerance, false)
               if not ok then return negate, 'At table location ' .. at(k) .. ': ' .. msg end
            end
         end
         for k, vb in pairs(b) do
            if a[k] == nil then
               return negate, ('Entry %s missing in first table (is %s in second)'):format(at(k), tostring(vb))
            end
         end
      end
      return not negate, 'The tables are equal'
   end

   local function kind(x)
      if T.is_tensor(x) then return x:type() end
      if is_storage(x) then return torch.type(x) end
      return type(x)
   end

   -- General (deep) equality, as Tester:eq.
   function check.eq(got, expected, tolerance, negate)
      local kg, ke = kind(got), kind(expected)
      if T.is_tensor(got) and T.is_tensor(expected) then
         return check.tensors(got, expected, tolerance, negate, false)
      end
      if kg ~= ke and not (is_storage(got) and is_storage(expected)) then
         if negate then return true end
         return false, ('EQ failed: values have different types (first: %s, second: %s)'):format(kg, ke)
      end
      if type(got) == 'number' then
         local ok = got == expected or math.abs(got - expected) <= tolerance
         if negate then ok = not ok end
         if ok then return true end
         local msg = negate and ('NE failed: %s == %s') or ('EQ failed: %s ~= %s')
         msg = msg:format(tostring(got), tostring(expected))
         if tolerance > 0 then msg = msg .. ' with tolerance=' .. tostring(tolerance) end
         return false, msg
      end
      if is_storage(got) then return check.storages(got, expected, tolerance, negate) end
      if type(got) == 'table' then return check.tables(got, expected, tolerance, negate) end
      local ok = got == expected
      if negate then ok = not ok end
      if ok then return true end
      return false, ('%s failed: %s (%s) %s %s (%s)'):format(negate and 'NE' or 'EQ', tostring(got), type(got),
         negate and '==' or '~=', tostring(expected), type(expected))
   end

   return check
end
