-- tensorboard_spec.lua: CRC-32C and the TensorBoard event writer (moontorch.io.tensorboard,
-- csrc/io/tfevents.c). Files are read back by an independent Python reader
-- (spec/fixtures/read_tfevents.py: its own framing, CRC and protobuf code) and, when the
-- tensorboard package is installed, by tensorboard's own EventFileLoader.
local ffi = require 'ffi'
local torch = require 'moontorch'
local util = require 'spec.util'
local tb = require 'moontorch.io.tensorboard'
local C = require('moontorch.internal').clib

local READER = 'spec/fixtures/read_tfevents.py'

local tmpdir = util.tmpdir()
local function tmp(name) return tmpdir .. '/' .. name end

local function run(cmd)
   local p = assert(io.popen(cmd .. ' 2>&1; echo "rc=$?"'))
   local out = p:read('*a')
   p:close()
   local rc = tonumber(out:match('rc=(%d+)%s*$'))
   return out:gsub('rc=%d+%s*$', ''), rc
end

local function hex(s) return (s:gsub('.', function(c) return ('%02x'):format(c:byte()) end)) end
local function unhex(h) return (h:gsub('%x%x', function(x) return string.char(tonumber(x, 16)) end)) end

local function crc(s) return tonumber(C.mt_crc32c(s, #s)) end

-- records as read by the Python reader (or tensorboard's loader): list of tables
local function read_events(path, tensorboard)
   local out, rc = run(('%s %s %s%q'):format(util.PY, READER, tensorboard and '--tensorboard ' or '', path))
   if rc ~= 0 then return nil, out, rc end
   local recs = {}
   for line in out:gmatch('[^\n]+') do
      local kind, rest = line:match('^(%a+) (.*)$')
      if kind == 'version' then
         local wall, v = rest:match('^(%S+) (.*)$')
         recs[#recs + 1] = { kind = kind, wall = tonumber(wall), version = v }
      else
         local wall, step, value, tag = rest:match('^(%S+) (%S+) (%S+) ?(%x*)$')
         assert(wall, 'unexpected reader line: ' .. line)
         recs[#recs + 1] = { kind = kind, wall = tonumber(wall), step = tonumber(step),
            value = tonumber(value) or value, tag = unhex(tag) }
      end
   end
   return recs
end

local function as_float(v) return tonumber(ffi.new('float', v)) end

local function random_tag()
   local parts = {}
   for i = 1, math.random(1, 3) do
      local n, s = math.random(1, 12), {}
      for k = 1, n do s[k] = string.char(math.random(97, 122)) end
      parts[i] = table.concat(s)
   end
   return table.concat(parts, '/')
end

describe('mt_crc32c', function()
   it('matches the published check values', function()
      assert.are.equal(0xE3069283, crc('123456789'))
      assert.are.equal(0, crc(''))
      -- RFC 3720 (iSCSI) B.4 test patterns
      assert.are.equal(0x8A9136AA, crc(('\0'):rep(32)))
      assert.are.equal(0x62A8AB43, crc(('\255'):rep(32)))
      local up, down = {}, {}
      for i = 0, 31 do up[#up + 1], down[#down + 1] = string.char(i), string.char(31 - i) end
      assert.are.equal(0x46DD794E, crc(table.concat(up)))
      assert.are.equal(0x113FDB5C, crc(table.concat(down)))
   end)

   it('agrees with a bitwise implementation on random data', function()
      local inputs, lines = {}, {}
      for i = 1, 20 do
         local n, b = math.random(0, 300), {}
         for k = 1, n do b[k] = string.char(math.random(0, 255)) end
         inputs[i] = table.concat(b)
         lines[i] = hex(inputs[i])
      end
      local f = assert(io.open(tmp('crc_in.txt'), 'w'))
      f:write(table.concat(lines, '\n'), '\n')
      f:close()
      local out, rc = run(('%s %s --crc < %q'):format(util.PY, READER, tmp('crc_in.txt')))
      assert.are.equal(0, rc, out)
      local i = 0
      for v in out:gmatch('%d+') do
         i = i + 1
         assert.are.equal(tonumber(v), crc(inputs[i]), ('input %d (%d bytes)'):format(i, #inputs[i]))
      end
      assert.are.equal(#inputs, i)
   end)
end)

describe('tensorboard.Writer', function()
   it('writes scalars an independent reader decodes, CRCs included', function()
      local dir = tmp('run1')
      local t0 = os.time()
      local w = tb.Writer(dir) -- creates the directory
      local expect = {}
      for i = 1, 25 do
         local e = { tag = random_tag(), value = (math.random() - 0.5) * 10 ^ math.random(-6, 6),
            step = math.random(-5, 2 ^ 40) }
         if i == 3 then e.step = -2 ^ 40 end -- a negative step takes the 10-byte varint
         if i == 4 then e.value = torch.rand(1) end -- a one-element tensor counts as its value
         if i % 2 == 0 then e.wall = 1.6e9 + math.random() * 1e8 end
         w:scalar(e.tag, e.value, e.step, e.wall)
         if torch.isTensor(e.value) then e.value = e.value[1] end
         expect[i] = e
      end
      local t1 = os.time()
      -- read before close: every record must already be on disk
      local recs, err = read_events(w.path)
      assert.truthy(recs, err)
      assert.are.equal(26, #recs)
      assert.are.equal('version', recs[1].kind)
      assert.are.equal('brain.Event:2', recs[1].version)
      assert.truthy(recs[1].wall >= t0 - 1 and recs[1].wall <= t1 + 1,
         ('file_version wall time %.3f outside os.time() %d..%d'):format(recs[1].wall, t0, t1))
      for i, e in ipairs(expect) do
         local r = recs[i + 1]
         assert.are.equal('scalar', r.kind)
         assert.are.equal(e.tag, r.tag)
         assert.are.equal(e.step, r.step, e.tag)
         assert.are.equal(as_float(e.value), r.value, e.tag)
         if e.wall then
            assert.are.equal(e.wall, r.wall, e.tag)
         else
            assert.truthy(r.wall >= t0 - 1 and r.wall <= t1 + 1, 'default wall time ' .. r.wall)
         end
      end
      w:close()
      w:close() -- twice is harmless
   end)

   it('names the file events.out.tfevents.<seconds>.<host>, one per writer', function()
      local dir = tmp('naming/')
      local t0 = os.time()
      local a, b = tb.Writer(dir), tb.Writer(dir)
      local host = run('uname -n'):gsub('%s+$', '') -- coreutils, always there
      local secs, rest = a.path:match('^' .. tmp('naming'):gsub('%p', '%%%0') .. '/events%.out%.tfevents%.(%d+)%.(.*)$')
      assert.truthy(secs, a.path)
      assert.truthy(tonumber(secs) >= t0 and tonumber(secs) <= os.time(), a.path)
      assert.are.equal(host, rest)
      assert.are_not.equal(a.path, b.path) -- opened in the same second: the second gets a suffix
      a:scalar('x', 1, 1)
      b:scalar('x', 2, 1)
      a:close()
      b:close()
      assert.are.equal(1, read_events(a.path)[2].value)
      assert.are.equal(2, read_events(b.path)[2].value)
   end)

   it('keeps NaN and infinities, and large values as float', function()
      local w = tb.Writer(tmp('special'))
      w:scalar('nan', 0 / 0, 1)
      w:scalar('inf', math.huge, 2)
      w:scalar('big', 1e300, 3) -- beyond float: becomes inf, as a float summary must
      w:close()
      local recs = read_events(w.path)
      assert.are.equal('nan', (tostring(recs[2].value):lower():gsub('^-', '')))
      assert.are.equal(math.huge, recs[3].value)
      assert.are.equal(math.huge, recs[4].value)
   end)

   it('is read by tensorboard itself when installed', function()
      local _, rc = run(util.PY .. " -c 'import tensorboard'")
      if rc ~= 0 then
         pending('the tensorboard Python package is not installed')
         return
      end
      local w = tb.Writer(tmp('tbload'))
      local vals = util.rand_flat(5, -100, 100)
      for i, v in ipairs(vals) do w:scalar('loss/train', v, i * 10, 1.7e9 + i) end
      w:close()
      local recs, err = read_events(w.path, true)
      assert.truthy(recs, err)
      local scalars = {}
      for _, r in ipairs(recs) do if r.kind == 'scalar' then scalars[#scalars + 1] = r end end
      assert.are.equal(5, #scalars)
      for i, r in ipairs(scalars) do
         assert.are.equal('loss/train', r.tag)
         assert.are.equal(i * 10, r.step)
         assert.are.equal(as_float(vals[i]), r.value)
      end
   end)
end)

describe('tensorboard errors', function()
   local function expect_error(pattern, f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok, 'expected an error matching ' .. pattern)
      assert.truthy(tostring(err):find(pattern), ('message %q does not match %q'):format(tostring(err), pattern))
   end

   it('names a log directory it cannot make', function()
      local missing = tmp('no/such/parent')
      expect_error('cannot create the log directory ' .. missing:gsub('%p', '%%%0'), tb.Writer, missing)
      local file = tmp('a_file')
      local f = assert(io.open(file, 'w'))
      f:write('x')
      f:close()
      expect_error('is not a directory', tb.Writer, file)
      expect_error('directory name', tb.Writer, nil)
      expect_error('directory name is empty', tb.Writer, '')
   end)

   it('rejects bad scalars and a closed writer', function()
      local w = tb.Writer(tmp('bad'))
      expect_error('tag is empty', w.scalar, w, '', 1, 1)
      expect_error('tag must be a string', w.scalar, w, 5, 1, 1)
      expect_error('must be a number', w.scalar, w, 'x', 'one', 1)
      expect_error('must be an integer', w.scalar, w, 'x', 1, 1.5)
      expect_error('must be an integer', w.scalar, w, 'x', 1, nil)
      expect_error('is not a time', w.scalar, w, 'x', 1, 1, -3)
      expect_error('is not a time', w.scalar, w, 'x', 1, 1, 0 / 0)
      w:scalar('ok', 1, 1)
      w:close()
      expect_error('closed', w.scalar, w, 'x', 1, 1)
      -- nothing but the good record after the version
      local recs = read_events(w.path)
      assert.are.equal(2, #recs)
      assert.are.equal('ok', recs[2].tag)
   end)

   it('refuses NULL handles in C without crashing', function()
      assert.are_not.equal(0, C.mt_events_open(nil, tmp('x')))
      assert.are_not.equal(0, C.mt_events_scalar(nil, 'x', 1, 1, 0))
      assert.truthy(ffi.string(C.mt_last_error()):find('NULL'))
      assert.is_true(C.mt_events_path(nil) == nil)
      C.mt_events_close(nil)
   end)
end)
