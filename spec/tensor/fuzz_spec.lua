-- fuzz_spec.lua: a seeded random walk over the entry points that take sizes, dims and indices
-- (the Lua API and, through the FFI, the C API), run by ctest everywhere; fuzz/fuzz_views.c is
-- the coverage-guided version. A small Lua model predicts every result: a valid call must
-- give the predicted sizes, strides, offset and values (read back from the shared storage);
-- an invalid one must raise a Lua error whose message names the operation. Replay a failure
-- with MT_TEST_SEED=<seed printed above>.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local T = require 'moontorch.internal'
local C = T.clib

local random, floor = math.random, math.floor

---------------------------------------------------------------------------------------------
-- the model: sizes, strides, offset (all 1-based Lua arrays, offset 0-based) over a flat store

local function numel(sizes)
   local n = 1
   for _, s in ipairs(sizes) do n = n * s end
   return n
end

local function contiguous_strides(sizes)
   local st, s = {}, 1
   for i = #sizes, 1, -1 do
      st[i] = s
      s = s * math.max(sizes[i], 1)
   end
   return st
end

local function copy(a)
   local r = {}
   for i, v in ipairs(a) do r[i] = v end
   return r
end

local function is_contiguous(m)
   local s = 1
   for i = #m.sizes, 1, -1 do
      if m.sizes[i] ~= 1 then
         if m.strides[i] ~= s then return false end
         s = s * m.sizes[i]
      end
   end
   return true
end

-- a fresh double tensor of a random shape (0 to 4 dims, sizes 0 to 5) and its model
local function fresh()
   local nd = random(0, 4)
   local sizes = {}
   for i = 1, nd do sizes[i] = random(0, 9) < 8 and random(1, 5) or 0 end
   local t, flat = util.rand_tensor(sizes, 'torch.DoubleTensor')
   return t, { sizes = sizes, strides = contiguous_strides(sizes), offset = 0, store = flat }
end

-- A Lua dim for a tensor of nd dims: mostly valid (positive or negative), else out of range
-- or not an integer. `extra` admits one more (unsqueeze).
local function rdim(nd, extra)
   local top = nd + (extra or 0)
   if top > 0 and random() < 0.85 then
      local d = random(1, top)
      return random() < 0.3 and d - top - 1 or d
   end
   local bad = { 0, top + 1, -top - 1, top + 5, 1.5 }
   return bad[random(#bad)]
end

-- 0-based dim from a Lua dim, or nil when invalid
local function norm(d, nd, extra)
   local top = nd + (extra or 0)
   if type(d) ~= 'number' or d ~= floor(d) then return nil end
   if d < 0 then d = d + top + 1 end
   if d < 1 or d > top then return nil end
   return d
end

---------------------------------------------------------------------------------------------
-- checks

local ibuf = ffi.new('int64_t[8]')
local vbuf = ffi.new('double[1]')

local function shape_str(sizes) return '{' .. table.concat(sizes, ',') .. '}' end

-- r must match model m: sizes, strides of the dims that matter, offset and some values
local function check_result(r, m, what)
   assert(torch.isTensor(r), what .. ': did not return a tensor')
   local sizes = T.sizes(r)
   assert(#sizes == #m.sizes and shape_str(sizes) == shape_str(m.sizes),
      ('%s: sizes %s, expected %s'):format(what, shape_str(sizes), shape_str(m.sizes)))
   local n = numel(m.sizes)
   if n == 0 then return end
   for i = 1, #sizes do
      if sizes[i] > 1 then
         assert(r:stride(i) == m.strides[i],
            ('%s: stride %d is %d, expected %d'):format(what, i, r:stride(i), m.strides[i]))
      end
   end
   assert(r:storageOffset() == m.offset + 1,
      ('%s: storage offset %d, expected %d'):format(what, r:storageOffset(), m.offset + 1))
   for _ = 1, math.min(n, 3) do
      local pos = m.offset
      for i = 1, #sizes do
         local k = random(0, sizes[i] - 1)
         ibuf[i - 1] = k
         pos = pos + k * m.strides[i]
      end
      assert(C.mt_tensor_get_item(r.h, ibuf, vbuf) == 0, what .. ': get_item failed')
      assert(vbuf[0] == m.store[pos + 1], ('%s: element at storage position %d is %.17g, expected %.17g'):format(
         what, pos + 1, vbuf[0], m.store[pos + 1]))
   end
end

-- an invalid call: a Lua error (not a crash, not a Lua runtime slip) naming the operation
local function check_error(ok, err, op, what)
   assert(not ok, what .. ': expected an error, got success')
   err = tostring(err)
   assert(#err > 0 and err:find(op, 1, true), ('%s: error %q does not name %s'):format(what, err, op))
   assert(not err:find('attempt to', 1, true), what .. ': a Lua runtime error leaked: ' .. err)
end

local counts = { ok = 0, err = 0 }
local function expect(m, op, what, fn)
   local ok, r = pcall(fn)
   if m then
      if not ok then error(what .. ': expected success, got ' .. tostring(r), 0) end
      check_result(r, m, what)
      counts.ok = counts.ok + 1
   else
      check_error(ok, r, op, what)
      counts.err = counts.err + 1
   end
   return ok and r or nil
end

local function derive(m, sizes, strides, offset)
   return { sizes = sizes, strides = strides, offset = offset, store = m.store }
end

---------------------------------------------------------------------------------------------
-- one random view operation on (t, m): returns the result and its model when it succeeded

local ops = {}

function ops.narrow(t, m)
   local nd = #m.sizes
   local dim = rdim(nd)
   local d = norm(dim, nd)
   local size = d and m.sizes[d] or 3
   local start = random() < 0.2 and -random(1, size + 1) or random(0, size + 2)
   local len = random(-1, size + 1)
   local want
   local s = start < 0 and start + size + 1 or start
   if d and s >= 1 and len >= 0 and s - 1 + len <= size then
      local sizes = copy(m.sizes)
      sizes[d] = len
      want = derive(m, sizes, m.strides, m.offset + (s - 1) * m.strides[d])
   end
   local what = ('narrow(%s, %s, %s) of %s'):format(dim, start, len, shape_str(m.sizes))
   return expect(want, 'narrow', what, function() return t:narrow(dim, start, len) end), want
end

function ops.select(t, m)
   local nd = #m.sizes
   local dim = rdim(nd)
   local d = norm(dim, nd)
   -- Torch7: a 1-d tensor's select reads no dimension (any integer will do)
   if nd == 1 and m.sizes[1] > 0 and dim == floor(dim) then d = 1 end
   local size = d and m.sizes[d] or 3
   local i = random() < 0.2 and -random(1, size + 1) or random(0, size + 1)
   local ii = i < 0 and i + size + 1 or i
   local want
   if d and ii >= 1 and ii <= size then
      local sizes, strides = copy(m.sizes), copy(m.strides)
      table.remove(sizes, d)
      table.remove(strides, d)
      want = derive(m, sizes, strides, m.offset + (ii - 1) * m.strides[d])
   end
   local what = ('select(%s, %s) of %s'):format(dim, i, shape_str(m.sizes))
   if want and nd == 1 then -- Torch7: selecting from a 1-d tensor gives the number
      local v = t:select(dim, i)
      assert(v == m.store[want.offset + 1],
         ('%s: got %s, expected %.17g'):format(what, tostring(v), m.store[want.offset + 1]))
      counts.ok = counts.ok + 1
      return nil
   end
   return expect(want, 'select', what, function() return t:select(dim, i) end), want
end

function ops.transpose(t, m)
   local nd = #m.sizes
   local a, b = rdim(nd), rdim(nd)
   local da, db = norm(a, nd), norm(b, nd)
   local want
   if da and db then
      local sizes, strides = copy(m.sizes), copy(m.strides)
      sizes[da], sizes[db] = sizes[db], sizes[da]
      strides[da], strides[db] = strides[db], strides[da]
      want = derive(m, sizes, strides, m.offset)
   end
   local what = ('transpose(%s, %s) of %s'):format(a, b, shape_str(m.sizes))
   return expect(want, 'transpose', what, function() return t:transpose(a, b) end), want
end

function ops.permute(t, m)
   local nd = #m.sizes
   local dims = {}
   for i = 1, nd do dims[i] = i end
   for i = nd, 2, -1 do
      local j = random(i)
      dims[i], dims[j] = dims[j], dims[i]
   end
   local r = random()
   if r < 0.1 and nd > 0 then dims[random(nd)] = rdim(nd)      -- maybe a repeat or out of range
   elseif r < 0.15 then dims[#dims + 1] = random(1, nd + 1)   -- one too many
   elseif r < 0.2 and nd > 0 then dims[#dims] = nil end       -- one too few
   local want, seen, ok = nil, {}, #dims == nd
   local sizes, strides = {}, {}
   for i, d in ipairs(dims) do
      local dd = norm(d, nd)
      if not dd or seen[dd] then ok = false break end
      seen[dd] = true
      sizes[i], strides[i] = m.sizes[dd], m.strides[dd]
   end
   if ok then want = derive(m, sizes, strides, m.offset) end
   local what = ('permute(%s) of %s'):format(table.concat(dims, ','), shape_str(m.sizes))
   return expect(want, 'permute', what, function() return t:permute(unpack(dims)) end), want
end

function ops.expand(t, m)
   local nd = #m.sizes
   local lead = random(0, 2)
   local sizes_in = {}
   for _ = 1, lead do sizes_in[#sizes_in + 1] = random() < 0.1 and -1 or random(0, 3) end
   for i = 1, nd do
      local s = m.sizes[i]
      local r = random()
      if r < 0.15 then s = -1
      elseif s == 1 and r < 0.6 then s = random(0, 4)
      elseif r < 0.7 then s = s + random(1, 2) end -- invalid unless s was 1
      sizes_in[#sizes_in + 1] = s
   end
   if random() < 0.05 and nd > 0 then table.remove(sizes_in) end -- fewer dims than the tensor
   local want, ok = nil, #sizes_in >= nd and #sizes_in <= 8
   local sizes, strides = {}, {}
   local n_lead = #sizes_in - nd
   for i = 1, ok and #sizes_in or 0 do
      local w = sizes_in[i]
      if i <= n_lead then
         if w < 0 then ok = false break end
         sizes[i], strides[i] = w, 0
      else
         local have = m.sizes[i - n_lead]
         if w == -1 then w = have end
         if w == have then sizes[i], strides[i] = have, m.strides[i - n_lead]
         elseif have == 1 and w >= 0 then sizes[i], strides[i] = w, 0
         else ok = false break end
      end
   end
   if ok then want = derive(m, sizes, strides, m.offset) end
   local what = ('expand(%s) of %s'):format(table.concat(sizes_in, ','), shape_str(m.sizes))
   return expect(want, 'expand', what, function() return t:expand(T.LongStorage.new(sizes_in)) end), want
end

function ops.squeeze(t, m)
   local nd = #m.sizes
   local all = random() < 0.4
   local dim = not all and rdim(nd) or nil
   local d = dim and norm(dim, nd)
   local want
   if all or d then
      local sizes, strides = {}, {}
      for i = 1, nd do
         if not (m.sizes[i] == 1 and (all or i == d)) then
            sizes[#sizes + 1], strides[#strides + 1] = m.sizes[i], m.strides[i]
         end
      end
      want = derive(m, sizes, strides, m.offset)
   end
   local what = ('squeeze(%s) of %s'):format(tostring(dim), shape_str(m.sizes))
   if want and numel(m.sizes) == 1 and (all or nd <= 1) then -- Torch7: one element comes back as the number
      local v = t:squeeze(dim)
      local e = m.store[m.offset + 1]
      assert(v == e, ('%s: got %s, expected %.17g'):format(what, tostring(v), e))
      counts.ok = counts.ok + 1
      return nil
   end
   return expect(want, 'squeeze', what, function() return t:squeeze(dim) end), want
end

function ops.unsqueeze(t, m)
   local nd = #m.sizes
   local dim = rdim(nd, 1)
   local d = norm(dim, nd, 1)
   local want
   if d and nd < 8 then
      local sizes, strides = copy(m.sizes), copy(m.strides)
      table.insert(sizes, d, 1)
      table.insert(strides, d, 1) -- a size-1 dim's stride is not compared
      want = derive(m, sizes, strides, m.offset)
   end
   local what = ('unsqueeze(%s) of %s'):format(dim, shape_str(m.sizes))
   return expect(want, 'unsqueeze', what, function() return t:unsqueeze(dim) end), want
end

function ops.unfold(t, m)
   local nd = #m.sizes
   local dim = rdim(nd)
   local d = norm(dim, nd)
   local have = d and m.sizes[d] or 3
   local size, step = random(-1, have + 1), random(-1, 3)
   local want
   if d and nd < 8 and size >= 1 and step >= 1 and size <= have then
      local sizes, strides = copy(m.sizes), copy(m.strides)
      sizes[d] = floor((have - size) / step) + 1
      strides[d] = m.strides[d] * step
      sizes[nd + 1], strides[nd + 1] = size, m.strides[d]
      want = derive(m, sizes, strides, m.offset)
   end
   local what = ('unfold(%s, %s, %s) of %s'):format(dim, size, step, shape_str(m.sizes))
   return expect(want, 'unfold', what, function() return t:unfold(dim, size, step) end), want
end

-- view: predicted exactly for contiguous tensors; for others a success must keep the
-- row-major order of the elements, and a failure must be a clear error
function ops.view(t, m)
   local n = numel(m.sizes)
   local sizes = {}
   local rest = n
   local nd = random(0, 4)
   for i = 1, nd - 1 do
      local f = (rest > 0 and random() < 0.7) and ({ 1, 2, 3, 5 })[random(4)] or random(0, 3)
      if rest > 0 and rest % f == 0 then sizes[i], rest = f, rest / f else sizes[i] = f end
   end
   if nd > 0 then sizes[nd] = rest end
   if nd > 0 and random() < 0.3 then sizes[random(nd)] = -1 end
   if nd > 0 and random() < 0.1 then sizes[random(nd)] = random(-3, 7) end
   -- the model of a view of a contiguous tensor
   local known, infer, bad = 1, nil, false
   for i, s in ipairs(sizes) do
      if s == -1 then
         if infer then bad = true end
         infer = i
      elseif s < 0 then bad = true
      else known = known * s end
   end
   local final = copy(sizes)
   if nd == 0 and n == 0 then final = { 0 } end -- no sizes on an empty tensor: it stays empty (Torch7)
   if infer and not bad then
      if known == 0 or n % known ~= 0 then bad = true else final[infer] = n / known end
   end
   if not bad and numel(final) ~= n then bad = true end
   local what = ('view(%s) of %s%s'):format(table.concat(sizes, ','), shape_str(m.sizes),
      is_contiguous(m) and '' or ' (non-contiguous)')
   local fn = function() return t:view(T.LongStorage.new(sizes)) end
   if bad then return expect(nil, 'view', what, fn), nil end
   if is_contiguous(m) or n == 0 then
      local want = derive(m, final, contiguous_strides(final), m.offset)
      return expect(want, 'view', what, fn), want
   end
   local ok, r = pcall(fn)
   if not ok then
      check_error(ok, r, 'view', what)
      return nil
   end
   assert(shape_str(T.sizes(r)) == shape_str(final), what .. ': wrong sizes ' .. shape_str(T.sizes(r)))
   util.assert_close(util.flat(r), util.flat(t), { atol = 0, rtol = 0 }, what)
   return nil -- its strides are not modelled: do not build on it
end

-- resize in place (on a fresh tensor: it may drop the storage)
function ops.resize(t, m)
   local nd = random(0, 9)
   local sizes = {}
   for i = 1, nd do sizes[i] = random() < 0.1 and -random(1, 3) or random(0, 4) end
   local ok_model = nd <= 8
   for _, s in ipairs(sizes) do if s < 0 then ok_model = false end end
   local what = ('resize(%s) of %s'):format(table.concat(sizes, ','), shape_str(m.sizes))
   local ok, err = pcall(function() return t:resize(T.LongStorage.new(sizes)) end)
   if ok_model then
      if not ok then error(what .. ': ' .. tostring(err), 0) end
      local want = nd == 0 and { 0 } or sizes -- no sizes: Torch7's empty tensor (1-d size 0 in C)
      assert(shape_str(T.sizes(t)) == shape_str(want), what .. ': wrong sizes ' .. shape_str(T.sizes(t)))
      assert(t:isContiguous(), what .. ': not contiguous')
      counts.ok = counts.ok + 1
   else
      check_error(ok, err, 'resize', what)
      counts.err = counts.err + 1
   end
   return nil
end

-- index/indexSelect along a dim with random (sometimes out of range) 1-based indices
function ops.index(t, m)
   local nd = #m.sizes
   local dim = rdim(nd)
   local d = norm(dim, nd)
   local size = d and m.sizes[d] or 3
   local idx = {}
   for i = 1, random(0, 4) do
      idx[i] = random() < 0.9 and random(1, math.max(size, 1)) or ({ 0, size + 1, -1 })[random(3)]
   end
   local valid = d ~= nil and nd >= 1
   for _, i in ipairs(idx) do if i < 1 or i > size then valid = false end end
   local what = ('index(%s, {%s}) of %s'):format(dim, table.concat(idx, ','), shape_str(m.sizes))
   local fn = function() return t:index(dim, #idx > 0 and torch.LongTensor(idx) or torch.LongTensor()) end
   if not valid then return expect(nil, 'index', what, fn), nil end
   local ok, r = pcall(fn)
   if not ok then error(what .. ': ' .. tostring(r), 0) end
   local sizes = copy(m.sizes)
   sizes[d] = #idx
   assert(shape_str(T.sizes(r)) == shape_str(sizes), what .. ': wrong sizes ' .. shape_str(T.sizes(r)))
   -- expected values, row-major over the result
   local expected = {}
   util.each_index(sizes, function(pos)
      local p = m.offset
      for i = 1, nd do p = p + (i == d and idx[pos[i]] - 1 or pos[i] - 1) * m.strides[i] end
      expected[#expected + 1] = m.store[p + 1]
   end)
   util.assert_close(util.flat(r), expected, { atol = 0, rtol = 0 }, what)
   counts.ok = counts.ok + 1
   return nil
end

---------------------------------------------------------------------------------------------
-- the C API through the FFI: random and hostile sizes, strides, offsets and indices

local outp = ffi.new('mt_tensor*[1]')
local sbuf, stbuf = ffi.new('int64_t[9]'), ffi.new('int64_t[9]')

local function c_status(st, op, what)
   if st == 0 then return true end
   local msg = ffi.string(C.mt_last_error())
   assert(st > 0 and st <= 10, what .. ': status ' .. tostring(st))
   assert(msg:find(op, 1, true), ('%s: message %q does not name %s'):format(what, msg, op))
   return false
end

local function hostile()
   local r = random()
   if r < 0.6 then return random(-2, 6) end
   if r < 0.8 then return 2 ^ random(31, 62) end
   return -2 ^ random(31, 62)
end

describe('randomized calls', function()
   it('view operations match the model or raise a named error (Lua API)', function()
      local pool = {}
      for i = 1, 6 do pool[i] = { fresh() } end
      local names = {}
      for name in pairs(ops) do names[#names + 1] = name end
      table.sort(names) -- pairs order is not reproducible across runs; the seed must be
      for _ = 1, 10000 do
         local slot = random(#pool)
         local t, m = pool[slot][1], pool[slot][2]
         local name = names[random(#names)]
         if name == 'resize' then
            t, m = fresh()
            ops.resize(t, m)
            pool[slot] = { fresh() }
         else
            local r, rm = ops[name](t, m)
            -- build on views (non-contiguous, offset) often, but return to fresh tensors too
            if r and rm and random() < 0.6 then pool[random(#pool)] = { r, rm }
            elseif random() < 0.05 then pool[slot] = { fresh() } end
         end
      end
      io.stderr:write(("[tensor/fuzz_spec: %d successes, %d errors]\n"):format(counts.ok, counts.err))
      -- the walk must have explored both outcomes
      assert(counts.ok > 2500 and counts.err > 1200, ('only %d successes and %d errors'):format(counts.ok, counts.err))
   end)

   it('C entry points accept or refuse hostile sizes, strides and indices with a status and message', function()
      local base
      for _ = 1, 10000 do
         local which = random(5)
         if which == 1 then -- tensor_new: sizes of any sign and magnitude, too many dims
            local nd = random(0, 9)
            local n, sane = 1, nd <= 8
            for i = 0, nd - 1 do
               local s = hostile()
               sbuf[i] = s
               if s < 0 then sane = false else n = n * s end
            end
            local small = sane and n <= 4096
            -- skip requests that are valid but huge; past 2^60 elements the count must be refused
            if small or not sane or n >= 2 ^ 61 then
               outp[0] = nil
               local st = C.mt_tensor_new(outp, random(-1, 8), -1, nd, sbuf)
               if c_status(st, 'tensor', 'tensor_new') then
                  assert(small, 'tensor_new accepted sizes whose element count overflows')
                  assert(C.mt_tensor_numel(outp[0]) == n)
                  C.mt_tensor_release(outp[0])
               else
                  assert(outp[0] == nil, 'tensor_new returned a handle with an error')
               end
            end
         elseif which == 2 then -- as_strided over a small base
            base = base or T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { 24 })
            local nd = random(0, 4)
            local lo, hi, empty, off = 0, 0, false, random() < 0.9 and random(-2, 26) or hostile()
            local sum_attack = random() < 0.05 -- each dim's reach fits in int64, their sum does not
            if sum_attack then nd = random(2, 4) end
            for i = 0, nd - 1 do
               local s, st = random() < 0.9 and random(0, 4) or hostile(), random() < 0.9 and random(-5, 8) or hostile()
               if sum_attack then s, st = 2, 2 ^ random(61, 62) end
               sbuf[i], stbuf[i] = s, st
               if s == 0 then empty = true end
               if s > 0 then
                  if st > 0 then hi = hi + st * (s - 1) else lo = lo + st * (s - 1) end
               end
            end
            local sane, span, n = true, 1, 1
            for i = 0, nd - 1 do
               local s = tonumber(sbuf[i])
               if s < 0 or stbuf[i] < 0 then sane = false end -- negative strides are refused, as in PyTorch
               span, n = span * math.max(s, 1), n * s
            end
            if span >= 2 ^ 63 then sane = false end -- the element count overflows
            outp[0] = nil
            local st = C.mt_tensor_as_strided(outp, base.h, nd, sbuf, stbuf, off)
            local ok = c_status(st, 'as_strided', 'as_strided')
            -- doubles are exact below 2^53; larger reaches are out of the 24-element storage anyway
            local inside = sane and off >= 0 and off + lo >= 0 and off + hi < 24
            if ok then
               local r = T.wrap_handle(outp[0])
               if not (sane and (empty or inside)) then
                  local sz, sd = {}, {}
                  for i = 0, nd - 1 do
                     sz[#sz + 1], sd[#sd + 1] = tostring(sbuf[i]):gsub('LL$', ''), tostring(stbuf[i]):gsub('LL$', '')
                  end
                  error(('as_strided accepted sizes {%s}, strides {%s}, offset %s over 24 elements: the element '
                     .. 'count overflows or the layout leaves the storage'):format(table.concat(sz, ','),
                     table.concat(sd, ','), off), 0)
               end
               if not empty and n <= 4096 then util.flat(r) end -- every element readable
            else
               assert(outp[0] == nil, 'as_strided returned a handle with an error')
               assert(empty or not inside,
                  'as_strided refused a layout inside its storage: ' .. ffi.string(C.mt_last_error()))
            end
         elseif which == 3 then -- get_item / set_item with random indices
            local t, m = fresh()
            local nd, inside = #m.sizes, numel(m.sizes) > 0
            local pos = 0
            for i = 0, nd - 1 do
               local k = random() < 0.8 and random(0, m.sizes[i + 1]) or hostile()
               sbuf[i] = k
               if k < 0 or k >= m.sizes[i + 1] then inside = false else pos = pos + k * m.strides[i + 1] end
            end
            local st = C.mt_tensor_get_item(t.h, sbuf, vbuf)
            if c_status(st, 'get', 'get_item') then
               assert(inside and vbuf[0] == m.store[pos + 1], 'get_item read the wrong element')
            else
               assert(not inside, 'get_item refused an in-range index: ' .. ffi.string(C.mt_last_error()))
            end
            st = C.mt_tensor_set_item(t.h, sbuf, 0.25)
            assert(c_status(st, 'set', 'set_item') == inside, 'set_item disagrees with get_item')
         elseif which == 5 then -- an empty view anywhere (or nowhere) in its storage, then grown by resize
            base = base or T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { 24 })
            sbuf[0], stbuf[0] = 0, 1
            local off = random() < 0.7 and random(0, 30) or hostile()
            outp[0] = nil
            if c_status(C.mt_tensor_as_strided(outp, base.h, 1, sbuf, stbuf, off), 'as_strided', 'as_strided') then
               local v = T.wrap_handle(outp[0])
               sbuf[0] = random(0, 30)
               if c_status(C.mt_tensor_resize(v.h, 1, sbuf), 'resize', 'resize') then
                  local reach = C.mt_tensor_offset(v.h) + C.mt_tensor_numel(v.h)
                  assert(reach <= C.mt_tensor_storage_numel(v.h), ('resize of an empty view at offset %s left '
                     .. 'elements up to %s in a storage of %s'):format(tostring(off), tostring(reach),
                     tostring(C.mt_tensor_storage_numel(v.h))))
                  if sbuf[0] > 0 then util.flat(v) end -- every element readable
               end
            end
         else -- narrow/select/unfold with hostile numbers
            local t, m = fresh()
            local nd = #m.sizes
            local d = random(-1, nd)
            local a, b = hostile(), hostile()
            local size = (d >= 0 and d < nd) and m.sizes[d + 1] or 0
            outp[0] = nil
            local op = ({ 'narrow', 'select', 'unfold' })[random(3)]
            local st, valid
            if op == 'narrow' then
               st = C.mt_tensor_narrow(outp, t.h, d, a, b)
               valid = d >= 0 and d < nd and a >= 0 and b >= 0 and a + b <= size
            elseif op == 'select' then
               st = C.mt_tensor_select(outp, t.h, d, a)
               valid = d >= 0 and d < nd and a >= 0 and a < size
            else
               st = C.mt_tensor_unfold(outp, t.h, d, a, b)
               valid = d >= 0 and d < nd and nd < 8 and a >= 1 and b >= 1 and a <= size
            end
            local ok = c_status(st, op, op)
            assert(ok == valid, ('%s(dim %d, %s, %s) of %s: %s'):format(op, d, a, b, shape_str(m.sizes),
               ok and 'accepted' or ffi.string(C.mt_last_error())))
            if ok then C.mt_tensor_release(outp[0]) else assert(outp[0] == nil) end
         end
      end
   end)
end)
