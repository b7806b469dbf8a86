-- print_spec.lua: tostring(t). The output is parsed back (scale factor, column chunks, slice
-- headers, elision marks) and compared with the tensor's own values, not with pasted text.
local torch = require 'moontorch'
local util = require 'spec.util'

local function rand(shape, ty, lo, hi)
   local t = util.rand_tensor(shape, ty, lo, hi)
   return t, util.flat(t)
end

local function gpu_it(name, fn)
   if util.has_gpu() then it(name, fn) else pending('[no GPU] ' .. name) end
end

local function lines_of(s)
   local r = {}
   for l in (s .. '\n'):gmatch('(.-)\n') do r[#r + 1] = l end
   return r
end
local function tokens(l)
   local r = {}
   for w in l:gmatch('%S+') do r[#r + 1] = w end
   return r
end

-- Split a printed tensor into its footer and body lines.
local function split(s)
   local lines = lines_of(s)
   local footer = table.remove(lines)
   return lines, footer
end

-- Parse one printed matrix (lines between slice headers): scale line, column chunks, rows.
-- Returns rows (arrays of tokens, chunks joined), the scale, and the chunk headers.
local function parse_matrix(lines)
   local scale, first = 1, 1
   local sc = lines[1] and lines[1]:match('^(%S+) %*$')
   if sc then scale, first = assert(tonumber(sc), 'bad scale ' .. sc), 2 end
   local chunks, cur = {}, nil
   for i = first, #lines do
      local l = lines[i]
      if l:match('^Columns? ') then
         cur = { header = l, rows = {} }
         chunks[#chunks + 1] = cur
      elseif l ~= '' then
         if not cur then
            cur = { rows = {} }
            chunks[#chunks + 1] = cur
         end
         cur.rows[#cur.rows + 1] = tokens(l)
      end
   end
   local rows, headers = {}, {}
   for _, c in ipairs(chunks) do
      headers[#headers + 1] = c.header
      assert.are.equal(#chunks[1].rows, #c.rows, 'every chunk has the same rows')
      for r, toks in ipairs(c.rows) do
         rows[r] = rows[r] or {}
         for _, tok in ipairs(toks) do table.insert(rows[r], tok) end
      end
   end
   return rows, scale, headers
end

-- printed token vs value: fixed notation with `prec` decimals after scaling, or %.Ne
local function assert_token(tok, v, scale, prec, what)
   prec = prec or 4
   if v ~= v then return assert.are.equal('nan', tok, what) end
   if v == math.huge then return assert.are.equal('inf', tok, what) end
   if v == -math.huge then return assert.are.equal('-inf', tok, what) end
   local x = tonumber(tok)
   assert(x, (what or '') .. ': token ' .. tostring(tok) .. ' is not a number')
   local err = math.abs(x * scale - v)
   local tol
   if tok:find('e') then tol = math.abs(v) * 0.5 * 10 ^ -prec * 1.0001
   else tol = 0.5 * 10 ^ -prec * scale * 1.0001 + 1e-12 end
   assert(err <= tol, ('%s: printed %s (x%g) for %.17g'):format(what or 'value', tok, scale, v))
end

local function check_matrix(rows, scale, flat, shape, what, prec)
   assert.are.equal(shape[1], #rows, what .. ' rows')
   for i = 1, shape[1] do
      assert.are.equal(shape[2], #rows[i], what .. ' columns in row ' .. i)
      for j = 1, shape[2] do
         assert_token(rows[i][j], flat[(i - 1) * shape[2] + j], scale, prec, what)
      end
   end
end

describe('tostring', function()
   after_each(function() torch.setprintoptions(true) end)

   it('prints a matrix row by row with a type and size footer', function()
      for _, ty in ipairs { 'torch.DoubleTensor', 'torch.FloatTensor', 'torch.HalfTensor', 'torch.BFloat16Tensor' } do
         local shape = { math.random(1, 6), math.random(2, 6) }
         local t, flat = rand(shape, ty, -1, 1)
         local body, footer = split(tostring(t))
         assert.are.equal(('[%s of size %dx%d]'):format(ty, shape[1], shape[2]), footer)
         local rows, scale, headers = parse_matrix(body)
         assert.are.equal(0, #headers)
         check_matrix(rows, scale, flat, shape, ty)
         -- columns line up: every row has the same printed width
         for i = 2, #body do assert.are.equal(#body[1], #body[i], 'aligned rows') end
      end
   end)

   it('prints the values of non-contiguous views', function()
      local t = rand({ 4, 5 })
      local v = t:t():narrow(1, 2, 3)
      local rows, scale = parse_matrix((split(tostring(v))))
      check_matrix(rows, scale, util.flat(v), { 3, 4 }, 'view')
   end)

   it('prints 1-d tensors one value per line', function()
      local n = math.random(1, 20)
      local t, flat = rand({ n })
      local body, footer = split(tostring(t))
      assert.are.equal('[torch.DoubleTensor of size ' .. n .. ']', footer)
      -- when every value is under 0.1 (or large) a common scale line comes first, as in Torch7
      local scale, sc = 1, body[1]:match('^(%S+) %*$')
      if sc then
         scale = assert(tonumber(sc), 'bad scale ' .. sc)
         table.remove(body, 1)
         local maxabs = 0
         for _, v in ipairs(flat) do maxabs = math.max(maxabs, math.abs(v)) end
         util.assert_close({ scale }, { 10 ^ math.floor(math.log10(maxabs)) }, { rtol = 1e-9 }, '1-d scale')
      end
      assert.are.equal(n, #body)
      for i = 1, n do
         local tok = tokens(body[i])
         assert.are.equal(1, #tok, 'one value per line')
         assert_token(tok[1], flat[i], scale, 4, '1-d')
      end
   end)

   it('factors out a common scale for small and large magnitudes', function()
      for _, mag in ipairs { 1e-3, 1e-6, 1e7, 1e9 } do
         -- magnitudes within one decade of each other, either sign
         local flat = {}
         for i = 1, 12 do flat[i] = mag * (0.1 + 0.9 * math.random()) * (math.random(2) == 1 and -1 or 1) end
         local t = torch.DoubleTensor(flat):view(3, 4)
         local body = split(tostring(t))
         local sc = body[1]:match('^(%S+) %*$')
         assert(sc, 'no scale line for magnitude ' .. mag .. ':\n' .. tostring(t))
         local maxabs = 0
         for _, v in ipairs(flat) do maxabs = math.max(maxabs, math.abs(v)) end
         local expected = 10 ^ math.floor(math.log10(maxabs))
         util.assert_close({ tonumber(sc) }, { expected }, { rtol = 1e-9 }, 'scale')
         local rows, scale = parse_matrix(body)
         check_matrix(rows, scale, flat, { 3, 4 }, 'scaled ' .. mag)
      end
      -- moderate magnitudes need no scale line
      local t = rand({ 2, 3 }, 'torch.DoubleTensor', -50, 50)
      assert.is_nil(split(tostring(t))[1]:match('%*$'))
   end)

   it('uses scientific notation when magnitudes differ widely', function()
      local t = torch.DoubleTensor(2, 3)
      local flat = {}
      for i = 1, 6 do flat[i] = (math.random() + 0.1) * 10 ^ math.random(-8, 8) * (math.random(2) == 1 and -1 or 1) end
      flat[1], flat[2] = 3.25e-7, -4.5e6
      t:copy(torch.DoubleTensor(flat):view(2, 3))
      local rows, scale = parse_matrix((split(tostring(t))))
      assert.are.equal(1, scale)
      for _, r in ipairs(rows) do for _, tok in ipairs(r) do assert.truthy(tok:find('e', 1, true), tok) end end
      check_matrix(rows, scale, flat, { 2, 3 }, 'scientific')
   end)

   it('prints integers without decimals', function()
      for _, ty in ipairs { 'torch.LongTensor', 'torch.IntTensor', 'torch.ByteTensor' } do
         local t, flat = rand({ 3, 4 }, ty, ty == 'torch.ByteTensor' and 0 or -1e5, 1e5)
         local body, footer = split(tostring(t))
         assert.are.equal('[' .. ty .. ' of size 3x4]', footer)
         local rows = parse_matrix(body)
         for i = 1, 3 do
            for j = 1, 4 do
               assert.is_nil(rows[i][j]:find('.', 1, true))
               assert.are.equal(flat[(i - 1) * 4 + j], tonumber(rows[i][j]))
            end
         end
      end
      -- a float tensor holding whole numbers prints them as integers too
      local f, ff = rand({ 5 }, 'torch.LongTensor', -100, 100)
      local body = split(tostring(f:float()))
      for i = 1, 5 do assert.are.equal(tostring(ff[i]), tokens(body[i])[1]) end
      local b = torch.BoolTensor(3):copy(torch.LongTensor { 1, 0, 1 })
      local bb, bfoot = split(tostring(b))
      assert.are.same({ '1', '0', '1' }, { tokens(bb[1])[1], tokens(bb[2])[1], tokens(bb[3])[1] })
      assert.are.equal('[torch.BoolTensor of size 3]', bfoot)
   end)

   it('prints nan and inf', function()
      local vals = { 0 / 0, math.huge, -math.huge, 0.5 + math.random() / 2 }
      local t = torch.FloatTensor(vals)
      local body = split(tostring(t))
      assert.are.equal(4, #body)
      for i = 1, 4 do assert_token(tokens(body[i])[1], util.flat(t)[i], 1, 4, 'special') end
   end)

   it('wraps wide matrices into column chunks under headers', function()
      local cols = math.random(20, 40)
      local t, flat = rand({ 3, cols })
      local body = split(tostring(t))
      for _, l in ipairs(body) do assert.is_true(#l <= 80, 'line longer than 80: ' .. l) end
      local rows, scale, headers = parse_matrix(body)
      assert.is_true(#headers >= 2)
      local nextcol = 1
      for _, h in ipairs(headers) do
         local a, b = h:match('^Columns (%d+) to (%d+)$')
         if not a then a = h:match('^Column (%d+)$') b = a end
         assert(a, 'bad header ' .. h)
         assert.are.equal(nextcol, tonumber(a))
         nextcol = tonumber(b) + 1
      end
      assert.are.equal(cols + 1, nextcol)
      check_matrix(rows, scale, flat, { 3, cols }, 'wrapped')
      torch.setprintoptions { linewidth = 40 }
      local narrow = split(tostring(t))
      for _, l in ipairs(narrow) do assert.is_true(#l <= 40, 'line longer than 40: ' .. l) end
      local rows2, scale2, headers2 = parse_matrix(narrow)
      assert.is_true(#headers2 > #headers)
      check_matrix(rows2, scale2, flat, { 3, cols }, 'wrapped at 40')
   end)

   it('prints 3-d and 4-d tensors as labelled matrices', function()
      local shape = { math.random(1, 3), math.random(1, 3), math.random(1, 4), math.random(1, 4) }
      for _, nd in ipairs { 3, 4 } do
         local sh = {}
         for d = 5 - nd, 4 do sh[#sh + 1] = shape[d] end
         local t, flat = rand(sh)
         local body, footer = split(tostring(t))
         assert.are.equal('[torch.DoubleTensor of size ' .. table.concat(sh, 'x') .. ']', footer)
         -- group lines under their "(i,j,.,.) = " header
         local blocks, cur = {}, nil
         for _, l in ipairs(body) do
            local label = l:match('^%(([%d,]+),%.,%.%) = $')
            if label then
               cur = { label = label, lines = {} }
               blocks[#blocks + 1] = cur
            else
               assert(cur, 'line before the first header: ' .. l)
               cur.lines[#cur.lines + 1] = l
            end
         end
         local lead = 1
         for d = 1, nd - 2 do lead = lead * sh[d] end
         assert.are.equal(lead, #blocks)
         local m = sh[nd - 1] * sh[nd]
         for b, blk in ipairs(blocks) do
            -- the label names the leading indices in row-major order
            local idx, rem = {}, b - 1
            for d = nd - 2, 1, -1 do
               idx[d] = rem % sh[d] + 1
               rem = math.floor(rem / sh[d])
            end
            assert.are.equal(table.concat(idx, ','), blk.label)
            local rows, scale = parse_matrix(blk.lines)
            local sub = {}
            for k = 1, m do sub[k] = flat[(b - 1) * m + k] end
            check_matrix(rows, scale, sub, { sh[nd - 1], sh[nd] }, nd .. '-d slice ' .. blk.label)
         end
      end
   end)

   it('summarises large tensors with the first and last entries of long dimensions', function()
      local R, C = math.random(50, 120), math.random(40, 90)
      local t, flat = rand({ R, C })
      local body = split(tostring(t))
      assert.are.equal(7, #body) -- 3 rows, the elision line, 3 rows
      assert.are.equal('...', tokens(body[4])[1])
      local shown_rows = { 1, 2, 3, R - 2, R - 1, R }
      local shown_cols = { 1, 2, 3, C - 2, C - 1, C }
      local k = 0
      for li, l in ipairs(body) do
         if li ~= 4 then
            k = k + 1
            local toks = tokens(l)
            assert.are.equal(7, #toks)
            assert.are.equal('...', toks[4])
            local c = 0
            for ti, tok in ipairs(toks) do
               if ti ~= 4 then
                  c = c + 1
                  assert_token(tok, flat[(shown_rows[k] - 1) * C + shown_cols[c]], 1, 4, 'summary')
               end
            end
         end
      end
      -- 1-d
      local n = math.random(1001, 5000)
      local v, vf = rand({ n })
      local vb, vfoot = split(tostring(v))
      assert.are.equal('[torch.DoubleTensor of size ' .. n .. ']', vfoot)
      assert.are.equal(7, #vb)
      assert.are.equal('...', tokens(vb[4])[1])
      for i, pos in ipairs { 1, 2, 3, 0, n - 2, n - 1, n } do
         if pos > 0 then assert_token(tokens(vb[i])[1], vf[pos], 1, 4, '1-d summary') end
      end
      -- the threshold is an option
      torch.setprintoptions { threshold = 5, edgeitems = 1 }
      local small = split(tostring(rand({ 3, 4 })))
      assert.are.equal(3, #small)
      assert.are.equal(3, #tokens(small[1]))
   end)

   it('prints a 1e8-element tensor quickly', function()
      local src, sf = rand({ 1000 })
      local big = src:view(1, 1000):expand(100000, 1000)
      local t0 = os.clock()
      local s = tostring(big)
      local dt = os.clock() - t0
      assert.is_true(dt < 0.5, ('printing took %.3f s'):format(dt))
      local body, footer = split(s)
      assert.are.equal('[torch.DoubleTensor of size 100000x1000]', footer)
      local toks = tokens(body[1])
      assert_token(toks[1], sf[1], 1, 4, 'big')
      assert_token(toks[7], sf[1000], 1, 4, 'big')
   end)

   it('prints empty and 0-d tensors clearly', function()
      assert.are.equal('[torch.FloatTensor with no dimension]', tostring(torch.FloatTensor()))
      assert.are.equal('[torch.DoubleTensor of size 0x3]', tostring(torch.DoubleTensor(0, 3)))
      local s, sf = rand({})
      local body, footer = split(tostring(s))
      assert.are.equal('[torch.DoubleTensor of size []]', footer)
      assert.are.equal(1, #body)
      assert_token(tokens(body[1])[1], sf[1], 1, 4, '0-d')
      local f = torch.FloatTensor(2)
      f:free()
      assert.truthy(tostring(f):find('freed', 1, true))
   end)

   it('follows the precision option and rejects bad options', function()
      torch.setprintoptions { precision = 2 }
      local t, flat = rand({ 2, 3 })
      local rows, scale = parse_matrix((split(tostring(t))))
      -- two decimals, in fixed or (when the values span too many powers of ten) scientific form
      for _, r in ipairs(rows) do
         for _, tok in ipairs(r) do
            assert.truthy(tok:match('^%-?%d+%.%d%d$') or tok:match('^%-?%d%.%d%de[-+]%d+$'), tok)
         end
      end
      check_matrix(rows, scale, flat, { 2, 3 }, 'precision 2', 2)
      assert.are.equal(2, torch.getprintoptions().precision)
      util.assert_error(function() torch.setprintoptions { precison = 3 } end, 'setprintoptions', 'precison')
      util.assert_error(function() torch.setprintoptions { edgeitems = 0 } end, 'setprintoptions', 'edgeitems')
      util.assert_error(function() torch.setprintoptions(3) end, 'setprintoptions', 'table')
   end)

   it('prints storages', function()
      local t, flat = rand({ 2, 2 })
      local body, footer = split(tostring(t:storage()))
      assert.are.equal('[torch.DoubleStorage of size 4]', footer)
      for i = 1, 4 do assert_token(tokens(body[i])[1], flat[i], 1, 4, 'storage') end
   end)

   gpu_it('prints CUDA tensors via the host', function()
      local t = rand({ 3, 4 })
      local g = t:type('torch.CudaTensor')
      local body, footer = split(tostring(g))
      assert.are.equal('[torch.CudaTensor of size 3x4]', footer)
      local rows, scale = parse_matrix(body)
      check_matrix(rows, scale, util.flat(g), { 3, 4 }, 'cuda')
   end)
end)
